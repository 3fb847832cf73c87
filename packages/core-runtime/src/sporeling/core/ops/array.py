"""Array ops (MindSpore 1.8 names): creation, reshaping and movement, diagonals, masks,
selection (top-k, sort, unique), type conversion and clipping.

Most ops are compositions of the core primitives (reshape, broadcast, transpose, getitem and
setitem with integer index tensors, select), so their gradients are the exact vjps of those
movements. Primitives are added where an op needs its own kernel (``top_k`` has a Numba CPU
kernel; ``sort``, ``reverse_sequence`` and ``population_count`` run one array-module call).

Ops whose output shape depends on the data (``nonzero``, ``unique*``, ``masked_select``)
read their input on the host and cannot be traced into a graph.
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from .. import dtype as _dt
from .._backend import Device, get_device
from .._primitive import Primitive, ShapedArray
from ..errors import check_axis, check_int, op_error
from ..tensor import Tensor
from ._compare import equal, greater, less, maximum, minimum, not_equal, select
from ._core import (
    as_tensor,
    broadcast_shapes,
    broadcast_to,
    cast,
    full,
    normalize_axes,
    reduce_sum,
    reshape,
    transpose,
    zeros_like,
)
from ._elementwise import div, mul, sqrt, square
from ._indexing import getitem, setitem
from ._join import concat, split_p

__all__ = [
    # creation
    "eye",
    "fill",
    "fills",
    "ones",
    "zeros",
    "linspace",
    "range",
    "arange",
    "narrow",
    # reshaping and movement
    "unstack",
    "expand_dims",
    "squeeze",
    "tile",
    "flatten",
    "swapaxes",
    "repeat_elements",
    "flip",
    "reverse",
    "roll",
    "meshgrid",
    "slice",
    "strided_slice",
    "space_to_batch_nd",
    "batch_to_space_nd",
    "reverse_sequence",
    # masks and fills
    "masked_fill",
    "masked_select",
    "index_fill",
    "nonzero",
    "where",
    "one_hot",
    "sequence_mask",
    # diagonals and bands
    "diag",
    "matrix_diag",
    "matrix_diag_part",
    "matrix_set_diag",
    "matrix_band_part",
    "tril",
    "triu",
    # selection and counting
    "top_k",
    "intopk",
    "sort",
    "argsort",
    "unique",
    "unique_consecutive",
    "unique_with_pad",
    "population_count",
    "count_nonzero",
    # shapes and conversions
    "shape",
    "rank",
    "size",
    "dyn_shape",
    "scalar_cast",
    "scalar_to_array",
    "scalar_to_tensor",
    "tuple_to_array",
    # clipping
    "clip_by_value",
    "clip_by_global_norm",
]

_brange = builtins.range
_bslice = builtins.slice

# ---- helpers ------------------------------------------------------------------------------


def _tensor(op: str, arg: str, value: Any) -> Tensor:
    if not isinstance(value, Tensor):
        raise op_error(op, arg, value, "a Tensor", TypeError)
    return value


def _index(array: np.ndarray, like: Tensor) -> Tensor:
    """An int64 index tensor on ``like``'s device."""
    return Tensor(np.asarray(array, np.int64), device=like._device)


def _ints(op: str, arg: str, value: Any, length: int | None = None) -> tuple[int, ...]:
    """An int or a sequence (or 1-d Tensor) of ints as a tuple, optionally of a given length."""
    if isinstance(value, Tensor):
        value = value.tolist()
    items = value if isinstance(value, (tuple, list)) else [value]
    out = tuple(check_int(op, arg, v) for v in items)
    if length is not None and len(out) != length:
        raise op_error(op, arg, value, f"{length} ints")
    return out


def _scalar(op: str, arg: str, value: Any) -> Any:
    """A Python number from a number or a one-element Tensor."""
    if isinstance(value, Tensor):
        if value.size != 1:
            raise op_error(op, arg, value, "a number or a one-element Tensor")
        return value.item()
    if isinstance(value, (bool, int, float, np.number, np.bool_)):
        return value
    raise op_error(op, arg, value, "a number or a one-element Tensor", TypeError)


def _device(device: Any) -> Device | None:
    return device if device is None or isinstance(device, Device) else get_device(device)


def _dtype_or(value: Any, default: _dt.DType, op: str, arg: str) -> _dt.DType:
    if value is None:
        return default
    try:
        return _dt.to_dtype(value, arg)
    except TypeError:
        raise op_error(op, arg, value, "a sporeling dtype", TypeError) from None


def _int_family(op: str, arg: str, t: Tensor) -> Tensor:
    if t.dtype.category != 1:
        raise op_error(op, arg, t, "an integer tensor", TypeError)
    return t


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
    return eye_p.bind(n=n, m=m, dtype=dt, device=None)


def fill(type: Any, shape: Any, value: Any) -> Tensor:  # noqa: A002 - MindSpore's name
    """A tensor of ``shape`` and dtype ``type`` filled with ``value``."""
    dt = _dtype_or(type, _dt.float32, "fill", "type")
    dims = _ints("fill", "shape", shape)
    if any(d < 0 for d in dims):
        raise op_error("fill", "shape", shape, "non-negative sizes")
    return full(dims, _scalar("fill", "value", value), dt)


def fills(x: Tensor, value: Any) -> Tensor:
    """A tensor like ``x`` (shape, dtype, device) filled with ``value``."""
    x = _tensor("fills", "x", x)
    return full(x.shape, _scalar("fills", "value", value), x.dtype, x._device)


def ones(shape: Any, type: Any = None) -> Tensor:  # noqa: A002
    """Ones of ``shape`` (dtype ``type``, float32 by default)."""
    return fill(_dtype_or(type, _dt.float32, "ones", "type"), shape, 1)


def zeros(shape: Any, type: Any = None) -> Tensor:  # noqa: A002
    """Zeros of ``shape`` (dtype ``type``, float32 by default)."""
    return fill(_dtype_or(type, _dt.float32, "zeros", "type"), shape, 0)


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


# ---- reshaping and movement -------------------------------------------------------------------


def unstack(input_x: Tensor, axis: int = 0) -> tuple[Tensor, ...]:
    """Split along ``axis`` into tensors with that axis removed (the inverse of ``stack``)."""
    x = _tensor("unstack", "input_x", input_x)
    if x.ndim == 0:
        raise op_error("unstack", "input_x", x, "a tensor with at least 1 dimension")
    ax = check_axis("unstack", axis, x.ndim)
    n = x.shape[ax]
    if n == 0:
        return ()
    rest = x.shape[:ax] + x.shape[ax + 1 :]
    parts = (x,) if n == 1 else split_p.bind(x, axis=ax, sizes=(1,) * n)
    return tuple(reshape(p, rest) for p in parts)


