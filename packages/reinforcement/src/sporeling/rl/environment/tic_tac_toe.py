"""Tic-tac-toe as compiled functions (the MCTS contract) and as a batched environment.

State (float32[11]): cells 0..8 row-major (0 empty, 1 player 0's mark, 2 player 1's),
``[9]`` the player to move, ``[10]`` the number of moves made. Rewards are +1 for the
winner and -1 for the loser on the winning move, 0 otherwise.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..mcts.contract import LEGAL_SIG, PLAYER_SIG, STEP_SIG
from ._board_env import BoardGameEnvironment

STATE_SIZE, MAX_ACTION, NUM_PLAYERS = 11, 9, 2
LINES = np.array(
    [[0, 1, 2], [3, 4, 5], [6, 7, 8], [0, 3, 6], [1, 4, 7], [2, 5, 8], [0, 4, 8], [2, 4, 6]],
    np.int64,
)


@nb.njit(LEGAL_SIG, cache=True)
def ttt_legal_action(state, mask):  # pragma: no cover - jit
    n = 0
    finished = state[10] < 0  # a won game is marked by a negative move count
    for a in range(9):
        ok = (not finished) and state[a] == 0.0
        mask[a] = ok
        n += ok
    return n


@nb.njit(PLAYER_SIG, cache=True)
def ttt_current_player(state):  # pragma: no cover - jit
    return nb.int64(state[9])


@nb.njit(STEP_SIG, cache=True)
def ttt_step(state, action, reward):  # pragma: no cover - jit
    p = nb.int64(state[9])
    mark = nb.float32(p + 1)
    state[action] = mark
    moves = state[10] + 1.0
    reward[0] = 0.0
    reward[1] = 0.0
    won = False
    for k in range(8):
        if state[LINES[k, 0]] == mark and state[LINES[k, 1]] == mark and state[LINES[k, 2]] == mark:
            won = True
    state[9] = 1.0 - state[9]
    if won:
        reward[p] = 1.0
        reward[1 - p] = -1.0
        state[10] = -moves
        return True
    state[10] = moves
    return moves >= 9.0


class TicTacToeEnvironment(BoardGameEnvironment):
    """``num_envs`` games of tic-tac-toe stepped together (see :class:`BoardGameEnvironment`)."""

    name = "TicTacToe"
    state_size, max_action, num_players = STATE_SIZE, MAX_ACTION, NUM_PLAYERS
    legal_action_fn = staticmethod(ttt_legal_action)
    step_fn = staticmethod(ttt_step)
    current_player_fn = staticmethod(ttt_current_player)

    def render(self, index: int = 0) -> str:
        cells = self.states[index, :9].astype(int)
        sym = {0: ".", 1: "X", 2: "O"}
        rows = [" ".join(sym[c] for c in cells[r * 3 : r * 3 + 3]) for r in range(3)]
        return "\n".join(rows)

    @staticmethod
    def initial_state() -> np.ndarray:
        return np.zeros(STATE_SIZE, np.float32)
