"""``mindspore.common.tensor``: ``Tensor``."""

from ..tensor import Tensor

__all__ = ["Tensor"]
