"""Connect-Four (6 rows x 7 columns) as compiled functions and as a batched environment.

State (float32[44]): cells 0..41 row-major from the bottom row (``6 * 7``; 0 empty, 1/2 the
players' discs), ``[42]`` the player to move, ``[43]`` the number of moves (negated once a
player has won). An action is a column.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..mcts.contract import LEGAL_SIG, PLAYER_SIG, STEP_SIG
from ._board_env import BoardGameEnvironment

ROWS, COLS = 6, 7
STATE_SIZE, MAX_ACTION, NUM_PLAYERS = ROWS * COLS + 2, COLS, 2


@nb.njit(LEGAL_SIG, cache=True)
def c4_legal_action(state, mask):  # pragma: no cover - jit
    n = 0
    finished = state[43] < 0
    for c in range(COLS):
        ok = (not finished) and state[(ROWS - 1) * COLS + c] == 0.0
        mask[c] = ok
        n += ok
    return n


@nb.njit(PLAYER_SIG, cache=True)
def c4_current_player(state):  # pragma: no cover - jit
    return nb.int64(state[42])


@nb.njit(cache=True)
def _count(state, r, c, dr, dc, mark):  # pragma: no cover - jit
    n = 0
    r += dr
    c += dc
    while 0 <= r < ROWS and 0 <= c < COLS and state[r * COLS + c] == mark:
        n += 1
        r += dr
        c += dc
    return n


@nb.njit(STEP_SIG, cache=True)
def c4_step(state, action, reward):  # pragma: no cover - jit
    p = nb.int64(state[42])
    mark = nb.float32(p + 1)
    row = 0
    while state[row * COLS + action] != 0.0:
        row += 1
    state[row * COLS + action] = mark
    moves = state[43] + 1.0
    reward[0] = 0.0
    reward[1] = 0.0
    won = False
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
        if (
            1
            + _count(state, row, action, dr, dc, mark)
            + _count(state, row, action, -dr, -dc, mark)
            >= 4
        ):  # noqa: E501
            won = True
    state[42] = 1.0 - state[42]
    if won:
        reward[p] = 1.0
        reward[1 - p] = -1.0
        state[43] = -moves
        return True
    state[43] = moves
    return moves >= ROWS * COLS


class ConnectFourEnvironment(BoardGameEnvironment):
    """``num_envs`` games of Connect-Four stepped together."""

    name = "ConnectFour"
    state_size, max_action, num_players = STATE_SIZE, MAX_ACTION, NUM_PLAYERS
    legal_action_fn = staticmethod(c4_legal_action)
    step_fn = staticmethod(c4_step)
    current_player_fn = staticmethod(c4_current_player)

    def render(self, index: int = 0) -> str:
        cells = self.states[index, : ROWS * COLS].astype(int).reshape(ROWS, COLS)
        sym = {0: ".", 1: "X", 2: "O"}
        rows = [" ".join(sym[c] for c in cells[r]) for r in range(ROWS - 1, -1, -1)]
        return "\n".join([*rows, " ".join(str(c) for c in range(COLS))])

    @staticmethod
    def initial_state() -> np.ndarray:
        return np.zeros(STATE_SIZE, np.float32)