def expand_dims(input_x: Tensor, axis: int) -> Tensor:
    """Insert a dimension of size 1 at ``axis`` (in ``[-ndim-1, ndim]``).

    >>> expand_dims(Tensor([1.0, 2.0]), 0).shape
    (1, 2)
    """
    x = _tensor("expand_dims", "input_x", input_x)
    ax = check_axis("expand_dims", axis, x.ndim + 1)
    return reshape(x, x.shape[:ax] + (1,) + x.shape[ax:])


def squeeze(input_x: Tensor, axis: Any = ()) -> Tensor:
    """Remove dimensions of size 1 (all of them, or those in ``axis``)."""
    x = _tensor("squeeze", "input_x", input_x)
    if axis is None or (isinstance(axis, (tuple, list)) and len(axis) == 0):
        axes = tuple(i for i, d in enumerate(x.shape) if d == 1)
    else:
        axes = normalize_axes("squeeze", axis, x.ndim)
        for a in axes:
            if x.shape[a] != 1:
                raise op_error(
                    "squeeze",
                    "axis",
                    axis,
                    f"axes of size 1, but dimension {a} of {x.shape} has size {x.shape[a]}",
                )
    return reshape(x, tuple(d for i, d in enumerate(x.shape) if i not in axes))


def tile(input_x: Tensor, multiples: Any) -> Tensor:
    """Repeat the whole tensor ``multiples[i]`` times along each dimension ``i``.

    Written as reshape -> broadcast -> reshape, so the gradient sums over the tiles.

    >>> tile(Tensor([1, 2]), (2,)).tolist()
    [1, 2, 1, 2]
    """
    x = _tensor("tile", "input_x", input_x)
    reps = _ints("tile", "multiples", multiples)
    if any(r < 1 for r in reps):
        raise op_error("tile", "multiples", multiples, "positive ints")
    if len(reps) < x.ndim:
        raise op_error(
            "tile", "multiples", multiples, f"at least {x.ndim} entries (one per dimension)"
        )
    shape = (1,) * (len(reps) - x.ndim) + x.shape
    inter = tuple(v for pair in zip((1,) * len(shape), shape, strict=True) for v in pair)
    big = tuple(v for pair in zip(reps, shape, strict=True) for v in pair)
    out = broadcast_to(reshape(x, inter), big)
    return reshape(out, tuple(r * s for r, s in zip(reps, shape, strict=True)))


def flatten(input_x: Tensor) -> Tensor:
    """Keep dimension 0 and flatten the rest: shape ``(N, prod(rest))`` (MindSpore 1.8)."""
    x = _tensor("flatten", "input_x", input_x)
    if x.ndim == 0:
        raise op_error("flatten", "input_x", x, "a tensor with at least 1 dimension")
    rest = 1
    for d in x.shape[1:]:
        rest *= d
    return reshape(x, (x.shape[0], rest))


def swapaxes(x: Tensor, axis0: int, axis1: int) -> Tensor:
    """Exchange two dimensions."""
    x = _tensor("swapaxes", "x", x)
    a = check_axis("swapaxes", axis0, x.ndim, "axis0")
    b = check_axis("swapaxes", axis1, x.ndim, "axis1")
    perm = list(_brange(x.ndim))
    perm[a], perm[b] = perm[b], perm[a]
    return transpose(x, tuple(perm))


def repeat_elements(x: Tensor, rep: int, axis: int = 0) -> Tensor:
    """Repeat each element ``rep`` times along ``axis`` (``np.repeat``).

    >>> repeat_elements(Tensor([1, 2]), 2).tolist()
    [1, 1, 2, 2]
    """
    x = _tensor("repeat_elements", "x", x)
    rep = check_int("repeat_elements", "rep", rep, 1)
    if x.ndim == 0:
        x = reshape(x, (1,))
    ax = check_axis("repeat_elements", axis, x.ndim)
    inter = x.shape[: ax + 1] + (1,) + x.shape[ax + 1 :]
    big = x.shape[: ax + 1] + (rep,) + x.shape[ax + 1 :]
    out = broadcast_to(reshape(x, inter), big)
    return reshape(out, x.shape[:ax] + (x.shape[ax] * rep,) + x.shape[ax + 1 :])


def flip(x: Tensor, dims: Any) -> Tensor:
    """Reverse the order of elements along ``dims``."""
    x = _tensor("flip", "x", x)
    axes = normalize_axes("flip", dims, x.ndim)
    if not axes:
        return x
    return getitem(
        x, tuple(_bslice(None, None, -1) if i in axes else _bslice(None) for i in _brange(x.ndim))
    )


def reverse(x: Tensor, axis: Any) -> Tensor:
    """Reverse along ``axis`` (MindSpore ``ReverseV2``)."""
    x = _tensor("reverse", "x", x)
    return flip(x, normalize_axes("reverse", axis, x.ndim))


def roll(input_x: Tensor, shifts: Any, dims: Any = None) -> Tensor:
    """Shift elements cyclically by ``shifts`` along ``dims`` (flattened when ``dims`` is None)."""
    x = _tensor("roll", "input_x", input_x)
    shifts_t = _ints("roll", "shifts", shifts)
    if dims is None:
        if len(shifts_t) != 1:
            raise op_error("roll", "shifts", shifts, "one shift when 'dims' is None")
        return reshape(roll(reshape(x, (-1,)), shifts_t, 0), x.shape)
    dims_t = tuple(check_axis("roll", d, x.ndim, "dims") for d in _ints("roll", "dims", dims))
    if len(dims_t) != len(shifts_t):
        raise op_error("roll", "dims", dims, f"{len(shifts_t)} axes (one per shift)")
    out = x
    for s, d in zip(shifts_t, dims_t, strict=True):
        n = x.shape[d]
        if n == 0 or s % n == 0:
            continue
        s %= n
        lead = (_bslice(None),) * d
        out = concat(
            (
                getitem(out, lead + (_bslice(n - s, None),)),
                getitem(out, lead + (_bslice(0, n - s),)),
            ),
            d,
        )
    return out


