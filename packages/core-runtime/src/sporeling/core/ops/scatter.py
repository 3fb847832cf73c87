"""Gathers, scatters, unsorted segment reductions and the in-place Parameter updates.

Every op of the family reduces to *rows*: a tensor seen as ``(outer, rows, inner)`` and a
flat vector of row ids. A gather copies rows out (``gather`` along an axis, ``gather_nd``
along the leading ``M`` axes, ``gather_elements`` along single elements); a scatter
combines update rows in (``update/add/sub/mul/div/max/min``), in index order, so repeated
indices act like a sequential loop. On the CPU the row loops are the Numba kernels of
:mod:`sporeling.core.kernels.cpu.scatter`; the generic ``xp`` code (NumPy/CuPy) is the GPU
and reference path.

Indices are checked against the shape on every call; a bad one raises ``IndexError``
naming the op, the argument, the index and its position (kernels never see it).
``gather``, ``gather_nd`` and the ``*scatter*`` ops take indices in ``[0, n)``;
``gather_d``/``gather_elements``/``tensor_scatter_elements`` also take ``[-n, 0)``;
segment ops drop negative segment ids (MindSpore's rule).

In-place ops (``assign*``, ``scatter_*``, ``scatter_nd_*``, ``index_add``) change a
:class:`~sporeling.core.Parameter`'s array in place (on its own device) and return the
Parameter; like MindSpore's Parameter updates they are not differentiated. Given a plain
Tensor instead, they rebind it to the functional result, so a Tensor that autograd tracks
keeps correct gradients (the update is recorded like ``x[i] = v``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtype as _dt
from .._primitive import Primitive, ShapedArray
from ..errors import check_axis, check_int, op_error
from ..kernels.cpu import scatter as _kscatter
from ..kernels.cpu import segment as _ksegment
from ..tensor import Parameter, Tensor
from ._compare import equal, greater, select
from ._core import as_tensor, broadcast_shapes, broadcast_to, cast, full, reshape, zeros_like
from ._elementwise import add, div, mul, neg, sub

__all__ = [
    "gather",
    "gather_d",
    "gather_elements",
    "gather_nd",
    "scatter_nd",
    "tensor_scatter_add",
    "tensor_scatter_sub",
    "tensor_scatter_mul",
    "tensor_scatter_div",
    "tensor_scatter_max",
    "tensor_scatter_min",
    "tensor_scatter_update",
    "tensor_scatter_elements",
    "unsorted_segment_sum",
    "unsorted_segment_max",
    "unsorted_segment_min",
    "unsorted_segment_prod",
    "assign",
    "assign_add",
    "assign_sub",
    "index_add",
    "scatter_add",
    "scatter_sub",
    "scatter_mul",
    "scatter_div",
    "scatter_max",
    "scatter_min",
    "scatter_update",
    "scatter_nd_add",
    "scatter_nd_sub",
    "scatter_nd_mul",
    "scatter_nd_div",
    "scatter_nd_max",
    "scatter_nd_min",
    "scatter_nd_update",
    "inplace_add",
    "inplace_sub",
    "inplace_update",
]

SCATTER_OPS = ("update", "add", "sub", "mul", "div", "max", "min")


def _prod(dims: Any) -> int:
    n = 1
    for d in dims:
        n *= int(d)
    return n


# ---- index checks and the row machinery (raw arrays; shared by every impl) --------------


def _check_index_dtype(op: str, arg: str, aval: Any) -> None:
    if aval.dtype.category != 1:
        raise TypeError(
            f"{op}: argument '{arg}' expected an integer tensor (int32 or int64), "
            f"got dtype {aval.dtype}"
        )


def _check_range(
    xp: Any,
    op: str,
    arg: str,
    ids: Any,
    n: int,
    *,
    wrap: bool = False,
    what: str = "",
    drop_negative: bool = False,
) -> Any:
    """``ids`` as int64 in ``[0, n)`` (``wrap``: ``[-n, n)`` accepted and wrapped), else an
    IndexError naming the first bad index and its position."""
    ids = ids.astype(np.int64, copy=False)
    if ids.size == 0:
        return ids
    lo = -1 << 62 if drop_negative else (-n if wrap else 0)
    bad = (ids < lo) | (ids >= n)
    if bool(bad.any()):
        flat = int(xp.argmax(bad.reshape(-1)))
        value = int(ids.reshape(-1)[flat])
        pos = tuple(int(p) for p in np.unravel_index(flat, ids.shape))
        span = f"below {n}" if drop_negative else f"in [{-n if wrap else 0}, {n})"
        raise IndexError(
            f"{op}: argument '{arg}' holds index {value} at position {pos}, "
            f"expected indices {span}{what}"
        )
    if wrap:
        ids = xp.where(ids < 0, ids + n, ids)
    return ids


def _nd_rows(xp: Any, op: str, arg: str, idx: Any, shape: tuple[int, ...]) -> Any:
    """Row ids ``(K,)`` into ``shape[:M]`` for nd-indices ``idx (..., M)``, range-checked."""
    m = idx.shape[-1]
    cols = idx.reshape(-1, m)
    rows = xp.zeros(cols.shape[0], np.int64)
    for j in range(m):
        col = cols[:, j]
        bad = (col < 0) | (col >= shape[j])
        if bool(bad.any()):
            k = int(xp.argmax(bad))
            pos = tuple(int(p) for p in np.unravel_index(k, idx.shape[:-1])) + (j,)
            raise IndexError(
                f"{op}: argument '{arg}' holds index {int(col[k])} at position "
                f"{pos}, expected indices in [0, {shape[j]}) for dimension {j} "
                f"of a tensor of shape {shape}"
            )
        rows = rows * shape[j] + col.astype(np.int64)
    return rows


def _element_rows(xp: Any, op: str, arg: str, idx: Any, shape: tuple[int, ...], axis: int) -> Any:
    """Flat element positions into ``shape`` for an along-``axis`` index array ``idx``."""
    ids = _check_range(
        xp, op, arg, idx, shape[axis], wrap=True, what=f" for axis {axis} of size {shape[axis]}"
    )
    strides = [_prod(shape[d + 1 :]) for d in range(len(shape))]
    lin = ids * strides[axis]
    for d in range(len(shape)):
        if d != axis and idx.shape[d] > 1:
            view = [1] * len(shape)
            view[d] = idx.shape[d]
            lin = lin + xp.arange(idx.shape[d], dtype=np.int64).reshape(view) * strides[d]
    return lin.reshape(-1)


def _add_at(xp: Any, out: Any, ids: Any, upd: Any, op: str) -> bool:
    """Unbuffered add/sub/max/min (NumPy ufunc.at, cupyx scatter_*); False if unsupported."""
    where: Any = (slice(None), ids)  # NumPy's stubs reject tuple indices for ufunc.at
    if xp is np:
        ufunc = {"add": np.add, "sub": np.subtract, "max": np.maximum, "min": np.minimum}[op]
        ufunc.at(out, where, upd)
        return True
    try:  # pragma: no cover - needs CuPy
        import cupyx

        if op in ("add", "sub"):
            cupyx.scatter_add(out, where, upd if op == "add" else -upd)
        else:
            getattr(cupyx, f"scatter_{op}")(out, where, upd)
        return True
    except (TypeError, ValueError, NotImplementedError, AttributeError):  # pragma: no cover
        return False


def _scatter_rows_xp(xp: Any, out: Any, ids: Any, upd: Any, op: str) -> None:
    """Generic row scatter: ``out (O, N, I)``, ``ids (K,)``, ``upd (O, K, I)``, in place.

    add/sub/max/min use unbuffered scatter ufuncs; update/mul/div run in *rounds*: the
    ``r``-th occurrence of every row id goes in round ``r``, so each round has distinct
    rows and rounds follow index order (the same result as the sequential kernel)."""
    k = int(ids.shape[0])
    if k == 0 or out.size == 0:
        return
    keep = ids >= 0
    if not bool(keep.all()):  # segment ops drop negative ids
        sel = xp.nonzero(keep)[0]
        ids, upd, k = ids[sel], upd[:, sel], int(sel.shape[0])
        if k == 0:
            return
    if op in ("add", "sub", "max", "min") and _add_at(xp, out, ids, upd, op):
        return
    order = xp.argsort(ids * k + xp.arange(k, dtype=np.int64))  # stable by construction
    sorted_ids = ids[order]
    first = xp.searchsorted(sorted_ids, sorted_ids, side="left")
    rank = xp.empty(k, np.int64)
    rank[order] = xp.arange(k, dtype=np.int64) - first
    for r in range(int(rank.max()) + 1):
        sel = xp.nonzero(rank == r)[0]
        rows = ids[sel]
        cur, u = out[:, rows], upd[:, sel]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if op == "update":
                new = u
            elif op == "add":
                new = cur + u
            elif op == "sub":
                new = cur - u
            elif op == "mul":
                new = cur * u
            elif op == "max":
                new = xp.maximum(cur, u)
            elif op == "min":
                new = xp.minimum(cur, u)
            elif out.dtype.kind in "iu":  # integer division: floor, and x // 0 -> 0
                zero = u == 0
                new = xp.where(zero, 0, xp.floor_divide(cur, xp.where(zero, 1, u)))
            else:
                new = cur / u
        out[:, rows] = new


def _scatter_rows(xp: Any, out: Any, ids: Any, upd: Any, op: str, fast: bool) -> None:
    if fast and _kscatter.supports(out.dtype, op):
        _kscatter.scatter_rows(out, ids, upd, op)
    else:
        _scatter_rows_xp(xp, out, ids, upd, op)


def _gather_rows(xp: Any, src: Any, ids: Any, fast: bool) -> Any:
    if fast and _kscatter.supports(src.dtype):
        return _kscatter.gather_rows(src, ids)
    return xp.take(src, ids, axis=1)


def _split3(shape: tuple[int, ...], axis: int) -> tuple[int, int, int]:
    return _prod(shape[:axis]), shape[axis], _prod(shape[axis + 1 :])


def _with_cpu(impl: Any) -> Any:
    """The CPU variant of a generic impl: same code with the Numba row kernels."""

    def cpu(xp: Any, *args: Any, **params: Any) -> Any:
        return impl(xp, *args, fast=True, **params)

    return cpu


# ---- gather (embedding lookup) and its scatter-add gradient -----------------------------


def _gather_abstract(x: ShapedArray, idx: ShapedArray, *, axis: int) -> ShapedArray:
    _check_index_dtype("gather", "input_indices", idx)
    return ShapedArray(x.shape[:axis] + idx.shape + x.shape[axis + 1 :], x.dtype)


def _gather_impl(xp: Any, x: Any, idx: Any, *, axis: int, fast: bool = False) -> Any:
    o, n, i = _split3(x.shape, axis)
    ids = _check_range(
        xp, "gather", "input_indices", idx, n, what=f" for axis {axis} of size {n}"
    ).reshape(-1)
    out = _gather_rows(xp, x.reshape(o, n, i), ids, fast)
    return out.reshape(x.shape[:axis] + idx.shape + x.shape[axis + 1 :])


def _gather_grad_abstract(g: ShapedArray, idx: ShapedArray, *, axis: int, size: int) -> ShapedArray:
    _check_index_dtype("gather_grad", "indices", idx)
    if g.shape[axis : axis + idx.ndim] != idx.shape:
        raise ValueError(
            f"gather_grad: gradient of shape {g.shape} does not hold indices of "
            f"shape {idx.shape} at axis {axis}"
        )
    return ShapedArray(g.shape[:axis] + (size,) + g.shape[axis + idx.ndim :], g.dtype)


def _gather_grad_impl(
    xp: Any, g: Any, idx: Any, *, axis: int, size: int, fast: bool = False
) -> Any:
    """Sum rows of ``g`` into the rows ``idx`` point at: the embedding gradient. The output
    is zero-allocated and only the touched rows are written."""
    o, i = _prod(g.shape[:axis]), _prod(g.shape[axis + idx.ndim :])
    ids = _check_range(xp, "gather_grad", "indices", idx, size).reshape(-1)
    out = xp.zeros((o, size, i), g.dtype)
    _scatter_rows(xp, out, ids, g.reshape(o, ids.shape[0], i), "add", fast)
    return out.reshape(g.shape[:axis] + (size,) + g.shape[axis + idx.ndim :])


def _gather_vjp(g: Tensor, x: Tensor, idx: Tensor, *, out: Tensor, axis: int) -> tuple[Any, ...]:
    return (lambda: gather_grad_p.bind(g, idx, axis=axis, size=x.shape[axis])), None


def _gather_grad_vjp(
    gg: Tensor, g: Tensor, idx: Tensor, *, out: Tensor, axis: int, size: int
) -> tuple[Any, ...]:
    return (lambda: gather_p.bind(gg, idx, axis=axis)), None


gather_p = Primitive(
    "gather",
    "movement",
    _gather_abstract,
    impl=_gather_impl,
    cpu=_with_cpu(_gather_impl),
    vjp=_gather_vjp,
)
gather_grad_p = Primitive(
    "gather_grad",
    "opaque",
    _gather_grad_abstract,
    impl=_gather_grad_impl,
    cpu=_with_cpu(_gather_grad_impl),
    vjp=_gather_grad_vjp,
)


def _tensor(op: str, arg: str, value: Any) -> Tensor:
    if not isinstance(value, Tensor):
        raise op_error(op, arg, value, "a Tensor", TypeError)
    return value


def _index(op: str, arg: str, value: Any, like: Tensor) -> Tensor:
    """An integer index tensor on ``like``'s device (lists and ints are accepted)."""
    if isinstance(value, (bool, np.bool_)):
        raise op_error(op, arg, value, "an integer tensor (int32 or int64)", TypeError)
    t = as_tensor(value, op, arg, like)
    if t.dtype.category != 1:
        raise op_error(op, arg, t, "an integer tensor (int32 or int64)", TypeError)
    if t._device is not like._device:
        raise ValueError(
            f"{op}: argument '{arg}' is on {t.device} but the input is on "
            f"{like.device}; move one with .to(...)"
        )
    return t


