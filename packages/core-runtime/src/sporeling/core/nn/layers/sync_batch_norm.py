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

from ... import ops
from ...tensor import Tensor
from .normalization import _BatchNorm

__all__ = ["SyncBatchNorm"]


def _comm_group(process_groups: Any) -> str | None:
    """The group name to all-reduce over, or None when there is nothing to sync with."""
    from ... import communication as comm

    if not comm.GlobalComm.INITED:
        if process_groups is not None:
            _check_groups(process_groups, None)
        return None
    world = comm.get_group_size()
    if process_groups is None:
        return comm.GlobalComm.WORLD_COMM_GROUP if world > 1 else None
    _check_groups(process_groups, world)
    me = comm.get_rank()
    for i, ranks in enumerate(process_groups):
        if me in ranks:
            if len(ranks) == 1:
                return None
            name = f"sync_bn_group{i}"
            try:
                comm.get_group_size(name)
            except ValueError:
                comm.create_group(name, list(ranks))
            return name
    raise ValueError(
        f"SyncBatchNorm: argument 'process_groups' {process_groups!r} does not hold this "
        f"process's rank {me}; expected every rank in exactly one list"
    )


def _check_groups(groups: Any, world: int | None) -> None:
    ok = isinstance(groups, (list, tuple)) and all(
        isinstance(g, (list, tuple)) and g and all(isinstance(r, int) and r >= 0 for r in g)
        for g in groups
    )
    flat = [r for g in groups for r in g] if ok else []
    ok = ok and len(flat) == len(set(flat)) and (world is None or all(r < world for r in flat))
    if not ok:
        raise ValueError(
            "SyncBatchNorm: argument 'process_groups' expected a list of disjoint lists of "
            f"world ranks{'' if world is None else f' in [0, {world})'}, got {groups!r}"
        )


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
        self.group = _comm_group(process_groups)

    def construct(self, x: Tensor) -> Tensor:
        use_batch = (
            self.training if self.use_batch_statistics is None else self.use_batch_statistics
        )
        if self.group is None or not use_batch:
            return super().construct(x)
        from ... import communication as comm

        return _synced(self, x, comm)


def _synced(bn: SyncBatchNorm, x: Tensor, comm: Any) -> Tensor:
    from ._utils import check_channels, check_input

    x = check_input(bn.cls_name, x, bn._ndims, bn._layout)
    check_channels(bn.cls_name, x, 1, bn.num_features, "num_features")
    axes = (0,) if x.ndim == 2 else (0, 2, 3)
    shape = (1, -1) if x.ndim == 2 else (1, -1, 1, 1)
    local = 1
    for a in axes:
        local *= x.shape[a]
    count = comm.all_reduce(ops.cast(Tensor(float(local)), x.dtype), group=bn.group)
    mean = comm.all_reduce(ops.reduce_sum(x, axes), group=bn.group) / count
    centred = x - ops.reshape(mean, shape)
    var = comm.all_reduce(ops.reduce_sum(centred * centred, axes), group=bn.group) / count
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
