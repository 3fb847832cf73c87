"""Unsorted segment reductions (sum, max, min, prod)."""

from __future__ import annotations

from typing import Any

from ..._primitive import Primitive, ShapedArray
from ...errors import check_int, op_error
from ...kernels.cpu import segment as _ksegment
from ...tensor import Tensor
from .._compare import equal, greater, select
from .._core import cast, full, reshape, zeros_like
from .._elementwise import div, mul
from ._common import (
    _check_index_dtype,
    _check_range,
    _index,
    _prod,
    _scatter_rows_xp,
    _tensor,
    _with_cpu,
)
from ._prims import gather_p

# ---- unsorted segment reductions --------------------------------------------------------


def _segment_abstract(
    x: ShapedArray, ids: ShapedArray, *, num_segments: int, op: str
) -> ShapedArray:
    name = f"unsorted_segment_{op}"
    _check_index_dtype(name, "segment_ids", ids)
    if x.dtype.category == 0:
        raise TypeError(f"{name}: argument 'x' expected a numeric dtype, got Bool")
    if ids.ndim < 1 or x.shape[: ids.ndim] != ids.shape:
        raise ValueError(
            f"{name}: argument 'segment_ids' expected a shape of rank >= 1 that "
            f"is a prefix of the input's shape {x.shape}, got {ids.shape}"
        )
    return ShapedArray((num_segments,) + x.shape[ids.ndim :], x.dtype)


def _segment_impl(
    xp: Any, x: Any, ids: Any, *, num_segments: int, op: str, fast: bool = False
) -> Any:
    name = f"unsorted_segment_{op}"
    flat = _check_range(
        xp,
        name,
        "segment_ids",
        ids,
        num_segments,
        drop_negative=True,
        what=f" (num_segments={num_segments}; negative ids are dropped)",
    )
    rest = x.shape[ids.ndim :]
    x2 = x.reshape(flat.size, _prod(rest))
    if fast and _ksegment.supports(x.dtype, _ksegment.SEGMENT_OPS[op]):
        out = _ksegment.segment_reduce(x2, flat.reshape(-1), num_segments, op)
    else:
        out = xp.full((1, num_segments, x2.shape[1]), _ksegment.identity(op, x.dtype), x.dtype)
        _scatter_rows_xp(
            xp, out, flat.reshape(-1), x2.reshape(1, *x2.shape), _ksegment.SEGMENT_OPS[op]
        )
        out = out[0]
    return out.reshape((num_segments,) + rest)


def _segment_vjp(
    g: Tensor, x: Tensor, ids: Tensor, *, out: Tensor, num_segments: int, op: str
) -> tuple[Any, ...]:
    valid = greater(ids, -1)
    safe = select(valid, ids, zeros_like(ids))
    rest = x.shape[ids.ndim :]
    mask = reshape(cast(valid, g.dtype), ids.shape + (1,) * len(rest))

    def back(t: Tensor) -> Tensor:  # segment values -> one per input element
        return gather_p.bind(t, safe, axis=0)

    def segment_sum(t: Tensor) -> Tensor:
        return segment_p.bind(t, ids, num_segments=num_segments, op="sum")

    def one_where_zero(t: Tensor) -> Tensor:
        return select(greater(t, 0), t, full(t.shape, 1, t.dtype, t._device))

    def dx() -> Tensor:
        if op == "sum":
            return mul(back(g), mask)
        if op in ("max", "min"):  # ties share the gradient evenly
            win = mul(cast(equal(x, back(out)), g.dtype), mask)
            return mul(back(div(g, one_where_zero(segment_sum(win)))), win)
        # prod: d/dx_j = prod of the others; exact with zeros (one zero: only it gets a
        # gradient, the product of the nonzero rest; two or more: all zero).
        zero = equal(x, zeros_like(x))
        ones = full(x.shape, 1, x.dtype, x._device)
        safe_x = select(zero, ones, x)
        nz_prod = segment_p.bind(safe_x, ids, num_segments=num_segments, op="prod")
        n_zero = segment_sum(cast(zero, g.dtype))
        lone = equal(back(n_zero), full((), 1, g.dtype, g._device))
        at_zero = select(lone, back(mul(g, nz_prod)), zeros_like(x))
        return mul(select(zero, at_zero, div(back(mul(g, out)), safe_x)), mask)

    return dx, None


segment_p = Primitive(
    "unsorted_segment",
    "reduce",
    _segment_abstract,
    impl=_segment_impl,
    cpu=_with_cpu(_segment_impl),
    vjp=_segment_vjp,
)


def _segment(op: str, x: Any, segment_ids: Any, num_segments: Any, arg: str) -> Tensor:
    name = f"unsorted_segment_{op}"
    t = _tensor(name, arg, x)
    if isinstance(num_segments, Tensor):
        if num_segments.size != 1 or num_segments.dtype.category != 1:
            raise op_error(
                name, "num_segments", num_segments, "an int or a 1-element int tensor", TypeError
            )
        num_segments = int(num_segments.item())
    n = check_int(name, "num_segments", num_segments, 1)
    return segment_p.bind(t, _index(name, "segment_ids", segment_ids, t), num_segments=n, op=op)


def unsorted_segment_sum(input_x: Tensor, segment_ids: Any, num_segments: Any) -> Tensor:
    """``output[i] = sum of input_x[j...] over segment_ids[j...] == i`` (negative ids are
    dropped; empty segments are 0).

    >>> unsorted_segment_sum(Tensor([1.0, 2.0, 3.0, 4.0]), Tensor([0, 0, 1, 2]), 4).tolist()
    [3.0, 3.0, 4.0, 0.0]
    """
    return _segment("sum", input_x, segment_ids, num_segments, "input_x")


def unsorted_segment_max(x: Tensor, segment_ids: Any, num_segments: Any) -> Tensor:
    """Segment maxima (empty segments hold the dtype's lowest value); ties share the
    gradient evenly."""
    return _segment("max", x, segment_ids, num_segments, "x")


def unsorted_segment_min(x: Tensor, segment_ids: Any, num_segments: Any) -> Tensor:
    """Segment minima (empty segments hold the dtype's highest value)."""
    return _segment("min", x, segment_ids, num_segments, "x")


def unsorted_segment_prod(x: Tensor, segment_ids: Any, num_segments: Any) -> Tensor:
    """Segment products (empty segments are 1); the gradient is exact with zeros."""
    return _segment("prod", x, segment_ids, num_segments, "x")