def meshgrid(inputs: Any, indexing: str = "xy") -> tuple[Tensor, ...]:
    """Coordinate grids from 1-d tensors (``'xy'`` Cartesian or ``'ij'`` matrix indexing)."""
    if not isinstance(inputs, (tuple, list)) or len(inputs) < 2:
        raise op_error(
            "meshgrid", "inputs", inputs, "a tuple of at least two 1-d Tensors", TypeError
        )
    ts = [_tensor("meshgrid", f"inputs[{i}]", t) for i, t in enumerate(inputs)]
    for i, t in enumerate(ts):
        if t.ndim != 1:
            raise op_error("meshgrid", f"inputs[{i}]", t, "a 1-d tensor")
        if t.dtype != ts[0].dtype:
            raise op_error(
                "meshgrid", f"inputs[{i}]", t, f"dtype {ts[0].dtype} like inputs[0]", TypeError
            )
    if indexing not in ("xy", "ij"):
        raise op_error("meshgrid", "indexing", indexing, "'xy' or 'ij'")
    sizes = [t.shape[0] for t in ts]
    if indexing == "xy":
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, t in enumerate(ts):
        pos = (1 - i if i < 2 else i) if indexing == "xy" else i
        shape = [1] * len(ts)
        shape[pos] = t.shape[0]
        out.append(broadcast_to(reshape(t, tuple(shape)), tuple(sizes)))
    return tuple(out)


def slice(input_x: Tensor, begin: Any, size: Any) -> Tensor:  # noqa: A001 - MindSpore's name
    """The block starting at ``begin`` with ``size`` elements per dimension (-1: to the end).

    >>> slice(Tensor([[1, 2, 3], [4, 5, 6]]), (0, 1), (2, -1)).tolist()
    [[2, 3], [5, 6]]
    """
    x = _tensor("slice", "input_x", input_x)
    b = _ints("slice", "begin", begin, x.ndim)
    s = _ints("slice", "size", size, x.ndim)
    index = []
    for i, (bi, si, d) in enumerate(zip(b, s, x.shape, strict=True)):
        if not 0 <= bi <= d:
            raise op_error("slice", "begin", begin, f"begin[{i}] in [0, {d}] for shape {x.shape}")
        end = d if si == -1 else bi + si
        if si < -1 or end > d:
            raise op_error(
                "slice",
                "size",
                size,
                f"size[{i}] in [0, {d - bi}] or -1 for begin {b} and shape {x.shape}",
            )
        index.append(_bslice(bi, end))
    return getitem(x, tuple(index))


def strided_slice(
    input_x: Tensor,
    begin: Any,
    end: Any,
    strides: Any,
    begin_mask: int = 0,
    end_mask: int = 0,
    ellipsis_mask: int = 0,
    new_axis_mask: int = 0,
    shrink_axis_mask: int = 0,
) -> Tensor:
    """``input_x[begin:end:strides]`` per dimension, with TensorFlow-style bit masks."""
    x = _tensor("strided_slice", "input_x", input_x)
    b = _ints("strided_slice", "begin", begin)
    e = _ints("strided_slice", "end", end, len(b))
    s = _ints("strided_slice", "strides", strides, len(b))
    masks = {}
    for name, m in (
        ("begin_mask", begin_mask),
        ("end_mask", end_mask),
        ("ellipsis_mask", ellipsis_mask),
        ("new_axis_mask", new_axis_mask),
        ("shrink_axis_mask", shrink_axis_mask),
    ):
        masks[name] = check_int("strided_slice", name, m, 0)
    if bin(masks["ellipsis_mask"]).count("1") > 1:
        raise op_error("strided_slice", "ellipsis_mask", ellipsis_mask, "at most one set bit")
    index: list[Any] = []
    for i in _brange(len(b)):
        bit = 1 << i
        if s[i] == 0:
            raise op_error("strided_slice", "strides", strides, "non-zero strides")
        if masks["ellipsis_mask"] & bit:
            index.append(Ellipsis)
        elif masks["new_axis_mask"] & bit:
            index.append(None)
        elif masks["shrink_axis_mask"] & bit:
            index.append(b[i])
        else:
            index.append(
                _bslice(
                    None if masks["begin_mask"] & bit else b[i],
                    None if masks["end_mask"] & bit else e[i],
                    s[i],
                )
            )
    try:
        return getitem(x, tuple(index))
    except IndexError as exc:
        raise ValueError(f"strided_slice: argument 'begin' is out of range: {exc}") from None


def _block_args(
    op: str, x: Tensor, block: Any, pads: Any, block_arg: str, pad_arg: str
) -> tuple[Any, ...]:
    if isinstance(block, (int, np.integer)) and not isinstance(block, bool):
        m = len(pads) if isinstance(pads, (tuple, list)) else 2
        blocks = (check_int(op, block_arg, block, 1),) * m
    else:
        blocks = _ints(op, block_arg, block)
    if any(v < 1 for v in blocks):
        raise op_error(op, block_arg, block, "ints >= 1")
    m = len(blocks)
    if not isinstance(pads, (tuple, list)) or len(pads) != m:
        raise op_error(op, pad_arg, pads, f"a list of {m} [before, after] pairs", TypeError)
    pairs = tuple(_ints(op, pad_arg, p, 2) for p in pads)
    if any(v < 0 for p in pairs for v in p):
        raise op_error(op, pad_arg, pads, "non-negative ints")
    if x.ndim < m + 1:
        raise op_error(op, "input_x", x, f"at least {m + 1} dimensions for {m} block sizes")
    return blocks, pairs


