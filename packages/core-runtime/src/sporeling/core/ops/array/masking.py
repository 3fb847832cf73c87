"""Masks and fills: masked_fill/select, index_fill, nonzero, where, one_hot, sequence_mask."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import dtype as _dt
from ...errors import as_op, check_axis, check_int, op_error
from ...tensor import Tensor
from .._compare import equal, less, select
from .._core import (
    as_tensor,
    broadcast_shapes,
    broadcast_to,
    cast,
    reshape,
)
from .._indexing import getitem, setitem
from ._common import _bslice, _index, _int_family, _scalar, _tensor

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
    try:
        return select(condition, x, y)
    except (TypeError, ValueError) as exc:  # named after where, not its select
        raise as_op(exc, "where") from None


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
