"""``Lamb`` (MindSpore 1.8): layer-wise adaptive moments.

With ``t = global_step`` (1 on the first step): ``m = b1 m + (1 - b1) g``,
``v = b2 v + (1 - b2) g^2``, ``u = (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) + wd * w``,
``w -= lr * r * u`` with the trust ratio ``r = ||w|| / ||u||`` per parameter (1 when either
norm is 0). No loss scale. State: ``lamb_m.<name>``, ``lamb_v.<name>``.
"""

from __future__ import annotations

from typing import Any

from ...kernels.cpu import optim as K
from . import _updates as U
from .adam import _check_betas
from .optimizer import Optimizer

__all__ = ["Lamb"]


class Lamb(Optimizer):
    """``Lamb(params, learning_rate, beta1=0.9, beta2=0.999, eps=1e-6, weight_decay=0.0)``."""

    def __init__(
        self,
        params: Any,
        learning_rate: Any,
        beta1: Any = 0.9,
        beta2: Any = 0.999,
        eps: Any = 1e-6,
        weight_decay: Any = 0.0,
    ) -> None:
        self.beta1, self.beta2, self.eps = _check_betas(type(self).__name__, beta1, beta2, eps)
        super().__init__(learning_rate, params, weight_decay)
        self.moments1 = self._new_state("lamb_m", "zeros")
        self.moments2 = self._new_state("lamb_v", "zeros")

    def _update(self, bank, step, inv_scale, rows):
        m, v = bank.state("lamb_m"), bank.state("lamb_v")
        hyper = (self.beta1, self.beta2, self.eps, 1.0 - self.beta1**step, 1.0 - self.beta2**step)
        if bank.fused and self.fused_kernel:
            K.lamb_kernel(bank.flat, bank.grad, m, v, bank.off, bank.lr, bank.wd, *hyper)
        else:
            U.lamb(
                bank.device.xp, bank.flat, bank.grad, m, v, bank.off,
                bank.expand(bank.lr), bank.expand(bank.wd), *hyper,
            )  # fmt: skip
