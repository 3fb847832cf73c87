"""Max, average and adaptive pooling over 1 to 3 spatial axes."""

from __future__ import annotations

import itertools
import math
from functools import partial
from typing import Any

import numpy as np

from ... import dtype as _dt
from ..._primitive import Primitive, ShapedArray
from ...errors import op_error
from ...tensor import Tensor
from .._core import reshape, transpose
from ._common import (
    _LAYOUT,
    Pads,
    _check_ndim,
    _float,
    _ints,
    _out_spatial,
    _real,
    _same_pads,
    _tensor,
)
from .conv import _slices
from .resize import _apply_taps

# ---- pooling ------------------------------------------------------------------------


def _window_positions(n: int, k: int, s: int, lo: int, d: int, out: int, o: int) -> np.ndarray:
    return o * d + s * np.arange(out) - lo


def _max_pool_abstract(
    x: ShapedArray,
    *,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    pads: Pads,
    dilation: tuple[int, ...],
) -> tuple[ShapedArray, ShapedArray]:
    shape = x.shape[:2] + _out_spatial(x.shape[2:], kernel, stride, pads, dilation)
    return ShapedArray(shape, x.dtype), ShapedArray(shape, _dt.int64)


def _max_pool_impl(
    xp: Any,
    x: Any,
    *,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    pads: Pads,
    dilation: tuple[int, ...],
    fast: bool = False,
) -> Any:
    sp = tuple(x.shape[2:])
    out_sp = _out_spatial(sp, kernel, stride, pads, dilation)
    if fast and len(kernel) <= 2 and x.dtype.kind == "f":
        from ...kernels.cpu.pool import max_pool2d

        if len(kernel) == 1:
            out, idx = max_pool2d(
                x[:, :, None, :],
                (1,) + kernel,
                (1,) + stride,
                (0, pads[0][0]),
                (1,) + dilation,
                (1,) + out_sp,
            )
            return out.reshape(out.shape[:2] + out_sp), idx.reshape(idx.shape[:2] + out_sp)
        return max_pool2d(x, kernel, stride, (pads[0][0], pads[1][0]), dilation, out_sp)
    low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xpad = xp.pad(x, ((0, 0), (0, 0)) + tuple(pads), constant_values=low)
    best = xp.full(x.shape[:2] + out_sp, low, x.dtype)
    arg = xp.full(x.shape[:2] + out_sp, -1, np.int64)
    plane = np.cumprod((1,) + sp[::-1])[:-1][::-1]  # row-major strides of the input plane
    for offs in itertools.product(*(range(k) for k in kernel)):
        patch = xpad[(slice(None), slice(None)) + _slices(offs, dilation, stride, out_sp)]
        flat = np.zeros(out_sp, np.int64)
        valid = np.ones(out_sp, bool)
        for ax, (n, k, s, (lo, _), d, o) in enumerate(
            zip(sp, kernel, stride, pads, dilation, offs)
        ):
            pos = _window_positions(n, k, s, lo, d, out_sp[ax], o)
            shape = [1] * len(sp)
            shape[ax] = -1
            flat = flat + (pos * plane[ax]).reshape(shape)
            valid = valid & ((pos >= 0) & (pos < n)).reshape(shape)
        better = (patch > best) | ((arg < 0) & xp.asarray(valid))
        if x.dtype.kind == "f":
            better = better | (xp.isnan(patch) & ~xp.isnan(best))
        better = better & xp.asarray(valid)
        best = xp.where(better, patch, best)
        arg = xp.where(better, xp.asarray(flat), arg)
    return best, arg


def _pool_scatter_abstract(
    g: ShapedArray, idx: ShapedArray, *, shape: tuple[int, ...]
) -> ShapedArray:
    return ShapedArray(shape, g.dtype)


def _pool_scatter_impl(
    xp: Any, g: Any, idx: Any, *, shape: tuple[int, ...], fast: bool = False
) -> Any:
    if fast and g.dtype.kind == "f":
        from ...kernels.cpu.pool import max_pool2d_backward

        return max_pool2d_backward(g, idx, shape)
    n, c = shape[:2]
    out = xp.zeros((n * c, math.prod(shape[2:])), g.dtype)
    rows = xp.broadcast_to(xp.arange(n * c)[:, None], (n * c, math.prod(idx.shape[2:])))
    gi = idx.reshape(n * c, -1)
    ok = gi >= 0
    xp.add.at(out, (rows[ok], gi[ok]), g.reshape(n * c, -1)[ok])
    return out.reshape(shape)


