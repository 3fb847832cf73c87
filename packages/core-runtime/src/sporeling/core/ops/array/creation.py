"""Tensor creation: eye, fill(s), ones/zeros, linspace, range/arange, narrow."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import dtype as _dt
from ..._primitive import Primitive, ShapedArray
from ...errors import check_axis, check_int, op_error
from ...tensor import Tensor
from .._core import (
    full,
)
from .._indexing import getitem
from ._common import _bslice, _dtype_or, _ints, _scalar, _tensor, check_alloc

# ---- creation -------------------------------------------------------------------------------


eye_p = Primitive(
    "eye",
    "creation",
    lambda *, n, m, dtype, device: ShapedArray((n, m), dtype),
    impl=lambda xp, *, n, m, dtype, device: xp.eye(n, m, dtype=dtype.np),
)
linspace_p = Primitive(
    "linspace",
    "creation",
    lambda *, start, stop, num, dtype, device: ShapedArray((num,), dtype),
    impl=lambda xp, *, start, stop, num, dtype, device: xp.linspace(start, stop, num).astype(
        dtype.np
    ),
)
arange_p = Primitive(
    "arange",
    "creation",
    lambda *, start, stop, step, num, dtype, device: ShapedArray((num,), dtype),
    impl=lambda xp, *, start, stop, step, num, dtype, device: (
        start + step * xp.arange(num, dtype=np.float64 if dtype.category == 2 else np.int64)
    ).astype(dtype.np),
)


def eye(n: int, m: int, t: Any) -> Tensor:
    """An ``n x m`` matrix with ones on the main diagonal, of dtype ``t``.

    >>> eye(2, 3, "int32").tolist()
    [[1, 0, 0], [0, 1, 0]]
    """
    n = check_int("eye", "n", n, 0)
    m = check_int("eye", "m", m, 0)
    dt = _dtype_or(t, _dt.float32, "eye", "t")
    check_alloc("eye", (n, m), dt, "n, m")
    return eye_p.bind(n=n, m=m, dtype=dt, device=None)


def fill(type: Any, shape: Any, value: Any) -> Tensor:  # noqa: A002 - MindSpore's name
    """A tensor of ``shape`` and dtype ``type`` filled with ``value``."""
    return _fill("fill", type, shape, value)


def _fill(op: str, type: Any, shape: Any, value: Any) -> Tensor:  # noqa: A002
    dt = _dtype_or(type, _dt.float32, op, "type")
    dims = _ints(op, "shape", shape)
    if any(d < 0 for d in dims):
        raise op_error(op, "shape", shape, "non-negative sizes")
    check_alloc(op, dims, dt)
    return full(dims, _scalar(op, "value", value), dt)


def fills(x: Tensor, value: Any) -> Tensor:
    """A tensor like ``x`` (shape, dtype, device) filled with ``value``."""
    x = _tensor("fills", "x", x)
    return full(x.shape, _scalar("fills", "value", value), x.dtype, x._device)


def ones(shape: Any, type: Any = None) -> Tensor:  # noqa: A002
    """Ones of ``shape`` (dtype ``type``, float32 by default)."""
    return _fill("ones", type, shape, 1)


def zeros(shape: Any, type: Any = None) -> Tensor:  # noqa: A002
    """Zeros of ``shape`` (dtype ``type``, float32 by default)."""
    return _fill("zeros", type, shape, 0)


def linspace(start: Any, stop: Any, num: int) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop`` inclusive (float32).

    >>> linspace(0.0, 1.0, 3).tolist()
    [0.0, 0.5, 1.0]
    """
    num = check_int("linspace", "num", num, 1)
    dev = start._device if isinstance(start, Tensor) else None
    dt = start.dtype if isinstance(start, Tensor) and start.dtype.category == 2 else _dt.float32
    a = float(_scalar("linspace", "start", start))
    b = float(_scalar("linspace", "stop", stop))
    return linspace_p.bind(start=a, stop=b, num=num, dtype=dt, device=dev)


def _arange(op: str, start: Any, stop: Any, step: Any, dt: _dt.DType | None, names: Any) -> Tensor:
    vals = [_scalar(op, name, v) for v, name in zip((start, stop, step), names, strict=True)]
    for v, name in zip(vals, names, strict=True):
        if isinstance(v, (bool, np.bool_)):
            raise op_error(op, name, v, "an int or a float", TypeError)
    a, b, s = vals
    for v, name in zip(vals, names, strict=True):
        if not math.isfinite(float(v)):
            raise op_error(op, name, v, "a finite number")
    if s == 0:
        raise op_error(op, names[2], s, "a non-zero step")
    if (b - a) * s <= 0 and a != b:
        raise op_error(op, names[2], s, f"a step that moves from {a} towards {b}")
    if dt is None:
        floating = any(isinstance(v, (float, np.floating)) for v in vals)
        dt = _dt.float32 if floating else _dt.int32
    num = max(0, math.ceil((b - a) / s))
    dev = next((v._device for v in (start, stop, step) if isinstance(v, Tensor)), None)
    return arange_p.bind(start=a, stop=b, step=s, num=num, dtype=dt, device=dev)


def range(start: Any, limit: Any, delta: Any) -> Tensor:  # noqa: A001 - MindSpore's name
    """``[start, start + delta, ...)`` up to ``limit`` (exclusive), in the inputs' dtype.

    >>> range(Tensor(0), Tensor(10), Tensor(4)).tolist()
    [0, 4, 8]
    """
    names = ("start", "limit", "delta")
    dt = None
    tensors = [v for v in (start, limit, delta) if isinstance(v, Tensor)]
    if tensors:
        dt = tensors[0].dtype
        for t in tensors[1:]:
            dt = _dt.promote_types(dt, t.dtype)
    return _arange("range", start, limit, delta, dt, names)


def arange(
    start: Any = 0, stop: Any = None, step: Any = 1, rtype: Any = None, dtype: Any = None
) -> Tensor:
    """NumPy-style ``arange`` (int32 for ints, float32 if any bound is a float, as in 1.8).

    >>> arange(3).tolist()
    [0, 1, 2]
    """
    if stop is None:
        start, stop = 0, start
    want = dtype if dtype is not None else rtype
    dt = None if want is None else _dtype_or(want, _dt.float32, "arange", "dtype")
    return _arange("arange", start, stop, step, dt, ("start", "stop", "step"))


def narrow(inputs: Tensor, axis: int, start: int, length: int) -> Tensor:
    """The slice ``start:start + length`` of ``inputs`` along ``axis``."""
    x = _tensor("narrow", "inputs", inputs)
    ax = check_axis("narrow", axis, x.ndim)
    dim = x.shape[ax]
    start = check_int("narrow", "start", start)
    if not 0 <= start < max(dim, 1):
        raise op_error("narrow", "start", start, f"an int in [0, {dim})")
    length = check_int("narrow", "length", length)
    if not 1 <= length <= dim - start:
        raise op_error("narrow", "length", length, f"an int in [1, {dim - start}]")
    index = (_bslice(None),) * ax + (_bslice(start, start + length),)
    return getitem(x, index)
