"""Learning-rate schedules as Cells (MindSpore 1.8's ``nn.learning_rate_schedule``).

A :class:`LearningRateSchedule` maps the optimizer's ``global_step`` (an int32 Tensor) to the
learning rate of that step, a float32 scalar Tensor. ``p = global_step / decay_steps``
(floored when ``is_stair``):

- ``ExponentialDecayLR``: ``lr * decay_rate ** p``
- ``NaturalExpDecayLR``: ``lr * exp(-decay_rate * p)``
- ``InverseDecayLR``: ``lr / (1 + decay_rate * p)``
- ``CosineDecayLR``: ``min_lr + (max_lr - min_lr) * (1 + cos(pi * min(step, decay_steps) /
  decay_steps)) / 2``
- ``PolynomialDecayLR``: ``(lr - end_lr) * (1 - step' / decay_steps') ** power + end_lr``
- ``WarmUpLR``: ``lr * min(step, warmup_steps) / warmup_steps``
- ``WarmUpCosineDecayLR`` (Sporeling's warmup + cosine): linear warmup to ``max_lr`` over
  ``warmup_steps``, then ``CosineDecayLR(min_lr, max_lr, decay_steps)`` of the steps after it.

>>> from sporeling.core import Tensor, int32
>>> round(float(ExponentialDecayLR(0.1, 0.9, 4)(Tensor(2, int32))), 6)  # 0.1 * 0.9 ** 0.5
0.094868
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import describe
from ..tensor import Tensor
from .cell import Cell

__all__ = [
    "LearningRateSchedule",
    "ExponentialDecayLR",
    "NaturalExpDecayLR",
    "InverseDecayLR",
    "CosineDecayLR",
    "PolynomialDecayLR",
    "WarmUpLR",
    "WarmUpCosineDecayLR",
]


def _float(cls: str, arg: str, value: Any, *, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, float):
        raise TypeError(f"{cls}: argument '{arg}' expected a float, got {describe(value)}")
    if positive and not value > 0:
        raise ValueError(f"{cls}: argument '{arg}' expected a float > 0, got {value!r}")
    if not positive and value < 0:
        raise ValueError(f"{cls}: argument '{arg}' expected a float >= 0, got {value!r}")
    return float(value)


def _pos_int(cls: str, arg: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{cls}: argument '{arg}' expected an int, got {describe(value)}")
    if value <= 0:
        raise ValueError(f"{cls}: argument '{arg}' expected an int > 0, got {value!r}")
    return int(value)


def _bool(cls: str, arg: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{cls}: argument '{arg}' expected a bool, got {describe(value)}")
    return value


def _step(global_step: Any) -> float:
    if isinstance(global_step, Tensor):
        return float(global_step.asnumpy().reshape(-1)[0])
    return float(global_step)


class LearningRateSchedule(Cell):
    """Base class: ``construct(global_step) -> Tensor`` (float32 learning rate)."""

    def __init__(self) -> None:
        super().__init__()

    def construct(self, global_step: Any) -> Tensor:
        return Tensor(np.float32(self.value(_step(global_step))))

    def value(self, step: float) -> float:
        """The learning rate at ``step`` as a Python float."""
        raise NotImplementedError(f"{type(self).__name__} must define value(step)")


class _DecayLR(LearningRateSchedule):
    def __init__(self, learning_rate: float, decay_rate: float, decay_steps: int, is_stair=False):
        super().__init__()
        name = type(self).__name__
        self.learning_rate = _float(name, "learning_rate", learning_rate, positive=True)
        self.decay_rate = _float(name, "decay_rate", decay_rate, positive=True)
        self.decay_steps = _pos_int(name, "decay_steps", decay_steps)
        self.is_stair = _bool(name, "is_stair", is_stair)

    def _p(self, step: float) -> float:
        p = step / self.decay_steps
        return math.floor(p) if self.is_stair else p

    def extend_repr(self) -> str:
        return (
            f"learning_rate={self.learning_rate}, decay_rate={self.decay_rate}, "
            f"decay_steps={self.decay_steps}, is_stair={self.is_stair}"
        )


class ExponentialDecayLR(_DecayLR):
    """``learning_rate * decay_rate ** p`` with ``p = global_step / decay_steps``."""

    def value(self, step: float) -> float:
        return self.learning_rate * self.decay_rate ** self._p(step)


class NaturalExpDecayLR(_DecayLR):
    """``learning_rate * exp(-decay_rate * p)`` with ``p = global_step / decay_steps``."""

    def value(self, step: float) -> float:
        return self.learning_rate * math.exp(-self.decay_rate * self._p(step))


class InverseDecayLR(_DecayLR):
    """``learning_rate / (1 + decay_rate * p)`` with ``p = global_step / decay_steps``."""

    def value(self, step: float) -> float:
        return self.learning_rate / (1.0 + self.decay_rate * self._p(step))


class CosineDecayLR(LearningRateSchedule):
    """Cosine decay from ``max_lr`` to ``min_lr`` over ``decay_steps`` steps, then flat."""

    def __init__(self, min_lr: float, max_lr: float, decay_steps: int) -> None:
        super().__init__()
        self.min_lr = _float("CosineDecayLR", "min_lr", min_lr)
        self.max_lr = _float("CosineDecayLR", "max_lr", max_lr, positive=True)
        if self.min_lr >= self.max_lr:
            raise ValueError(
                f"CosineDecayLR: argument 'max_lr' expected a value > min_lr ({min_lr}), "
                f"got {max_lr!r}"
            )
        self.decay_steps = _pos_int("CosineDecayLR", "decay_steps", decay_steps)

    def value(self, step: float) -> float:
        p = min(step, self.decay_steps) / self.decay_steps
        return self.min_lr + 0.5 * (self.max_lr - self.min_lr) * (1.0 + math.cos(math.pi * p))

    def extend_repr(self) -> str:
        return f"min_lr={self.min_lr}, max_lr={self.max_lr}, decay_steps={self.decay_steps}"


class PolynomialDecayLR(LearningRateSchedule):
    """Polynomial decay; with ``update_decay_steps`` the horizon grows by ``decay_steps``."""

    def __init__(
        self,
        learning_rate: float,
        end_learning_rate: float,
        decay_steps: int,
        power: float,
        update_decay_steps: bool = False,
    ) -> None:
        super().__init__()
        name = "PolynomialDecayLR"
        self.learning_rate = _float(name, "learning_rate", learning_rate, positive=True)
        self.end_learning_rate = _float(name, "end_learning_rate", end_learning_rate)
        self.decay_steps = _pos_int(name, "decay_steps", decay_steps)
        self.power = _float(name, "power", power, positive=True)
        self.update_decay_steps = _bool(name, "update_decay_steps", update_decay_steps)

    def value(self, step: float) -> float:
        if self.update_decay_steps:
            decay_steps = self.decay_steps * max(math.ceil(step / self.decay_steps), 1)
            p = step / decay_steps
        else:
            p = min(step, self.decay_steps) / self.decay_steps
        delta = self.learning_rate - self.end_learning_rate
        return delta * (1.0 - p) ** self.power + self.end_learning_rate

    def extend_repr(self) -> str:
        return (
            f"learning_rate={self.learning_rate}, end_learning_rate={self.end_learning_rate}, "
            f"decay_steps={self.decay_steps}, power={self.power}"
        )


class WarmUpLR(LearningRateSchedule):
    """``learning_rate * min(global_step, warmup_steps) / warmup_steps``."""

    def __init__(self, learning_rate: float, warmup_steps: int) -> None:
        super().__init__()
        self.learning_rate = _float("WarmUpLR", "learning_rate", learning_rate, positive=True)
        self.warmup_steps = _pos_int("WarmUpLR", "warmup_steps", warmup_steps)

    def value(self, step: float) -> float:
        return self.learning_rate * min(step, self.warmup_steps) / self.warmup_steps

    def extend_repr(self) -> str:
        return f"learning_rate={self.learning_rate}, warmup_steps={self.warmup_steps}"


class WarmUpCosineDecayLR(LearningRateSchedule):
    """Linear warmup ``max_lr * step / warmup_steps``, then cosine decay to ``min_lr``.

    Steps ``0 .. warmup_steps - 1`` warm up (step 0 gives 0, as ``WarmUpLR``); step
    ``warmup_steps + k`` gives ``CosineDecayLR(min_lr, max_lr, decay_steps)`` at ``k``.
    """

    def __init__(self, min_lr: float, max_lr: float, warmup_steps: int, decay_steps: int) -> None:
        super().__init__()
        self.warmup_steps = _pos_int("WarmUpCosineDecayLR", "warmup_steps", warmup_steps)
        self.cosine = CosineDecayLR(min_lr, max_lr, decay_steps)

    def value(self, step: float) -> float:
        if step < self.warmup_steps:
            return self.cosine.max_lr * step / self.warmup_steps
        return self.cosine.value(step - self.warmup_steps)

    def extend_repr(self) -> str:
        return f"warmup_steps={self.warmup_steps}"