def gather(input_params: Tensor, input_indices: Any, axis: int) -> Tensor:
    """Slices of ``input_params`` at ``input_indices`` along ``axis`` (an embedding lookup
    for ``axis=0``); the gradient sums rows back into the looked-up rows.

    Output shape: ``params.shape[:axis] + indices.shape + params.shape[axis+1:]``.

    >>> gather(Tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), Tensor([2, 0]), 0).tolist()
    [[5.0, 6.0], [1.0, 2.0]]
    """
    x = _tensor("gather", "input_params", input_params)
    ax = check_axis("gather", axis, x.ndim)
    if x.ndim == 0:
        raise op_error("gather", "input_params", x, "a tensor of rank >= 1")
    return gather_p.bind(x, _index("gather", "input_indices", input_indices, x), axis=ax)


# ---- gather_nd --------------------------------------------------------------------------


def _nd_check(op: str, x_shape: tuple[int, ...], idx: ShapedArray, arg: str = "indices") -> int:
    if idx.ndim < 1 or idx.shape[-1] < 1 or idx.shape[-1] > len(x_shape):
        raise ValueError(
            f"{op}: argument '{arg}' expected shape (..., M) with 1 <= M <= "
            f"{len(x_shape)} (the input's rank), got shape {idx.shape}"
        )
    return idx.shape[-1]