def _pool_gather_abstract(x: ShapedArray, idx: ShapedArray) -> ShapedArray:
    return ShapedArray(idx.shape, x.dtype)


def _pool_gather_impl(xp: Any, x: Any, idx: Any) -> Any:
    n, c = x.shape[:2]
    flat = x.reshape(n, c, -1)
    safe = xp.maximum(idx.reshape(n, c, -1), 0)
    out = xp.take_along_axis(flat, safe, axis=2)
    return xp.where(idx.reshape(n, c, -1) >= 0, out, 0).reshape(idx.shape)


pool_scatter_p = Primitive(
    "pool_scatter",
    "opaque",
    _pool_scatter_abstract,
    impl=_pool_scatter_impl,
    cpu=partial(_pool_scatter_impl, fast=True),
    vjp=lambda gg, g, idx, *, out, shape: (pool_gather_p.bind(gg, idx), None),
)
pool_gather_p: Primitive = Primitive(
    "pool_gather",
    "opaque",
    _pool_gather_abstract,
    impl=_pool_gather_impl,
    vjp=lambda g, x, idx, *, out: (pool_scatter_p.bind(g, idx, shape=x.shape), None),
)
max_pool_p = Primitive(
    "max_pool",
    "opaque",
    _max_pool_abstract,
    impl=_max_pool_impl,
    cpu=partial(_max_pool_impl, fast=True),
    multiple_results=True,
    vjp=lambda gs, x, *, out, **p: pool_scatter_p.bind(gs[0], out[1], shape=x.shape),
)


def _count_bounds(sp: tuple[int, ...], pads: Pads, include: Pads) -> tuple[int, ...]:
    return tuple(v for n, (lo, hi) in zip(sp, include) for v in (-lo, n + hi))


def _pool_counts(
    sp: tuple[int, ...],
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    pads: Pads,
    bounds: tuple[int, ...],
    out_sp: tuple[int, ...],
) -> np.ndarray:
    count = np.ones((), np.float64)
    for ax, (k, s, (lo, _), o) in enumerate(zip(kernel, stride, pads, out_sp)):
        start = s * np.arange(o) - lo
        c = np.minimum(start + k, bounds[2 * ax + 1]) - np.maximum(start, bounds[2 * ax])
        count = np.multiply.outer(count, np.maximum(c, 0))
    return count


def _avg_pool_abstract(
    x: ShapedArray,
    *,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    pads: Pads,
    bounds: tuple[int, ...],
) -> ShapedArray:
    ones = (1,) * len(kernel)
    return ShapedArray(x.shape[:2] + _out_spatial(x.shape[2:], kernel, stride, pads, ones), x.dtype)


def _avg_pool_impl(
    xp: Any,
    x: Any,
    *,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    pads: Pads,
    bounds: tuple[int, ...],
    fast: bool = False,
) -> Any:
    sp = tuple(x.shape[2:])
    ones = (1,) * len(kernel)
    out_sp = _out_spatial(sp, kernel, stride, pads, ones)
    if fast and len(kernel) == 2:
        from ...kernels.cpu.pool import avg_pool2d

        return avg_pool2d(x, kernel, stride, (pads[0][0], pads[1][0]), out_sp, bounds)
    xpad = xp.pad(x, ((0, 0), (0, 0)) + tuple(pads))
    acc = xp.zeros(x.shape[:2] + out_sp, x.dtype)
    for offs in itertools.product(*(range(k) for k in kernel)):
        acc += xpad[(slice(None), slice(None)) + _slices(offs, ones, stride, out_sp)]
    count = _pool_counts(sp, kernel, stride, pads, bounds, out_sp)
    return acc / xp.asarray(np.maximum(count, 1), x.dtype)


def _avg_pool_grad_abstract(g: ShapedArray, *, shape: tuple[int, ...], **p: Any) -> ShapedArray:
    return ShapedArray(shape, g.dtype)


def _avg_pool_grad_impl(
    xp: Any,
    g: Any,
    *,
    shape: tuple[int, ...],
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    pads: Pads,
    bounds: tuple[int, ...],
    fast: bool = False,
) -> Any:
    sp = tuple(shape[2:])
    ones = (1,) * len(kernel)
    out_sp = tuple(g.shape[2:])
    if fast and len(kernel) == 2:
        from ...kernels.cpu.pool import avg_pool2d_backward

        return avg_pool2d_backward(g, shape, kernel, stride, (pads[0][0], pads[1][0]), bounds)
    count = _pool_counts(sp, kernel, stride, pads, bounds, out_sp)
    gs = g / xp.asarray(np.maximum(count, 1), g.dtype)
    padded = tuple(n + lo + hi for n, (lo, hi) in zip(sp, pads))
    buf = xp.zeros(tuple(shape[:2]) + padded, g.dtype)
    for offs in itertools.product(*(range(k) for k in kernel)):
        buf[(slice(None), slice(None)) + _slices(offs, ones, stride, out_sp)] += gs
    crop = tuple(slice(lo, lo + n) for n, (lo, _) in zip(sp, pads))
    return xp.ascontiguousarray(buf[(slice(None), slice(None)) + crop])


