"""Collective communication as differentiable ops, and MindSpore's primitive classes.

Every collective is a :class:`~sporeling.core._primitive.Primitive` registered once, so it
runs eagerly, records on the autograd tape, and carries its gradient rule written with
collectives again (the same rules as MindSpore's bprops):

=====================  ====================================================================
op                     gradient of the input
=====================  ====================================================================
all_reduce SUM         ``all_reduce(dy)``
all_reduce MAX / MIN   ``all_reduce(dy) * (x == y)``
all_reduce PROD        ``all_reduce(dy) * y / x``
all_gather             ``reduce_scatter(dy)`` (SUM)
reduce_scatter SUM     ``all_gather(dy)``
broadcast(root)        ``all_reduce(dy)`` on the root, zeros elsewhere
all_to_all             ``all_to_all(dy)`` with ``split_dim``/``concat_dim`` swapped
=====================  ====================================================================

``send``/``recv``/``barrier`` are not differentiable (they are point-to-point plumbing).
Collectives work on CPU tensors over MPI and on GPU tensors over NCCL. Inside a copy of
``nn.MicroBatchInterleaved`` (forward or backward) the all-reduce, all-gather and
reduce-scatter are started non-blocking and the other copies compute meanwhile
(:mod:`~sporeling.core.communication.overlap`).

>>> from sporeling.core import Tensor, communication as comm
>>> comm.init()
>>> comm.all_reduce(Tensor([1.0, 2.0])).tolist()  # a world of one: the identity
[1.0, 2.0]
"""

from __future__ import annotations

from typing import Any

from .._primitive import Primitive, ShapedArray
from ..errors import describe
from ..tensor import Tensor
from .management import GlobalComm, get_group
from .overlap import collective, current_copy

__all__ = [
    "ReduceOp",
    "all_reduce",
    "all_gather",
    "all_gather_into_tensor",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "broadcast",
    "all_to_all",
    "send",
    "recv",
    "probe",
    "ANY_SOURCE",
    "barrier",
    "AllReduce",
    "AllGather",
    "ReduceScatter",
    "Broadcast",
    "AlltoAll",
    "Send",
    "Receive",
]

_WORLD = GlobalComm.WORLD_COMM_GROUP


class ReduceOp:
    """The reductions of :func:`all_reduce` / :func:`reduce_scatter` (MindSpore's names)."""

    SUM = "sum"
    MAX = "max"
    MIN = "min"
    PROD = "prod"


_OPS = (ReduceOp.SUM, ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PROD)


def _op(func: str, op: Any) -> str:
    if not isinstance(op, str) or op.lower() not in _OPS:
        raise ValueError(
            f"{func}: argument 'op' expected one of ReduceOp.SUM/MAX/MIN/PROD "
            f"({list(_OPS)}), got {op!r}"
        )
    return op.lower()


def _group(func: str, group: Any) -> str:
    g = get_group(group, func)  # validates and checks init
    return "world" if g.name == "world" else g.name


def _tensor(func: str, x: Any, arg: str = "tensor") -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{func}: argument '{arg}' expected a Tensor, got {describe(x)}")
    return x


def _size(group: str) -> int:
    return get_group(group, "collective").size


def _rank(group: str) -> int:
    return get_group(group, "collective").rank


# ---- primitives ------------------------------------------------------------------------


def _same(x: ShapedArray, **_: Any) -> ShapedArray:
    return ShapedArray(x.shape, x.dtype)


def _all_reduce_vjp(g: Tensor, x: Tensor, *, out: Tensor, op: str, group: str) -> Any:
    total = all_reduce_p.bind(g, op="sum", group=group)
    if op == "sum":
        return total
    if op == "prod":
        return total * out / x
    from ..ops import cast, equal

    return total * cast(equal(x, out), g.dtype)


def _agreed(func: str, group: str, x: Any) -> Any:
    """The group, after checking that every rank passes the same shape and dtype (MPI would
    truncate a message on one rank and accept it silently on another); all ranks see the
    same table, so all raise together, naming which rank had which shape."""
    g = get_group(group, func)
    # Not inside micro-batch copies: their collectives are started non-blocking in turns,
    # and an extra blocking exchange there would serialise the overlap they exist for.
    if g.size > 1 and current_copy() is None:
        mine = (tuple(int(d) for d in x.shape), str(x.dtype))
        everyone = g.allgather_object(mine)
        if any(e != mine for e in everyone):
            table = "; ".join(
                f"rank {g.ranks[i]}: shape {s} dtype {d}" for i, (s, d) in enumerate(everyone)
            )
            raise ValueError(
                f"{func}: argument 'tensor' must have the same shape and dtype on every rank "
                f"of group '{g.name}'; got {table}"
            )
    return g