def _gather_nd_abstract(x: ShapedArray, idx: ShapedArray) -> ShapedArray:
    _check_index_dtype("gather_nd", "indices", idx)
    m = _nd_check("gather_nd", x.shape, idx)
    return ShapedArray(idx.shape[:-1] + x.shape[m:], x.dtype)


def _gather_nd_impl(xp: Any, x: Any, idx: Any, *, fast: bool = False) -> Any:
    m = idx.shape[-1]
    rows = _nd_rows(xp, "gather_nd", "indices", idx, x.shape)
    out = _gather_rows(xp, x.reshape(1, _prod(x.shape[:m]), _prod(x.shape[m:])), rows, fast)
    return out.reshape(idx.shape[:-1] + x.shape[m:])


def _gather_nd_vjp(g: Tensor, x: Tensor, idx: Tensor, *, out: Tensor) -> tuple[Any, ...]:
    return (
        lambda: tensor_scatter_p.bind(zeros_like(x), idx, g, op="add", name="gather_nd_grad")
    ), None


gather_nd_p = Primitive(
    "gather_nd",
    "movement",
    _gather_nd_abstract,
    impl=_gather_nd_impl,
    cpu=_with_cpu(_gather_nd_impl),
    vjp=_gather_nd_vjp,
)


def gather_nd(input_x: Tensor, indices: Any) -> Tensor:
    """Gather slices of ``input_x`` at the positions ``indices[..., :]`` address in its
    leading ``M = indices.shape[-1]`` dimensions.

    Output shape: ``indices.shape[:-1] + input_x.shape[M:]``.

    >>> gather_nd(Tensor([[1.0, 2.0], [3.0, 4.0]]), Tensor([[1, 0], [0, 1]])).tolist()
    [3.0, 2.0]
    """
    x = _tensor("gather_nd", "input_x", input_x)
    return gather_nd_p.bind(x, _index("gather_nd", "indices", indices, x))


# ---- gather_elements / gather_d ---------------------------------------------------------


def _elements_check(op: str, x: ShapedArray, idx: ShapedArray, axis: int, arg: str) -> None:
    if idx.ndim != x.ndim or any(idx.shape[d] > x.shape[d] for d in range(x.ndim) if d != axis):
        raise ValueError(
            f"{op}: argument '{arg}' expected a shape of rank {x.ndim} no larger "
            f"than {x.shape} outside axis {axis}, got {idx.shape}"
        )


def _gather_elements_abstract(x: ShapedArray, idx: ShapedArray, *, dim: int) -> ShapedArray:
    _check_index_dtype("gather_elements", "index", idx)
    _elements_check("gather_elements", x, idx, dim, "index")
    return ShapedArray(idx.shape, x.dtype)


def _gather_elements_impl(xp: Any, x: Any, idx: Any, *, dim: int, fast: bool = False) -> Any:
    lin = _element_rows(xp, "gather_elements", "index", idx, x.shape, dim)
    return xp.take(x.reshape(-1), lin).reshape(idx.shape)


def _gather_elements_vjp(
    g: Tensor, x: Tensor, idx: Tensor, *, out: Tensor, dim: int
) -> tuple[Any, ...]:
    return (
        lambda: tensor_scatter_elements_p.bind(zeros_like(x), idx, g, axis=dim, reduction="add")
    ), None


