"""Helpers the math modules share: dtype checks of the public wrappers, constants."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ... import dtype as _dt
from ...errors import op_error
from ...tensor import Tensor
from .._core import as_tensor, sum_to
from .._elementwise import (
    promote_args,
)

_LN2 = math.log(2.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _unb(g: Tensor, t: Tensor) -> Tensor:
    return sum_to(g, t.shape)


def _quiet(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run an array function with NumPy's floating-point warnings off (x/0, log(0)...):
    the results (inf, nan, 0 for integer x // 0) are the defined outputs of these ops."""
    import numpy as np

    def impl(xp: Any, *arrays: Any) -> Any:
        with np.errstate(all="ignore"):
            return fn(xp, *arrays)

    return impl


# ---- dtype checks of public wrappers ------------------------------------------------------


def _is_int_like(value: Any, allow_bool: bool) -> bool:
    if isinstance(value, Tensor):
        return value.dtype.category == 1 or (allow_bool and value.dtype.category == 0)
    if isinstance(value, bool):
        return allow_bool
    if isinstance(value, int):
        return True
    kind = getattr(getattr(value, "dtype", None), "kind", None)  # NumPy arrays and scalars
    return kind is not None and kind in ("iub" if allow_bool else "iu")


def _int_args(op: str, args: dict[str, Any], allow_bool: bool = False) -> None:
    """TypeError naming the first argument that is not an integer (or bool) tensor/number."""
    what = "an integer or bool tensor" if allow_bool else "an integer tensor"
    for name, value in args.items():
        if not _is_int_like(value, allow_bool):
            raise op_error(op, name, value, what, TypeError)


def _bool_args(op: str, args: dict[str, Any]) -> list[Tensor]:
    """Bool tensors (Python bools allowed), or a TypeError naming the argument."""
    out = []
    like = next((v for v in args.values() if isinstance(v, Tensor)), None)
    for name, value in args.items():
        if isinstance(value, Tensor):
            if value.dtype != _dt.bool_:
                raise op_error(op, name, value, "a bool tensor", TypeError)
            out.append(value)
        elif isinstance(value, bool):
            out.append(as_tensor(value, op, name, like))
        else:
            raise op_error(op, name, value, "a bool tensor or a bool", TypeError)
    return out


def _float_pair(op: str, x: Any, y: Any, names: tuple[str, str]) -> tuple[Tensor, Tensor]:
    return promote_args(op, x, y, names, min_category=2)
