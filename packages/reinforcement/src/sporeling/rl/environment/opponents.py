"""Built-in opponents for the board games: perfect tic-tac-toe (minimax) and random play."""

from __future__ import annotations

from functools import cache

import numpy as np

from .tic_tac_toe import ttt_legal_action, ttt_step


@cache
def _negamax(cells: tuple[float, ...]) -> tuple[float, int]:
    """(value for the player to move, best action: the lowest of the best) of a state."""
    state = np.array(cells, np.float32)
    mask = np.zeros(9, np.bool_)
    ttt_legal_action(state, mask)
    player = int(state[9])
    best, best_a = -2.0, -1
    reward = np.zeros(2, np.float32)
    for a in np.flatnonzero(mask):
        child = state.copy()
        done = ttt_step(child, int(a), reward)
        value = float(reward[player]) if done else -_negamax(tuple(child.tolist()))[0]
        if value > best:
            best, best_a = value, int(a)
    return best, best_a


def minimax_tictactoe(state: np.ndarray) -> int:
    """A perfect tic-tac-toe move for the player to move in ``state`` (float32[11])."""
    value, action = _negamax(tuple(np.asarray(state, np.float32).tolist()))
    if action < 0:
        raise ValueError("minimax_tictactoe: the game is over, there is no move")
    return action


def random_move(legal_mask: np.ndarray, rng: np.random.Generator) -> int:
    legal = np.flatnonzero(legal_mask)
    if legal.size == 0:
        raise ValueError("random_move: no legal move")
    return int(rng.choice(legal))