gather_elements_p = Primitive(
    "gather_elements",
    "movement",
    _gather_elements_abstract,
    impl=_gather_elements_impl,
    vjp=_gather_elements_vjp,
)


def gather_elements(x: Tensor, dim: int, index: Any) -> Tensor:
    """``out[i][j][k] = x[i][index[i][j][k]][k]`` for ``dim=1`` (and so on for other dims);
    ``index`` has ``x``'s rank and is no larger outside ``dim``.

    >>> gather_elements(Tensor([[1.0, 2.0], [3.0, 4.0]]), 1, Tensor([[0, 0], [1, 0]])).tolist()
    [[1.0, 1.0], [4.0, 3.0]]
    """
    t = _tensor("gather_elements", "x", x)
    d = check_axis("gather_elements", dim, t.ndim, "dim")
    return gather_elements_p.bind(t, _index("gather_elements", "index", index, t), dim=d)


def gather_d(x: Tensor, dim: int, index: Any) -> Tensor:
    """MindSpore's GatherD: the same as :func:`gather_elements`."""
    t = _tensor("gather_d", "x", x)
    d = check_axis("gather_d", dim, t.ndim, "dim")
    return gather_elements_p.bind(t, _index("gather_d", "index", index, t), dim=d)


# ---- tensor_scatter_* (functional nd scatters) ---------------------------------------------


def _scatter_shapes(
    op: str, x_shape: tuple[int, ...], idx: ShapedArray, upd_shape: tuple[int, ...]
) -> None:
    m = _nd_check(op, x_shape, idx)
    want = idx.shape[:-1] + tuple(x_shape[m:])
    if tuple(upd_shape) != want:
        raise ValueError(
            f"{op}: argument 'updates' expected shape {want} "
            f"(indices.shape[:-1] + input_x.shape[{m}:]), got {tuple(upd_shape)}"
        )


def _scatter_dtype_check(op: str, reduction: str, dtype: _dt.DType) -> None:
    if reduction not in ("update",) and dtype.category == 0:
        raise TypeError(
            f"{op}: argument 'input_x' expected a numeric dtype for a '{reduction}' "
            "scatter, got Bool"
        )


def _tensor_scatter_abstract(
    x: ShapedArray, idx: ShapedArray, u: ShapedArray, *, op: str, name: str
) -> ShapedArray:
    _check_index_dtype(name, "indices", idx)
    _scatter_dtype_check(name, op, x.dtype)
    if u.dtype != x.dtype:
        raise TypeError(f"{name}: 'updates' must have input_x's dtype {x.dtype}, got {u.dtype}")
    _scatter_shapes(name, x.shape, idx, u.shape)
    return ShapedArray(x.shape, x.dtype)


def _scatter_nd_into(xp: Any, out: Any, idx: Any, u: Any, op: str, name: str, fast: bool) -> None:
    """Scatter ``u`` at nd-indices ``idx`` into the C-contiguous array ``out`` in place."""
    m = idx.shape[-1]
    rows = _nd_rows(xp, name, "indices", idx, out.shape)
    d = _prod(out.shape[m:])
    view = out.reshape(1, _prod(out.shape[:m]), d)
    _scatter_rows(xp, view, rows, u.reshape(1, rows.shape[0], d), op, fast)


def _tensor_scatter_impl(
    xp: Any, x: Any, idx: Any, u: Any, *, op: str, name: str, fast: bool = False
) -> Any:
    out = x.copy()  # C order
    _scatter_nd_into(xp, out, idx, u, op, name, fast)
    return out


def _tensor_scatter_vjp(
    g: Tensor, x: Tensor, idx: Tensor, u: Tensor, *, out: Tensor, op: str, name: str
) -> tuple[Any, ...]:
    def at(t: Tensor) -> Tensor:
        return gather_nd_p.bind(t, idx)

    def scatter(t: Tensor, v: Tensor, how: str) -> Tensor:
        return tensor_scatter_p.bind(t, idx, v, op=how, name=name)

    if op in ("add", "sub"):
        return g, None, (lambda: at(g)) if op == "add" else (lambda: neg(at(g)))
    if op == "update":
        return (lambda: scatter(g, zeros_like(u), "update")), None, (lambda: at(g))
    if op == "mul":
        # d out/d u_k = x * prod(other updates at that row) = out / u_k where u_k != 0;
        # with u_k == 0 this is exact when the row is scattered into once.
        def du_mul() -> Tensor:
            nz = greater(u * u, zeros_like(u))
            safe = select(nz, u, full(u.shape, 1, u.dtype, u._device))
            return select(nz, div(at(g * out), safe), at(g * x))

        return (lambda: scatter(g, u, "mul")), None, du_mul
    if op == "div":
        return (lambda: scatter(g, u, "div")), None, (lambda: neg(div(at(g * out), u)))
    # max / min: the gradient goes to every element equal to the result, split evenly.
    win_x = cast(equal(x, out), g.dtype)
    win_u = cast(equal(u, at(out)), g.dtype)
    count = add(win_x, tensor_scatter_p.bind(zeros_like(x), idx, win_u, op="add", name=name))
    share = div(g, select(greater(count, 0), count, full(count.shape, 1, g.dtype, g._device)))
    return (lambda: mul(share, win_x)), None, (lambda: mul(at(share), win_u))


tensor_scatter_p = Primitive(
    "tensor_scatter",
    "opaque",
    _tensor_scatter_abstract,
    impl=_tensor_scatter_impl,
    cpu=_with_cpu(_tensor_scatter_impl),
    vjp=_tensor_scatter_vjp,
)


def _updates_for(op: str, x: Tensor, updates: Any) -> Tensor:
    """``updates`` as a tensor of ``x``'s dtype (no float -> int narrowing)."""
    u = as_tensor(updates, op, "updates", x, x.dtype)
    if u.dtype.category > x.dtype.category:
        raise TypeError(
            f"{op}: argument 'updates' of dtype {u.dtype} cannot be written into "
            f"'input_x' of dtype {x.dtype}"
        )
    if u._device is not x._device:
        raise ValueError(
            f"{op}: argument 'updates' is on {u.device} but 'input_x' is on "
            f"{x.device}; move one with .to(...)"
        )
    return cast(u, x.dtype)


