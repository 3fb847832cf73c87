"""``Adam``, ``LazyAdam``, ``AdamWeightDecay`` and ``AdamW`` (MindSpore 1.8 / 2.x semantics).

Adam (``ApplyAdam``): ``g' = g / loss_scale + wd * w``; ``m += (1 - b1) (g' - m)``,
``v += (1 - b2) (g'^2 - v)``; ``w -= lr_t * m / (sqrt(v) + eps)`` with
``lr_t = lr * sqrt(1 - b2^t) / (1 - b1^t)`` (Nesterov: ``m * b1 + (1 - b1) g'`` in the
numerator). ``beta1_power``/``beta2_power`` are float32 Parameters multiplied by ``b1``/``b2``
each step. State: ``moment1.<name>``, ``moment2.<name>``.

LazyAdam: as Adam, but for a row-sparse gradient only the rows it names change (their
moments and weights); dense gradients take the Adam step.

AdamWeightDecay (no bias correction, decoupled decay, no loss scale):
``w -= lr * (m / (sqrt(v) + eps) + wd * w)``. State: ``adam_m.<name>``, ``adam_v.<name>``.

AdamW (MindSpore 2.x ``experimental.optim.AdamW`` / PyTorch): ``w *= 1 - lr * wd``, then
``w -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)`` with ``t = global_step``.
Default ``weight_decay=1e-2``, ``eps=1e-8``. State: ``exp_avg.<name>``, ``exp_avg_sq.<name>``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...kernels.cpu import optim as K
from ...tensor import Parameter
from . import _updates as U
from ._checks import as_bool, as_float, in_range, positive
from .optimizer import Optimizer

__all__ = ["Adam", "LazyAdam", "AdamWeightDecay", "AdamW"]


def _check_betas(name: str, beta1: Any, beta2: Any, eps: Any) -> tuple[float, float, float]:
    b1 = in_range(name, "beta1", as_float(name, "beta1", beta1, ints=False), 0.0, 1.0, "(0, 1)")
    b2 = in_range(name, "beta2", as_float(name, "beta2", beta2, ints=False), 0.0, 1.0, "(0, 1)")
    e = positive(name, "eps", as_float(name, "eps", eps, ints=False))
    return b1, b2, e


class Adam(Optimizer):
    """``Adam(params, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, use_locking=False,
    use_nesterov=False, weight_decay=0.0, loss_scale=1.0)``."""

    def __init__(
        self,
        params: Any,
        learning_rate: Any = 1e-3,
        beta1: Any = 0.9,
        beta2: Any = 0.999,
        eps: Any = 1e-8,
        use_locking: Any = False,
        use_nesterov: Any = False,
        weight_decay: Any = 0.0,
        loss_scale: Any = 1.0,
    ) -> None:
        name = type(self).__name__
        self.beta1, self.beta2, self.eps = _check_betas(name, beta1, beta2, eps)
        self.use_locking = as_bool(name, "use_locking", use_locking)
        self.use_nesterov = as_bool(name, "use_nesterov", use_nesterov)
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        self.beta1_power = Parameter(np.ones(1, np.float32), "beta1_power", requires_grad=False)
        self.beta2_power = Parameter(np.ones(1, np.float32), "beta2_power", requires_grad=False)
        self.moment1 = self._new_state("moment1", "zeros")
        self.moment2 = self._new_state("moment2", "zeros")

    def construct(self, gradients: Any) -> bool:
        # The powers advance once per step, before the banks are updated.
        self.beta1_power._data[...] = self.beta1_power._data * np.float32(self.beta1)
        self.beta2_power._data[...] = self.beta2_power._data * np.float32(self.beta2)
        b1p = float(self.beta1_power._data[0])
        b2p = float(self.beta2_power._data[0])
        self._correction = math.sqrt(1.0 - b2p) / (1.0 - b1p)
        return super().construct(gradients)

    def _update(self, bank, step, inv_scale, rows):
        m, v = bank.state("moment1"), bank.state("moment2")
        lr = bank.lr * self._correction
        hyper = (inv_scale, self.beta1, self.beta2, self.eps, self.use_nesterov)
        skip = {slot for slot, _, _ in rows}
        if bank.fused and self.fused_kernel:
            segs = np.array([s for s in range(len(bank.sizes)) if s not in skip], np.int64)
            typed = bank.typed(lr, bank.wd, inv_scale, self.beta1, 1 - self.beta1, 1 - self.beta2)
            eps = bank.dtype.type(self.eps)
            K.on_blocks(bank.off, lambda off: K.adam_kernel(
                bank.flat, bank.grad, m, v, off, segs, *typed, eps, self.use_nesterov,
            ))  # fmt: skip
        else:
            xp = bank.device.xp
            act = None
            if skip:
                act = bank.expand(np.array([s not in skip for s in range(len(bank.sizes))]))
            U.adam(
                xp, bank.flat, bank.grad, m, v, bank.off, act,
                bank.expand(lr), bank.expand(bank.wd), *hyper,
            )  # fmt: skip
        for slot, idx, vals in rows:
            p2 = bank.views[slot].reshape(bank.shapes[slot][0], -1)
            m2 = bank.states["moment1"][2][slot].reshape(p2.shape)
            v2 = bank.states["moment2"][2][slot].reshape(p2.shape)
            if bank.fused and self.fused_kernel:
                typed = bank.typed(
                    lr[slot], bank.wd[slot], inv_scale, self.beta1, 1 - self.beta1,
                    1 - self.beta2, self.eps,
                )  # fmt: skip
                K.lazy_adam_rows_kernel(p2, m2, v2, idx, vals, *typed, self.use_nesterov)
            else:
                args = (p2, m2, v2, idx, vals, float(lr[slot]), float(bank.wd[slot]), *hyper)
                U.lazy_adam_rows(bank.device.xp, *args)


class LazyAdam(Adam):
    """Adam that, for row-sparse gradients, updates only the rows present in the gradient."""

    _rows_supported = True


class AdamWeightDecay(Optimizer):
    """``AdamWeightDecay(params, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-6,
    weight_decay=0.0)``: Adam without bias correction, weight decay added to the update."""

    def __init__(
        self,
        params: Any,
        learning_rate: Any = 1e-3,
        beta1: Any = 0.9,
        beta2: Any = 0.999,
        eps: Any = 1e-6,
        weight_decay: Any = 0.0,
    ) -> None:
        self.beta1, self.beta2, self.eps = _check_betas(type(self).__name__, beta1, beta2, eps)
        super().__init__(learning_rate, params, weight_decay)
        self.moments1 = self._new_state("adam_m", "zeros")
        self.moments2 = self._new_state("adam_v", "zeros")

    def _update_direct(self, bank, step, inv_scale, grads):
        """``_update``'s fused kernel slot by slot on the gradients where they lie."""
        typed = bank.typed(
            bank.lr, bank.wd, self.beta1, 1 - self.beta1, self.beta2, 1 - self.beta2, self.eps
        )
        states = (bank.state("adam_m"), bank.state("adam_v"))
        self._run_slots(bank, grads, K.adam_weight_decay_kernel, states, typed[:2], typed[2:])

    def _update(self, bank, step, inv_scale, rows):
        m, v = bank.state("adam_m"), bank.state("adam_v")
        hyper = (self.beta1, self.beta2, self.eps)
        if bank.fused and self.fused_kernel:
            typed = bank.typed(
                bank.lr, bank.wd, self.beta1, 1 - self.beta1, self.beta2, 1 - self.beta2, self.eps
            )
            K.on_blocks(bank.off, lambda off: K.adam_weight_decay_kernel(
                bank.flat, bank.grad, m, v, off, *typed
            ))  # fmt: skip
        else:
            U.adam_weight_decay(
                bank.device.xp, bank.flat, bank.grad, m, v, bank.off,
                bank.expand(bank.lr), bank.expand(bank.wd), *hyper,
            )  # fmt: skip


