"""``RMSProp`` (MindSpore 1.8, ``ApplyRMSProp``/``ApplyCenteredRMSProp``).

``ms += (1 - decay) (g'^2 - ms)``; centered also ``mg += (1 - decay) (g' - mg)`` and uses
``ms - mg^2``; ``mom = momentum * mom + lr * g' / sqrt(ms [- mg^2] + epsilon)``; ``w -= mom``.
State: ``mean_square.<name>`` (ones), ``moment.<name>`` (zeros), and ``mean_grad.<name>``
(zeros) when centered.
"""

from __future__ import annotations

from typing import Any

from ...kernels.cpu import optim as K
from . import _updates as U
from ._checks import as_bool, as_float, in_range, non_negative, positive
from .optimizer import Optimizer

__all__ = ["RMSProp"]


class RMSProp(Optimizer):
    """``RMSProp(params, learning_rate=0.1, decay=0.9, momentum=0.0, epsilon=1e-10,
    use_locking=False, centered=False, loss_scale=1.0, weight_decay=0.0)``."""

    def __init__(
        self,
        params: Any,
        learning_rate: Any = 0.1,
        decay: Any = 0.9,
        momentum: Any = 0.0,
        epsilon: Any = 1e-10,
        use_locking: Any = False,
        centered: Any = False,
        loss_scale: Any = 1.0,
        weight_decay: Any = 0.0,
    ) -> None:
        name = type(self).__name__
        self.decay = in_range(name, "decay", as_float(name, "decay", decay), 0.0, 1.0, "[0, 1]")
        self.momentum = non_negative(name, "momentum", as_float(name, "momentum", momentum))
        self.epsilon = positive(name, "epsilon", as_float(name, "epsilon", epsilon))
        self.use_locking = as_bool(name, "use_locking", use_locking)
        self.centered = as_bool(name, "centered", centered)
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        if self.centered:
            self.mg = self._new_state("mean_grad", "zeros")
        self.ms = self._new_state("mean_square", "ones")
        self.moment = self._new_state("moment", "zeros")

    def _update(self, bank, step, inv_scale, rows):
        ms, mom = bank.state("mean_square"), bank.state("moment")
        mg = bank.state("mean_grad") if self.centered else ms  # unused when not centered
        hyper = (inv_scale, self.decay, self.momentum, self.epsilon, self.centered)
        if bank.fused and self.fused_kernel:
            typed = bank.typed(
                bank.lr, bank.wd, inv_scale, 1 - self.decay, self.momentum, self.epsilon
            )
            K.on_blocks(bank.off, lambda off: K.rmsprop_kernel(
                bank.flat, bank.grad, ms, mom, mg, off, *typed, self.centered
            ))  # fmt: skip
        else:
            U.rmsprop(
                bank.device.xp, bank.flat, bank.grad, ms, mom, mg, bank.off,
                bank.expand(bank.lr), bank.expand(bank.wd), *hyper,
            )  # fmt: skip
