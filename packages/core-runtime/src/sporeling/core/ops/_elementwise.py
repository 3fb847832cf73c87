"""Building blocks for elementwise primitives, and the arithmetic every vjp uses.

``unary_op`` / ``binary_op`` register a primitive from: the array-module function name (or
an ``impl``), the accepted dtype family, the vjp, and the scalar expression the fuser
inlines. Public wrappers promote their inputs with :func:`promote_args` (weak Python
scalars, see :mod:`sporeling.core.dtype`), so binary primitives always see one dtype.

Scalar expressions use the names ``x``, ``y`` and the functions ``exp log sqrt tanh sin
cos abs floor ceil where(c, a, b)`` with Python operators; the fuser maps them onto Numba
and CUDA math.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import dtype as _dt
from .._primitive import _STATE, Primitive, ShapedArray
from ..errors import op_error
from ..kernels.cpu import relu_add as _relu_add
from ..tensor import Parameter, Tensor
from ._core import as_tensor, broadcast_shapes, cast, sum_to
from .complex_numbers import SUPPORTED as _COMPLEX_OPS
from .complex_numbers import conjugate as _conj

#: the exact types the hot paths below accept without isinstance/promotion (a Parameter is
#: a Tensor: weights and biases take the same fast paths as activations)
_T = Tensor
_P = Parameter

__all__ = [
    "add",
    "sub",
    "mul",
    "div",
    "neg",
    "exp",
    "log",
    "pow",
    "sqrt",
    "square",
]
# unary_op, binary_op, promote_args and float_input are helpers for defining ops, not ops

#: dtype families an elementwise op accepts
FAMILIES = {
    "float": lambda d: d.category == 2,
    "inexact": lambda d: d.category >= 2,
    "numeric": lambda d: d.category in (1, 2),
    "number": lambda d: d.category >= 1,
    "int": lambda d: d.category == 1,
    "intbool": lambda d: d.category <= 1,
    "all": lambda d: True,
}
_FAMILY_TEXT = {
    "float": "a floating dtype (float16, float32, float64)",
    "inexact": "a floating or complex dtype",
    "numeric": "a numeric dtype (integer or floating)",
    "number": "a numeric dtype (integer, floating or complex)",
    "int": "an integer dtype",
    "intbool": "an integer or bool dtype",
    "all": "any dtype",
}


def _check_family(op: str, arg: str, aval: ShapedArray, family: str) -> None:
    if not FAMILIES[family](aval.dtype):
        extra = ""
        if aval.dtype.category == 3:
            extra = f" (the ops that take complex tensors: {_COMPLEX_OPS})"
        raise TypeError(
            f"{op}: argument '{arg}' expected {_FAMILY_TEXT[family]}, got {aval.dtype}{extra}"
        )


def _numpy_function(default: Callable[..., Any], fname: str) -> Callable[..., Any]:
    """An ``eager_specialize`` rule for an op whose impl is ``getattr(xp, fname)(*arrays)``:
    on NumPy arrays the eager plan calls NumPy's function (a ufunc) itself, without the
    impl's Python frame and attribute lookup (~0.1 us of a ~1 us tiny op)."""

    def specialize(impl: Any, arrays: list[Any], params: dict[str, Any]) -> Any:
        if impl is not default or params or any(type(a) is not np.ndarray for a in arrays):
            return None
        return getattr(np, fname)

    return specialize