def _tensor_scatter(op: str, name: str, input_x: Any, indices: Any, updates: Any) -> Tensor:
    x = _tensor(name, "input_x", input_x)
    idx = _index(name, "indices", indices, x)
    u = _updates_for(name, x, updates)
    return tensor_scatter_p.bind(x, idx, u, op=op, name=name)


def tensor_scatter_add(input_x: Tensor, indices: Any, updates: Any) -> Tensor:
    """A copy of ``input_x`` with ``updates`` added at ``indices`` (repeats accumulate).

    >>> tensor_scatter_add(Tensor([1.0, 2.0, 3.0]), Tensor([[0], [0], [2]]),
    ...                    Tensor([1.0, 1.0, 5.0])).tolist()
    [3.0, 2.0, 8.0]
    """
    return _tensor_scatter("add", "tensor_scatter_add", input_x, indices, updates)


def tensor_scatter_sub(input_x: Tensor, indices: Any, updates: Any) -> Tensor:
    """A copy of ``input_x`` with ``updates`` subtracted at ``indices``."""
    return _tensor_scatter("sub", "tensor_scatter_sub", input_x, indices, updates)


def tensor_scatter_mul(input_x: Tensor, indices: Any, updates: Any) -> Tensor:
    """A copy of ``input_x`` multiplied by ``updates`` at ``indices``."""
    return _tensor_scatter("mul", "tensor_scatter_mul", input_x, indices, updates)


def tensor_scatter_div(input_x: Tensor, indices: Any, updates: Any) -> Tensor:
    """A copy of ``input_x`` divided by ``updates`` at ``indices`` (integers: floor division,
    ``n // 0 = 0``)."""
    return _tensor_scatter("div", "tensor_scatter_div", input_x, indices, updates)


def tensor_scatter_max(input_x: Tensor, indices: Any, updates: Any) -> Tensor:
    """A copy of ``input_x`` with ``max(input_x[i], updates)`` at each index ``i``."""
    return _tensor_scatter("max", "tensor_scatter_max", input_x, indices, updates)


def tensor_scatter_min(input_x: Tensor, indices: Any, updates: Any) -> Tensor:
    """A copy of ``input_x`` with ``min(input_x[i], updates)`` at each index ``i``."""
    return _tensor_scatter("min", "tensor_scatter_min", input_x, indices, updates)


def tensor_scatter_update(input_x: Tensor, indices: Any, updates: Any) -> Tensor:
    """A copy of ``input_x`` with ``updates`` written at ``indices`` (for a repeated index
    the last update wins; every repeat receives the gradient)."""
    return _tensor_scatter("update", "tensor_scatter_update", input_x, indices, updates)


def scatter_nd(indices: Any, updates: Tensor, shape: Any) -> Tensor:
    """A zero tensor of ``shape`` with ``updates`` summed in at ``indices``.

    >>> scatter_nd(Tensor([[1], [1], [3]]), Tensor([1.0, 2.0, 3.0]), (4,)).tolist()
    [0.0, 3.0, 0.0, 3.0]
    """
    u = _tensor("scatter_nd", "updates", updates)
    if isinstance(shape, Tensor):
        shape = shape.tolist()
    if isinstance(shape, (int, np.integer)) or shape is None:
        raise op_error("scatter_nd", "shape", shape, "a tuple of positive ints", TypeError)
    dims = tuple(check_int("scatter_nd", "shape", d, 1) for d in shape)
    if not dims:
        raise op_error("scatter_nd", "shape", shape, "a non-empty tuple of positive ints")
    idx = _index("scatter_nd", "indices", indices, u)
    zeros = full(dims, 0, u.dtype, u._device)
    return tensor_scatter_p.bind(zeros, idx, u, op="add", name="scatter_nd")


# ---- tensor_scatter_elements ------------------------------------------------------------


def _scatter_elements_abstract(
    x: ShapedArray, idx: ShapedArray, u: ShapedArray, *, axis: int, reduction: str
) -> ShapedArray:
    op = "tensor_scatter_elements"
    _check_index_dtype(op, "indices", idx)
    if u.dtype != x.dtype:
        raise TypeError(f"{op}: 'updates' must have input_x's dtype {x.dtype}, got {u.dtype}")
    if u.shape != idx.shape:
        raise ValueError(
            f"{op}: argument 'updates' expected the shape of 'indices' {idx.shape}, got {u.shape}"
        )
    _elements_check(op, x, idx, axis, "indices")
    _scatter_dtype_check(op, "add" if reduction == "add" else "update", x.dtype)
    return ShapedArray(x.shape, x.dtype)


def _scatter_elements_impl(
    xp: Any, x: Any, idx: Any, u: Any, *, axis: int, reduction: str, fast: bool = False
) -> Any:
    lin = _element_rows(xp, "tensor_scatter_elements", "indices", idx, x.shape, axis)
    out = x.copy()
    op = "add" if reduction == "add" else "update"
    _scatter_rows(xp, out.reshape(1, -1, 1), lin, u.reshape(1, -1, 1), op, fast)
    return out


def _scatter_elements_vjp(
    g: Tensor, x: Tensor, idx: Tensor, u: Tensor, *, out: Tensor, axis: int, reduction: str
) -> tuple[Any, ...]:
    def du() -> Tensor:
        return gather_elements_p.bind(g, idx, dim=axis)

    if reduction == "add":
        return g, None, du
    return (
        (
            lambda: tensor_scatter_elements_p.bind(
                g, idx, zeros_like(u), axis=axis, reduction="none"
            )
        ),
        None,
        du,
    )


tensor_scatter_elements_p = Primitive(
    "tensor_scatter_elements",
    "opaque",
    _scatter_elements_abstract,
    impl=_scatter_elements_impl,
    cpu=_with_cpu(_scatter_elements_impl),
    vjp=_scatter_elements_vjp,
)


