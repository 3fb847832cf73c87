"""``Actor``: the part of an algorithm that interacts with environments."""

from __future__ import annotations

from typing import Any

from sporeling.core import nn


class Actor(nn.Cell):
    """Subclass and implement :meth:`act` (and :meth:`get_action` where an algorithm needs it).

    ``phase`` is 1 (init: fill the replay buffer), 2 (collect) or 3 (eval), as in 0.5.
    """

    INIT, COLLECT, EVAL = 1, 2, 3

    def act(self, phase: int, params: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.act(phase, params) is not implemented")

    def get_action(self, phase: int, params: Any) -> Any:
        raise NotImplementedError(
            f"{type(self).__name__}.get_action(phase, params) is not implemented"
        )

    def act_init(self, state: Any) -> Any:
        """0.4's name for ``act(INIT, state)``."""
        return self.act(self.INIT, state)

    def evaluate(self, state: Any) -> Any:
        """0.4's name for ``act(EVAL, state)``."""
        return self.act(self.EVAL, state)

    def construct(self, phase: int, params: Any) -> Any:
        return self.act(phase, params)
