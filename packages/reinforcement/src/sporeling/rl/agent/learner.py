"""``Learner``: the part of an algorithm that updates networks from experience."""

from __future__ import annotations

from typing import Any

from sporeling.core import nn


class Learner(nn.Cell):
    """Subclass and implement :meth:`learn`; it returns the loss (a float or a Tensor)."""

    def learn(self, experience: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.learn(experience) is not implemented")

    def construct(self, experience: Any) -> Any:
        return self.learn(experience)
