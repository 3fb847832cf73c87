"""Slow, plainly correct Python twins of the compiled games and of the MCTS search."""

from __future__ import annotations

import math

from sporeling.rl.mcts.contract import rng_next_py

TTT_LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]


class TicTacToe:
    """Board as a list; ``state()`` in the compiled layout for comparisons."""

    num_players, max_action = 2, 9

    def __init__(self) -> None:
        self.board = [0] * 9
        self.player = 0
        self.moves = 0
        self.winner = None

    def copy(self) -> TicTacToe:
        g = TicTacToe()
        g.board, g.player, g.moves, g.winner = (
            list(self.board),
            self.player,
            self.moves,
            self.winner,
        )
        return g

    def legal(self) -> list[int]:
        if self.winner is not None:
            return []
        return [a for a in range(9) if self.board[a] == 0]

    def step(self, a: int) -> tuple[list[float], bool]:
        assert a in self.legal()
        p = self.player
        self.board[a] = p + 1
        self.moves += 1
        self.player = 1 - p
        if any(all(self.board[i] == p + 1 for i in line) for line in TTT_LINES):
            self.winner = p
            r = [0.0, 0.0]
            r[p], r[1 - p] = 1.0, -1.0
            return r, True
        return [0.0, 0.0], self.moves >= 9

    def state(self) -> list[float]:
        moves = -self.moves if self.winner is not None else self.moves
        return [float(c) for c in self.board] + [float(self.player), float(moves)]


class ConnectFour:
    num_players, max_action = 2, 7
    rows, cols = 6, 7

    def __init__(self) -> None:
        self.grid = [[0] * 7 for _ in range(6)]  # grid[row][col], row 0 at the bottom
        self.player = 0
        self.moves = 0
        self.winner = None

    def copy(self) -> ConnectFour:
        g = ConnectFour()
        g.grid = [list(r) for r in self.grid]
        g.player, g.moves, g.winner = self.player, self.moves, self.winner
        return g

    def legal(self) -> list[int]:
        if self.winner is not None:
            return []
        return [c for c in range(7) if self.grid[5][c] == 0]

    def _wins(self, mark: int) -> bool:
        g = self.grid
        for r in range(6):
            for c in range(7):
                for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
                    cells = [(r + k * dr, c + k * dc) for k in range(4)]
                    if all(0 <= y < 6 and 0 <= x < 7 and g[y][x] == mark for y, x in cells):
                        return True
        return False

    def step(self, c: int) -> tuple[list[float], bool]:
        assert c in self.legal()
        p = self.player
        row = next(r for r in range(6) if self.grid[r][c] == 0)
        self.grid[row][c] = p + 1
        self.moves += 1
        self.player = 1 - p
        if self._wins(p + 1):
            self.winner = p
            r = [0.0, 0.0]
            r[p], r[1 - p] = 1.0, -1.0
            return r, True
        return [0.0, 0.0], self.moves >= 42

    def state(self) -> list[float]:
        moves = -self.moves if self.winner is not None else self.moves
        cells = [float(v) for row in self.grid for v in row]
        return cells + [float(self.player), float(moves)]


class Node:
    def __init__(self, game, reward, terminal) -> None:
        self.game = game
        self.reward = reward
        self.terminal = terminal
        self.children: dict[int, Node] = {}
        self.visits = 0.0
        self.value = [0.0] * game.num_players
        self.legal = [] if terminal else game.legal()
        self.to_play = game.player


def uct_search(game, n_sims: int, c: float, rng_state: int) -> tuple[list[float], int]:
    """Plain UCT with the compiled search's rules: a child is created when first taken,
    unvisited children score +inf, ties go to the lowest action, uniform random rollouts
    with splitmix64 (one draw per rollout step, ``bits % n_legal``-th legal action).
    Returns (root child visits per action, rng state)."""
    root = Node(game.copy(), [0.0] * game.num_players, not game.legal())
    for _ in range(n_sims):
        node, path = root, [root]
        while True:
            if node.terminal:
                leaf = node
                break
            best, best_a = -math.inf, -1
            for a in node.legal:
                ch = node.children.get(a)
                if ch is None or ch.visits == 0.0:
                    s = math.inf
                else:
                    q = ch.value[node.to_play] / ch.visits
                    s = q + c * math.sqrt(math.log(node.visits) / ch.visits)
                if s > best:
                    best, best_a = s, a
            if best_a in node.children:
                node = node.children[best_a]
                path.append(node)
                continue
            g = node.game.copy()
            reward, done = g.step(best_a)
            child = Node(g, reward, done)
            node.children[best_a] = child
            path.append(child)
            leaf = child
            break
        returns = list(leaf.reward)
        if not leaf.terminal:
            g = leaf.game.copy()
            while True:
                legal = g.legal()
                if not legal:
                    break
                rng_state, bits = rng_next_py(rng_state)
                r, done = g.step(legal[bits % len(legal)])
                returns = [x + y for x, y in zip(returns, r)]
                if done:
                    break
        for n in path:
            n.visits += 1.0
            n.value = [v + r for v, r in zip(n.value, returns)]
    visits = [
        root.children[a].visits if a in root.children else 0.0 for a in range(game.max_action)
    ]
    return visits, rng_state


def minimax_ttt(game: TicTacToe, cache: dict | None = None) -> tuple[float, int]:
    """Perfect tic-tac-toe: (value for the player to move, best action, lowest on ties)."""
    cache = {} if cache is None else cache
    key = (tuple(game.board), game.player)
    if key in cache:
        return cache[key]
    best, best_a = -math.inf, -1
    for a in game.legal():
        g = game.copy()
        r, done = g.step(a)
        v = r[game.player] if done else -minimax_ttt(g, cache)[0]
        if v > best:
            best, best_a = v, a
    cache[key] = (best, best_a)
    return cache[key]