avg_pool_p = Primitive(
    "avg_pool",
    "opaque",
    _avg_pool_abstract,
    impl=_avg_pool_impl,
    cpu=partial(_avg_pool_impl, fast=True),
    vjp=lambda g, x, *, out, **p: avg_pool_grad_p.bind(g, shape=x.shape, **p),
)
avg_pool_grad_p: Primitive = Primitive(
    "avg_pool_grad",
    "opaque",
    _avg_pool_grad_abstract,
    impl=_avg_pool_grad_impl,
    cpu=partial(_avg_pool_grad_impl, fast=True),
    vjp=lambda gg, g, *, out, shape, **p: avg_pool_p.bind(gg, **p),
)


def _pool_pads(
    op: str,
    sp: tuple[int, ...],
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    padding: Any,
    dilation: tuple[int, ...],
    ceil_mode: bool,
) -> Pads:
    nd = len(sp)
    pad = _ints(op, "padding", padding, nd, minimum=0)
    for p, k, d in zip(pad, kernel, dilation):
        if p > (d * (k - 1) + 1) // 2:
            raise op_error(
                op,
                "padding",
                padding,
                "at most half of the (dilated) kernel size in every dimension",
            )
    pads = []
    for n, k, s, p, d in zip(sp, kernel, stride, pad, dilation):
        span = n + 2 * p - d * (k - 1) - 1
        if span < 0:
            raise op_error(op, "x", sp, f"spatial sizes of at least the kernel {kernel}")
        out = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (out - 1) * s >= n + p:  # the last window must start inside
            out -= 1
        hi = max((out - 1) * s + d * (k - 1) + 1 - n - p, 0)
        pads.append((p, hi))
    return tuple(pads)


def _max_pool_nd(
    op: str,
    nd: int,
    x: Any,
    kernel_size: Any,
    stride: Any,
    padding: Any,
    dilation: Any,
    return_indices: bool,
    ceil_mode: bool,
) -> Any:
    t = _tensor(op, "x", x)
    _check_ndim(op, "x", t, (nd + 2,), _LAYOUT[nd])
    if t.dtype.category in (0, 3):
        raise op_error(op, "x", t, "a real numeric tensor", TypeError)
    k = _ints(op, "kernel_size", kernel_size, nd)
    s = k if stride is None else _ints(op, "stride", stride, nd)
    d = _ints(op, "dilation", dilation, nd)
    pads = _pool_pads(op, t.shape[2:], k, s, padding, d, bool(ceil_mode))
    out, idx = max_pool_p.bind(t, kernel=k, stride=s, pads=pads, dilation=d)
    return (out, idx) if return_indices else out


def max_pool1d(
    x: Any,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    return_indices: bool = False,
    ceil_mode: bool = False,
) -> Any:
    """1-d max pooling of (N, C, W); ``return_indices`` adds each maximum's input index."""
    return _max_pool_nd(
        "max_pool1d", 1, x, kernel_size, stride, padding, dilation, return_indices, ceil_mode
    )


def max_pool2d(
    x: Any,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    return_indices: bool = False,
    ceil_mode: bool = False,
) -> Any:
    """2-d max pooling of (N, C, H, W): out = max over each (dilated) window.

    ``stride`` defaults to ``kernel_size``; ``padding`` (at most half the kernel) pads with
    -inf; ``return_indices`` also returns each maximum's flat index h * W + w (int64).

    >>> max_pool2d(Tensor(np.arange(16.0).reshape(1, 1, 4, 4)), 2).tolist()
    [[[[5.0, 7.0], [13.0, 15.0]]]]
    """
    return _max_pool_nd(
        "max_pool2d", 2, x, kernel_size, stride, padding, dilation, return_indices, ceil_mode
    )