all_reduce_p = Primitive(
    "comm_all_reduce",
    "opaque",
    _same,
    pinned=True,  # a collective: every rank runs the same ones in the same order
    impl=lambda xp, x, *, op, group: collective(
        _agreed("all_reduce", group, x), "allreduce", x, op=op
    ),
    vjp=_all_reduce_vjp,
)


def _gather_abstract(x: ShapedArray, *, group: str) -> ShapedArray:
    if x.ndim == 0:
        raise ValueError("all_gather: argument 'tensor' expected at least 1 dimension, got 0-D")
    return ShapedArray((x.shape[0] * _size(group), *x.shape[1:]), x.dtype)


all_gather_p = Primitive(
    "comm_all_gather",
    "opaque",
    _gather_abstract,
    pinned=True,  # a collective: every rank runs the same ones in the same order
    impl=lambda xp, x, *, group: collective(_agreed("all_gather", group, x), "allgather", x),
    vjp=lambda g, x, *, out, group: reduce_scatter_p.bind(g, op="sum", group=group),
)


def _scatter_abstract(x: ShapedArray, *, op: str, group: str) -> ShapedArray:
    n = _size(group)
    if x.ndim == 0 or x.shape[0] % n:
        raise ValueError(
            f"reduce_scatter: argument 'tensor' expected a first dimension divisible by the "
            f"group size {n}, got shape {x.shape}"
        )
    return ShapedArray((x.shape[0] // n, *x.shape[1:]), x.dtype)


def _scatter_vjp(g: Tensor, x: Tensor, *, out: Tensor, op: str, group: str) -> Any:
    if op != "sum":
        raise ValueError(
            f"reduce_scatter: argument 'op' other than ReduceOp.SUM is not supported when "
            f"differentiating (the gradient exists for SUM only, as in MindSpore), got op={op!r}"
        )
    return all_gather_p.bind(g, group=group)


reduce_scatter_p: Primitive = Primitive(
    "comm_reduce_scatter",
    "opaque",
    _scatter_abstract,
    pinned=True,  # a collective: every rank runs the same ones in the same order
    impl=lambda xp, x, *, op, group: collective(
        _agreed("reduce_scatter", group, x), "reduce_scatter", x, op=op
    ),
    vjp=_scatter_vjp,
)


def _broadcast_vjp(g: Tensor, x: Tensor, *, out: Tensor, root: int, group: str) -> Any:
    total = all_reduce_p.bind(g, op="sum", group=group)
    return total if _rank(group) == root else total * 0


broadcast_p = Primitive(
    "comm_broadcast",
    "opaque",
    _same,
    pinned=True,  # a collective: every rank runs the same ones in the same order
    impl=lambda xp, x, *, root, group: collective(
        _agreed("broadcast", group, x), "broadcast", x, root=root
    ),
    vjp=_broadcast_vjp,
)


def _a2a_abstract(x: ShapedArray, *, split_dim: int, concat_dim: int, group: str) -> ShapedArray:
    n = _size(group)
    shape = list(x.shape)
    if shape[split_dim] % n:
        raise ValueError(
            f"all_to_all: dimension split_dim={split_dim} of shape {x.shape} must be divisible "
            f"by the group size {n}"
        )
    shape[split_dim] //= n
    shape[concat_dim] *= n
    return ShapedArray(tuple(shape), x.dtype)


def _a2a_impl(xp: Any, x: Any, *, split_dim: int, concat_dim: int, group: str) -> Any:
    g = _agreed("all_to_all", group, x)
    n = g.size
    blocks = xp.stack(xp.split(x, n, axis=split_dim))  # (n, ...) block i goes to rank i
    got = collective(g, "alltoall", blocks)
    return xp.concatenate(list(got), axis=concat_dim)


all_to_all_p: Primitive = Primitive(
    "comm_all_to_all",
    "opaque",
    _a2a_abstract,
    pinned=True,  # a collective: every rank runs the same ones in the same order
    impl=_a2a_impl,
    vjp=lambda g, x, *, out, split_dim, concat_dim, group: all_to_all_p.bind(
        g, split_dim=concat_dim, concat_dim=split_dim, group=group
    ),
)


# ---- functional API (MindSpore 2.x ``communication.comm_func``) ----------------------


def all_reduce(tensor: Tensor, op: str = ReduceOp.SUM, group: str = _WORLD) -> Tensor:
    """``op`` over every rank's ``tensor``; each rank gets the result.

    ``y = x_0 + x_1 + ... + x_{n-1}`` for ``ReduceOp.SUM``.
    """
    x = _tensor("all_reduce", tensor)
    return all_reduce_p.bind(x, op=_op("all_reduce", op), group=_group("all_reduce", group))


def all_gather(tensor: Tensor, group: str = _WORLD) -> Tensor:
    """Every rank's ``tensor`` concatenated along axis 0, in rank order."""
    x = _tensor("all_gather", tensor)
    return all_gather_p.bind(x, group=_group("all_gather", group))


def all_gather_into_tensor(tensor: Tensor, group: str = _WORLD) -> Tensor:
    """MindSpore 2.x's name for :func:`all_gather`."""
    return all_gather(tensor, group)


def reduce_scatter(tensor: Tensor, op: str = ReduceOp.SUM, group: str = _WORLD) -> Tensor:
    """``op`` over ranks, then rank ``r`` keeps block ``r`` of axis 0 (size ``d0 / n``)."""
    x = _tensor("reduce_scatter", tensor)
    return reduce_scatter_p.bind(
        x, op=_op("reduce_scatter", op), group=_group("reduce_scatter", group)
    )


def reduce_scatter_tensor(tensor: Tensor, op: str = ReduceOp.SUM, group: str = _WORLD) -> Tensor:
    """MindSpore 2.x's name for :func:`reduce_scatter`."""
    return reduce_scatter(tensor, op, group)


def broadcast(tensor: Tensor, src: int = 0, group: str = _WORLD) -> Tensor:
    """Rank ``src``'s ``tensor`` on every rank (``src`` is a rank of ``group``)."""
    x = _tensor("broadcast", tensor)
    g = _group("broadcast", group)
    n = _size(g)
    if isinstance(src, bool) or not isinstance(src, int) or not 0 <= src < n:
        raise ValueError(f"broadcast: argument 'src' expected a rank in [0, {n}), got {src!r}")
    return broadcast_p.bind(x, root=src, group=g)


def all_to_all(
    tensor: Tensor, split_dim: int = 0, concat_dim: int = 0, group: str = _WORLD
) -> Tensor:
    """Split ``tensor`` into ``n`` blocks along ``split_dim``, send block ``i`` to rank
    ``i``, and concatenate the received blocks along ``concat_dim`` (MindSpore's AlltoAll)."""
    x = _tensor("all_to_all", tensor)
    g = _group("all_to_all", group)
    dims = []
    for name, d in (("split_dim", split_dim), ("concat_dim", concat_dim)):
        if isinstance(d, bool) or not isinstance(d, int) or not -x.ndim <= d < max(x.ndim, 1):
            raise ValueError(
                f"all_to_all: argument '{name}' expected an axis of a {x.ndim}-d tensor, got {d!r}"
            )
        dims.append(d % x.ndim)
    return all_to_all_p.bind(x, split_dim=dims[0], concat_dim=dims[1], group=g)


def send(tensor: Tensor, dst: int = 0, group: str = _WORLD, tag: int = 0) -> None:
    """Send ``tensor`` to rank ``dst`` of ``group`` (blocking)."""
    x = _tensor("send", tensor)
    g = get_group(group, "send")
    if not isinstance(dst, int) or not 0 <= dst < g.size or dst == g.rank:
        raise ValueError(
            f"send: argument 'dst' expected another rank in [0, {g.size}), got {dst!r}"
        )
    g.send(x._data, dst, int(tag))


def recv(tensor: Tensor, src: int = 0, group: str = _WORLD, tag: int = 0) -> Tensor:
    """Receive a tensor shaped like ``tensor`` from rank ``src`` of ``group`` (blocking)."""
    x = _tensor("recv", tensor)
    g = get_group(group, "recv")
    if not isinstance(src, int) or not 0 <= src < g.size or src == g.rank:
        raise ValueError(
            f"recv: argument 'src' expected another rank in [0, {g.size}), got {src!r}"
        )
    data = g.recv(x.shape, x._data.dtype, src, int(tag))
    return Tensor._wrap(x._device.asarray(data), x._device)


ANY_SOURCE = -1
"""``probe``'s ``src`` for a message from any rank."""


def probe(src: int = ANY_SOURCE, group: str = _WORLD, tag: int = 0) -> int:
    """Wait until a message with ``tag`` from rank ``src`` of ``group`` (any other rank with
    :data:`ANY_SOURCE`) can be received, and return its sender's rank: a receive from
    whichever rank sends first is ``recv(buf, probe(tag=t), tag=t)``. The message stays
    queued; messages from one sender with one tag arrive in the order they were sent."""
    g = get_group(group, "probe")
    ok = isinstance(src, int) and not isinstance(src, bool)
    if not ok or g.size < 2 or src == g.rank or not (src == ANY_SOURCE or 0 <= src < g.size):
        raise ValueError(
            f"probe: argument 'src' expected ANY_SOURCE ({ANY_SOURCE}) or another rank in "
            f"[0, {g.size}) than this one ({g.rank}), got {src!r}"
        )
    return g.probe(src, int(tag))


def barrier(group: str = _WORLD) -> None:
    """Wait until every rank of ``group`` has reached this call."""
    get_group(group, "barrier").barrier()


# ---- MindSpore's primitive classes (``ops.AllReduce(...)(x)``) ----------------------------


class AllReduce:
    """``ops.AllReduce(op=ReduceOp.SUM, group=GlobalComm.WORLD_COMM_GROUP)``."""

    def __init__(self, op: str = ReduceOp.SUM, group: str = _WORLD) -> None:
        self.op = _op("AllReduce", op)
        self.group = group

    def __call__(self, x: Tensor) -> Tensor:
        return all_reduce(x, self.op, self.group)


class AllGather:
    """``ops.AllGather(group=GlobalComm.WORLD_COMM_GROUP)``: concatenation along axis 0."""

    def __init__(self, group: str = _WORLD) -> None:
        self.group = group

    def __call__(self, x: Tensor) -> Tensor:
        return all_gather(x, self.group)


class ReduceScatter:
    """``ops.ReduceScatter(op=ReduceOp.SUM, group=GlobalComm.WORLD_COMM_GROUP)``."""

    def __init__(self, op: str = ReduceOp.SUM, group: str = _WORLD) -> None:
        self.op = _op("ReduceScatter", op)
        self.group = group

    def __call__(self, x: Tensor) -> Tensor:
        return reduce_scatter(x, self.op, self.group)


class Broadcast:
    """``ops.Broadcast(root_rank, group=GlobalComm.WORLD_COMM_GROUP)``: takes and returns a
    tuple of tensors, as MindSpore's does."""

    def __init__(self, root_rank: int, group: str = _WORLD) -> None:
        self.root_rank = root_rank
        self.group = group

    def __call__(self, input_x: Any) -> tuple[Tensor, ...]:
        xs = input_x if isinstance(input_x, (tuple, list)) else (input_x,)
        return tuple(broadcast(x, self.root_rank, self.group) for x in xs)


class AlltoAll:
    """``ops.AlltoAll(split_count, split_dim, concat_dim, group=GlobalComm.WORLD_COMM_GROUP)``."""

    def __init__(
        self, split_count: int, split_dim: int, concat_dim: int, group: str = _WORLD
    ) -> None:
        self.split_count = split_count
        self.split_dim = split_dim
        self.concat_dim = concat_dim
        self.group = group

    def __call__(self, x: Tensor) -> Tensor:
        n = get_group(self.group, "AlltoAll").size
        if self.split_count != n:
            raise ValueError(
                f"AlltoAll: argument 'split_count' expected the group size {n}, "
                f"got {self.split_count!r}"
            )
        return all_to_all(x, self.split_dim, self.concat_dim, self.group)


class Send:
    """``ops.Send(sr_tag, dest_rank, group=GlobalComm.WORLD_COMM_GROUP)``."""

    def __init__(self, sr_tag: int, dest_rank: int, group: str = _WORLD, group_back: Any = None):
        self.sr_tag, self.dest_rank, self.group = sr_tag, dest_rank, group

    def __call__(self, x: Tensor) -> Tensor:
        send(x, self.dest_rank, self.group, self.sr_tag)
        return x


class Receive:
    """``ops.Receive(sr_tag, src_rank, shape, dtype, group=GlobalComm.WORLD_COMM_GROUP)``."""

    def __init__(
        self, sr_tag: int, src_rank: int, shape: Any, dtype: Any, group: str = _WORLD,
        group_back: Any = None,
    ) -> None:  # fmt: skip
        self.sr_tag, self.src_rank, self.group = sr_tag, src_rank, group
        self.shape, self.dtype = tuple(shape), dtype

    def __call__(self, *_: Any) -> Tensor:
        from ..ops import zeros

        return recv(zeros(self.shape, self.dtype), self.src_rank, self.group, self.sr_tag)
