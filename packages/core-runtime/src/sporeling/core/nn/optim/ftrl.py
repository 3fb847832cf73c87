"""``FTRL`` (MindSpore 1.8, ``ApplyFtrl``/``SparseApplyFtrl``): follow-the-regularized-leader.

With ``g' = g / loss_scale + wd * w`` and ``a' = accum + g'^2``:
``linear += g' - (a'^(-lr_power) - accum^(-lr_power)) / lr * w``;
``w = (sign(linear) * l1 - linear) / (a'^(-lr_power) / lr + 2 * l2)`` if ``|linear| > l1``
else 0; ``accum = a'``. Row-sparse gradients update only their rows. The learning rate must
be a fixed float (no schedules, no group rates). State: ``moments.<name>`` (filled with
``initial_accum``), ``linear.<name>`` (zeros).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...kernels.cpu import optim as K
from . import _updates as U
from ._checks import as_bool, as_float, non_negative
from .optimizer import Optimizer

__all__ = ["FTRL"]


class FTRL(Optimizer):
    """``FTRL(params, initial_accum=0.1, learning_rate=0.001, lr_power=-0.5, l1=0.0, l2=0.0,
    use_locking=False, loss_scale=1.0, weight_decay=0.0)``."""

    _rows_supported = True

    def __init__(
        self,
        params: Any,
        initial_accum: Any = 0.1,
        learning_rate: Any = 0.001,
        lr_power: Any = -0.5,
        l1: Any = 0.0,
        l2: Any = 0.0,
        use_locking: Any = False,
        loss_scale: Any = 1.0,
        weight_decay: Any = 0.0,
    ) -> None:
        name = type(self).__name__
        self.initial_accum = non_negative(
            name, "initial_accum", as_float(name, "initial_accum", initial_accum)
        )
        self.lr_power = as_float(name, "lr_power", lr_power)
        if self.lr_power > 0:
            raise ValueError(f"{name}: argument 'lr_power' expected a value <= 0, got {lr_power}")
        self.l1 = non_negative(name, "l1", as_float(name, "l1", l1))
        self.l2 = non_negative(name, "l2", as_float(name, "l2", l2))
        self.use_locking = as_bool(name, "use_locking", use_locking)
        if isinstance(learning_rate, bool) or not isinstance(learning_rate, (int, float)):
            raise TypeError(
                f"{name}: argument 'learning_rate' expected a float (dynamic learning rates are "
                f"not supported), got {type(learning_rate).__name__}"
            )
        if not learning_rate > 0:
            raise ValueError(f"{name}: argument 'learning_rate' expected a value > 0")
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        if self.is_group_lr or self.dynamic_lr:
            raise ValueError(f"{name}: dynamic or group learning rates are not supported")
        self.moments = self._new_state("moments", self.initial_accum)
        self.linear = self._new_state("linear", "zeros")

    def _update(self, bank, step, inv_scale, rows):
        a, lin = bank.state("moments"), bank.state("linear")
        hyper = (inv_scale, self.l1, self.l2, self.lr_power)
        skip = {slot for slot, _, _ in rows}
        fused = bank.fused and self.fused_kernel
        if fused:
            segs = np.array([s for s in range(len(bank.sizes)) if s not in skip], np.int64)
            K.ftrl_kernel(bank.flat, bank.grad, a, lin, bank.off, segs, bank.lr, bank.wd, *hyper)
        else:
            act = None
            if skip:
                act = bank.expand(np.array([s not in skip for s in range(len(bank.sizes))]))
            U.ftrl(
                bank.device.xp, bank.flat, bank.grad, a, lin, bank.off, act,
                bank.expand(bank.lr), bank.expand(bank.wd), *hyper,
            )  # fmt: skip
        for slot, idx, vals in rows:
            p2 = bank.views[slot].reshape(bank.shapes[slot][0], -1)
            a2 = bank.states["moments"][2][slot].reshape(p2.shape)
            l2_ = bank.states["linear"][2][slot].reshape(p2.shape)
            args = (p2, a2, l2_, idx, vals, float(bank.lr[slot]), float(bank.wd[slot]), *hyper)
            if fused:
                K.ftrl_rows_kernel(*args)
            else:
                U.ftrl_rows(bank.device.xp, *args)