def tensor_scatter_elements(
    input_x: Tensor, indices: Any, updates: Any, axis: int = 0, reduction: str = "none"
) -> Tensor:
    """A copy of ``input_x`` with ``output[i][indices[i][j]] = updates[i][j]`` (for
    ``axis=1``; ``reduction="add"`` accumulates instead of writing).

    >>> tensor_scatter_elements(Tensor([[0.0, 0.0, 0.0]]), Tensor([[2, 0]]),
    ...                         Tensor([[5.0, 7.0]]), 1).tolist()
    [[7.0, 0.0, 5.0]]
    """
    op = "tensor_scatter_elements"
    x = _tensor(op, "input_x", input_x)
    if x.ndim == 0:
        raise op_error(op, "input_x", x, "a tensor of rank >= 1")
    ax = check_axis(op, axis, x.ndim)
    if reduction not in ("none", "add"):
        raise op_error(op, "reduction", reduction, "'none' or 'add'")
    idx = _index(op, "indices", indices, x)
    u = _updates_for(op, x, updates)
    return tensor_scatter_elements_p.bind(x, idx, u, axis=ax, reduction=reduction)


# ---- unsorted segment reductions --------------------------------------------------------


def _segment_abstract(
    x: ShapedArray, ids: ShapedArray, *, num_segments: int, op: str
) -> ShapedArray:
    name = f"unsorted_segment_{op}"
    _check_index_dtype(name, "segment_ids", ids)
    if x.dtype.category == 0:
        raise TypeError(f"{name}: argument 'x' expected a numeric dtype, got Bool")
    if ids.ndim < 1 or x.shape[: ids.ndim] != ids.shape:
        raise ValueError(
            f"{name}: argument 'segment_ids' expected a shape of rank >= 1 that "
            f"is a prefix of the input's shape {x.shape}, got {ids.shape}"
        )
    return ShapedArray((num_segments,) + x.shape[ids.ndim :], x.dtype)


def _segment_impl(
    xp: Any, x: Any, ids: Any, *, num_segments: int, op: str, fast: bool = False
) -> Any:
    name = f"unsorted_segment_{op}"
    flat = _check_range(
        xp,
        name,
        "segment_ids",
        ids,
        num_segments,
        drop_negative=True,
        what=f" (num_segments={num_segments}; negative ids are dropped)",
    )
    rest = x.shape[ids.ndim :]
    x2 = x.reshape(flat.size, _prod(rest))
    if fast and _ksegment.supports(x.dtype, _ksegment.SEGMENT_OPS[op]):
        out = _ksegment.segment_reduce(x2, flat.reshape(-1), num_segments, op)
    else:
        out = xp.full((1, num_segments, x2.shape[1]), _ksegment.identity(op, x.dtype), x.dtype)
        _scatter_rows_xp(
            xp, out, flat.reshape(-1), x2.reshape(1, *x2.shape), _ksegment.SEGMENT_OPS[op]
        )
        out = out[0]
    return out.reshape((num_segments,) + rest)


def _segment_vjp(
    g: Tensor, x: Tensor, ids: Tensor, *, out: Tensor, num_segments: int, op: str
) -> tuple[Any, ...]:
    valid = greater(ids, -1)
    safe = select(valid, ids, zeros_like(ids))
    rest = x.shape[ids.ndim :]
    mask = reshape(cast(valid, g.dtype), ids.shape + (1,) * len(rest))

    def back(t: Tensor) -> Tensor:  # segment values -> one per input element
        return gather_p.bind(t, safe, axis=0)

    def segment_sum(t: Tensor) -> Tensor:
        return segment_p.bind(t, ids, num_segments=num_segments, op="sum")

    def one_where_zero(t: Tensor) -> Tensor:
        return select(greater(t, 0), t, full(t.shape, 1, t.dtype, t._device))

    def dx() -> Tensor:
        if op == "sum":
            return mul(back(g), mask)
        if op in ("max", "min"):  # ties share the gradient evenly
            win = mul(cast(equal(x, back(out)), g.dtype), mask)
            return mul(back(div(g, one_where_zero(segment_sum(win)))), win)
        # prod: d/dx_j = prod of the others; exact with zeros (one zero: only it gets a
        # gradient, the product of the nonzero rest; two or more: all zero).
        zero = equal(x, zeros_like(x))
        ones = full(x.shape, 1, x.dtype, x._device)
        safe_x = select(zero, ones, x)
        nz_prod = segment_p.bind(safe_x, ids, num_segments=num_segments, op="prod")
        n_zero = segment_sum(cast(zero, g.dtype))
        lone = equal(back(n_zero), full((), 1, g.dtype, g._device))
        at_zero = select(lone, back(mul(g, nz_prod)), zeros_like(x))
        return mul(select(zero, at_zero, div(back(mul(g, out)), safe_x)), mask)

    return dx, None


segment_p = Primitive(
    "unsorted_segment",
    "reduce",
    _segment_abstract,
    impl=_segment_impl,
    cpu=_with_cpu(_segment_impl),
    vjp=_segment_vjp,
)


def _segment(op: str, x: Any, segment_ids: Any, num_segments: Any, arg: str) -> Tensor:
    name = f"unsorted_segment_{op}"
    t = _tensor(name, arg, x)
    if isinstance(num_segments, Tensor):
        if num_segments.size != 1 or num_segments.dtype.category != 1:
            raise op_error(
                name, "num_segments", num_segments, "an int or a 1-element int tensor", TypeError
            )
        num_segments = int(num_segments.item())
    n = check_int(name, "num_segments", num_segments, 1)
    return segment_p.bind(t, _index(name, "segment_ids", segment_ids, t), num_segments=n, op=op)


def unsorted_segment_sum(input_x: Tensor, segment_ids: Any, num_segments: Any) -> Tensor:
    """``output[i] = sum of input_x[j...] over segment_ids[j...] == i`` (negative ids are
    dropped; empty segments are 0).

    >>> unsorted_segment_sum(Tensor([1.0, 2.0, 3.0, 4.0]), Tensor([0, 0, 1, 2]), 4).tolist()
    [3.0, 3.0, 4.0, 0.0]
    """
    return _segment("sum", input_x, segment_ids, num_segments, "input_x")


def unsorted_segment_max(x: Tensor, segment_ids: Any, num_segments: Any) -> Tensor:
    """Segment maxima (empty segments hold the dtype's lowest value); ties share the
    gradient evenly."""
    return _segment("max", x, segment_ids, num_segments, "x")


