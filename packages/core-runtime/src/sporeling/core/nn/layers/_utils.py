"""Argument checks and parameter creation shared by the layers.

Every check raises ``TypeError``/``ValueError`` naming the layer, the argument, the value
received and what was expected (``Conv2d: argument 'group' expected ...``).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from ... import dtype as _dt
from ...errors import check_bool, check_int, describe  # noqa: F401  (re-exported to the layers)
from ...initializer import Initializer, initializer
from ...tensor import Parameter, Tensor

__all__: list[str] = []


def arg_error(cls: str, arg: str, value: Any, expected: str, exc: type = ValueError) -> Exception:
    return exc(f"{cls}: argument '{arg}' expected {expected}, got {describe(value)}")


def check_float(
    cls: str,
    arg: str,
    value: Any,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise arg_error(cls, arg, value, "a float", TypeError)
    v = float(value)
    bad_low = low is not None and (v <= low if low_open else v < low)
    bad_high = high is not None and (v >= high if high_open else v > high)
    if bad_low or bad_high or v != v:
        lo = "(" if low_open else "["
        hi = ")" if high_open else "]"
        rng = f"{lo}{'-inf' if low is None else low}, {'inf' if high is None else high}{hi}"
        raise arg_error(cls, arg, value, f"a float in {rng}")
    return v


def check_str(cls: str, arg: str, value: Any, choices: tuple[str, ...], lower: bool = True) -> str:
    if not isinstance(value, str):
        raise arg_error(cls, arg, value, f"one of {list(choices)}", TypeError)
    v = value.lower() if lower else value
    if v not in choices:
        raise arg_error(cls, arg, value, f"one of {list(choices)}")
    return v


def int_tuple(cls: str, arg: str, value: Any, n: int, minimum: int = 1) -> tuple[int, ...]:
    """An int or a tuple of ``n`` ints, each >= ``minimum``, as an ``n``-tuple."""
    items = tuple(value) if isinstance(value, (tuple, list)) else (value,) * n
    if len(items) != n:
        raise arg_error(cls, arg, value, f"an int or a tuple of {n} ints")
    for v in items:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise arg_error(cls, arg, value, f"an int or a tuple of {n} ints", TypeError)
        if v < minimum:
            raise arg_error(cls, arg, value, f"ints >= {minimum}")
    return tuple(int(v) for v in items)


def check_dtype(cls: str, arg: str, value: Any) -> _dt.DType:
    try:
        return _dt.to_dtype(value)
    except (TypeError, ValueError, KeyError):
        raise arg_error(cls, arg, value, "a Sporeling dtype (e.g. float32)", TypeError) from None


def make_param(
    cls: str,
    arg: str,
    init: Any,
    shape: tuple[int, ...],
    name: str,
    dtype: Any = _dt.float32,
    requires_grad: bool = True,
) -> Parameter:
    """A Parameter ``name`` of ``shape`` from ``init`` (name, number, Initializer, Tensor)."""
    if isinstance(init, Tensor):
        if tuple(init.shape) != tuple(shape):
            raise arg_error(cls, arg, init, f"a Tensor of shape {tuple(shape)}")
    elif not (
        isinstance(init, (str, Initializer))
        or (isinstance(init, numbers.Number) and not isinstance(init, bool))
    ):
        raise arg_error(
            cls, arg, init, "an initializer name, an Initializer, a number or a Tensor", TypeError
        )
    try:
        data = initializer(init, shape, dtype)
    except ValueError as exc:
        raise ValueError(f"{cls}: argument '{arg}': {exc}") from None
    return Parameter(data, name=name, requires_grad=requires_grad)


def check_input(
    cls: str, x: Any, ndims: tuple[int, ...], layout: str, floating: bool = True
) -> Tensor:
    """The layer input as a Tensor with one of ``ndims`` dimensions."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{cls}: the input expected a Tensor, got {describe(x)}")
    if x.ndim not in ndims:
        want = " or ".join(f"{d}-d" for d in ndims)
        raise ValueError(f"{cls}: the input expected a {want} Tensor ({layout}), got {describe(x)}")
    if floating and x.dtype.category != 2:
        raise TypeError(f"{cls}: the input expected a floating Tensor, got {describe(x)}")
    return x


def check_channels(cls: str, x: Tensor, axis: int, expected: int, arg: str) -> None:
    if x.shape[axis] != expected:
        raise ValueError(
            f"{cls}: the input has {x.shape[axis]} channels (axis {axis} of shape {x.shape}), "
            f"but the layer was built with {arg}={expected}"
        )


def default_weight_init(init: Any) -> Any:
    """``None`` -> MindSpore 2.x's default weight initializer, HeUniform(sqrt(5)): U(-b, b)
    with b = 1/sqrt(fan_in). (1.8's default was ``'normal'``, still one argument away.)"""
    from ...initializer import HeUniform

    return HeUniform(math.sqrt(5)) if init is None else init


def default_bias_init(init: Any, weight_shape: tuple[int, ...]) -> Any:
    """``None`` -> MindSpore 2.x's default bias initializer, U(-b, b) with b = 1/sqrt(fan_in)
    of the weight (1.8's default was ``'zeros'``)."""
    from ...initializer import Uniform, _fans

    if init is not None:
        return init
    fan_in = _fans(tuple(weight_shape))[0]
    return Uniform(1.0 / math.sqrt(fan_in)) if fan_in > 0 else "zeros"
