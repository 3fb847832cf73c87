"""``Adagrad`` (MindSpore 1.8, ``ApplyAdagrad``): ``accum += g'^2`` (if ``update_slots``),
``w -= lr * g' / sqrt(accum)`` with ``g' = g / loss_scale + wd * w``. State:
``accum.<name>`` filled with ``accum``."""

from __future__ import annotations

from typing import Any

from ...kernels.cpu import optim as K
from . import _updates as U
from ._checks import as_bool, as_float, non_negative
from .optimizer import Optimizer

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """``Adagrad(params, accum=0.1, learning_rate=0.001, update_slots=True, loss_scale=1.0,
    weight_decay=0.0)``."""

    def __init__(
        self,
        params: Any,
        accum: Any = 0.1,
        learning_rate: Any = 0.001,
        update_slots: Any = True,
        loss_scale: Any = 1.0,
        weight_decay: Any = 0.0,
    ) -> None:
        name = type(self).__name__
        self.initial_accum = non_negative(name, "accum", as_float(name, "accum", accum))
        self.update_slots = as_bool(name, "update_slots", update_slots)
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        self.accum = self._new_state("accum", self.initial_accum)

    def _update(self, bank, step, inv_scale, rows):
        a = bank.state("accum")
        if bank.fused and self.fused_kernel:
            typed = bank.typed(bank.lr, bank.wd, inv_scale)
            K.on_blocks(bank.off, lambda off: K.adagrad_kernel(
                bank.flat, bank.grad, a, off, *typed, self.update_slots
            ))  # fmt: skip
        else:
            U.adagrad(
                bank.device.xp, bank.flat, bank.grad, a, bank.off,
                bank.expand(bank.lr), bank.expand(bank.wd), inv_scale, self.update_slots,
            )  # fmt: skip