def unsorted_segment_min(x: Tensor, segment_ids: Any, num_segments: Any) -> Tensor:
    """Segment minima (empty segments hold the dtype's highest value)."""
    return _segment("min", x, segment_ids, num_segments, "x")


def unsorted_segment_prod(x: Tensor, segment_ids: Any, num_segments: Any) -> Tensor:
    """Segment products (empty segments are 1); the gradient is exact with zeros."""
    return _segment("prod", x, segment_ids, num_segments, "x")


# ---- in-place updates of Parameters -----------------------------------------------------


def _variable(op: str, arg: str, x: Any) -> Tensor:
    from ..autograd.tape import GradMode

    t = _tensor(op, arg, x)
    if not isinstance(t, Parameter) and t._requires_grad and t._node is None and GradMode.enabled:
        raise RuntimeError(
            f"{op}: cannot update a leaf tensor that requires gradients in "
            "place; use a Parameter, update a copy (y = x * 1), or use no_grad()"
        )
    return t


def _mutate(x: Tensor, fn: Any) -> Tensor:
    """Run ``fn(array)`` on the Parameter's own C-contiguous array (in place)."""
    data = x._data
    writeable = bool(getattr(data.flags, "writeable", True))
    if data.flags.c_contiguous and writeable:
        fn(data)
    else:
        tmp = data.copy()
        fn(tmp)
        if writeable:
            data[...] = tmp
        else:
            x._data = tmp
    return x


def _rebind(x: Tensor, compute: Any) -> Tensor:
    """A plain Tensor takes the functional result (recorded by autograd if tracked)."""
    old = Tensor._wrap(x._data, x._device, x._node, x._index)
    return x._rebind(compute(old))


def _fast(x: Tensor) -> bool:
    return x._device.kind == "cpu"


def _scatter_inplace(
    name: str, reduction: str, input_x: Any, indices: Any, updates: Any, nd: bool
) -> Tensor:
    x = _variable(name, "input_x", input_x)
    if x.ndim == 0:
        raise op_error(name, "input_x", x, "a tensor of rank >= 1")
    idx = _index(name, "indices", indices, x)
    if not nd:  # scatter_<op>: indices address rows of axis 0
        idx = reshape(idx, idx.shape + (1,))
    u = _updates_for(name, x, updates)
    _scatter_dtype_check(name, reduction, x.dtype)
    _scatter_shapes(name, x.shape, ShapedArray(idx.shape, idx.dtype), u.shape)
    if isinstance(x, Parameter):
        return _mutate(
            x,
            lambda a: _scatter_nd_into(
                x._device.xp, a, idx._data, u._data, reduction, name, _fast(x)
            ),
        )
    return _rebind(x, lambda old: tensor_scatter_p.bind(old, idx, u, op=reduction, name=name))


def _check_bool(op: str, arg: str, value: Any) -> None:
    if not isinstance(value, (bool, np.bool_)):
        raise op_error(op, arg, value, "a bool", TypeError)


def _make_scatter(reduction: str, nd: bool) -> Any:
    name = f"scatter_nd_{reduction}" if nd else f"scatter_{reduction}"
    verb = {
        "update": "writes",
        "add": "adds",
        "sub": "subtracts",
        "mul": "multiplies by",
        "div": "divides by",
        "max": "takes the maximum with",
        "min": "takes the minimum with",
    }

    if nd:
        default_lock = reduction == "update"  # ScatterNdUpdate locks by default

        def fn(
            input_x: Any, indices: Any, updates: Any, use_locking: bool = default_lock
        ) -> Tensor:
            _check_bool(name, "use_locking", use_locking)
            return _scatter_inplace(name, reduction, input_x, indices, updates, True)

        where = "the nd-indices ``indices[..., :]``"
    else:

        def fn(input_x: Any, indices: Any, updates: Any) -> Tensor:  # type: ignore[misc]
            return _scatter_inplace(name, reduction, input_x, indices, updates, False)

        where = "the rows ``indices`` of axis 0"
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (
        f"In place: ``input_x`` {verb[reduction]} ``updates`` at {where}; returns the "
        "updated Parameter (repeated indices apply in order; kernels are serial, so "
        "results are deterministic and ``use_locking`` changes nothing)."
    )
    return fn


scatter_add = _make_scatter("add", False)
scatter_sub = _make_scatter("sub", False)
scatter_mul = _make_scatter("mul", False)
scatter_div = _make_scatter("div", False)
scatter_max = _make_scatter("max", False)
scatter_min = _make_scatter("min", False)
scatter_update = _make_scatter("update", False)
scatter_nd_add = _make_scatter("add", True)
scatter_nd_sub = _make_scatter("sub", True)
scatter_nd_mul = _make_scatter("mul", True)
scatter_nd_div = _make_scatter("div", True)
scatter_nd_max = _make_scatter("max", True)
scatter_nd_min = _make_scatter("min", True)
scatter_nd_update = _make_scatter("update", True)


def _assign_value(op: str, variable: Any, value: Any) -> tuple[Tensor, Tensor]:
    x = _variable(op, "variable", variable)
    v = as_tensor(value, op, "value", x, x.dtype)
    if v.dtype.category > x.dtype.category:
        raise TypeError(
            f"{op}: argument 'value' of dtype {v.dtype} cannot be written into "
            f"'variable' of dtype {x.dtype}"
        )
    if v._device is not x._device:
        raise ValueError(
            f"{op}: argument 'value' is on {v.device} but 'variable' is on "
            f"{x.device}; move one with .to(...)"
        )
    try:
        ok = broadcast_shapes(op, v.shape, x.shape) == x.shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(
            f"{op}: argument 'value' of shape {v.shape} does not broadcast to "
            f"the variable's shape {x.shape}"
        )
    return x, cast(v, x.dtype)


def assign(variable: Any, value: Any) -> Tensor:
    """In place: ``variable = value`` (broadcast); returns the variable.

    >>> p = Parameter(Tensor([1.0, 2.0]), name="p")
    >>> assign(p, Tensor([5.0, 6.0])).tolist()
    [5.0, 6.0]
    """
    x, v = _assign_value("assign", variable, value)
    if isinstance(x, Parameter):
        return _mutate(x, lambda a: a.__setitem__(Ellipsis, v._data))
    return _rebind(x, lambda old: broadcast_to(v, x.shape))


