"""Argument checks and primitive builders shared by the activation functions."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..._primitive import Primitive, ShapedArray
from ...errors import op_error
from ...tensor import Tensor
from .._compare import select
from .._core import cast
from .._elementwise import _check_family, neg

_FAST = (np.float32, np.float64)


def _up(a: Any) -> Any:
    """float16 (and other narrow floats) computed in float32; the result is cast back."""
    return a if a.dtype in _FAST else a.astype(np.float32)


def _number(
    op: str, arg: str, value: Any, *, positive: bool = False, nonneg: bool = False
) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise op_error(op, arg, value, "a float", TypeError)
    v = float(value)
    if math.isnan(v):
        raise op_error(op, arg, value, "a number, not NaN")
    if positive and not v > 0:
        raise op_error(op, arg, value, "a float > 0")
    if nonneg and v < 0:
        raise op_error(op, arg, value, "a float >= 0")
    return v


def _mask(cond: Tensor, like: Tensor) -> Tensor:
    return cast(cond, like.dtype)


def _abs(x: Tensor) -> Tensor:
    return select(x < 0, neg(x), x)


def _param_op(
    name: str,
    impl: Any,
    vjp: Any,
    scalar: str,
    scalar_rule: Any = None,
    decomposition: Any = None,
) -> Primitive:
    """An elementwise float primitive with static parameters (alpha, lambd...)."""

    def abstract(x: ShapedArray, **params: Any) -> ShapedArray:
        _check_family(name, "x", x, "float")
        return ShapedArray(x.shape, x.dtype)

    return Primitive(
        name,
        "elementwise",
        abstract,
        impl=impl,
        vjp=vjp,
        scalar=scalar,
        scalar_rule=scalar_rule,
        decomposition=decomposition,
    )