def max_pool3d(
    x: Any,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    """3-d max pooling of (N, C, D, H, W) (MindSpore 1.8 argument order)."""
    return _max_pool_nd(
        "max_pool3d", 3, x, kernel_size, stride, padding, dilation, return_indices, ceil_mode
    )


def _mode_window(
    op: str, x: Tensor, kernel_size: Any, strides: Any, pad_mode: Any, data_format: Any
) -> tuple[Tensor, tuple[int, int], tuple[int, int], tuple[tuple[int, int], ...]]:
    """Checks MindSpore 1.8's pooling arguments and gives the NCHW input, kernel, strides
    and the padding ``pad_mode`` ("valid" or "same") asks for."""
    if data_format not in ("NCHW", "NHWC"):
        raise op_error(op, "data_format", data_format, "'NCHW' or 'NHWC'")
    if data_format == "NHWC":
        x = transpose(x, (0, 3, 1, 2))
    k = _ints(op, "kernel_size", kernel_size, 2)
    s = _ints(op, "strides", strides, 2)
    mode = pad_mode.lower() if isinstance(pad_mode, str) else pad_mode
    if mode not in ("valid", "same"):
        raise op_error(op, "pad_mode", pad_mode, "'valid' or 'same'")
    sp = x.shape[2:]
    pads = _same_pads(sp, k, s, (1, 1)) if mode == "same" else ((0, 0), (0, 0))
    if any(o < 1 for o in _out_spatial(sp, k, s, pads, (1, 1))):
        raise op_error(op, "input_x", x, f"spatial sizes of at least the kernel {k}")
    return x, k, s, pads


def avg_pool2d(
    input_x: Any,
    kernel_size: Any = 1,
    strides: Any = 1,
    pad_mode: str = "valid",
    data_format: str = "NCHW",
) -> Tensor:
    """2-d average pooling (MindSpore 1.8): mean of each window over the taps inside the
    input ("same" padding is not counted in the mean).

    >>> avg_pool2d(Tensor(np.arange(16.0).reshape(1, 1, 4, 4)), 2, 2).tolist()
    [[[[2.5, 4.5], [10.5, 12.5]]]]
    """
    op = "avg_pool2d"
    x = _float(op, "input_x", input_x)
    _check_ndim(op, "input_x", x, (4,), data_format if isinstance(data_format, str) else "NCHW")
    x, k, s, pads = _mode_window(op, x, kernel_size, strides, pad_mode, data_format)
    bounds = _count_bounds(x.shape[2:], pads, ((0, 0), (0, 0)))
    out = avg_pool_p.bind(x, kernel=k, stride=s, pads=pads, bounds=bounds)
    return transpose(out, (0, 2, 3, 1)) if data_format == "NHWC" else out


def max_pool_mode(
    op: str, input_x: Any, kernel_size: Any, strides: Any, pad_mode: str, data_format: str
) -> Tensor:
    """2-d max pooling with MindSpore 1.8's ``pad_mode`` ("valid" or "same", padded with
    -inf) and ``data_format``: the computation of ``P.MaxPool`` and ``nn.MaxPool2d``."""
    x = _real(op, "input_x", _tensor(op, "input_x", input_x))
    _check_ndim(op, "input_x", x, (4,), data_format if isinstance(data_format, str) else "NCHW")
    if x.dtype.category == 0:
        raise op_error(op, "input_x", x, "a numeric tensor", TypeError)
    x, k, s, pads = _mode_window(op, x, kernel_size, strides, pad_mode, data_format)
    out, _ = max_pool_p.bind(x, kernel=k, stride=s, pads=pads, dilation=(1, 1))
    return transpose(out, (0, 2, 3, 1)) if data_format == "NHWC" else out


def avg_pool1d(
    input_x: Any,
    kernel_size: Any = 1,
    stride: Any = 1,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """1-d average pooling of (N, C, W) with zero ``padding`` on both sides; the mean
    counts padded taps when ``count_include_pad``."""
    op = "avg_pool1d"
    x = _float(op, "input_x", input_x)
    _check_ndim(op, "input_x", x, (3,), _LAYOUT[1])
    k = _ints(op, "kernel_size", kernel_size, 1)
    s = _ints(op, "stride", stride, 1)
    pads = _pool_pads(op, x.shape[2:], k, s, padding, (1,), bool(ceil_mode))
    p = pads[0][0]
    include = ((p, p),) if count_include_pad else ((0, 0),)
    bounds = _count_bounds(x.shape[2:], pads, include)
    x4 = reshape(x, x.shape[:2] + (1,) + x.shape[2:])
    out = avg_pool_p.bind(
        x4, kernel=(1,) + k, stride=(1,) + s, pads=((0, 0),) + pads, bounds=(0, 1) + bounds
    )
    return reshape(out, out.shape[:2] + out.shape[3:])


def _adaptive_size(op: str, output_size: Any, sp: tuple[int, ...]) -> tuple[int, ...]:
    items = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,)
    if len(items) == 1:
        items = items * 2
    if len(items) != 2 or any(
        v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1)
        for v in items
    ):
        raise op_error(op, "output_size", output_size, "a positive int or a pair of them (or None)")
    return tuple(n if v is None else int(v) for v, n in zip(items, sp))


