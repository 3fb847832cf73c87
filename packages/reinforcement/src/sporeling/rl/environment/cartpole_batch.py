"""A batch of CartPole-v1 games stepped by one Numba kernel (gymnasium's dynamics, Euler).

The physics, thresholds, float64 state and the +1 reward on every step (the terminating
one included) are gymnasium 1.x's ``CartPoleEnv``; tests/test_cartpole_batch.py checks the
kernel step by step against it. Episodes are truncated after ``max_episode_steps``; a game
that ends is reset inside the same call (``auto_reset``), its new first state returned.
"""

from __future__ import annotations

import math
from typing import Any

import numba as nb
import numpy as np

from sporeling.core import Tensor

from .environment import Environment
from .space import Space

GRAVITY, MASSCART, MASSPOLE, LENGTH, FORCE_MAG, TAU = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
TOTAL_MASS = MASSPOLE + MASSCART
POLEMASS_LENGTH = MASSPOLE * LENGTH
THETA_THRESHOLD = 12 * 2 * math.pi / 360
X_THRESHOLD = 2.4


@nb.njit(cache=True)
def cartpole_step_kernel(
    state, steps, actions, max_steps, reset_values, reward, terminated, truncated, final_state
):  # pragma: no cover - jit
    """Step every game; reset (to ``reset_values``) the ones that end, keeping their last
    state in ``final_state`` (to bootstrap through a truncation). In place."""
    for i in range(state.shape[0]):
        x, x_dot, theta, theta_dot = state[i, 0], state[i, 1], state[i, 2], state[i, 3]
        force = FORCE_MAG if actions[i] == 1 else -FORCE_MAG
        costheta = math.cos(theta)
        sintheta = math.sin(theta)
        temp = (force + POLEMASS_LENGTH * theta_dot**2 * sintheta) / TOTAL_MASS
        thetaacc = (GRAVITY * sintheta - costheta * temp) / (
            LENGTH * (4.0 / 3.0 - MASSPOLE * costheta**2 / TOTAL_MASS)
        )
        xacc = temp - POLEMASS_LENGTH * thetaacc * costheta / TOTAL_MASS
        x = x + TAU * x_dot
        x_dot = x_dot + TAU * xacc
        theta = theta + TAU * theta_dot
        theta_dot = theta_dot + TAU * thetaacc
        state[i, 0], state[i, 1], state[i, 2], state[i, 3] = x, x_dot, theta, theta_dot
        steps[i] += 1
        term = (
            x < -X_THRESHOLD
            or x > X_THRESHOLD
            or theta < -THETA_THRESHOLD
            or theta > THETA_THRESHOLD
        )  # noqa: E501
        trunc = (not term) and steps[i] >= max_steps
        reward[i] = 1.0
        terminated[i] = term
        truncated[i] = trunc
        if term or trunc:
            for j in range(4):
                final_state[i, j] = state[i, j]
                state[i, j] = reset_values[i, j]
            steps[i] = 0


class CartPoleBatchEnvironment(Environment):
    """``num_envs`` CartPole-v1 games; ``step(actions)`` returns ``(states, rewards, dones)``
    of shapes ``(N, 4)``, ``(N,)``, ``(N,)``. ``params``: ``num_envs``, ``seed``,
    ``max_episode_steps`` (500)."""

    def __init__(self, params: dict[str, Any] | None = None, env_id: int = 0) -> None:
        params = dict(params or {})
        self.num_envs = int(params.get("num_envs", 1))
        if self.num_envs < 1:
            raise ValueError(
                f"CartPoleBatchEnvironment: num_envs expected >= 1, got {self.num_envs}"
            )
        self.max_episode_steps = int(params.get("max_episode_steps", 500))
        seed = params.get("seed")
        self.rng = np.random.default_rng(None if seed is None else int(seed) + env_id)
        n = self.num_envs
        self.state = np.zeros((n, 4), np.float64)
        self.steps = np.zeros(n, np.int64)
        self.reward = np.zeros(n, np.float32)
        self.terminated = np.zeros(n, np.bool_)
        self.truncated = np.zeros(n, np.bool_)
        self.final_state = np.zeros((n, 4), np.float64)
        high = np.array([X_THRESHOLD * 2, np.inf, THETA_THRESHOLD * 2, np.inf], np.float32)
        self.observation_space_single = Space((4,), np.float32, low=-high, high=high)
        self.action_space_single = Space((), np.int32, low=0, high=2)
        self.observation_space = Space((4,), np.float32, -high, high, batch_shape=(n,))
        self.action_space = Space((), np.int32, low=0, high=2, batch_shape=(n,))
        self.reward_space = Space((), np.float32, batch_shape=(n,))
        self.done_space = Space((), np.bool_, low=0, high=2, batch_shape=(n,))

    @property
    def config(self) -> dict[str, Any]:
        return {"name": "CartPole-v1", "num_envs": self.num_envs}

    @property
    def last_terminated(self) -> np.ndarray:
        return self.terminated

    def reset_np(self) -> np.ndarray:
        self.state[:] = self.rng.uniform(-0.05, 0.05, self.state.shape)
        self.steps[:] = 0
        return self.state.astype(np.float32)

    def step_np(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        a = np.asarray(actions.asnumpy() if isinstance(actions, Tensor) else actions)
        a = a.reshape(-1).astype(np.int64)
        if a.shape[0] != self.num_envs:
            raise ValueError(
                f"CartPoleBatchEnvironment.step: expected {self.num_envs} actions, got {a.shape[0]}"
            )
        resets = self.rng.uniform(-0.05, 0.05, self.state.shape)
        cartpole_step_kernel(
            self.state,
            self.steps,
            a,
            self.max_episode_steps,
            resets,
            self.reward,
            self.terminated,
            self.truncated,
            self.final_state,
        )
        return self.state.astype(np.float32), self.reward.copy(), self.terminated | self.truncated

    def reset(self) -> Tensor:
        return Tensor(self.reset_np())

    def step(self, action: Any) -> tuple[Tensor, Tensor, Tensor]:
        s, r, d = self.step_np(action)
        return Tensor(s), Tensor(r), Tensor(d)
