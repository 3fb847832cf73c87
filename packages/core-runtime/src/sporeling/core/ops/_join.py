"""Joining and splitting along an axis: ``concat``, ``stack``, ``split``."""

from __future__ import annotations

from typing import Any

from .. import dtype as _dt
from .._primitive import Primitive, ShapedArray
from ..errors import check_axis, op_error
from ..tensor import Tensor
from ._batch_rules import concat_rule
from ._core import as_tensor, cast, reshape

__all__ = ["concat", "stack", "split"]


def _concat_abstract(*xs: ShapedArray, axis: int) -> ShapedArray:
    first = xs[0]
    for i, x in enumerate(xs[1:], 1):
        if x.ndim != first.ndim or any(
            a != b for k, (a, b) in enumerate(zip(x.shape, first.shape, strict=True)) if k != axis
        ):
            raise ValueError(
                f"concat: input {i} has shape {x.shape}, which does not match input 0's "
                f"shape {first.shape} outside axis {axis}"
            )
    shape = list(first.shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    return ShapedArray(tuple(shape), first.dtype)


def _concat_vjp(g: Tensor, *xs: Tensor, out: Tensor, axis: int) -> tuple[Tensor, ...]:
    sizes = [x.shape[axis] for x in xs]
    return split_p.bind(g, axis=axis, sizes=tuple(sizes))


concat_p = Primitive(
    "concat",
    "movement",
    _concat_abstract,
    impl=lambda xp, *xs, axis: xp.concatenate(xs, axis=axis),
    vjp=_concat_vjp,
    batch_rule=concat_rule,
)


def _split_abstract(
    x: ShapedArray, *, axis: int, sizes: tuple[int, ...]
) -> tuple[ShapedArray, ...]:
    if sum(sizes) != x.shape[axis]:
        raise ValueError(
            f"split: sizes {sizes} do not add up to dimension {axis} of size {x.shape[axis]}"
        )
    outs = []
    for s in sizes:
        shape = list(x.shape)
        shape[axis] = s
        outs.append(ShapedArray(tuple(shape), x.dtype))
    return tuple(outs)


def _split_impl(xp: Any, x: Any, *, axis: int, sizes: tuple[int, ...]) -> tuple[Any, ...]:
    bounds = []
    acc = 0
    for s in sizes[:-1]:
        acc += s
        bounds.append(acc)
    return tuple(xp.split(x, bounds, axis=axis))


split_p = Primitive(
    "split",
    "movement",
    _split_abstract,
    impl=_split_impl,
    vjp=lambda gs, x, *, out, axis, sizes: concat_p.bind(*gs, axis=axis),
    multiple_results=True,
)


def _tensors(op: str, arg: str, xs: Any) -> list[Tensor]:
    if isinstance(xs, Tensor) or not isinstance(xs, (tuple, list)) or not xs:
        raise op_error(op, arg, xs, "a non-empty tuple or list of Tensors", TypeError)
    ts = [as_tensor(x, op, f"{arg}[{i}]") for i, x in enumerate(xs)]
    dt = ts[0].dtype
    for t in ts[1:]:
        dt = _dt.promote_types(dt, t.dtype)
    return [cast(t, dt) for t in ts]


def concat(input_x: Any, axis: int = 0) -> Tensor:
    """Join tensors along an existing axis.

    >>> concat((Tensor([1.0]), Tensor([2.0, 3.0]))).tolist()
    [1.0, 2.0, 3.0]
    """
    ts = _tensors("concat", "input_x", input_x)
    for i, t in enumerate(ts):
        if t.ndim == 0:
            raise ValueError(
                f"concat: input {i} is 0-d; concat joins along an existing axis (use stack)"
            )
    ax = check_axis("concat", axis, ts[0].ndim)
    if len(ts) == 1:
        return ts[0]
    return concat_p.bind(*ts, axis=ax)


def stack(input_x: Any, axis: int = 0) -> Tensor:
    """Join same-shaped tensors along a new axis."""
    ts = _tensors("stack", "input_x", input_x)
    shape = ts[0].shape
    for i, t in enumerate(ts):
        if t.shape != shape:
            raise ValueError(f"stack: input {i} has shape {t.shape}, expected {shape} like input 0")
    ax = check_axis("stack", axis, len(shape) + 1)
    new_shape = shape[:ax] + (1,) + shape[ax:]
    parts = [reshape(t, new_shape) for t in ts]
    return parts[0] if len(parts) == 1 else concat_p.bind(*parts, axis=ax)


def split(input_x: Tensor, axis: int = 0, output_num: int = 1) -> tuple[Tensor, ...]:
    """Split into ``output_num`` equal parts along ``axis`` (MindSpore 1.8 signature)."""
    x = as_tensor(input_x, "split", "input_x")
    ax = check_axis("split", axis, x.ndim)
    if not isinstance(output_num, int) or output_num < 1 or x.shape[ax] % output_num:
        raise op_error(
            "split",
            "output_num",
            output_num,
            f"a positive divisor of dimension {ax} (size {x.shape[ax]})",
        )
    size = x.shape[ax] // output_num
    return split_p.bind(x, axis=ax, sizes=(size,) * output_num)
