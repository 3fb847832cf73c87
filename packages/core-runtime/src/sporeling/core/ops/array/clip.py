"""Clipping by value and by global norm."""

from __future__ import annotations

from typing import Any

from ... import dtype as _dt
from ...errors import op_error
from ...tensor import Tensor
from .._compare import maximum, minimum
from .._core import (
    as_tensor,
    cast,
    reduce_sum,
)
from .._elementwise import div, mul, sqrt, square
from ._common import _scalar, _tensor

# ---- clipping ------------------------------------------------------------------------------


def clip_by_value(x: Tensor, clip_value_min: Any = None, clip_value_max: Any = None) -> Tensor:
    """Clamp ``x`` into ``[clip_value_min, clip_value_max]`` (either bound may be None).

    The gradient is 1 strictly inside the range, 0 outside (half at a bound, like maximum).

    >>> clip_by_value(Tensor([-2.0, 0.5, 3.0]), -1.0, 1.0).tolist()
    [-1.0, 0.5, 1.0]
    """
    x = _tensor("clip_by_value", "x", x)
    if clip_value_min is None and clip_value_max is None:
        raise op_error(
            "clip_by_value",
            "clip_value_min",
            None,
            "at least one of clip_value_min and clip_value_max",
            TypeError,
        )
    out = x
    if clip_value_min is not None:
        out = maximum(out, clip_value_min)
    if clip_value_max is not None:
        out = minimum(out, clip_value_max)
    return cast(out, x.dtype) if out.dtype != x.dtype and x.dtype.category == 2 else out


def clip_by_global_norm(x: Any, clip_norm: Any = 1.0, use_norm: Any = None) -> tuple[Tensor, ...]:
    """Scale every tensor of ``x`` by ``clip_norm / max(global_norm, clip_norm)`` where
    ``global_norm = sqrt(sum_i ||x_i||^2)`` (or ``use_norm`` when given)."""
    if isinstance(x, Tensor) or not isinstance(x, (tuple, list)) or not x:
        raise op_error("clip_by_global_norm", "x", x, "a non-empty tuple of Tensors", TypeError)
    ts = [_tensor("clip_by_global_norm", f"x[{i}]", t) for i, t in enumerate(x)]
    for i, t in enumerate(ts):
        if t.dtype.category != 2:
            raise op_error("clip_by_global_norm", f"x[{i}]", t, "a floating tensor", TypeError)
    limit = _scalar("clip_by_global_norm", "clip_norm", clip_norm)
    if limit <= 0:
        raise op_error("clip_by_global_norm", "clip_norm", clip_norm, "a positive number")
    if use_norm is None:
        # accumulate in the widest input dtype (at least float32)
        acc = _dt.float32
        for t in ts:
            acc = _dt.promote_types(acc, t.dtype)
        total = reduce_sum(square(cast(ts[0], acc)))
        for t in ts[1:]:
            total = total + reduce_sum(square(cast(t, acc)))
        norm = sqrt(total)
    else:
        norm = as_tensor(use_norm, "clip_by_global_norm", "use_norm", ts[0], _dt.float32)
    scale = div(limit, maximum(norm, limit))
    return tuple(mul(t, cast(scale, t.dtype)) for t in ts)
