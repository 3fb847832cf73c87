"""Comparison ops beyond ``_compare``'s basics: MindSpore's short names (ne, ge, gt, le),
floating-point classification (isfinite, isnan, isinf), tolerance tests (isclose,
approximate_equal) and ``same_type_shape``. All results are bool tensors without gradient.
"""

from __future__ import annotations

from typing import Any

from .. import dtype as _dt
from .._primitive import Primitive, ShapedArray
from ..errors import op_error
from ..tensor import Tensor
from ._compare import greater, greater_equal, less, less_equal, not_equal
from ._core import as_tensor, broadcast_shapes
from ._elementwise import promote_args, sub, unary_op
from .math import abs as _abs

__all__ = [
    "ne",
    "ge",
    "gt",
    "le",
    "isfinite",
    "isnan",
    "isinf",
    "isclose",
    "approximate_equal",
    "same_type_shape",
]


def ne(x: Any, y: Any) -> Tensor:
    """Elementwise ``x != y`` (alias of :func:`not_equal`)."""
    return not_equal(x, y)


def ge(x: Any, y: Any) -> Tensor:
    """Elementwise ``x >= y`` (alias of :func:`greater_equal`)."""
    return greater_equal(x, y)


def gt(x: Any, y: Any) -> Tensor:
    """Elementwise ``x > y`` (alias of :func:`greater`)."""
    return greater(x, y)


def le(x: Any, y: Any) -> Tensor:
    """Elementwise ``x <= y`` (alias of :func:`less_equal`)."""
    return less_equal(x, y)


# x - x is 0 for every finite value (integers and bools too), NaN for inf and NaN
isfinite_p = unary_op("isfinite", family="all", out_dtype=_dt.bool_, scalar="x - x == 0")
isnan_p = unary_op("isnan", family="all", out_dtype=_dt.bool_, scalar="x != x")
isinf_p = unary_op("isinf", family="all", out_dtype=_dt.bool_, scalar="x == x and x - x != x - x")


def isfinite(x: Any) -> Tensor:
    """Elementwise test for finite values (neither inf nor NaN); always True for integers.

    >>> isfinite(Tensor([1.0, float("inf"), float("nan")])).tolist()
    [True, False, False]
    """
    return isfinite_p.bind(as_tensor(x, "isfinite", "x"))


def isnan(x: Any) -> Tensor:
    """Elementwise test for NaN."""
    return isnan_p.bind(as_tensor(x, "isnan", "x"))


def isinf(x: Any) -> Tensor:
    """Elementwise test for +inf or -inf."""
    return isinf_p.bind(as_tensor(x, "isinf", "x"))


def _isclose_abstract(
    x: ShapedArray, y: ShapedArray, *, rtol: float, atol: float, equal_nan: bool
) -> ShapedArray:
    for name, a in (("x1", x), ("x2", y)):
        if a.dtype.category == 0:
            raise TypeError(f"isclose: argument '{name}' expected a numeric dtype, got Bool")
    return ShapedArray(broadcast_shapes("isclose", x.shape, y.shape), _dt.bool_)


#: NumPy's rule: finite pairs within the tolerances; infinities only equal to themselves
_ISCLOSE = "where(x - x == 0 and y - y == 0, abs(x - y) <= atol + rtol * abs(y), x == y)"

isclose_p = Primitive(
    "isclose",
    "elementwise",
    _isclose_abstract,
    impl=lambda xp, x, y, *, rtol, atol, equal_nan: xp.isclose(x, y, rtol, atol, equal_nan),
    scalar=_ISCLOSE,
    scalar_rule=lambda p: f"({_ISCLOSE}) or (x != x and y != y)" if p["equal_nan"] else _ISCLOSE,
)


def _tolerance(op: str, arg: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise op_error(op, arg, value, "a float", TypeError)
    if value < 0:
        raise op_error(op, arg, value, "a float >= 0")
    return float(value)


def isclose(
    x1: Any, x2: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> Tensor:
    """Elementwise ``|x1 - x2| <= atol + rtol * |x2|`` (equal infinities are close; NaNs
    are close to each other only with ``equal_nan``).

    >>> isclose(Tensor([1.0, 2.0]), Tensor([1.0 + 1e-9, 2.1])).tolist()
    [True, False]
    """
    rtol = _tolerance("isclose", "rtol", rtol)
    atol = _tolerance("isclose", "atol", atol)
    if not isinstance(equal_nan, bool):
        raise op_error("isclose", "equal_nan", equal_nan, "a bool", TypeError)
    xt, yt = promote_args("isclose", x1, x2, ("x1", "x2"))
    return isclose_p.bind(xt, yt, rtol=rtol, atol=atol, equal_nan=equal_nan)


def approximate_equal(x: Any, y: Any, tolerance: float = 1e-05) -> Tensor:
    """Elementwise ``|x - y| < tolerance`` (bool result).

    >>> approximate_equal(Tensor([1.0, 2.0]), Tensor([1.0, 2.5]), 0.1).tolist()
    [True, False]
    """
    tol = _tolerance("approximate_equal", "tolerance", tolerance)
    xt, yt = promote_args("approximate_equal", x, y)
    if xt.dtype.category == 0:
        raise op_error("approximate_equal", "x", x, "a numeric tensor", TypeError)
    return less(_abs(sub(xt, yt)), tol)


def same_type_shape(input_x: Any, input_y: Any) -> Tensor:
    """Return ``input_x`` if both tensors have the same dtype and shape, else raise
    (TypeError for dtypes, ValueError for shapes)."""
    for name, t in (("input_x", input_x), ("input_y", input_y)):
        if not isinstance(t, Tensor):
            raise op_error("same_type_shape", name, t, "a Tensor", TypeError)
    if input_x.dtype != input_y.dtype:
        raise TypeError(
            f"same_type_shape: argument 'input_y' expected dtype {input_x.dtype} "
            f"(that of 'input_x'), got {input_y.dtype}"
        )
    if input_x.shape != input_y.shape:
        raise ValueError(
            f"same_type_shape: argument 'input_y' expected shape {input_x.shape} "
            f"(that of 'input_x'), got {input_y.shape}"
        )
    return input_x
