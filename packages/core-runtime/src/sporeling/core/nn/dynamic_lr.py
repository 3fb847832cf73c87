"""Per-step learning-rate lists (MindSpore 1.8's ``nn.dynamic_lr``).

Each function returns a ``list[float]`` of ``total_step`` values to pass as an optimizer's
``learning_rate``; ``current_epoch = floor(i / step_per_epoch)`` for step ``i``.

>>> piecewise_constant_lr([2, 5], [0.1, 0.05])
[0.1, 0.1, 0.05, 0.05, 0.05]
>>> cosine_decay_lr(0.01, 0.1, 6, 2, 2)
[0.1, 0.1, 0.05500000000000001, 0.05500000000000001, 0.01, 0.01]
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import describe
from .learning_rate_schedule import _bool, _float, _pos_int

__all__ = [
    "piecewise_constant_lr",
    "exponential_decay_lr",
    "natural_exp_decay_lr",
    "inverse_decay_lr",
    "cosine_decay_lr",
    "polynomial_decay_lr",
    "warmup_lr",
]


def piecewise_constant_lr(milestone: Any, learning_rates: Any) -> list[float]:
    """``learning_rates[t]`` for steps in ``[milestone[t-1], milestone[t])``."""
    name = "piecewise_constant_lr"
    for arg, val in (("milestone", milestone), ("learning_rates", learning_rates)):
        if not isinstance(val, (list, tuple)):
            raise TypeError(
                f"{name}: argument '{arg}' expected a list or tuple, got {describe(val)}"
            )
    if len(milestone) != len(learning_rates):
        raise ValueError(
            f"{name}: arguments 'milestone' and 'learning_rates' expected the same length, "
            f"got {len(milestone)} and {len(learning_rates)}"
        )
    lr: list[float] = []
    last = 0
    for i, item in enumerate(milestone):
        _pos_int(name, f"milestone[{i}]", item)
        if isinstance(learning_rates[i], bool) or not isinstance(learning_rates[i], float):
            raise TypeError(
                f"{name}: argument 'learning_rates[{i}]' expected a float, "
                f"got {describe(learning_rates[i])}"
            )
        if item < last:
            raise ValueError(
                f"{name}: argument 'milestone' expected increasing values, "
                f"got milestone[{i}]={item} < {last}"
            )
        lr += [learning_rates[i]] * (item - last)
        last = item
    return lr


def _check(name, learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch, is_stair):
    _pos_int(name, "total_step", total_step)
    _pos_int(name, "step_per_epoch", step_per_epoch)
    _pos_int(name, "decay_epoch", decay_epoch)
    _float(name, "learning_rate", learning_rate, positive=True)
    _float(name, "decay_rate", decay_rate, positive=True)
    _bool(name, "is_stair", is_stair)


def exponential_decay_lr(
    learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch, is_stair=False
) -> list[float]:
    """``learning_rate * decay_rate ** (current_epoch / decay_epoch)`` (floored if stair)."""
    _check(
        "exponential_decay_lr",
        learning_rate,
        decay_rate,
        total_step,
        step_per_epoch,
        decay_epoch,
        is_stair,
    )
    out = []
    for i in range(total_step):
        p = math.floor(i / step_per_epoch) / decay_epoch
        out.append(learning_rate * decay_rate ** (math.floor(p) if is_stair else p))
    return out


def natural_exp_decay_lr(
    learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch, is_stair=False
) -> list[float]:
    """``learning_rate * e ** (-decay_rate * current_epoch)``; with ``is_stair`` the epoch is
    rounded down to a multiple of ``decay_epoch`` (MindSpore's formula, no division)."""
    _check(
        "natural_exp_decay_lr",
        learning_rate,
        decay_rate,
        total_step,
        step_per_epoch,
        decay_epoch,
        is_stair,
    )
    out = []
    for i in range(total_step):
        epoch = math.floor(i / step_per_epoch)
        if is_stair:
            epoch = math.floor(epoch / decay_epoch) * decay_epoch
        out.append(learning_rate * math.e ** (-decay_rate * epoch))
    return out


def inverse_decay_lr(
    learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch, is_stair=False
) -> list[float]:
    """``learning_rate / (1 + decay_rate * current_epoch / decay_epoch)`` (floored if stair)."""
    _check(
        "inverse_decay_lr",
        learning_rate,
        decay_rate,
        total_step,
        step_per_epoch,
        decay_epoch,
        is_stair,
    )
    out = []
    for i in range(total_step):
        epoch = math.floor(i / step_per_epoch)
        if is_stair:
            out.append(learning_rate / (1 + decay_rate * math.floor(epoch / decay_epoch)))
        else:
            out.append(learning_rate / (1 + decay_rate * epoch / decay_epoch))
    return out


def cosine_decay_lr(min_lr, max_lr, total_step, step_per_epoch, decay_epoch) -> list[float]:
    """``min_lr + (max_lr - min_lr) * (1 + cos(pi * min(epoch, decay_epoch) / decay_epoch)) / 2``
    (MindSpore's cosine decay, by epoch)."""
    name = "cosine_decay_lr"
    _float(name, "min_lr", min_lr)
    _float(name, "max_lr", max_lr, positive=True)
    _pos_int(name, "total_step", total_step)
    _pos_int(name, "step_per_epoch", step_per_epoch)
    _pos_int(name, "decay_epoch", decay_epoch)
    if min_lr >= max_lr:
        raise ValueError(
            f"{name}: argument 'max_lr' expected a value > min_lr ({min_lr}), got {max_lr!r}"
        )
    delta = 0.5 * (max_lr - min_lr)
    out = []
    for i in range(total_step):
        epoch = min(math.floor(i / step_per_epoch), decay_epoch)
        out.append(min_lr + delta * (1 + math.cos(math.pi * epoch / decay_epoch)))
    return out


def polynomial_decay_lr(
    learning_rate,
    end_learning_rate,
    total_step,
    step_per_epoch,
    decay_epoch,
    power,
    update_decay_epoch=False,
) -> list[float]:
    """``(learning_rate - end) * (1 - epoch' / decay_epoch') ** power + end``."""
    name = "polynomial_decay_lr"
    _float(name, "learning_rate", learning_rate, positive=True)
    _float(name, "end_learning_rate", end_learning_rate)
    _float(name, "power", power, positive=True)
    _pos_int(name, "total_step", total_step)
    _pos_int(name, "step_per_epoch", step_per_epoch)
    _pos_int(name, "decay_epoch", decay_epoch)
    _bool(name, "update_decay_epoch", update_decay_epoch)
    delta = learning_rate - end_learning_rate
    out = []
    for i in range(total_step):
        epoch = math.floor(i / step_per_epoch)
        if update_decay_epoch:
            horizon = decay_epoch * max(math.ceil(epoch / decay_epoch), 1)
            tmp = epoch
        else:
            horizon, tmp = decay_epoch, min(epoch, decay_epoch)
        out.append(delta * (1 - tmp / horizon) ** power + end_learning_rate)
    return out


def warmup_lr(learning_rate, total_step, step_per_epoch, warmup_epoch) -> list[float]:
    """``learning_rate * min(current_epoch, warmup_epoch) / warmup_epoch``."""
    name = "warmup_lr"
    _float(name, "learning_rate", learning_rate)
    _pos_int(name, "warmup_epoch", warmup_epoch)
    _pos_int(name, "total_step", total_step)
    _pos_int(name, "step_per_epoch", step_per_epoch)
    return [
        learning_rate * min(math.floor(i / step_per_epoch), warmup_epoch) / warmup_epoch
        for i in range(total_step)
    ]
