"""``MultiEnvironmentWrapper``: several environments stepped as one batch (threads or
worker processes)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from sporeling.core import Tensor

from .environment import Environment
from .environment_process import EnvironmentProcess
from .space import Space


class MultiEnvironmentWrapper(Environment):
    """Step ``len(env_instance)`` environments with one call; results stacked on axis 0.

    ``num_proc`` workers step them (1: in order, in this thread). ``backend="thread"`` (the
    default) uses threads: gymnasium's CartPole and Pendulum are Python code, so threads do
    not run them in parallel (the GIL). ``backend="process"`` gives each of the ``num_proc``
    workers an :class:`EnvironmentProcess` owning a contiguous slice of the environments
    (pickled into it at start, as MindSpore RL 0.5 does), which runs them in parallel; the
    compiled batched environments (:class:`CartPoleBatchEnvironment`) are faster still. With
    ``auto_reset=True`` an environment that finishes is reset at once and its returned state
    is the first state of the next episode (``done`` still says it finished).
    :attr:`last_terminated` holds each environment's ``terminated`` flag of the last step.
    """

    def __init__(
        self,
        env_instance: list[Environment],
        num_proc: int = 1,
        auto_reset: bool = False,
        backend: str = "thread",
    ) -> None:
        if not env_instance:
            raise ValueError("MultiEnvironmentWrapper: env_instance is empty")
        if backend not in ("thread", "process"):
            raise ValueError(
                f"MultiEnvironmentWrapper: backend expected 'thread' or 'process', got {backend!r}"
            )
        self.envs = list(env_instance)
        self.num_env = len(self.envs)
        self.num_proc = max(1, min(int(num_proc), self.num_env))
        self.auto_reset = auto_reset
        self.backend = backend
        self.last_terminated = np.zeros(self.num_env, np.bool_)
        self._pool = None
        self._workers: list[EnvironmentProcess] = []
        if backend == "process":
            bounds = np.linspace(0, self.num_env, self.num_proc + 1).round().astype(int)
            try:
                for i in range(self.num_proc):
                    chunk = self.envs[bounds[i] : bounds[i + 1]]
                    self._workers.append(EnvironmentProcess(chunk, i, auto_reset))
            except BaseException:
                self.close()
                raise
        elif self.num_proc > 1:
            self._pool = ThreadPoolExecutor(self.num_proc)
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

    def _gather(self) -> list[Any]:
        """Every worker's answer (all are read, so none is left in a pipe), then the first
        worker error, if any, raised."""
        parts, error = [], None
        for w in self._workers:
            try:
                parts.append(w.receive())
            except RuntimeError as e:
                error = error or e
        if error is not None:
            raise error
        return parts

    def reset_np(self) -> np.ndarray:
        if self._workers:
            for w in self._workers:
                w.send("reset")
            return np.stack([obs for part in self._gather() for obs in part])
        return np.stack(self._map(lambda e: e.reset_np(), self.envs))

    def step_np(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        a = np.asarray(actions.asnumpy() if isinstance(actions, Tensor) else actions)
        if a.shape[:1] != (self.num_env,):
            raise ValueError(
                f"MultiEnvironmentWrapper.step: expected actions with leading dimension "
                f"{self.num_env} (one per environment), got shape {a.shape}"
            )

        if self._workers:
            start = 0
            for w in self._workers:
                w.send("step", list(a[start : start + w.num_env]))
                start += w.num_env
            out = [o for part in self._gather() for o in part]
        else:

            def one(env: Any, act: Any) -> tuple[np.ndarray, float, bool, bool]:
                obs, r, d = env.step_np(act)
                terminated = bool(getattr(env, "last_terminated", d))
                if d and self.auto_reset:
                    obs = env.reset_np()
                return obs, r, d, terminated

            out = self._map(one, self.envs, list(a))
        self.last_terminated = np.array([o[3] for o in out], np.bool_)
        obs = np.stack([o[0] for o in out])
        return obs, np.array([o[1] for o in out], np.float32), np.array([o[2] for o in out])

    def reset(self) -> Tensor:
        return Tensor(self.reset_np())

    def step(self, action: Any) -> tuple[Tensor, Tensor, Tensor]:
        obs, r, d = self.step_np(action)
        return Tensor(obs), Tensor(r), Tensor(d)

    def close(self) -> bool:
        for w in self._workers:
            w.close()
        self._workers = []
        for env in self.envs:
            env.close()
        if self._pool is not None:
            self._pool.shutdown()
        return True


def _batched(space: Space, batch: tuple[int, ...]) -> Space:
    low, high = space.boundary
    return Space(space.shape, space.np_dtype, low=low, high=high, batch_shape=batch)