def unary_op(
    name: str,
    fn: str | None = None,
    *,
    vjp: Callable[..., Any] | None = None,
    scalar: str | None = None,
    family: str = "float",
    out_dtype: _dt.DType | None = None,
    impl: Callable[..., Any] | None = None,
    ufunc: bool = False,
) -> Primitive:
    """Register an elementwise unary primitive ``name`` (``impl`` or ``xp.<fn>``);
    ``ufunc``: ``xp.<fn>`` is a ufunc the graph compiler may call with ``out=``."""

    def abstract(x: ShapedArray) -> ShapedArray:
        _check_family(name, "x", x, family)
        return ShapedArray(x.shape, out_dtype or x.dtype)

    fname = fn or name
    default = impl is None
    if impl is None:

        def impl(xp: Any, x: Any) -> Any:
            return getattr(xp, fname)(x)

    prim = Primitive(
        name, "elementwise", abstract, impl=impl, vjp=vjp, scalar=scalar,
        ufunc=fname if ufunc else None,
    )  # fmt: skip
    if default:
        prim.eager_specialize = _numpy_function(impl, fname)
    return prim


def binary_op(
    name: str,
    fn: str | None = None,
    *,
    vjp: Callable[..., Any] | None = None,
    scalar: str | None = None,
    family: str = "numeric",
    out_dtype: _dt.DType | None = None,
    impl: Callable[..., Any] | None = None,
    ufunc: bool = False,
) -> Primitive:
    """Register an elementwise binary primitive with broadcasting (``ufunc``: as for
    :func:`unary_op`)."""

    def abstract(x: ShapedArray, y: ShapedArray) -> ShapedArray:
        _check_family(name, "x", x, family)
        _check_family(name, "y", y, family)
        if x.dtype != y.dtype:  # public wrappers promote first
            raise TypeError(f"{name}: inputs must share a dtype, got {x.dtype} and {y.dtype}")
        return ShapedArray(broadcast_shapes(name, x.shape, y.shape), out_dtype or x.dtype)

    fname = fn or name
    default = impl is None
    if impl is None:

        def impl(xp: Any, x: Any, y: Any) -> Any:
            return getattr(xp, fname)(x, y)

    prim = Primitive(
        name, "elementwise", abstract, impl=impl, vjp=vjp, scalar=scalar,
        ufunc=fname if ufunc else None,
    )  # fmt: skip
    if default:
        prim.eager_specialize = _numpy_function(impl, fname)
    return prim


def _weak_scalar(t: Tensor, value: Any, min_category: int) -> Tensor | None:
    """``value`` as a 0-d tensor of ``t``'s dtype when the promotion rules keep that dtype."""
    kind = t._data.dtype.kind
    if kind in "fc" or (kind in "iu" and type(value) is int and min_category < 2):
        try:
            return Tensor._wrap(t._device.xp.asarray(value, dtype=t._data.dtype), t._device)
        except OverflowError:
            return None
    return None


def promote_args(
    op: str, x: Any, y: Any, names: tuple[str, str] = ("x", "y"), min_category: int = 0
) -> tuple[Tensor, Tensor]:
    """Two Tensors of the promoted dtype on one device (Python scalars are weak).

    ``min_category=2`` promotes integer/bool results to float32 (for true division etc.).
    """
    tx = type(x)
    ty = type(y)
    if (  # fast path: two tensors of one dtype (the common case on the hot path)
        (tx is _T or tx is _P)
        and (ty is _T or ty is _P)
        and x._data.dtype == y._data.dtype
        and (min_category == 0 or x._data.dtype.kind in "fc")
    ):
        return x, y
    if (tx is _T or tx is _P) and type(y) in (int, float):
        fast = _weak_scalar(x, y, min_category)
        if fast is not None:
            return x, fast
    elif (ty is _T or ty is _P) and type(x) in (int, float):
        fast = _weak_scalar(y, x, min_category)
        if fast is not None:
            return fast, y
    if not isinstance(x, Tensor) and _dt.scalar_category(x) is None:
        x = as_tensor(x, op, names[0], y if isinstance(y, Tensor) else None)  # arrays, lists
    if not isinstance(y, Tensor) and _dt.scalar_category(y) is None:
        y = as_tensor(y, op, names[1], x if isinstance(x, Tensor) else None)
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        x = as_tensor(x, op, names[0])
    try:
        dt = _dt.result_type(x, y)
    except TypeError:
        bad, arg = (x, names[0]) if not isinstance(x, Tensor) else (y, names[1])
        raise op_error(op, arg, bad, "a Tensor or a number", TypeError) from None
    if dt.category < min_category:
        dt = _dt.float32
    like = x if isinstance(x, Tensor) else y
    xt = as_tensor(x, op, names[0], like, dt)
    yt = as_tensor(y, op, names[1], like, dt)
    return cast(xt, dt), cast(yt, dt)