class AdamW(Optimizer):
    """``AdamW(params, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-8,
    weight_decay=1e-2)``: decoupled weight decay with bias-corrected Adam (2.x semantics)."""

    def __init__(
        self,
        params: Any,
        learning_rate: Any = 1e-3,
        beta1: Any = 0.9,
        beta2: Any = 0.999,
        eps: Any = 1e-8,
        weight_decay: Any = 1e-2,
    ) -> None:
        self.beta1, self.beta2, self.eps = _check_betas(type(self).__name__, beta1, beta2, eps)
        super().__init__(learning_rate, params, weight_decay)
        self.exp_avg = self._new_state("exp_avg", "zeros")
        self.exp_avg_sq = self._new_state("exp_avg_sq", "zeros")

    def _update_direct(self, bank, step, inv_scale, grads):
        """``_update``'s fused kernel slot by slot on the gradients where they lie."""
        bc1 = 1.0 - self.beta1**step
        bc2 = 1.0 - self.beta2**step
        typed = bank.typed(
            1.0 - bank.lr * bank.wd, bank.lr / bc1, self.beta1, 1 - self.beta1,
            self.beta2, 1 - self.beta2, self.eps, math.sqrt(bc2),
        )  # fmt: skip
        states = (bank.state("exp_avg"), bank.state("exp_avg_sq"))
        self._run_slots(bank, grads, K.adamw_kernel, states, typed[:2], typed[2:])

    def _update(self, bank, step, inv_scale, rows):
        m, v = bank.state("exp_avg"), bank.state("exp_avg_sq")
        bc1 = 1.0 - self.beta1**step
        bc2 = 1.0 - self.beta2**step
        hyper = (self.beta1, self.beta2, self.eps, bc1, bc2)
        if bank.fused and self.fused_kernel:
            typed = bank.typed(
                1.0 - bank.lr * bank.wd, bank.lr / bc1, self.beta1, 1 - self.beta1,
                self.beta2, 1 - self.beta2, self.eps, math.sqrt(bc2),
            )  # fmt: skip
            K.on_blocks(bank.off, lambda off: K.adamw_kernel(
                bank.flat, bank.grad, m, v, off, *typed
            ))  # fmt: skip
        else:
            U.adamw(
                bank.device.xp, bank.flat, bank.grad, m, v, bank.off,
                bank.expand(bank.lr), bank.expand(bank.wd), *hyper,
            )  # fmt: skip
