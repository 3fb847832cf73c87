"""``SGD`` and ``Momentum`` (MindSpore 1.8 signatures, ``ApplyMomentum``/``SGD`` kernels).

SGD (``g' = g / loss_scale + weight_decay * w``): with ``momentum > 0`` the accumulator is
``a = g'`` on the first step and ``a = momentum * a + (1 - dampening) * g'`` after; the step is
``w -= lr * (g' + momentum * a)`` with Nesterov, ``w -= lr * a`` otherwise (``w -= lr * g'``
without momentum). Weight decay applies to every parameter (it is an argument of the
kernel, not the base class's name-filtered decay). State: ``accum.<name>`` (zeros) and
``stat.<name>`` (ones, 0 after step 1).

Momentum: ``a = momentum * a + g'``; ``w -= lr * (g' + momentum * a)`` with Nesterov, else
``w -= lr * a``. State: ``moments.<name>``.
"""

from __future__ import annotations

from typing import Any

from ...kernels.cpu import optim as K
from . import _updates as U
from ._checks import as_bool, as_float, non_negative
from .optimizer import Optimizer

__all__ = ["SGD", "Momentum"]


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum, dampening and Nesterov."""

    def __init__(
        self,
        params: Any,
        learning_rate: Any = 0.1,
        momentum: Any = 0.0,
        dampening: Any = 0.0,
        weight_decay: Any = 0.0,
        nesterov: Any = False,
        loss_scale: Any = 1.0,
    ) -> None:
        name = type(self).__name__
        self.momentum = non_negative(name, "momentum", as_float(name, "momentum", momentum))
        self.dampening = as_float(name, "dampening", dampening)
        self.nesterov = as_bool(name, "nesterov", nesterov)
        if self.nesterov and (self.momentum <= 0.0 or self.dampening != 0.0):
            raise ValueError(
                f"{name}: nesterov=True needs momentum > 0 and dampening = 0, got "
                f"momentum={self.momentum} and dampening={self.dampening}"
            )
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        # MindSpore's SGD kernel decays every parameter (no 'beta'/'gamma' name filter).
        self.decay_flags = (True,) * len(self.parameters)
        self.accum = self._new_state("accum", "zeros")
        self.stat = self._new_state("stat", "ones")

    def _update_direct(self, bank, step, inv_scale, grads):
        """``_update``'s fused kernel slot by slot on the gradients where they lie."""
        typed = bank.typed(bank.lr, bank.wd, inv_scale, self.momentum, 1.0 - self.dampening)
        states = (bank.state("accum"), bank.state("stat"))
        scalars = (*typed[2:], self.nesterov)
        self._run_slots(bank, grads, K.sgd_kernel, states, typed[:2], scalars)

    def _update(self, bank, step, inv_scale, rows):
        args = (bank.state("accum"), bank.state("stat"), bank.off)
        hyper = (inv_scale, self.momentum, self.dampening, self.nesterov)
        if bank.fused and self.fused_kernel:
            typed = bank.typed(bank.lr, bank.wd, inv_scale, self.momentum, 1.0 - self.dampening)
            accum, stat, _ = args
            K.on_blocks(bank.off, lambda off: K.sgd_kernel(
                bank.flat, bank.grad, accum, stat, off, *typed, self.nesterov
            ))  # fmt: skip
        else:
            U.sgd(
                bank.device.xp, bank.flat, bank.grad, *args,
                bank.expand(bank.lr), bank.expand(bank.wd), *hyper,
            )  # fmt: skip


class Momentum(Optimizer):
    """Momentum SGD: ``Momentum(params, learning_rate, momentum, weight_decay=0.0,
    loss_scale=1.0, use_nesterov=False)``."""

    def __init__(
        self,
        params: Any,
        learning_rate: Any,
        momentum: Any,
        weight_decay: Any = 0.0,
        loss_scale: Any = 1.0,
        use_nesterov: Any = False,
    ) -> None:
        name = type(self).__name__
        self.momentum = non_negative(name, "momentum", as_float(name, "momentum", momentum))
        self.use_nesterov = as_bool(name, "use_nesterov", use_nesterov)
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        self.moments = self._new_state("moments", "zeros")

    def _update_direct(self, bank, step, inv_scale, grads):
        """The fused kernel slot by slot, on the gradients where they lie (no gather copy);
        the same arithmetic, element by element, as ``_update``'s one call."""
        lr, wd, inv, mom = bank.typed(bank.lr, bank.wd, inv_scale, self.momentum)
        states = (bank.state("moments"),)
        scalars = (inv, mom, self.use_nesterov)
        self._run_slots(bank, grads, K.momentum_kernel, states, (lr, wd), scalars)

    def _update(self, bank, step, inv_scale, rows):
        m = bank.state("moments")
        if bank.fused and self.fused_kernel:
            typed = bank.typed(bank.lr, bank.wd, inv_scale, self.momentum)
            K.on_blocks(bank.off, lambda off: K.momentum_kernel(
                bank.flat, bank.grad, m, off, *typed, self.use_nesterov
            ))  # fmt: skip
        else:
            U.momentum(
                bank.device.xp, bank.flat, bank.grad, m, bank.off,
                bank.expand(bank.lr), bank.expand(bank.wd), inv_scale,
                self.momentum, self.use_nesterov,
            )  # fmt: skip
