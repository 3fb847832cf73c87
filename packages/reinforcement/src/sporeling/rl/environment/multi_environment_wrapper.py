"""``MultiEnvironmentWrapper``: several environments stepped as one batch (threads)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from sporeling.core import Tensor

from .environment import Environment
from .space import Space


class MultiEnvironmentWrapper(Environment):
    """Step ``len(env_instance)`` environments with one call; results stacked on axis 0.

    ``num_proc`` threads step them (1: in order, in this thread). Gymnasium's CartPole and
    Pendulum are Python code, so threads do not run them in parallel (the GIL); the compiled
    batched environments (:class:`CartPoleBatchEnvironment`) are the fast path. With
    ``auto_reset=True`` an environment that finishes is reset at once and its returned state
    is the first state of the next episode (``done`` still says it finished).
    """

    def __init__(
        self, env_instance: list[Environment], num_proc: int = 1, auto_reset: bool = False
    ) -> None:
        if not env_instance:
            raise ValueError("MultiEnvironmentWrapper: env_instance is empty")
        self.envs = list(env_instance)
        self.num_env = len(self.envs)
        self.num_proc = max(1, min(int(num_proc), self.num_env))
        self.auto_reset = auto_reset
        self._pool = ThreadPoolExecutor(self.num_proc) if self.num_proc > 1 else None
        first = self.envs[0]
        shape = (self.num_env,)
        self.observation_space = _batched(first.observation_space, shape)
        self.action_space = _batched(first.action_space, shape)
        self.reward_space = _batched(first.reward_space, shape)
        self.done_space = _batched(first.done_space, shape)
        self.action_space_single = first.action_space
        self.observation_space_single = first.observation_space

    @property
    def config(self) -> dict[str, Any]:
        return dict(self.envs[0].config, num_env=self.num_env)

    def _map(self, fn: Any, *args: Any) -> list[Any]:
        if self._pool is None:
            return [fn(*a) for a in zip(*args)]
        return list(self._pool.map(fn, *args))

    def reset_np(self) -> np.ndarray:
        return np.stack(self._map(lambda e: e.reset_np(), self.envs))

    def step_np(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        a = np.asarray(actions.asnumpy() if isinstance(actions, Tensor) else actions)
        if a.shape[:1] != (self.num_env,):
            raise ValueError(
                f"MultiEnvironmentWrapper.step: expected actions with leading dimension "
                f"{self.num_env} (one per environment), got shape {a.shape}"
            )

        def one(env: Any, act: Any) -> tuple[np.ndarray, float, bool]:
            obs, r, d = env.step_np(act)
            if d and self.auto_reset:
                obs = env.reset_np()
            return obs, r, d

        out = self._map(one, self.envs, list(a))
        obs = np.stack([o[0] for o in out])
        return obs, np.array([o[1] for o in out], np.float32), np.array([o[2] for o in out])

    def reset(self) -> Tensor:
        return Tensor(self.reset_np())

    def step(self, action: Any) -> tuple[Tensor, Tensor, Tensor]:
        obs, r, d = self.step_np(action)
        return Tensor(obs), Tensor(r), Tensor(d)

    def close(self) -> bool:
        for env in self.envs:
            env.close()
        if self._pool is not None:
            self._pool.shutdown()
        return True


def _batched(space: Space, batch: tuple[int, ...]) -> Space:
    low, high = space.boundary
    return Space(space.shape, space.np_dtype, low=low, high=high, batch_shape=batch)