def _adaptive_bounds(n: int, o: int) -> list[tuple[int, int]]:
    return [((i * n) // o, -(-((i + 1) * n) // o)) for i in range(o)]


def adaptive_avg_pool2d(input_x: Any, output_size: Any) -> Tensor:
    """Adaptive 2-d average pooling: window i spans [floor(i*H/oh), ceil((i+1)*H/oh)).

    Each window is a weighted gather of its rows (then of its columns), so a NaN/inf reaches
    only the windows that hold it and gradients of any order come from ``getitem``.
    """
    op = "adaptive_avg_pool2d"
    x = _float(op, "input_x", input_x)
    _check_ndim(op, "input_x", x, (3, 4), "C, H, W or N, C, H, W")
    h, w = x.shape[-2:]
    oh, ow = _adaptive_size(op, output_size, (h, w))
    out = x
    for axis, n, o in ((-2, h, oh), (-1, w, ow)):
        bounds = _adaptive_bounds(n, o)
        width = max(b - a for a, b in bounds)
        idx = np.zeros((o, width), np.int64)
        wts = np.zeros((o, width))
        for i, (a, b) in enumerate(bounds):
            # a shorter window repeats its last row, that row's 1/len split over the
            # repeats: no tap weighs 0 (0 * inf would be NaN)
            idx[i] = np.minimum(np.arange(a, a + width), b - 1)
            wts[i] = 1.0 / (b - a)
            wts[i, b - a - 1 :] /= width - (b - a) + 1
        out = _apply_taps(out, axis, idx, wts)
    return out


def _adaptive_max_abstract(x: ShapedArray, *, out_hw: tuple[int, int]) -> Any:
    shape = x.shape[:2] + tuple(out_hw)
    return ShapedArray(shape, x.dtype), ShapedArray(shape, _dt.int64)


def _adaptive_max_impl(xp: Any, x: Any, *, out_hw: tuple[int, int]) -> Any:
    n, c, h, w = x.shape
    out = xp.empty((n, c) + tuple(out_hw), x.dtype)
    arg = xp.empty((n, c) + tuple(out_hw), np.int64)
    if x.size == 0:  # an empty batch: the empty result
        return out, arg
    for i, (y0, y1) in enumerate(_adaptive_bounds(h, out_hw[0])):
        for j, (x0, x1) in enumerate(_adaptive_bounds(w, out_hw[1])):
            win = x[:, :, y0:y1, x0:x1].reshape(n, c, -1)
            a = xp.argmax(win, axis=2)
            out[:, :, i, j] = xp.take_along_axis(win, a[:, :, None], axis=2)[:, :, 0]
            arg[:, :, i, j] = (y0 + a // (x1 - x0)) * w + x0 + a % (x1 - x0)
    return out, arg


adaptive_max_pool2d_p = Primitive(
    "adaptive_max_pool2d",
    "opaque",
    _adaptive_max_abstract,
    impl=_adaptive_max_impl,
    multiple_results=True,
    vjp=lambda gs, x, *, out, out_hw: pool_scatter_p.bind(gs[0], out[1], shape=x.shape),
)


def adaptive_max_pool2d(input_x: Any, output_size: Any, return_indices: bool = False) -> Any:
    """Adaptive 2-d max pooling (windows as in :func:`adaptive_avg_pool2d`);
    ``return_indices`` adds each maximum's flat index h * W + w."""
    op = "adaptive_max_pool2d"
    x = _real(op, "input_x", _tensor(op, "input_x", input_x))
    _check_ndim(op, "input_x", x, (3, 4), "C, H, W or N, C, H, W")
    if x.dtype.category == 0:
        raise op_error(op, "input_x", x, "a numeric tensor", TypeError)
    squeeze = x.ndim == 3
    x4 = reshape(x, (1,) + x.shape) if squeeze else x
    out_hw = _adaptive_size(op, output_size, x4.shape[2:])
    out, idx = adaptive_max_pool2d_p.bind(x4, out_hw=out_hw)
    if squeeze:
        out, idx = reshape(out, out.shape[1:]), reshape(idx, idx.shape[1:])
    return (out, idx) if return_indices else out
