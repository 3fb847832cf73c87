"""The model-parallel group and Megatron-LM's region ops (copy, reduce, scatter, gather)
as primitives with their transposed backward."""

from __future__ import annotations

from typing import Any

from ..._primitive import Primitive, ShapedArray
from ...communication.overlap import collective
from ...tensor import Tensor

__all__ = [
    "copy_to_mp",
    "reduce_from_mp",
    "scatter_to_mp",
    "gather_from_mp",
    "group_rank_size",
]

# ---- the communication group ------------------------------------------------------------


def _group(group: str | None, func: str) -> Any:
    """The communication :class:`Group` for ``group`` (None: the world), or None when
    communication is not initialised and ``group`` is None (a world of one)."""
    from ...communication import management

    if group is None:
        if not management.GlobalComm.INITED:
            return None
        group = management.GlobalComm.WORLD_COMM_GROUP
    return management.get_group(group, func)


def group_rank_size(group: str | None = None) -> tuple[int, int]:
    """``(rank in group, group size)``; ``(0, 1)`` when communication is not initialised
    and ``group`` is None (stand-alone: every parallel layer is its dense twin)."""
    g = _group(group, "tensor_parallel")
    return (0, 1) if g is None else (int(g.rank), int(g.size))


def _collective(name: str, arr: Any, group: str | None, **kw: Any) -> Any:
    """Collective ``name`` (a raw :class:`Group` method: ``allreduce``, ``allgather``...) on
    an array; no autograd here: the region primitives below own the gradients. Inside a
    copy of ``nn.MicroBatchInterleaved`` it is started non-blocking and the other copies
    compute while it is in flight (:func:`~sporeling.core.communication.overlap.collective`)."""
    return collective(_group(group, name), name, arr, **kw)


def _all_gather_axis(xp: Any, x: Any, axis: int, group: str | None, size: int) -> Any:
    moved = xp.ascontiguousarray(xp.moveaxis(x, axis, 0))
    gathered = _collective("allgather", moved, group)  # concatenated on dim 0
    parts = xp.split(gathered, size, axis=0)
    return xp.concatenate([xp.moveaxis(p, 0, axis) for p in parts], axis=axis)


def _chunk(xp: Any, x: Any, axis: int, rank: int, size: int) -> Any:
    n = x.shape[axis] // size
    index = [slice(None)] * x.ndim
    index[axis] = slice(rank * n, (rank + 1) * n)
    return xp.ascontiguousarray(x[tuple(index)])


# ---- region primitives --------------------------------------------------------------------


def _same(x: ShapedArray, **_: Any) -> ShapedArray:
    return ShapedArray(x.shape, x.dtype)


def _split_abstract(x: ShapedArray, *, axis: int, group: str | None) -> ShapedArray:
    _, size = group_rank_size(group)
    if x.shape[axis] % size:
        raise ValueError(
            f"scatter_to_mp: axis {axis} of shape {x.shape} has length {x.shape[axis]}, which "
            f"does not divide into the {size} ranks of the model-parallel group"
        )
    shape = list(x.shape)
    shape[axis] //= size
    return ShapedArray(tuple(shape), x.dtype)


def _gather_abstract(x: ShapedArray, *, axis: int, group: str | None) -> ShapedArray:
    _, size = group_rank_size(group)
    shape = list(x.shape)
    shape[axis] *= size
    return ShapedArray(tuple(shape), x.dtype)


def _copy_impl(xp: Any, x: Any, *, group: str | None) -> Any:
    return x


def _reduce_impl(xp: Any, x: Any, *, group: str | None) -> Any:
    if group_rank_size(group)[1] == 1:
        return x
    return _collective("allreduce", xp.ascontiguousarray(x), group)


def _split_impl(xp: Any, x: Any, *, axis: int, group: str | None) -> Any:
    rank, size = group_rank_size(group)
    return x if size == 1 else _chunk(xp, x, axis, rank, size)


def _gather_impl(xp: Any, x: Any, *, axis: int, group: str | None) -> Any:
    size = group_rank_size(group)[1]
    return x if size == 1 else _all_gather_axis(xp, x, axis, group, size)


tp_copy_p = Primitive(
    "tp_copy_to_mp",
    "opaque",
    _same,
    impl=_copy_impl,
    vjp=lambda g, x, *, out, group: (lambda: tp_reduce_p.bind(g, group=group),),
)
tp_reduce_p: Primitive = Primitive(
    "tp_reduce_from_mp",
    "opaque",
    _same,
    impl=_reduce_impl,
    vjp=lambda g, x, *, out, group: (lambda: tp_copy_p.bind(g, group=group),),
)
tp_split_p = Primitive(
    "tp_scatter_to_mp",
    "opaque",
    _split_abstract,
    impl=_split_impl,
    vjp=lambda g, x, *, out, axis, group: (lambda: tp_gather_p.bind(g, axis=axis, group=group),),
)
tp_gather_p: Primitive = Primitive(
    "tp_gather_from_mp",
    "opaque",
    _gather_abstract,
    impl=_gather_impl,
    vjp=lambda g, x, *, out, axis, group: (lambda: tp_split_p.bind(g, axis=axis, group=group),),
)


def _axis(x: Tensor, axis: int, op: str) -> int:
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"{op}: axis {axis} is out of range for shape {x.shape}")
    return axis % x.ndim


def copy_to_mp(x: Tensor, group: str | None = None) -> Tensor:
    """Identity forward, all-reduce (sum) of the gradient backward."""
    return tp_copy_p.bind(x, group=group)


def reduce_from_mp(x: Tensor, group: str | None = None) -> Tensor:
    """All-reduce (sum) forward, identity backward."""
    return tp_reduce_p.bind(x, group=group)


def scatter_to_mp(x: Tensor, axis: int = -1, group: str | None = None) -> Tensor:
    """This rank's equal slice of ``axis`` forward, all-gather of the gradient backward."""
    return tp_split_p.bind(x, axis=_axis(x, axis, "scatter_to_mp"), group=group)


def gather_from_mp(x: Tensor, axis: int = -1, group: str | None = None) -> Tensor:
    """All-gather (concatenate on ``axis``) forward, own slice of the gradient backward."""
    return tp_gather_p.bind(x, axis=_axis(x, axis, "gather_from_mp"), group=group)
