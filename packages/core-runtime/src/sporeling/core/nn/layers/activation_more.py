"""Activation cells added for ported scripts: ``RReLU``, ``Tanhshrink``, ``Softmax2d``, and the
``L1Regularizer`` cell (a penalty on weights)."""

from __future__ import annotations

from typing import Any

from ... import ops
from ...tensor import Tensor
from ..cell import Cell
from ._utils import arg_error, check_float, check_input

__all__ = ["RReLU", "Tanhshrink", "Softmax2d", "L1Regularizer"]


class RReLU(Cell):
    """Randomized leaky ReLU: ``x`` where ``x >= 0``, else ``a * x`` with ``a`` drawn from
    U(lower, upper) per element in training and ``(lower + upper) / 2`` in evaluation."""

    def __init__(self, lower: float = 1 / 8, upper: float = 1 / 3) -> None:
        super().__init__()
        self.lower = check_float("RReLU", "lower", lower)
        self.upper = check_float("RReLU", "upper", upper)
        if self.lower > self.upper:
            raise arg_error("RReLU", "lower", lower, f"a value <= upper ({upper})")

    def construct(self, x: Tensor) -> Tensor:
        x = check_input("RReLU", x, tuple(range(0, 33)), "any shape")
        if self.training:
            a = ops.uniform(x.shape, Tensor(self.lower), Tensor(self.upper), dtype=x.dtype)
        else:
            a = ops.cast(Tensor((self.lower + self.upper) / 2), x.dtype)
        return ops.select(x >= 0, x, x * a)


class Tanhshrink(Cell):
    """``x - tanh(x)``."""

    def construct(self, x: Tensor) -> Tensor:
        x = check_input("Tanhshrink", x, tuple(range(0, 33)), "any shape")
        return x - ops.tanh(x)


class Softmax2d(Cell):
    """Softmax over the channel axis of a (C, H, W) or (N, C, H, W) input."""

    def construct(self, x: Tensor) -> Tensor:
        x = check_input("Softmax2d", x, (3, 4), "(C, H, W) or (N, C, H, W)")
        return ops.softmax(x, -3)


class L1Regularizer(Cell):
    """``scale * sum(|weights|)`` (a loss term): ``scale`` must be a positive float."""

    def __init__(self, scale: Any) -> None:
        super().__init__()
        self.scale = check_float("L1Regularizer", "scale", scale, 0.0, None, low_open=True)

    def construct(self, weights: Tensor) -> Tensor:
        if not isinstance(weights, Tensor):
            raise TypeError(f"L1Regularizer: input 'weights' expected a Tensor, got {weights!r}")
        return ops.reduce_sum(ops.abs(weights)) * self.scale
