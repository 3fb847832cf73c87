"""Reshaping and movement: stack/squeeze/tile, flips and rolls, slicing, space/batch moves."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._primitive import Primitive, ShapedArray
from ...errors import check_axis, check_int, op_error
from ...tensor import Tensor
from .._core import (
    as_tensor,
    broadcast_to,
    full,
    normalize_axes,
    reshape,
    transpose,
)
from .._indexing import getitem, setitem
from .._join import concat, split_p
from ._common import _brange, _bslice, _int_family, _ints, _tensor, check_alloc

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
    check_alloc(
        "tile", tuple(r * s for r, s in zip(reps, shape, strict=True)), x.dtype, "multiples"
    )
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
    if x.ndim == 0:  # axes 0/-1 of a 0-d tensor: nothing to swap
        return x
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
