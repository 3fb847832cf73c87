"""``Environment``: the interface every environment of MindSpore RL 0.5 offers."""

from __future__ import annotations

from typing import Any

from .space import Space


class Environment:
    """``reset() -> state``, ``step(action) -> (state, reward, done)``, spaces and ``config``.

    States, rewards and dones are :class:`sporeling.core.Tensor`, as in MindSpore RL.
    """

    observation_space: Space
    action_space: Space
    reward_space: Space
    done_space: Space

    @property
    def config(self) -> dict[str, Any]:
        """Facts an algorithm may need (injected into ``policy_and_network`` params)."""
        return {}

    def reset(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement reset() -> state")

    def step(self, action: Any) -> tuple[Any, Any, Any]:
        raise NotImplementedError(
            f"{type(self).__name__} must implement step(action) -> (state, reward, done)"
        )

    def close(self) -> bool:
        return True
