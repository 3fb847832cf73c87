"""Comparisons and ``select``: the ops that vjps of max/abs/relu-like functions need."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtype as _dt
from .._backend import CPU
from .._primitive import _STATE, Primitive, ShapedArray
from ..errors import op_error
from ..tensor import Parameter, Tensor
from ._core import as_tensor, broadcast_shapes, broadcast_to, cast, sum_to, zeros_like
from ._elementwise import FAMILIES, binary_op, promote_args

__all__ = [
    "equal",
    "not_equal",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "select",
    "maximum",
    "minimum",
]

#: the exact types the hot paths accept (a Parameter is a Tensor)
_TENSORS = frozenset((Tensor, Parameter))

equal_p = binary_op("equal", family="all", out_dtype=_dt.bool_, scalar="x == y")
not_equal_p = binary_op("not_equal", family="all", out_dtype=_dt.bool_, scalar="x != y")
greater_p = binary_op("greater", family="numeric", out_dtype=_dt.bool_, scalar="x > y")
greater_equal_p = binary_op("greater_equal", family="numeric", out_dtype=_dt.bool_, scalar="x >= y")
less_p = binary_op("less", family="numeric", out_dtype=_dt.bool_, scalar="x < y")
less_equal_p = binary_op("less_equal", family="numeric", out_dtype=_dt.bool_, scalar="x <= y")


_ndarray = np.ndarray
_new = object.__new__


def _same_shape_compare(prim: Primitive, ufunc: Any, family: str) -> Any:
    """The eager path of a comparison of two same-shape, same-dtype CPU tensors: NumPy's
    ufunc and the bool result Tensor (never a tape node), without the interpreter's plan
    lookup (``x > y`` on 4x4: ~1.1 -> ~0.8 us); None when another path must run (graph
    mode, broadcasting, another device or dtype family, a newly registered impl)."""
    allowed = frozenset(d.np for d in _dt.ALL if FAMILIES[family](d))
    default = prim.impls["any"]

    def run(x: Tensor, y: Tensor, dx: Any, dy: Any) -> Tensor | None:
        if (
            dx.shape != dy.shape
            or len(_STATE) != 1
            or x._device is not CPU
            or y._device is not CPU
            or dx.dtype not in allowed
            or type(dx) is not _ndarray
            or type(dy) is not _ndarray
            or prim._impl_by_device.get(CPU) is not default  # (set by the first generic call)
        ):
            return None
        out = ufunc(dx, dy)
        if type(out) is not _ndarray:
            out = np.asarray(out)  # (0-d inputs give a NumPy bool)
        t = _new(Tensor)
        t._data = out
        t._device = CPU
        t._node = None
        t._index = 0
        t._requires_grad = False
        t.grad = None
        return t

    return run


def _comparison(prim: Primitive, ufunc: Any, family: str, symbol: str) -> Any:
    """The public op ``x <symbol> y``: the same-shape eager path, else the interpreter
    directly when both are tensors of one dtype (no promotion, no bind), else ``bind``."""
    name = prim.name
    now = _same_shape_compare(prim, ufunc, family)

    def op(x: Any, y: Any) -> Tensor:
        if (
            type(x) in _TENSORS
            and type(y) in _TENSORS
            and (dx := x._data).dtype is (dy := y._data).dtype
        ):
            out = now(x, y, dx, dy)
            if out is not None:
                return out
            return _STATE[-1].process(prim, (x, y), {})
        return prim.bind(*promote_args(name, x, y))

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Elementwise ``x {symbol} y`` (bool result)."
    return op


equal = _comparison(equal_p, np.equal, "all", "==")
not_equal = _comparison(not_equal_p, np.not_equal, "all", "!=")
greater = _comparison(greater_p, np.greater, "numeric", ">")
greater_equal = _comparison(greater_equal_p, np.greater_equal, "numeric", ">=")
less = _comparison(less_p, np.less, "numeric", "<")
less_equal = _comparison(less_equal_p, np.less_equal, "numeric", "<=")


def _select_abstract(c: ShapedArray, x: ShapedArray, y: ShapedArray) -> ShapedArray:
    if c.dtype != _dt.bool_:
        raise TypeError(f"select: argument 'cond' expected a bool tensor, got {c.dtype}")
    if x.dtype != y.dtype:
        raise TypeError(f"select: inputs must share a dtype, got {x.dtype} and {y.dtype}")
    return ShapedArray(broadcast_shapes("select", c.shape, x.shape, y.shape), x.dtype)


def _select_vjp(g: Tensor, c: Tensor, x: Tensor, y: Tensor, *, out: Tensor) -> tuple[Any, ...]:
    def dx() -> Tensor:
        return sum_to(select(c, g, zeros_like(g)), x.shape)

    def dy() -> Tensor:
        return sum_to(select(c, zeros_like(g), g), y.shape)

    return None, dx, dy


select_p = Primitive(
    "select",
    "elementwise",
    _select_abstract,
    impl=lambda xp, c, x, y: xp.where(c, x, y),
    vjp=_select_vjp,
    scalar="where(c, x, y)",
)


def select(cond: Any, x: Any, y: Any) -> Tensor:
    """Pick ``x`` where ``cond`` is True and ``y`` elsewhere (with broadcasting).

    >>> select(Tensor([True, False]), Tensor([1.0, 2.0]), 0.0).tolist()
    [1.0, 0.0]
    """
    c = as_tensor(cond, "select", "cond")
    if c.dtype != _dt.bool_:
        raise op_error("select", "cond", c, "a bool tensor", TypeError)
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        x = as_tensor(x, "select", "x", c)
    xt, yt = promote_args("select", x, y)
    if xt._device is not c._device:
        raise ValueError(f"select: 'cond' is on {c.device} but 'x' is on {xt.device}")
    return select_p.bind(c, xt, yt)


def _minmax_vjp(pick_x_when: str) -> Any:
    def vjp(g: Tensor, x: Tensor, y: Tensor, *, out: Tensor) -> tuple[Any, Any]:
        # Ties send half the gradient to each side, so the rule is symmetric.
        xb = broadcast_to(x, out.shape)
        yb = broadcast_to(y, out.shape)
        win = greater(xb, yb) if pick_x_when == "greater" else less(xb, yb)
        tie = equal(xb, yb)
        wx = cast(win, g.dtype) + cast(tie, g.dtype) * 0.5
        return (lambda: sum_to(g * wx, x.shape)), (lambda: sum_to(g * (1 - wx), y.shape))

    return vjp


maximum_p = binary_op("maximum", vjp=_minmax_vjp("greater"), scalar="max(x, y)", ufunc=True)
minimum_p = binary_op("minimum", vjp=_minmax_vjp("less"), scalar="min(x, y)", ufunc=True)


def maximum(x: Any, y: Any) -> Tensor:
    """Elementwise maximum (ties split the gradient evenly)."""
    return maximum_p.bind(*promote_args("maximum", x, y))


def minimum(x: Any, y: Any) -> Tensor:
    """Elementwise minimum (ties split the gradient evenly)."""
    return minimum_p.bind(*promote_args("minimum", x, y))
