"""A batch of turn-based board games driven by the game's compiled contract functions."""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np
from numba import types

from sporeling.core import Tensor

from ..mcts.contract import LegalFn, StepFn
from .environment import Environment
from .space import Space

_F2 = types.float32[:, ::1]
_MAX_ACTIONS = 2048  # the legality check's scratch mask


@nb.njit(
    types.int64(
        StepFn, LegalFn, _F2, types.int64[::1], _F2, types.boolean[::1], types.boolean[::1]
    ),
    cache=True,
)
def _batch_step(step, legal, states, actions, rewards, dones, active):  # pragma: no cover - jit
    """Step every active game; return the index of the first illegal action, or -1."""
    mask = np.zeros(_MAX_ACTIONS, np.bool_)
    for i in range(states.shape[0]):
        if not active[i]:
            continue
        s = states[i]
        a = actions[i]
        legal(s, mask)
        if a < 0 or a >= mask.shape[0] or not mask[a]:
            return i
    for i in range(states.shape[0]):
        if active[i]:
            dones[i] = step(states[i], actions[i], rewards[i])
    return -1


@nb.njit(types.void(LegalFn, _F2, types.boolean[:, ::1]), cache=True)
def _batch_legal(legal, states, masks):  # pragma: no cover - jit
    for i in range(states.shape[0]):
        legal(states[i], masks[i])


class BoardGameEnvironment(Environment):
    """``num_envs`` games; ``step(actions)`` plays one move in every unfinished game and returns
    ``(states (N, S), rewards (N, players), dones (N,))``. A finished game stays finished
    until ``reset``. ``legal_action()`` gives the ``(N, max_action)`` masks.

    The single-game methods of MindSpore RL's MCTS environment contract (``save``, ``load``,
    ``legal_action``, ``is_terminal``, ``max_utility``, ``total_num_player``) act on game 0.
    """

    name = "board"
    state_size = max_action = num_players = 0
    legal_action_fn: Any
    step_fn: Any
    current_player_fn: Any

    def __init__(self, params: dict[str, Any] | None = None, env_id: int = 0) -> None:
        params = dict(params or {})
        self.num_envs = int(params.get("num_envs", 1))
        if self.num_envs < 1:
            raise ValueError(f"{type(self).__name__}: num_envs expected >= 1, got {self.num_envs}")
        if self.max_action > _MAX_ACTIONS:
            raise ValueError(f"{type(self).__name__}: at most {_MAX_ACTIONS} actions are supported")
        n = self.num_envs
        self.states = np.zeros((n, self.state_size), np.float32)
        self.rewards = np.zeros((n, self.num_players), np.float32)
        self.dones = np.zeros(n, np.bool_)
        self.observation_space = Space((self.state_size,), np.float32, batch_shape=(n,))
        self.action_space = Space((), np.int32, low=0, high=self.max_action, batch_shape=(n,))
        self.observation_space_single = Space((self.state_size,), np.float32)
        self.action_space_single = Space((), np.int32, low=0, high=self.max_action)
        self.reward_space = Space((self.num_players,), np.float32, batch_shape=(n,))
        self.done_space = Space((), np.bool_, low=0, high=2, batch_shape=(n,))

    @property
    def config(self) -> dict[str, Any]:
        return {"name": self.name, "num_envs": self.num_envs, "num_players": self.num_players}

    def reset_np(self) -> np.ndarray:
        self.states[:] = 0.0
        self.dones[:] = False
        return self.states.copy()

    def step_np(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        a = np.asarray(actions.asnumpy() if isinstance(actions, Tensor) else actions)
        a = np.ascontiguousarray(a.reshape(-1), np.int64)
        if a.shape[0] != self.num_envs:
            raise ValueError(
                f"{type(self).__name__}.step: expected {self.num_envs} actions, got {a.shape[0]}"
            )
        active = ~self.dones
        self.rewards[:] = 0.0
        bad = _batch_step(
            self.step_fn, self.legal_action_fn, self.states, a, self.rewards, self.dones, active
        )
        if bad >= 0:
            mask = self.legal_action_np()[bad]
            raise ValueError(
                f"{type(self).__name__}.step: action {int(a[bad])} is not legal in game {bad} "
                f"(legal: {np.flatnonzero(mask).tolist()})"
            )
        return self.states.copy(), self.rewards.copy(), self.dones.copy()

    def legal_action_np(self) -> np.ndarray:
        masks = np.zeros((self.num_envs, self.max_action), np.bool_)
        _batch_legal(self.legal_action_fn, self.states, masks)
        return masks

    def current_player_np(self) -> np.ndarray:
        return np.array([self.current_player_fn(s) for s in self.states], np.int64)

    def reset(self) -> Tensor:
        return Tensor(self.reset_np())

    def step(self, action: Any) -> tuple[Tensor, Tensor, Tensor]:
        s, r, d = self.step_np(action)
        return Tensor(s), Tensor(r), Tensor(d)

    # ---- MindSpore RL's MCTS environment contract, on game 0 -----------------------------
    def save(self) -> np.ndarray:
        """The state of game 0 (what MCTS searches from)."""
        return self.states[0].copy()

    def load(self, state: Any) -> tuple[np.ndarray, float, bool]:
        self.states[0] = np.asarray(state, np.float32)
        self.dones[0] = self.is_terminal()
        return self.states[0].copy(), 0.0, bool(self.dones[0])

    def legal_action(self) -> np.ndarray:
        """Game 0's legal actions, padded with -1 to ``max_action`` (0.5's form)."""
        legal = np.flatnonzero(self.legal_action_np()[0])
        out = np.full(self.max_action, -1, np.int32)
        out[: legal.size] = legal
        return out

    def is_terminal(self) -> bool:
        return not self.legal_action_np()[0].any()

    def max_utility(self) -> float:
        return 1.0

    def total_num_player(self) -> int:
        return self.num_players

    def current_player(self) -> int:
        return int(self.current_player_fn(self.states[0]))
