"""``Cell.to_float(dtype)``: run a cell's computation in ``dtype`` with float32 master
weights, as MindSpore does.

``to_float`` marks the cell and every cell below it (MindSpore sets a flag recursively; a
later ``child.to_float(float32)`` — how BatchNorm is kept in float32 — overrides it for that
subtree). When a marked cell runs, its floating inputs are cast to the dtype and, for the
duration of its ``construct``, its own trainable Parameters are seen through a cast: the ops
compute in float16 (or bfloat16) while the Parameters stay float32 and receive float32
gradients (the cast's backward), so the optimizer updates the master copy.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from ..tensor import Parameter, Tensor

__all__ = ["mark_dtype", "run_in_dtype"]


def mark_dtype(cell: Any, dtype: Any) -> None:
    """Set the compute dtype of ``cell`` and the cells below it."""
    for _, c in cell.cells_and_names():
        object.__setattr__(c, "_amp_dtype", dtype)
        flags = c.__dict__.setdefault("_mindspore_flags", {})
        flags.pop("fp16", None)
        flags.pop("fp32", None)
        flags.pop("bf16", None)
        flags[{"float16": "fp16", "bfloat16": "bf16"}.get(str(dtype.name).lower(), "fp32")] = True


def _cast(value: Any, dtype: Any) -> Any:
    from ..ops import cast

    if isinstance(value, Tensor):
        if value.dtype.category == 2 and value.dtype != dtype:
            return cast(value, dtype)
        return value
    if isinstance(value, (tuple, list)):
        return type(value)(_cast(v, dtype) for v in value)
    return value


def run_in_dtype(cell: Any, dtype: Any, run: Any, inputs: tuple[Any, ...], kw: Any) -> Any:
    """``run(*inputs, **kw)`` with inputs and the cell's own trainable weights in ``dtype``."""
    inputs = tuple(_cast(x, dtype) for x in inputs)
    params = cell.__dict__["_params"]
    if not any(
        isinstance(p, Parameter) and p.requires_grad and p.dtype.category == 2 and p.dtype != dtype
        for p in params.values()
    ):
        return run(*inputs, **kw)
    seen: OrderedDict[str, Any] = OrderedDict(
        (name, _cast(p, dtype) if isinstance(p, Parameter) and p.requires_grad else p)
        for name, p in params.items()
    )
    cell.__dict__["_params"] = seen
    try:
        return run(*inputs, **kw)
    finally:
        cell.__dict__["_params"] = params
