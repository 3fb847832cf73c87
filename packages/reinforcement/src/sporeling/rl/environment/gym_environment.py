"""``GymEnvironment``: a gymnasium environment behind MindSpore RL's interface."""

from __future__ import annotations

from typing import Any

import numpy as np

from sporeling.core import Tensor

from .environment import Environment
from .space import Space


def _import_gymnasium() -> Any:
    try:
        import gymnasium
    except ImportError:
        raise ImportError(
            "GymEnvironment needs gymnasium: pip install 'sporeling-reinforcement[gym]'"
        ) from None
    return gymnasium


def _space_from_gym(space: Any) -> Space:
    gym = _import_gymnasium()
    if isinstance(space, gym.spaces.Discrete):
        return Space((), np.int32, low=int(space.start), high=int(space.start + space.n))
    if isinstance(space, gym.spaces.Box):
        return Space(space.shape, np.float32, low=space.low, high=space.high)
    raise TypeError(f"GymEnvironment: unsupported gymnasium space {space!r}")


class GymEnvironment(Environment):
    """``GymEnvironment(params, env_id=0)`` with ``params = {'name': 'CartPole-v1', 'seed': 42}``.

    ``done`` is gymnasium's ``terminated or truncated`` (MindSpore RL 0.5 predates the split);
    :attr:`last_terminated` keeps the difference for algorithms that bootstrap on truncation.
    The seed is applied at the first ``reset`` as ``seed + env_id``.
    """

    def __init__(self, params: dict[str, Any] | None = None, env_id: int = 0) -> None:
        params = dict(params or {})
        if "name" not in params:
            raise ValueError(
                "GymEnvironment: params needs 'name', the gymnasium id, e.g. 'CartPole-v1'"
            )
        gym = _import_gymnasium()
        self.name = params["name"]
        kwargs = params.get("kwargs", {})
        self._env = gym.make(self.name, **kwargs)
        seed = params.get("seed")
        self._seed = None if seed is None else int(seed) + int(env_id)
        self._seeded = False
        self.observation_space = _space_from_gym(self._env.observation_space)
        self.action_space = _space_from_gym(self._env.action_space)
        self.reward_space = Space((), np.float32)
        self.done_space = Space((), np.bool_, low=0, high=2)
        self.last_terminated = False
        self._state_np: np.ndarray | None = None

    @property
    def config(self) -> dict[str, Any]:
        return {"name": self.name}

    @property
    def gym_env(self) -> Any:
        """The wrapped gymnasium environment."""
        return self._env

    def reset_np(self) -> np.ndarray:
        seed = None
        if not self._seeded:
            seed, self._seeded = self._seed, True
            if seed is not None:
                self._env.action_space.seed(seed)
        obs, _ = self._env.reset(seed=seed)
        self._state_np = np.asarray(obs, np.float32)
        return self._state_np

    def step_np(self, action: Any) -> tuple[np.ndarray, float, bool]:
        a = np.asarray(action.asnumpy() if isinstance(action, Tensor) else action)
        if self.action_space.is_discrete:
            if a.size != 1:
                raise ValueError(
                    f"GymEnvironment({self.name}).step: expected one discrete action, got "
                    f"shape {a.shape}"
                )
            a = int(a.reshape(()))
        else:
            a = a.astype(np.float32).reshape(self.action_space.shape)
        obs, reward, terminated, truncated, _ = self._env.step(a)
        self.last_terminated = bool(terminated)
        self._state_np = np.asarray(obs, np.float32)
        return self._state_np, float(reward), bool(terminated or truncated)

    def reset(self) -> Tensor:
        return Tensor(self.reset_np())

    def step(self, action: Any) -> tuple[Tensor, Tensor, Tensor]:
        obs, reward, done = self.step_np(action)
        return (
            Tensor(obs),
            Tensor(np.array([reward], np.float32)),
            Tensor(np.array([done], np.bool_)),
        )

    def close(self) -> bool:
        self._env.close()
        return True
