"""Selection: top_k, sort/argsort, in_top_k, unique*, population_count, count_nonzero."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import dtype as _dt
from ..._primitive import Primitive, ShapedArray
from ...errors import check_axis, check_int, op_error
from ...tensor import Tensor
from .._batch_rules import last_axis_rule
from .._compare import greater, less, not_equal, select
from .._core import (
    as_tensor,
    cast,
    full,
    normalize_axes,
    reduce_sum,
    reshape,
    zeros_like,
)
from .._indexing import getitem, setitem
from ._common import _brange, _bslice, _dtype_or, _index, _int_family, _scalar, _tensor
from .movement import swapaxes

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
    from ...kernels.cpu.topk import top_k_indices

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
    batch_rule=last_axis_rule,
)


def sort(input_x: Tensor, axis: int = -1, descending: bool = False) -> tuple[Tensor, Tensor]:
    """Stable sort along ``axis``: ``(values, int32 indices)``; NaN sorts as the largest value.

    >>> [t.tolist() for t in sort(Tensor([2.0, 1.0, 3.0]))]
    [[1.0, 2.0, 3.0], [1, 0, 2]]
    """
    x = _tensor("sort", "input_x", input_x)
    if x.dtype.category == 3:
        msg = "a real Tensor (complex numbers have no order)"
        raise op_error("sort", "input_x", x, msg, TypeError)
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