def _assign_arith(op: str, variable: Any, value: Any, sign: int) -> Tensor:
    x, v = _assign_value(op, variable, value)
    if x.dtype.category == 0:
        raise TypeError(f"{op}: argument 'variable' expected a numeric dtype, got Bool")
    if isinstance(x, Parameter):

        def apply(a: Any) -> None:
            if sign > 0:
                a += v._data
            else:
                a -= v._data

        return _mutate(x, apply)
    return _rebind(x, lambda old: add(old, v) if sign > 0 else sub(old, v))


def assign_add(variable: Any, value: Any) -> Tensor:
    """In place: ``variable += value``; returns the variable."""
    return _assign_arith("assign_add", variable, value, 1)


def assign_sub(variable: Any, value: Any) -> Tensor:
    """In place: ``variable -= value``; returns the variable."""
    return _assign_arith("assign_sub", variable, value, -1)


def index_add(
    x: Any, indices: Any, y: Any, axis: int, use_lock: bool = True, check_index_bound: bool = True
) -> Tensor:
    """In place: ``x[..., indices[k], ...] += y[..., k, ...]`` along ``axis``; returns ``x``.

    Indices are always checked (``check_index_bound=False`` does not skip the check, so a
    bad index can never corrupt memory); ``use_lock`` changes nothing (serial kernels).

    >>> p = Parameter(Tensor([[1.0, 1.0], [1.0, 1.0]]), name="p")
    >>> index_add(p, Tensor([1, 1]), Tensor([[1.0, 2.0], [3.0, 4.0]]), 0).tolist()
    [[1.0, 1.0], [5.0, 7.0]]
    """
    op = "index_add"
    t = _variable(op, "x", x)
    _check_bool(op, "use_lock", use_lock)
    _check_bool(op, "check_index_bound", check_index_bound)
    if t.ndim == 0:
        raise op_error(op, "x", t, "a tensor of rank >= 1")
    if t.dtype.category == 0:
        raise TypeError(f"{op}: argument 'x' expected a numeric dtype, got Bool")
    ax = check_axis(op, axis, t.ndim)
    idx = _index(op, "indices", indices, t)
    v = _tensor(op, "y", y)
    if v._device is not t._device:
        raise ValueError(f"{op}: argument 'y' is on {v.device} but 'x' is on {t.device}")
    if v.dtype.category > t.dtype.category:
        raise TypeError(
            f"{op}: argument 'y' of dtype {v.dtype} cannot be added into 'x' of dtype {t.dtype}"
        )
    v = cast(v, t.dtype)
    if idx.ndim != 1:
        raise op_error(op, "indices", idx, "a 1-D tensor")
    if v.ndim != t.ndim or any(v.shape[d] != t.shape[d] for d in range(t.ndim) if d != ax):
        raise ValueError(
            f"{op}: argument 'y' expected x's shape {t.shape} outside axis {ax}, got {v.shape}"
        )
    if v.shape[ax] != idx.shape[0]:
        raise ValueError(
            f"{op}: argument 'indices' has {idx.shape[0]} entries but 'y' has "
            f"{v.shape[ax]} along axis {ax}"
        )
    if isinstance(t, Parameter):

        def apply(a: Any) -> None:
            xp = t._device.xp
            o, n, i = _split3(a.shape, ax)
            ids = _check_range(xp, op, "indices", idx._data, n, what=f" for axis {ax} of size {n}")
            _scatter_rows(
                xp, a.reshape(o, n, i), ids, v._data.reshape(o, ids.shape[0], i), "add", _fast(t)
            )

        return _mutate(t, apply)
    return _rebind(t, lambda old: add(old, gather_grad_p.bind(v, idx, axis=ax, size=t.shape[ax])))


# ---- inplace_add / inplace_sub / inplace_update (functional in MindSpore) -----------------


def _inplace_rows(op: str, reduction: str, x: Any, v: Any, indices: Any) -> Tensor:
    t = _tensor(op, "x", x)
    if t.ndim == 0:
        raise op_error(op, "x", t, "a tensor of rank >= 1")
    if isinstance(indices, (bool, np.bool_)) or not isinstance(
        indices, (int, np.integer, tuple, list)
    ):
        raise op_error(op, "indices", indices, "an int or a tuple of ints", TypeError)
    rows = (indices,) if isinstance(indices, (int, np.integer)) else tuple(indices)
    for r in rows:
        check_int(op, "indices", r)
        if not 0 <= r < t.shape[0]:
            raise ValueError(
                f"{op}: argument 'indices' holds {r}, expected values in "
                f"[0, {t.shape[0]}) (x's first dimension)"
            )
    val = _tensor(op, "v", v)
    if val.ndim == t.ndim - 1 and len(rows) == 1:
        val = reshape(val, (1,) + val.shape)
    if val.ndim != t.ndim or val.shape[1:] != t.shape[1:] or val.shape[0] != len(rows):
        raise ValueError(
            f"{op}: argument 'v' expected shape {(len(rows),) + t.shape[1:]}, got {val.shape}"
        )
    u = _updates_for(op, t, val)
    idx = Tensor(np.asarray(rows, np.int64).reshape(-1, 1), device=t._device)
    return tensor_scatter_p.bind(t, idx, u, op=reduction, name=op)


def inplace_add(x: Tensor, v: Tensor, indices: Any) -> Tensor:
    """``x`` with ``v[k]`` added to row ``indices[k]``; a new tensor, as in MindSpore (its
    "inplace" ops return the result and leave ``x`` alone). Differentiable.

    >>> inplace_add(Tensor([[1.0], [2.0]]), Tensor([[5.0]]), 1).tolist()
    [[1.0], [7.0]]
    """
    return _inplace_rows("inplace_add", "add", x, v, indices)


def inplace_sub(x: Tensor, v: Tensor, indices: Any) -> Tensor:
    """``x`` with ``v[k]`` subtracted from row ``indices[k]`` (a new tensor)."""
    return _inplace_rows("inplace_sub", "sub", x, v, indices)


def inplace_update(x: Tensor, v: Tensor, indices: Any) -> Tensor:
    """``x`` with row ``indices[k]`` replaced by ``v[k]`` (a new tensor)."""
    return _inplace_rows("inplace_update", "update", x, v, indices)