def space_to_batch_nd(input_x: Tensor, block_size: Any, paddings: Any) -> Tensor:
    """Zero-pad the last M (spatial) dimensions, cut them into ``block_size`` blocks and move
    the block offsets into the batch dimension (batch index = offset * n + b)."""
    op = "space_to_batch_nd"
    x = _tensor(op, "input_x", input_x)
    blocks, pads = _block_args(op, x, block_size, paddings, "block_size", "paddings")
    m = len(blocks)
    lead = x.shape[: x.ndim - m]
    spatial = x.shape[x.ndim - m :]
    padded = tuple(d + p[0] + p[1] for d, p in zip(spatial, pads, strict=True))
    for i, (d, bl) in enumerate(zip(padded, blocks, strict=True)):
        if d % bl:
            raise op_error(
                op,
                "paddings",
                paddings,
                f"padded size {d} of spatial dimension {i} divisible by block {bl}",
            )
    if any(p != (0, 0) for p in pads):
        base = full(lead + padded, 0, x.dtype, x._device)
        index = (Ellipsis,) + tuple(
            _bslice(p[0], p[0] + d) for p, d in zip(pads, spatial, strict=True)
        )
        x = setitem(base, index, x)
    split = lead + tuple(v for d, bl in zip(padded, blocks, strict=True) for v in (d // bl, bl))
    y = reshape(x, split)
    k = len(lead)
    perm = (
        tuple(k + 2 * i + 1 for i in _brange(m))
        + tuple(_brange(k))
        + tuple(k + 2 * i for i in _brange(m))
    )
    y = transpose(y, perm)
    n_out = lead[0]
    for bl in blocks:
        n_out *= bl
    return reshape(
        y, (n_out,) + lead[1:] + tuple(d // bl for d, bl in zip(padded, blocks, strict=True))
    )


def batch_to_space_nd(input_x: Tensor, block_shape: Any, crops: Any) -> Tensor:
    """The inverse of :func:`space_to_batch_nd`: move batch blocks back into the last M
    dimensions, then crop ``crops[i] = [before, after]`` from each of them."""
    op = "batch_to_space_nd"
    x = _tensor(op, "input_x", input_x)
    blocks, cuts = _block_args(op, x, block_shape, crops, "block_shape", "crops")
    m = len(blocks)
    prod = 1
    for bl in blocks:
        prod *= bl
    if x.shape[0] % prod:
        raise op_error(
            op,
            "block_shape",
            block_shape,
            f"block sizes whose product divides the batch dimension {x.shape[0]}",
        )
    mid = x.shape[1 : x.ndim - m]
    spatial = x.shape[x.ndim - m :]
    full_sizes = tuple(d * bl for d, bl in zip(spatial, blocks, strict=True))
    for i, (d, c) in enumerate(zip(full_sizes, cuts, strict=True)):
        if c[0] + c[1] >= d:
            raise op_error(op, "crops", crops, f"crops of spatial dimension {i} smaller than {d}")
    n = x.shape[0] // prod
    y = reshape(x, blocks + (n,) + mid + spatial)
    k = 1 + len(mid)  # batch + middle dims, after the m block dims
    perm = tuple(m + i for i in _brange(k)) + tuple(v for i in _brange(m) for v in (m + k + i, i))
    y = reshape(transpose(y, perm), (n,) + mid + full_sizes)
    if any(c != (0, 0) for c in cuts):
        index = (Ellipsis,) + tuple(
            _bslice(c[0], d - c[1]) for c, d in zip(cuts, full_sizes, strict=True)
        )
        y = getitem(y, index)
    return y


def _revseq_abstract(
    x: ShapedArray, lengths: ShapedArray, *, seq_dim: int, batch_dim: int
) -> ShapedArray:
    if lengths.dtype.category != 1:
        raise TypeError(
            "reverse_sequence: argument 'seq_lengths' expected an integer tensor, "
            f"got {lengths.dtype}"
        )
    if lengths.shape != (x.shape[batch_dim],):
        raise ValueError(
            f"reverse_sequence: argument 'seq_lengths' expected shape ({x.shape[batch_dim]},) "
            f"(dimension {batch_dim} of {x.shape}), got {lengths.shape}"
        )
    return ShapedArray(x.shape, x.dtype)


def _revseq_impl(xp: Any, x: Any, lengths: Any, *, seq_dim: int, batch_dim: int) -> Any:
    n = x.shape[seq_dim]
    pos = xp.arange(n)[None, :]
    lens = lengths.astype(np.int64)[:, None]
    src = xp.where(pos < lens, lens - 1 - pos, pos)  # (batch, n): where each output reads
    if batch_dim > seq_dim:
        src = src.T
    shape = [1] * x.ndim
    shape[batch_dim] = x.shape[batch_dim]
    shape[seq_dim] = n
    src = xp.broadcast_to(src.reshape(shape), x.shape)
    return xp.take_along_axis(x, src, axis=seq_dim)


reverse_sequence_p: Primitive = Primitive(
    "reverse_sequence",
    "movement",
    _revseq_abstract,
    impl=_revseq_impl,
    # reversing a prefix is its own inverse, so the vjp is the same op
    vjp=lambda g, x, lengths, *, out, seq_dim, batch_dim: (
        reverse_sequence_p.bind(g, lengths, seq_dim=seq_dim, batch_dim=batch_dim),
        None,
    ),
)


def reverse_sequence(x: Tensor, seq_lengths: Tensor, seq_dim: int, batch_dim: int = 0) -> Tensor:
    """Reverse the first ``seq_lengths[b]`` entries along ``seq_dim`` of each batch row ``b``."""
    x = _tensor("reverse_sequence", "x", x)
    lengths = as_tensor(seq_lengths, "reverse_sequence", "seq_lengths", x)
    if x.ndim < 2:
        raise op_error("reverse_sequence", "x", x, "a tensor with at least 2 dimensions")
    sd = check_axis("reverse_sequence", seq_dim, x.ndim, "seq_dim")
    bd = check_axis("reverse_sequence", batch_dim, x.ndim, "batch_dim")
    if sd == bd:
        raise op_error(
            "reverse_sequence", "batch_dim", batch_dim, f"an axis other than seq_dim={sd}"
        )
    _int_family("reverse_sequence", "seq_lengths", lengths)
    host = lengths.asnumpy()
    if host.size and (host.min() < 0 or host.max() > x.shape[sd]):
        raise op_error(
            "reverse_sequence",
            "seq_lengths",
            host.tolist(),
            f"lengths in [0, {x.shape[sd]}] (dimension {sd} of {x.shape})",
        )
    return reverse_sequence_p.bind(x, lengths, seq_dim=sd, batch_dim=bd)


# ---- masks and fills ------------------------------------------------------------------------


def _bool_tensor(op: str, arg: str, value: Any, like: Tensor) -> Tensor:
    t = as_tensor(value, op, arg, like)
    if t.dtype != _dt.bool_:
        raise op_error(op, arg, t, "a bool tensor", TypeError)
    return t


def _fill_value(op: str, value: Any, x: Tensor) -> Tensor:
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise op_error(op, "value", value, "a number or a 0-d Tensor")
        return cast(value, x.dtype)
    return as_tensor(_scalar(op, "value", value), op, "value", x, x.dtype)


def masked_fill(x: Tensor, mask: Any, value: Any) -> Tensor:
    """``value`` where ``mask`` is True, ``x`` elsewhere (``mask`` broadcasts against ``x``).

    >>> masked_fill(Tensor([1.0, 2.0]), Tensor([True, False]), 0.0).tolist()
    [0.0, 2.0]
    """
    x = _tensor("masked_fill", "x", x)
    m = _bool_tensor("masked_fill", "mask", mask, x)
    broadcast_shapes("masked_fill", x.shape, m.shape)
    return select(m, _fill_value("masked_fill", value, x), x)


def masked_select(x: Tensor, mask: Any) -> Tensor:
    """The 1-d tensor of the entries of ``x`` where the (broadcast) ``mask`` is True."""
    x = _tensor("masked_select", "x", x)
    m = _bool_tensor("masked_select", "mask", mask, x)
    shape = broadcast_shapes("masked_select", x.shape, m.shape)
    xb = broadcast_to(x, shape)
    mb = broadcast_to(m, shape)
    if not shape:
        return getitem(reshape(xb, (1,)), reshape(mb, (1,)))
    return getitem(xb, mb)


def index_fill(x: Tensor, dim: int, index: Any, value: Any) -> Tensor:
    """Set the slices ``index`` of dimension ``dim`` to ``value``."""
    x = _tensor("index_fill", "x", x)
    d = check_axis("index_fill", dim, x.ndim, "dim")
    idx = _int_family("index_fill", "index", as_tensor(index, "index_fill", "index", x))
    if idx.ndim > 1:
        raise op_error("index_fill", "index", idx, "a 0-d or 1-d integer tensor")
    host = idx.asnumpy()
    n = x.shape[d] if x.ndim else 1
    if host.size and (host.min() < -n or host.max() >= n):
        raise op_error("index_fill", "index", host.tolist(), f"indices in [{-n}, {n - 1}]")
    if x.ndim == 0:
        return select(
            Tensor(bool(host.size), device=x._device), _fill_value("index_fill", value, x), x
        )
    idx = reshape(idx, (-1,))
    return setitem(x, (_bslice(None),) * d + (idx,), _fill_value("index_fill", value, x))


def nonzero(x: Tensor) -> Tensor:
    """Coordinates of the non-zero entries: an int64 tensor of shape ``(count, ndim)``."""
    x = _tensor("nonzero", "x", x)
    coords = np.argwhere(x.asnumpy()) if x.ndim else np.zeros((int(bool(x.item())), 0), np.int64)
    return _index(coords, x)


def where(condition: Any, x: Any = None, y: Any = None) -> Any:
    """``select(condition, x, y)``; with only ``condition``, a tuple of index tensors (one per
    dimension) of its True entries, like ``np.where``."""
    if x is None and y is None:
        c = as_tensor(condition, "where", "condition")
        if c.ndim == 0:
            raise op_error("where", "condition", c, "a tensor with at least 1 dimension")
        return tuple(_index(a, c) for a in np.nonzero(c.asnumpy()))
    if x is None or y is None:
        raise op_error(
            "where", "y" if y is None else "x", None, "both x and y, or neither", TypeError
        )
    return select(condition, x, y)


def one_hot(indices: Any, depth: int, on_value: Any, off_value: Any, axis: int = -1) -> Tensor:
    """A one-hot encoding: ``on_value`` where the new ``axis`` index equals ``indices``,
    ``off_value`` elsewhere (out-of-range indices give a row of ``off_value``).

    >>> one_hot(Tensor([0, 2]), 3, 1.0, 0.0).tolist()
    [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    """
    idx = _int_family("one_hot", "indices", as_tensor(indices, "one_hot", "indices"))
    depth = check_int("one_hot", "depth", depth, 0)
    if axis != -1:
        axis = check_axis("one_hot", axis, idx.ndim + 1)
    ax = idx.ndim if axis == -1 else axis
    if isinstance(on_value, Tensor):
        dt = on_value.dtype
    elif isinstance(off_value, Tensor):
        dt = off_value.dtype
    else:
        dt = _dt.float32
    on = cast(
        as_tensor(_scalar("one_hot", "on_value", on_value), "one_hot", "on_value", idx, dt), dt
    )
    off = cast(
        as_tensor(_scalar("one_hot", "off_value", off_value), "one_hot", "off_value", idx, dt), dt
    )
    pos_shape = [1] * (idx.ndim + 1)
    pos_shape[ax] = depth
    positions = Tensor(np.arange(depth).reshape(pos_shape), dtype=idx.dtype, device=idx._device)
    hit = equal(reshape(idx, idx.shape[:ax] + (1,) + idx.shape[ax:]), positions)
    return select(hit, on, off)


def sequence_mask(lengths: Any, maxlen: int | None = None) -> Tensor:
    """``mask[..., j] = j < lengths[...]`` with ``maxlen`` columns (default: the largest length)."""
    lens = _int_family("sequence_mask", "lengths", as_tensor(lengths, "sequence_mask", "lengths"))
    if maxlen is None:
        maxlen = int(lens.asnumpy().max()) if lens.size else 0
        maxlen = max(maxlen, 0)
    else:
        maxlen = check_int("sequence_mask", "maxlen", maxlen, 1)
    cols = Tensor(np.arange(maxlen), dtype=lens.dtype, device=lens._device)
    return less(cols, reshape(lens, lens.shape + (1,)))


# ---- diagonals and bands ---------------------------------------------------------------------

_ALIGNS = ("RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT")


def _diag_range(op: str, k: Any) -> tuple[int, int]:
    ks = _ints(op, "k", k)
    if len(ks) == 1:
        return ks[0], ks[0]
    if len(ks) != 2 or ks[0] > ks[1]:
        raise op_error(op, "k", k, "an int or a pair (low, high) with low <= high")
    return ks[0], ks[1]


def _check_align(op: str, align: Any) -> str:
    if align not in _ALIGNS:
        raise op_error(op, "align", align, f"one of {', '.join(_ALIGNS)}")
    return str(align)


def _diag_indices(
    rows: int, cols: int, k0: int, k1: int, align: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Matrix coordinates of diagonals ``k1, k1-1, ..., k0`` of a ``rows x cols`` matrix and
    their (diagonal row, position) in the packed layout, aligned as in TensorFlow/MindSpore:
    the first word of ``align`` places superdiagonals, the second subdiagonals."""
    max_len = min(rows + min(k1, 0), cols - max(k0, 0))
    left_super = align.startswith("LEFT")
    left_sub = align.endswith("LEFT")
    r_idx, c_idx, d_row, d_pos = [], [], [], []
    for d in _brange(k1, k0 - 1, -1):
        length = min(rows + min(d, 0), cols - max(d, 0))
        if length <= 0:
            continue
        left = (d >= 0 and left_super) or (d <= 0 and left_sub)
        offset = 0 if left else max_len - length
        i = np.arange(length)
        r_idx.append(i - min(d, 0))
        c_idx.append(i + max(d, 0))
        d_row.append(np.full(length, k1 - d))
        d_pos.append(i + offset)
    cat = [np.concatenate(a) if a else np.zeros(0, np.int64) for a in (r_idx, c_idx, d_row, d_pos)]
    return cat[0], cat[1], cat[2], cat[3], max_len


def matrix_diag_part(
    x: Tensor, k: Any = 0, padding_value: Any = 0, align: str = "RIGHT_LEFT"
) -> Tensor:
    """The diagonals ``k`` (an int or a range ``(low, high)``) of the innermost matrices,
    packed as rows of length ``max_diag_len`` padded with ``padding_value``.

    >>> matrix_diag_part(Tensor([[1, 2], [3, 4]])).tolist()
    [1, 4]
    """
    op = "matrix_diag_part"
    x = _tensor(op, "x", x)
    if x.ndim < 2:
        raise op_error(op, "x", x, "a tensor with at least 2 dimensions")
    k0, k1 = _diag_range(op, k)
    m, n = x.shape[-2:]
    if not (-m < k0 <= k1 < n) and m * n:
        raise op_error(op, "k", k, f"diagonals in ({-m}, {n}) for {m}x{n} matrices")
    rows, cols, d_row, d_pos, max_len = _diag_indices(m, n, k0, k1, _check_align(op, align))
    nd = k1 - k0 + 1
    batch = x.shape[:-2]
    pad = _scalar(op, "padding_value", padding_value)
    out = full(batch + (nd, int(max(max_len, 0))), pad, x.dtype, x._device)
    if rows.size:
        vals = getitem(x, (Ellipsis, _index(rows, x), _index(cols, x)))
        out = setitem(out, (Ellipsis, _index(d_row, x), _index(d_pos, x)), vals)
    return reshape(out, batch + (out.shape[-1],)) if nd == 1 else out


def matrix_set_diag(x: Tensor, diagonal: Tensor, k: Any = 0, align: str = "RIGHT_LEFT") -> Tensor:
    """``x`` with its diagonals ``k`` replaced by ``diagonal`` (packed as ``matrix_diag_part``
    returns them)."""
    op = "matrix_set_diag"
    x = _tensor(op, "x", x)
    diag = _tensor(op, "diagonal", diagonal)
    if x.ndim < 2:
        raise op_error(op, "x", x, "a tensor with at least 2 dimensions")
    if diag.dtype != x.dtype:
        raise op_error(op, "diagonal", diag, f"dtype {x.dtype} like x", TypeError)
    k0, k1 = _diag_range(op, k)
    m, n = x.shape[-2:]
    if not (-m < k0 <= k1 < n):
        raise op_error(op, "k", k, f"diagonals in ({-m}, {n}) for {m}x{n} matrices")
    rows, cols, d_row, d_pos, max_len = _diag_indices(m, n, k0, k1, _check_align(op, align))
    nd = k1 - k0 + 1
    want = x.shape[:-2] + ((max_len,) if nd == 1 else (nd, max_len))
    if diag.shape != tuple(int(v) for v in want):
        raise op_error(op, "diagonal", diag, f"shape {tuple(int(v) for v in want)}")
    if nd == 1:
        diag = reshape(diag, x.shape[:-2] + (1, int(max_len)))
    vals = getitem(diag, (Ellipsis, _index(d_row, x), _index(d_pos, x)))
    return setitem(x, (Ellipsis, _index(rows, x), _index(cols, x)), vals)


def matrix_diag(
    x: Tensor,
    k: Any = 0,
    num_rows: Any = -1,
    num_cols: Any = -1,
    padding_value: Any = 0,
    align: str = "RIGHT_LEFT",
) -> Tensor:
    """Matrices whose diagonals ``k`` are given by ``x`` (packed as in ``matrix_diag_part``)
    and whose other entries are ``padding_value``; ``num_rows``/``num_cols`` default to the
    smallest (square when both are -1) size that fits.

    >>> matrix_diag(Tensor([1, 2])).tolist()
    [[1, 0], [0, 2]]
    """
    op = "matrix_diag"
    x = _tensor(op, "x", x)
    k0, k1 = _diag_range(op, k)
    nd = k1 - k0 + 1
    if x.ndim < (1 if nd == 1 else 2):
        raise op_error(op, "x", x, f"a tensor with at least {1 if nd == 1 else 2} dimensions")
    if nd > 1 and x.shape[-2] != nd:
        raise op_error(op, "x", x, f"{nd} diagonals in dimension -2 for k=({k0}, {k1})")
    max_len = x.shape[-1]
    min_rows = max_len - min(k1, 0)
    min_cols = max_len + max(k0, 0)
    nr = check_int(op, "num_rows", _scalar(op, "num_rows", num_rows))
    nc = check_int(op, "num_cols", _scalar(op, "num_cols", num_cols))
    if nr == -1 and nc == -1:
        nr = nc = max(min_rows, min_cols)
    elif nr == -1:
        nr = min_rows
    elif nc == -1:
        nc = min_cols
    if nr < min_rows:
        raise op_error(op, "num_rows", num_rows, f"-1 or at least {min_rows}")
    if nc < min_cols:
        raise op_error(op, "num_cols", num_cols, f"-1 or at least {min_cols}")
    if nr != min_rows and nc != min_cols:
        raise op_error(
            op,
            "num_rows",
            num_rows,
            f"{min_rows} rows or {min_cols} columns to match diagonals of length {max_len}",
        )
    rows, cols, d_row, d_pos, _ = _diag_indices(nr, nc, k0, k1, _check_align(op, align))
    batch = x.shape[:-1] if nd == 1 else x.shape[:-2]
    packed = reshape(x, batch + (1, max_len)) if nd == 1 else x
    pad = _scalar(op, "padding_value", padding_value)
    out = full(batch + (nr, nc), pad, x.dtype, x._device)
    if rows.size:
        vals = getitem(packed, (Ellipsis, _index(d_row, x), _index(d_pos, x)))
        out = setitem(out, (Ellipsis, _index(rows, x), _index(cols, x)), vals)
    return out


def diag(input_x: Tensor) -> Tensor:
    """A tensor of shape ``shape + shape`` with ``input_x`` on its diagonal (rank >= 1).

    >>> diag(Tensor([1, 2])).tolist()
    [[1, 0], [0, 2]]
    """
    x = _tensor("diag", "input_x", input_x)
    if x.ndim == 0:
        raise op_error("diag", "input_x", x, "a tensor with at least 1 dimension")
    n = x.size
    out = full((n, n), 0, x.dtype, x._device)
    pos = _index(np.arange(n), x)
    out = setitem(out, (pos, pos), reshape(x, (n,)))
    return reshape(out, x.shape + x.shape)


def _band(op: str, x: Tensor, keep: np.ndarray) -> Tensor:
    mask = Tensor(keep, device=x._device)
    return select(mask, x, zeros_like(x))


def matrix_band_part(x: Tensor, lower: Any, upper: Any) -> Tensor:
    """Keep entries with ``i - j <= lower`` and ``j - i <= upper`` (a negative bound keeps the
    whole triangle) of the innermost matrices; zero the rest."""
    x = _tensor("matrix_band_part", "x", x)
    if x.ndim < 2:
        raise op_error("matrix_band_part", "x", x, "a tensor with at least 2 dimensions")
    lo = check_int("matrix_band_part", "lower", _scalar("matrix_band_part", "lower", lower))
    hi = check_int("matrix_band_part", "upper", _scalar("matrix_band_part", "upper", upper))
    m, n = x.shape[-2:]
    i = np.arange(m)[:, None]
    j = np.arange(n)[None, :]
    keep = ((lo < 0) | (i - j <= lo)) & ((hi < 0) | (j - i <= hi))
    return _band("matrix_band_part", x, keep)


def tril(input_x: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle (``j - i <= diagonal``) of the innermost matrices."""
    x = _tensor("tril", "input_x", input_x)
    if x.ndim < 2:
        raise op_error("tril", "input_x", x, "a tensor with at least 2 dimensions")
    d = check_int("tril", "diagonal", diagonal)
    m, n = x.shape[-2:]
    return _band("tril", x, np.arange(n)[None, :] - np.arange(m)[:, None] <= d)


def triu(input_x: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle (``j - i >= diagonal``) of the innermost matrices."""
    x = _tensor("triu", "input_x", input_x)
    if x.ndim < 2:
        raise op_error("triu", "input_x", x, "a tensor with at least 2 dimensions")
    d = check_int("triu", "diagonal", diagonal)
    m, n = x.shape[-2:]
    return _band("triu", x, np.arange(n)[None, :] - np.arange(m)[:, None] >= d)


# ---- selection: top_k, sort, unique ------------------------------------------------------------


def _desc_order(xp: Any, x: Any) -> Any:
    """Stable descending argsort along the last axis (ties by lower index, NaN first)."""
    n = x.shape[-1]
    idx = xp.argsort(xp.flip(x, -1), axis=-1, kind="stable")
    return (n - 1) - xp.flip(idx, -1)


def _scatter_last(g: Tensor, idx: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Zeros of ``shape`` with ``g`` put at positions ``idx`` of the last axis (the vjp of
    gathering along the last axis; positions within a row are distinct)."""
    n = shape[-1]
    k = idx.shape[-1]
    rows = 1
    for d in shape[:-1]:
        rows *= d
    if rows * k == 0:
        return full(shape, 0, g.dtype, g._device)
    row_index = _index(np.arange(rows)[:, None], g)
    out = setitem(
        full((rows, n), 0, g.dtype, g._device),
        (row_index, reshape(idx, (rows, k))),
        reshape(g, (rows, k)),
    )
    return reshape(out, shape)


def _top_k_abstract(x: ShapedArray, *, k: int, sorted: bool) -> tuple[ShapedArray, ShapedArray]:  # noqa: A002
    if x.ndim == 0:
        raise ValueError(
            "top_k: argument 'input_x' expected a tensor with at least 1 dimension, got a scalar"
        )
    if x.dtype.category == 0:
        raise TypeError(f"top_k: argument 'input_x' expected a numeric dtype, got {x.dtype}")
    if k > x.shape[-1]:
        raise ValueError(f"top_k: argument 'k' expected an int in [0, {x.shape[-1]}], got {k}")
    shape = x.shape[:-1] + (k,)
    return ShapedArray(shape, x.dtype), ShapedArray(shape, _dt.int32)


def _top_k_any(xp: Any, x: Any, *, k: int, sorted: bool) -> tuple[Any, Any]:  # noqa: A002
    idx = _desc_order(xp, x)[..., :k]
    if not sorted:
        idx = xp.sort(idx, axis=-1)
    return xp.take_along_axis(x, idx, axis=-1), idx


def _top_k_cpu(xp: Any, x: Any, *, k: int, sorted: bool) -> tuple[Any, Any]:  # noqa: A002
    from ..kernels.cpu.topk import top_k_indices

    idx = top_k_indices(x, k, sorted)
    return np.take_along_axis(x, idx, axis=-1), idx


top_k_p = Primitive(
    "top_k",
    "opaque",
    _top_k_abstract,
    impl=_top_k_any,
    cpu=_top_k_cpu,
    vjp=lambda gs, x, *, out, k, sorted: _scatter_last(gs[0], out[1], x.shape),
    multiple_results=True,
)


def top_k(input_x: Tensor, k: int, sorted: bool = True) -> tuple[Tensor, Tensor]:  # noqa: A002
    """The ``k`` largest entries along the last axis and their int32 indices.

    Equal values keep the lower index first. With ``sorted=False`` the selected entries come
    in input order. The gradient scatters into the selected positions.

    >>> [t.tolist() for t in top_k(Tensor([1.0, 3.0, 2.0]), 2)]
    [[3.0, 2.0], [1, 2]]
    """
    x = _tensor("top_k", "input_x", input_x)
    k = check_int("top_k", "k", k, 0)
    if not isinstance(sorted, (bool, np.bool_)):
        raise op_error("top_k", "sorted", sorted, "a bool", TypeError)
    return top_k_p.bind(x, k=k, sorted=bool(sorted))


def _sort_abstract(x: ShapedArray, *, descending: bool) -> tuple[ShapedArray, ShapedArray]:
    if x.dtype.category == 0:
        raise TypeError(f"sort: argument 'input_x' expected a numeric dtype, got {x.dtype}")
    return ShapedArray(x.shape, x.dtype), ShapedArray(x.shape, _dt.int32)


def _sort_impl(xp: Any, x: Any, *, descending: bool) -> tuple[Any, Any]:
    idx = _desc_order(xp, x) if descending else xp.argsort(x, axis=-1, kind="stable")
    return xp.take_along_axis(x, idx, axis=-1), idx


sort_p = Primitive(
    "sort",
    "opaque",
    _sort_abstract,
    impl=_sort_impl,
    vjp=lambda gs, x, *, out, descending: _scatter_last(gs[0], out[1], x.shape),
    multiple_results=True,
)


def sort(input_x: Tensor, axis: int = -1, descending: bool = False) -> tuple[Tensor, Tensor]:
    """Stable sort along ``axis``: ``(values, int32 indices)``; NaN sorts as the largest value.

    >>> [t.tolist() for t in sort(Tensor([2.0, 1.0, 3.0]))]
    [[1.0, 2.0, 3.0], [1, 0, 2]]
    """
    x = _tensor("sort", "input_x", input_x)
    if x.ndim == 0:
        raise op_error("sort", "input_x", x, "a tensor with at least 1 dimension")
    ax = check_axis("sort", axis, x.ndim)
    if not isinstance(descending, (bool, np.bool_)):
        raise op_error("sort", "descending", descending, "a bool", TypeError)
    last = x.ndim - 1
    if ax != last:
        x = swapaxes(x, ax, last)
    values, indices = sort_p.bind(x, descending=bool(descending))
    if ax != last:
        values, indices = swapaxes(values, ax, last), swapaxes(indices, ax, last)
    return values, indices


def argsort(input_x: Tensor, axis: int = -1, descending: bool = False) -> Tensor:
    """The int32 indices that sort ``input_x`` along ``axis`` (stable)."""
    _tensor("argsort", "input_x", input_x)
    return sort(input_x, axis, descending)[1]


def intopk(x1: Tensor, x2: Tensor, k: int) -> Tensor:
    """Whether each target class ``x2[i]`` is among the ``k`` highest scores of row ``x1[i]``
    (ties at the boundary count as inside; out-of-range targets give False)."""
    p = _tensor("intopk", "x1", x1)
    if p.ndim != 2 or p.dtype.category != 2:
        raise op_error(
            "intopk", "x1", p, "a 2-d floating tensor", TypeError if p.ndim == 2 else ValueError
        )
    t = _int_family("intopk", "x2", as_tensor(x2, "intopk", "x2", p))
    if t.shape != (p.shape[0],):
        raise op_error("intopk", "x2", t, f"shape ({p.shape[0]},) (one target per row of x1)")
    k = check_int("intopk", "k", k)
    host = t.asnumpy()
    valid = (host >= 0) & (host < p.shape[1])
    rows = _index(np.arange(p.shape[0]), p)
    target = getitem(p, (rows, _index(np.where(valid, host, 0), p)))
    above = reduce_sum(cast(greater(p, reshape(target, (-1, 1))), _dt.int32), 1)
    inside = less(above, k)
    return select(Tensor(valid, device=p._device), inside, False)


def unique(x: Tensor) -> tuple[Tensor, Tensor]:
    """The distinct values of ``x`` in order of first occurrence and, for every entry, the
    int32 position of its value in that list (same shape as ``x``).

    >>> [t.tolist() for t in unique(Tensor([1, 2, 5, 2]))]
    [[1, 2, 5], [0, 1, 2, 1]]
    """
    x = _tensor("unique", "x", x)
    flat = reshape(x, (-1,))
    _, first, inverse = np.unique(flat.asnumpy(), return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    y = getitem(flat, _index(first[order], x))
    idx = Tensor(rank[inverse.reshape(-1)].reshape(x.shape).astype(np.int32), device=x._device)
    return y, idx


def unique_consecutive(
    x: Tensor, return_idx: bool = False, return_counts: bool = False, axis: int | None = None
) -> Any:
    """Collapse runs of equal consecutive values (or slices along ``axis``); optionally also
    the int32 run index of every input entry and the int32 length of every run."""
    op = "unique_consecutive"
    x = _tensor(op, "x", x)
    for name, flag in (("return_idx", return_idx), ("return_counts", return_counts)):
        if not isinstance(flag, (bool, np.bool_)):
            raise op_error(op, name, flag, "a bool", TypeError)
    if axis is None:
        src = reshape(x, (-1,))
        ax = 0
    else:
        if x.ndim == 0:
            raise op_error(op, "axis", axis, "None for a 0-d input")
        src = x
        ax = check_axis(op, axis, x.ndim)
    host = np.moveaxis(src.asnumpy(), ax, 0)
    n = host.shape[0]
    if n:
        flat = host.reshape(n, -1)
        change = np.any(flat[1:] != flat[:-1], axis=1)
        starts = np.concatenate(([0], np.nonzero(change)[0] + 1))
        run_index = np.concatenate(([0], np.cumsum(change)))
    else:
        starts = np.zeros(0, np.int64)
        run_index = np.zeros(0, np.int64)
    output = getitem(src, (_bslice(None),) * ax + (_index(starts, x),))
    results: list[Tensor] = [output]
    if return_idx:
        idx = run_index.reshape(x.shape) if axis is None else run_index
        results.append(Tensor(idx.astype(np.int32), device=x._device))
    if return_counts:
        counts = np.diff(np.concatenate((starts, [n])))
        results.append(Tensor(counts.astype(np.int32), device=x._device))
    return results[0] if len(results) == 1 else tuple(results)


def unique_with_pad(x: Tensor, pad_num: int) -> tuple[Tensor, Tensor]:
    """``unique`` for a 1-d int32/int64 tensor, with ``y`` padded by ``pad_num`` to the
    length of ``x`` (so both outputs have static shapes)."""
    x = _tensor("unique_with_pad", "x", x)
    if x.ndim != 1:
        raise op_error("unique_with_pad", "x", x, "a 1-d tensor")
    if x.dtype not in (_dt.int32, _dt.int64):
        raise op_error("unique_with_pad", "x", x, "an int32 or int64 tensor", TypeError)
    pad = check_int("unique_with_pad", "pad_num", _scalar("unique_with_pad", "pad_num", pad_num))
    y, idx = unique(x)
    values = np.full(x.shape, pad, x.dtype.np)
    values[: y.shape[0]] = y.asnumpy()
    return (
        Tensor(values, device=x._device),
        Tensor(idx.asnumpy().astype(x.dtype.np), device=x._device),
    )


def _popcount_abstract(x: ShapedArray) -> ShapedArray:
    if x.dtype.category != 1:
        raise TypeError(
            f"population_count: argument 'input_x' expected an integer dtype, got {x.dtype}"
        )
    return ShapedArray(x.shape, _dt.uint8)


def _popcount_impl(xp: Any, x: Any) -> Any:
    bits = x.dtype.itemsize * 8
    u = x.view(np.dtype(f"u{x.dtype.itemsize}"))
    out = xp.zeros(x.shape, np.uint8)
    for b in _brange(bits):
        out += ((u >> b) & 1).astype(np.uint8)
    return out


population_count_p = Primitive(
    "population_count", "elementwise", _popcount_abstract, impl=_popcount_impl
)


def population_count(input_x: Tensor) -> Tensor:
    """The number of set bits of each integer (two's complement), as uint8.

    >>> population_count(Tensor([7, -1], dtype="int8")).tolist()
    [3, 8]
    """
    return population_count_p.bind(_tensor("population_count", "input_x", input_x))


def count_nonzero(
    x: Tensor, axis: Any = (), keep_dims: bool = False, dtype: Any = _dt.int32
) -> Tensor:
    """The number of non-zero entries over ``axis`` (all axes by default), as ``dtype``."""
    x = _tensor("count_nonzero", "x", x)
    dt = _dtype_or(dtype, _dt.int32, "count_nonzero", "dtype")
    axes = normalize_axes("count_nonzero", axis, x.ndim)
    counts = reduce_sum(cast(not_equal(x, zeros_like(x)), _dt.int32), axes, keep_dims)
    return cast(counts, dt)


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