def float_input(op: str, x: Any, arg: str = "x") -> Tensor:
    """A Tensor for a float-only op: integers and bools are promoted to float32 (complex
    tensors pass, for the ops' own dtype check)."""
    if ((tx := type(x)) is _T or tx is _P) and x._data.dtype.kind == "f":
        return x  # the common case first (hot path)
    t = as_tensor(x, op, arg)
    return t if t.dtype.category >= 2 else cast(t, _dt.float32)


def _unb(g: Tensor, t: Tensor) -> Tensor:
    return sum_to(g, t.shape)


add_p = binary_op(
    "add",
    family="number",
    vjp=lambda g, x, y, *, out: (lambda: _unb(g, x), lambda: _unb(g, y)),
    scalar="x + y",
    ufunc=True,
)


def _add_cpu(xp: Any, x: Any, y: Any) -> Any:
    """Large same-shape contiguous float inputs on row blocks of several threads (bit-equal
    to NumPy's add, kernels/cpu/relu_add.py), the rest in NumPy."""
    if x.size >= _relu_add.PARALLEL_MIN:
        out = _relu_add.add(x, y)
        if out is not None:
            return out
    return xp.add(x, y)


def _specialize_add(numpy_rule: Callable[..., Any]) -> Callable[..., Any]:
    """The eager plan's kernel: for shapes the row-block kernel may take, the CPU impl
    (which checks contiguity per call); otherwise NumPy's add itself."""

    def specialize(impl: Any, arrays: list[Any], params: dict[str, Any]) -> Any:
        if impl is not _add_cpu:
            return numpy_rule(impl, arrays, params)
        if params or any(type(a) is not np.ndarray for a in arrays):
            return None
        x, y = arrays
        if x.shape == y.shape and x.dtype == y.dtype and _relu_add.applies(x.shape, x.dtype):
            return lambda a, b: _add_cpu(np, a, b)
        return np.add

    return specialize


add_p.def_impl("cpu")(_add_cpu)
add_p.eager_specialize = _specialize_add(add_p.eager_specialize)
sub_p = binary_op(
    "sub",
    "subtract",
    family="number",
    vjp=lambda g, x, y, *, out: (lambda: _unb(g, x), lambda: _unb(neg(g), y)),
    scalar="x - y",
    ufunc=True,
)
mul_p = binary_op(
    "mul",
    "multiply",
    family="number",
    vjp=lambda g, x, y, *, out: (lambda: _unb(g * _conj(y), x), lambda: _unb(g * _conj(x), y)),
    scalar="x * y",
    ufunc=True,
)
div_p = binary_op(
    "div",
    "true_divide",
    family="inexact",
    vjp=lambda g, x, y, *, out: (
        lambda: _unb(g / _conj(y), x),
        lambda: _unb(neg(g) * _conj(out / y), y),
    ),
    scalar="x / y",
    ufunc=True,
)
neg_p = unary_op(
    "neg", "negative", family="number", vjp=lambda g, x, *, out: neg(g), scalar="-x", ufunc=True
)
exp_p = unary_op(
    "exp", family="inexact", vjp=lambda g, x, *, out: g * _conj(out), scalar="exp(x)", ufunc=True
)
log_p = unary_op(
    "log", family="inexact", vjp=lambda g, x, *, out: g / _conj(x), scalar="log(x)", ufunc=True
)
sqrt_p = unary_op(
    "sqrt", family="inexact", vjp=lambda g, x, *, out: g / _conj(out * 2), scalar="sqrt(x)",
    ufunc=True,
)  # fmt: skip
square_p = unary_op(
    "square", family="number", vjp=lambda g, x, *, out: g * _conj(x) * 2, scalar="x * x",
    ufunc=True,
)  # fmt: skip


