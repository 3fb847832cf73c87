"""Shape queries and scalar/tuple-to-tensor conversions."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import dtype as _dt
from ...errors import op_error
from ...tensor import Tensor
from ._common import _dtype_or, _tensor

# ---- shapes and conversions -----------------------------------------------------------------


def shape(input_x: Tensor) -> tuple[int, ...]:
    """The shape as a tuple of Python ints."""
    return _tensor("shape", "input_x", input_x).shape


def rank(input_x: Tensor) -> int:
    """The number of dimensions."""
    return _tensor("rank", "input_x", input_x).ndim


def size(input_x: Tensor) -> int:
    """The number of elements."""
    return _tensor("size", "input_x", input_x).size


def dyn_shape(input_x: Tensor) -> Tensor:
    """The shape as a 1-d int64 tensor (on the input's device)."""
    x = _tensor("dyn_shape", "input_x", input_x)
    return Tensor(np.asarray(x.shape, np.int64), device=x._device)


def _python_scalar(op: str, arg: str, value: Any) -> Any:
    if isinstance(value, (bool, int, float, np.number, np.bool_)):
        return value.item() if isinstance(value, (np.number, np.bool_)) else value
    raise op_error(op, arg, value, "a Python number or bool", TypeError)


def scalar_cast(input_x: Any, input_t: Any) -> Any:
    """Convert a Python scalar to the Python type matching dtype ``input_t``.

    >>> scalar_cast(2.7, "int32")
    2
    """
    v = _python_scalar("scalar_cast", "input_x", input_x)
    if input_t in (bool, int, float):
        return input_t(v)
    dt = _dtype_or(input_t, _dt.float32, "scalar_cast", "input_t")
    return (bool, int, float)[dt.category](v)


def scalar_to_array(input_x: Any) -> Tensor:
    """A 0-d tensor from a scalar (int32 for ints, float32 for floats, as in 1.8)."""
    v = _python_scalar("scalar_to_array", "input_x", input_x)
    dt = _dt.bool_ if isinstance(v, bool) else _dt.int32 if isinstance(v, int) else _dt.float32
    return Tensor(v, dtype=dt)


def scalar_to_tensor(input_x: Any, dtype: Any = _dt.float32) -> Tensor:
    """A 0-d tensor of ``dtype`` (float32 by default) from a scalar."""
    v = _python_scalar("scalar_to_tensor", "input_x", input_x)
    return Tensor(v, dtype=_dtype_or(dtype, _dt.float32, "scalar_to_tensor", "dtype"))


def tuple_to_array(input_x: Any) -> Tensor:
    """A 1-d tensor from a tuple of numbers (int32 if they are ints, else float32, as in 1.8)."""
    if not isinstance(input_x, (tuple, list)) or not input_x:
        raise op_error(
            "tuple_to_array", "input_x", input_x, "a non-empty tuple of numbers", TypeError
        )
    vals = [_python_scalar("tuple_to_array", "input_x", v) for v in input_x]
    ints = all(isinstance(v, int) and not isinstance(v, bool) for v in vals)
    return Tensor(np.asarray(vals, np.int32 if ints else np.float32))
