"""Optimizer parallelism (``enable_parallel_optimizer=True``): each rank of the
data-parallel group owns one contiguous slice of every flat parameter bank.

An optimizer keeps its parameters in flat buffers (banks, see ``nn.optim.optimizer``). Under
the parallel optimizer, a bank of ``T`` elements is cut into ``n`` slices of
``ceil(T / n)`` elements (the last may be shorter), and one step is

1. reduce-scatter the local flat gradient: rank ``r`` gets the sum (the mean with
   ``gradients_mean``) of slice ``r`` only;
2. update slice ``r`` with the optimizer's own fused kernel, whose segment offsets are
   clipped to the slice, so every elementwise rule runs unchanged;
3. all-gather the parameter slices back into the full bank.

The optimizer state (moments, accumulators) exists only for the local slice: each state
Parameter holds this rank's 1-D piece of its flattened values, and its ``shard_layout``
attribute says which piece (``(bank_offset, start, stop, full_shape)``). Banks smaller than
``parallel_optimizer_config['parallel_optimizer_threshold']`` KB are not sliced; their
gradients are all-reduced and updated whole.

Layer-wise rules that need whole-tensor norms (``Lamb``) are refused with a clear error.

The group: the whole job, or under ``pipeline_stages > 1`` the data-parallel ranks of this
rank's stage (:func:`~sporeling.core.parallel.pipeline_cell.stage_data_parallel_group`; the
optimizer then updates only its stage's parameters, whose gradients ``PipelineCell`` has
already averaged over that group), or ``optimizer.parallel_optimizer_group`` (a group name)
when set before the first step.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._backend import is_host, scatter_at
from ..communication.management import GlobalComm, get_group
from . import context as _ctx
from .semi_auto import auto_data_parallel_active

__all__ = ["parallel_optimizer_enabled", "sharded_update"]

_LAYERWISE = ("Lamb",)


def parallel_optimizer_enabled() -> bool:
    """Whether a new optimizer should shard its update (read when it is created)."""
    if not _ctx.get_auto_parallel_context("enable_parallel_optimizer"):
        return False
    if _ctx.get_auto_parallel_context("pipeline_stages") > 1:
        return True  # over each stage's data-parallel ranks
    mode = _ctx.get_auto_parallel_context("parallel_mode")
    return mode in ("data_parallel", "hybrid_parallel", "semi_auto_parallel", "auto_parallel")


class _Shard:
    """A bank seen through this rank's slice ``[lo, hi)``: what the ``_update`` methods read."""

    def __init__(self, bank: Any, lo: int, hi: int) -> None:
        self._bank = bank
        self.lo, self.hi = lo, hi
        self.flat = bank.flat[lo:hi]
        self.grad = bank.device.xp.zeros(hi - lo, bank.dtype)
        signed = np.clip(bank.off.astype(np.int64) - lo, 0, hi - lo)  # uint64 would wrap
        self.off = signed.astype(np.uint64)  # unsigned like the bank's (see _Bank)
        self.sizes = np.diff(signed)
        xp = bank.device.xp
        self.sizes_dev = self.sizes if is_host(xp) else xp.asarray(self.sizes)
        self.states: dict[str, tuple[Any, list[Any], list[Any]]] = {}
        self.views: list[Any] = []
        self.shapes = bank.shapes

    def __getattr__(self, name: str) -> Any:  # lr, wd, dtype, device, fused, typed, ...
        return getattr(self._bank, name)

    def state(self, name: str) -> Any:
        return self.states[name][0]

    def expand(self, seg: np.ndarray) -> Any:
        xp = self._bank.device.xp
        return xp.repeat(xp.asarray(seg), self.sizes_dev)