def _pow_vjp(g: Tensor, x: Tensor, y: Tensor, *, out: Tensor) -> Any:
    from .. import ops

    def dx() -> Tensor:
        return _unb(g * _conj(y * pow(x, y - 1)), x)

    def dy() -> Tensor:
        if x.dtype.category == 3:  # the principal branch of log, 0 where x == 0
            safe = ops.select(ops.equal(x, 0), ops.ones_like(x), x)
        else:  # d/dy x**y = x**y log x, 0 where x <= 0
            safe = ops.select(x > 0, x, ops.ones_like(x))
        return _unb(g * _conj(out * log(safe)), y)

    return dx, dy


pow_p = binary_op("pow", "power", family="number", vjp=_pow_vjp, scalar="x ** y")


def add(x: Any, y: Any) -> Tensor:
    """Elementwise ``x + y`` with broadcasting and promotion.

    >>> add(Tensor([1.0, 2.0]), 1).tolist()
    [2.0, 3.0]
    """
    if (
        ((tx := type(x)) is _T or tx is _P)
        and ((ty := type(y)) is _T or ty is _P)
        and x._data.dtype is y._data.dtype
    ):
        return _STATE[-1].process(add_p, (x, y), {})  # common case: no promotion, no bind
    return add_p.bind(*promote_args("add", x, y))


def sub(x: Any, y: Any) -> Tensor:
    """Elementwise ``x - y``."""
    if (
        ((tx := type(x)) is _T or tx is _P)
        and ((ty := type(y)) is _T or ty is _P)
        and x._data.dtype is y._data.dtype
    ):
        return _STATE[-1].process(sub_p, (x, y), {})  # common case: no promotion, no bind
    return sub_p.bind(*promote_args("sub", x, y))


def mul(x: Any, y: Any) -> Tensor:
    """Elementwise ``x * y``."""
    if (
        ((tx := type(x)) is _T or tx is _P)
        and ((ty := type(y)) is _T or ty is _P)
        and x._data.dtype is y._data.dtype
    ):
        return _STATE[-1].process(mul_p, (x, y), {})  # common case: no promotion, no bind
    return mul_p.bind(*promote_args("mul", x, y))


def div(x: Any, y: Any) -> Tensor:
    """Elementwise true division ``x / y`` (integers divide as float32)."""
    if ((tx := type(x)) is _T or tx is _P) and ((ty := type(y)) is _T or ty is _P):
        dt = x._data.dtype
        if dt is y._data.dtype and dt.kind == "f":
            return _STATE[-1].process(div_p, (x, y), {})  # common case: no promotion, no bind
    return div_p.bind(*promote_args("div", x, y, min_category=2))


def neg(x: Any) -> Tensor:
    """Elementwise ``-x``."""
    return neg_p.bind(as_tensor(x, "neg", "x"))


def exp(x: Any) -> Tensor:
    """Elementwise e**x."""
    return exp_p.bind(float_input("exp", x))


def log(x: Any) -> Tensor:
    """Elementwise natural logarithm."""
    return log_p.bind(float_input("log", x))


def sqrt(x: Any) -> Tensor:
    """Elementwise square root."""
    return sqrt_p.bind(float_input("sqrt", x))


def square(x: Any) -> Tensor:
    """Elementwise ``x * x``."""
    return square_p.bind(as_tensor(x, "square", "x"))


def pow(x: Any, y: Any) -> Tensor:  # noqa: A001 - MindSpore's name
    """Elementwise ``x ** y``."""
    return pow_p.bind(*promote_args("pow", x, y))
