"""``unfold`` (im2col) and ``col2im`` as ops."""

from __future__ import annotations

import math
from functools import partial
from typing import Any

from ... import dtype as _dt
from ..._primitive import Primitive, ShapedArray
from ...errors import op_error
from ...tensor import Tensor
from .._core import reshape
from ._common import _LAYOUT, Pads, _check_ndim, _ints, _out_spatial, _tensor
from .conv import _col2im, _im2col

# ---- unfold (im2col) and col2im -------------------------------------------------------


def _im2col_abstract(
    x: ShapedArray,
    *,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    pads: Pads,
    dilation: tuple[int, ...],
) -> ShapedArray:
    out_sp = _out_spatial(x.shape[2:], kernel, stride, pads, dilation)
    return ShapedArray((x.shape[0], x.shape[1] * math.prod(kernel), math.prod(out_sp)), x.dtype)


def _im2col_impl(
    xp: Any,
    x: Any,
    *,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    pads: Pads,
    dilation: tuple[int, ...],
    fast: bool = False,
) -> Any:
    n, c = x.shape[:2]
    out_sp = _out_spatial(tuple(x.shape[2:]), kernel, stride, pads, dilation)
    if x.size == 0:  # an empty batch (or no channels): the empty result
        return xp.zeros((n, c * math.prod(kernel), math.prod(out_sp)), x.dtype)
    cols = _im2col(xp, x, kernel, stride, pads, dilation, out_sp, fast)
    cols = cols.reshape(c * math.prod(kernel), n, -1).transpose(1, 0, 2)
    return xp.ascontiguousarray(cols)


def _col2im_abstract(
    c: ShapedArray,
    *,
    shape: tuple[int, ...],
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    pads: Pads,
    dilation: tuple[int, ...],
) -> ShapedArray:
    return ShapedArray(shape, c.dtype)


def _col2im_impl(
    xp: Any,
    cols: Any,
    *,
    shape: tuple[int, ...],
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    pads: Pads,
    dilation: tuple[int, ...],
    fast: bool = False,
) -> Any:
    out_sp = _out_spatial(shape[2:], kernel, stride, pads, dilation)
    c6 = xp.ascontiguousarray(cols.transpose(1, 0, 2))
    c6 = c6.reshape((shape[1],) + kernel + (shape[0],) + out_sp)
    return _col2im(xp, c6, shape, kernel, stride, pads, dilation, fast)


im2col_p = Primitive(
    "im2col",
    "opaque",
    _im2col_abstract,
    impl=_im2col_impl,
    cpu=partial(_im2col_impl, fast=True),
    vjp=lambda g, x, *, out, **p: col2im_p.bind(g, shape=x.shape, **p),
)
col2im_p: Primitive = Primitive(
    "col2im",
    "opaque",
    _col2im_abstract,
    impl=_col2im_impl,
    cpu=partial(_col2im_impl, fast=True),
    vjp=lambda g, c, *, out, shape, **p: im2col_p.bind(g, **p),
)


def unfold(
    input: Any,
    kernel_size: Any,
    dilation: Any = 1,
    padding: Any = 0,  # noqa: A002
    stride: Any = 1,
) -> Tensor:
    """Sliding 2-d patches (im2col): (N, C, H, W) -> (N, C * KH * KW, L).

    Row ``c * KH * KW + i * KW + j`` holds tap (i, j) of channel c for the L output
    positions in row-major order; :func:`col2im` sums them back.
    """
    op = "unfold"
    x = _tensor(op, "input", input)
    _check_ndim(op, "input", x, (4,), _LAYOUT[2])
    k = _ints(op, "kernel_size", kernel_size, 2)
    d = _ints(op, "dilation", dilation, 2)
    s = _ints(op, "stride", stride, 2)
    p = _ints(op, "padding", padding, 2, minimum=0)
    pads = tuple((v, v) for v in p)
    if any(o < 1 for o in _out_spatial(x.shape[2:], k, s, pads, d)):
        raise op_error(op, "input", x, f"a spatial size of at least the kernel {k}")
    return im2col_p.bind(x, kernel=k, stride=s, pads=pads, dilation=d)


def col2im(
    input_x: Any, output_size: Any, kernel_size: Any, dilation: Any, padding_value: Any, stride: Any
) -> Tensor:
    """Sum sliding blocks (N, C, KH * KW, L) back into images (N, C, *output_size)."""
    op = "col2im"
    x = _tensor(op, "input_x", input_x)
    if x.dtype == _dt.bool_:  # the sum of overlapping blocks would be a logical or
        raise op_error(op, "input_x", x, "a numeric tensor (not bool)", TypeError)
    _check_ndim(op, "input_x", x, (4,), "N, C, KH * KW, L")
    size = _ints(op, "output_size", output_size, 2)
    k = _ints(op, "kernel_size", kernel_size, 2)
    d = _ints(op, "dilation", dilation, 2)
    s = _ints(op, "stride", stride, 2)
    p = _ints(op, "padding_value", padding_value, 2, minimum=0)
    pads = tuple((v, v) for v in p)
    if x.shape[2] != k[0] * k[1]:
        raise op_error(op, "input_x", x, f"dimension 2 equal to kernel_size product {k[0] * k[1]}")
    blocks = math.prod(_out_spatial(size, k, s, pads, d))
    if x.shape[3] != blocks:
        raise op_error(op, "input_x", x, f"dimension 3 equal to the number of blocks {blocks}")
    n, c = x.shape[:2]
    cols = reshape(x, (n, c * k[0] * k[1], blocks))
    return col2im_p.bind(cols, shape=(n, c) + size, kernel=k, stride=s, pads=pads, dilation=d)