class _Plan:
    def __init__(self, opt: Any, bank: Any) -> None:
        name = opt.cls_name
        if name in _LAYERWISE:
            raise ValueError(
                f"{name}: enable_parallel_optimizer is not supported for layer-wise optimizers "
                "(their update needs whole-parameter norms); use AdamWeightDecay/AdamW/Adam/"
                "Momentum/SGD, or set enable_parallel_optimizer=False"
            )
        self.group = get_group(_shard_group(opt), name)
        # under a pipeline the gradients arrive reduced over the group already
        self.reduced = _ctx.get_auto_parallel_context("pipeline_stages") > 1
        n = self.group.size
        total = int(bank.off[-1])
        threshold = _ctx.get_auto_parallel_context("parallel_optimizer_config")[
            "parallel_optimizer_threshold"
        ]
        nbytes = total * np.dtype(bank.dtype).itemsize
        self.sliced = n > 1 and nbytes >= threshold * 1024 and total >= n
        self.shard: _Shard | None = None  # set below exactly when the bank is sliced
        if not self.sliced:
            return
        chunk = -(-total // n)
        bounds = [min(r * chunk, total) for r in range(n + 1)]
        self.counts = [bounds[r + 1] - bounds[r] for r in range(n)]
        r = self.group.rank
        lo, hi = bounds[r], bounds[r + 1]
        shard = _Shard(bank, lo, hi)
        for sname, (flat, params, _views) in list(bank.states.items()):
            piece = flat[lo:hi].copy()
            shard.states[sname] = (piece, [], [])
            for slot, p in enumerate(params):
                a, b = int(bank.off[slot]), int(bank.off[slot + 1])
                s, e = max(a, lo), min(b, hi)
                s, e = (s, e) if s < e else (lo, lo)
                p._data = piece[s - lo : e - lo]
                p._node = None
                p.shard_layout = (a, s - a, e - a, tuple(bank.shapes[slot]))
            bank.states[sname] = (piece, [], [])  # full-size state is released
        self.shard = shard


def _shard_group(opt: Any) -> str:
    group = getattr(opt, "parallel_optimizer_group", None)
    if group is not None:
        return str(group)
    if _ctx.get_auto_parallel_context("pipeline_stages") > 1:
        from .pipeline_cell import stage_data_parallel_group

        group = stage_data_parallel_group()
        if group is None:  # the stage's only copy: nothing to shard over
            from ..communication import create_group, get_rank
            from ..communication.management import _State

            group = f"pipeline_optimizer_alone_rank{get_rank()}"
            if group not in _State.groups:
                create_group(group, [get_rank()])
        return group
    return GlobalComm.WORLD_COMM_GROUP


def sharded_update(opt: Any, bank: Any, step: int, inv_scale: float, rows: list[Any]) -> None:
    """One optimizer step on ``bank`` under the parallel optimizer (see the module doc)."""
    plan = getattr(bank, "_parallel_plan", None)
    if plan is None:
        plan = bank._parallel_plan = _Plan(opt, bank)
    for slot, idx, vals in rows:  # row-sparse gradients are reduced densely
        a = int(bank.off[slot])
        seg = bank.grad[a : int(bank.off[slot + 1])].reshape(bank.shapes[slot][0], -1)
        scatter_at(bank.device.xp, "add", seg, idx, vals)
    # under SEMI_AUTO/AUTO_PARALLEL the gradients arrive averaged already (semi_auto.py)
    mean = (
        _ctx.get_auto_parallel_context("gradients_mean")
        or auto_data_parallel_active()
        or plan.reduced
    )
    group = plan.group
    shard = plan.shard
    if shard is None:  # not sliced
        bank.grad[...] = group.allreduce(bank.grad, "sum")
        if mean and group.size > 1:
            bank.grad *= bank.dtype.type(1.0 / group.size)
        opt._update(bank, step, inv_scale, [])
        return
    shard.grad[...] = group.reduce_scatter_v(bank.grad, plan.counts, "sum")
    if mean:
        shard.grad *= bank.dtype.type(1.0 / group.size)
    opt._update(shard, step, inv_scale, [])
    group.allgather_v_inplace(bank.flat, plan.counts)
