"""``nn.SyncBatchNorm`` (MindSpore 1.8): batch norm whose statistics span every rank's batch.

When the communication backend is initialised with more than one rank in the group, the
per-channel mean and variance are all-reduced over that group (two all-reduces: the sum,
then the sum of squared deviations, which is steadier than ``E[x^2] - E[x]^2``), so each
rank normalises with the full batch's statistics and gradients flow through the
all-reduces. Otherwise (no ``init()``, a world of one, or evaluation with the moving
statistics) it is exactly :class:`BatchNorm2d`.

``process_groups`` is MindSpore's: a list of lists of world ranks; each rank syncs with the
list that holds it (a group ``sync_bn_group<i>`` is created for it at construction).
"""

from __future__ import annotations

from typing import Any

from ... import _hooks, ops
from ...tensor import Tensor
from .normalization import _BatchNorm

__all__ = ["SyncBatchNorm"]


class SyncBatchNorm(_BatchNorm):
    """Batch normalization of ``(N, C)`` or ``(N, C, H, W)`` with cross-rank statistics.

    >>> import numpy as np
    >>> bn = SyncBatchNorm(3).set_train()  # no init(): plain batch norm
    >>> bn(Tensor(np.ones((2, 3, 2, 2), np.float32))).shape
    (2, 3, 2, 2)
    """

    _ndims = (2, 4)
    _layout = "N, C or N, C, H, W"

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float = 0.9,
        affine: bool = True,
        gamma_init: Any = "ones",
        beta_init: Any = "zeros",
        moving_mean_init: Any = "zeros",
        moving_var_init: Any = "ones",
        use_batch_statistics: bool | None = None,
        process_groups: Any = None,
    ) -> None:
        super().__init__(
            num_features,
            eps,
            momentum,
            affine,
            gamma_init,
            beta_init,
            moving_mean_init,
            moving_var_init,
            use_batch_statistics,
            "NCHW",
            ("NCHW",),
        )
        self.process_groups = process_groups
        self.group = _hooks.parallel.sync_group(process_groups)  # filled by communication

    def construct(self, x: Tensor) -> Tensor:
        use_batch = (
            self.training if self.use_batch_statistics is None else self.use_batch_statistics
        )
        if self.group is None or not use_batch:
            return super().construct(x)
        return _synced(self, x, _hooks.parallel.all_reduce)


def _synced(bn: SyncBatchNorm, x: Tensor, all_reduce: Any) -> Tensor:
    from ._utils import check_channels, check_input

    x = check_input(bn.cls_name, x, bn._ndims, bn._layout)
    check_channels(bn.cls_name, x, 1, bn.num_features, "num_features")
    axes = (0,) if x.ndim == 2 else (0, 2, 3)
    shape = (1, -1) if x.ndim == 2 else (1, -1, 1, 1)
    local = 1
    for a in axes:
        local *= x.shape[a]
    count = all_reduce(ops.cast(Tensor(float(local)), x.dtype), group=bn.group)
    mean = all_reduce(ops.reduce_sum(x, axes), group=bn.group) / count
    centred = x - ops.reshape(mean, shape)
    var = all_reduce(ops.reduce_sum(centred * centred, axes), group=bn.group) / count
    y = centred * ops.reshape(ops.rsqrt(var + bn.eps), shape)
    y = y * ops.reshape(bn.gamma, shape) + ops.reshape(bn.beta, shape)
    m = bn.momentum
    unbiased = var * (count / ops.maximum(count - 1.0, ops.ones_like(count)))
    mean_d, var_d = ops.stop_gradient(mean), ops.stop_gradient(unbiased)
    ops.assign(
        bn.moving_mean, bn.moving_mean * m + ops.cast(mean_d, bn.moving_mean.dtype) * (1 - m)
    )
    ops.assign(
        bn.moving_variance,
        bn.moving_variance * m + ops.cast(var_d, bn.moving_variance.dtype) * (1 - m),
    )
    return y
