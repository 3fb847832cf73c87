"""Gather and scatter primitives (abstract rules, impls, vjps); each is the other's gradient."""

from __future__ import annotations

from typing import Any

from ... import dtype as _dt
from ..._primitive import Primitive, ShapedArray
from ...tensor import Tensor
from .._compare import equal, greater, select
from .._core import cast, full, zeros_like
from .._elementwise import add, div, mul, neg
from ._common import (
    _check_index_dtype,
    _check_range,
    _element_rows,
    _gather_rows,
    _nd_rows,
    _prod,
    _scatter_rows,
    _split3,
    _with_cpu,
)

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
