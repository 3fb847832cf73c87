"""Bilinear sampling primitives behind ``grid_sample`` and ``deformable_conv2d``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._primitive import Primitive, ShapedArray
from ...errors import check_int, op_error
from ...tensor import Tensor
from .._compare import maximum, minimum
from .._core import cast, reshape
from .._indexing import getitem
from .._matmul import matmul
from ._common import _LAYOUT, _check_ndim, _const, _float_pair, _ints, _out_size, _tensor
from .conv import _add_bias

# ---- bilinear sampling (grid_sample, deformable_conv2d) -----------------------------------


def _corners(xp: Any, py: Any, px: Any, h: int, w: int, mode: str) -> list[tuple[Any, ...]]:
    """(flat index, weight, valid, d weight/dy, d weight/dx) for each sampled neighbour."""
    if mode == "nearest":
        yi, xi = xp.rint(py).astype(np.int64), xp.rint(px).astype(np.int64)
        zero = xp.zeros(py.shape, py.dtype)
        valid = (yi >= 0) & (yi < h) & (xi >= 0) & (xi < w)
        return [(xp.where(valid, yi * w + xi, 0), valid.astype(py.dtype), valid, zero, zero)]
    y0f, x0f = xp.floor(py), xp.floor(px)
    wy, wx = py - y0f, px - x0f
    y0, x0 = y0f.astype(np.int64), x0f.astype(np.int64)
    out = []
    for dy, dx in ((0, 0), (0, 1), (1, 0), (1, 1)):
        yi, xi = y0 + dy, x0 + dx
        valid = (yi >= 0) & (yi < h) & (xi >= 0) & (xi < w)
        fy = wy if dy else 1 - wy
        fx = wx if dx else 1 - wx
        sy = 1.0 if dy else -1.0
        sx = 1.0 if dx else -1.0
        vm = valid.astype(py.dtype)
        out.append(
            (xp.where(valid, yi * w + xi, 0), fy * fx * vm, valid, sy * fx * vm, sx * fy * vm)
        )
    return out


def _sample_abstract(x: ShapedArray, py: ShapedArray, px: ShapedArray, *, mode: str) -> ShapedArray:
    return ShapedArray((x.shape[0], x.shape[1], py.shape[1]), x.dtype)


def _gather_cols(xp: Any, x: Any, idx: Any) -> Any:
    m, c = x.shape[:2]
    flat = x.reshape(m, c, -1)
    return xp.take_along_axis(flat, xp.broadcast_to(idx[:, None, :], (m, c, idx.shape[1])), 2)


def _sample_impl(xp: Any, x: Any, py: Any, px: Any, *, mode: str) -> Any:
    h, w = x.shape[2:]
    out = xp.zeros((x.shape[0], x.shape[1], py.shape[1]), x.dtype)
    for idx, wt, valid, _, _ in _corners(xp, py, px, h, w, mode):
        # an outside corner reads index 0 with weight 0: mask it, or 0 * a NaN/inf at
        # x[..., 0, 0] would spread to every sample that leaves the image
        term = _gather_cols(xp, x, idx) * wt[:, None, :].astype(x.dtype)
        out += xp.where(valid[:, None, :], term, 0)
    return out


def _sample_scatter_abstract(
    g: ShapedArray, py: ShapedArray, px: ShapedArray, *, shape: tuple[int, ...], mode: str
) -> ShapedArray:
    return ShapedArray(shape, g.dtype)


def _sample_scatter_impl(
    xp: Any, g: Any, py: Any, px: Any, *, shape: tuple[int, ...], mode: str
) -> Any:
    m, c, h, w = shape
    out = xp.zeros((m, c, h * w), g.dtype)
    rows = xp.broadcast_to(xp.arange(m)[:, None, None], g.shape)
    chans = xp.broadcast_to(xp.arange(c)[None, :, None], g.shape)
    for idx, wt, _, _, _ in _corners(xp, py, px, h, w, mode):
        full_idx = xp.broadcast_to(idx[:, None, :], g.shape)
        xp.add.at(out, (rows, chans, full_idx), g * wt[:, None, :].astype(g.dtype))
    return out.reshape(shape)


def _coord_grad_abstract(
    x: ShapedArray, py: ShapedArray, px: ShapedArray, g: ShapedArray, *, mode: str
) -> tuple[ShapedArray, ShapedArray]:
    return ShapedArray(py.shape, py.dtype), ShapedArray(px.shape, px.dtype)


def _coord_grad_impl(xp: Any, x: Any, py: Any, px: Any, g: Any, *, mode: str) -> Any:
    h, w = x.shape[2:]
    dy = xp.zeros(py.shape, py.dtype)
    dx = xp.zeros(px.shape, px.dtype)
    for idx, _, _, wy, wx in _corners(xp, py, px, h, w, mode):
        s = xp.sum(_gather_cols(xp, x, idx) * g, axis=1)
        dy += s * wy
        dx += s * wx
    return dy, dx


def _sample_vjp(
    g: Tensor, x: Tensor, py: Tensor, px: Tensor, *, out: Tensor, mode: str
) -> tuple[Any, Any, Any]:
    coords: list[Any] = []

    def coord(i: int) -> Tensor:
        if not coords:
            coords.extend(sample_coord_grad_p.bind(x, py, px, g, mode=mode))
        return coords[i]

    return (
        lambda: sample_scatter_p.bind(g, py, px, shape=x.shape, mode=mode),
        lambda: coord(0),
        lambda: coord(1),
    )


def _sample_scatter_vjp(
    gg: Tensor, g: Tensor, py: Tensor, px: Tensor, *, out: Tensor, shape: tuple[int, ...], mode: str
) -> tuple[Any, Any, Any]:
    # <gg, S^T(g; p)> = <S(gg; p), g>
    coords: list[Any] = []

    def coord(i: int) -> Tensor:
        if not coords:
            coords.extend(sample_coord_grad_p.bind(gg, py, px, g, mode=mode))
        return coords[i]

    return (lambda: sample_p.bind(gg, py, px, mode=mode), lambda: coord(0), lambda: coord(1))


sample_p = Primitive(
    "bilinear_sample", "opaque", _sample_abstract, impl=_sample_impl, vjp=_sample_vjp
)
sample_scatter_p = Primitive(
    "bilinear_sample_scatter",
    "opaque",
    _sample_scatter_abstract,
    impl=_sample_scatter_impl,
    vjp=_sample_scatter_vjp,
)
# Its own derivative (second order in the sampling coordinates) is not defined: it is zero
# almost everywhere except the bilinear cross term, which the vjps above do not need.
sample_coord_grad_p = Primitive(
    "bilinear_sample_coord_grad",
    "opaque",
    _coord_grad_abstract,
    impl=_coord_grad_impl,
    multiple_results=True,
)


def grid_sample(
    input_x: Any,
    grid: Any,
    interpolation_mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: bool = False,
) -> Tensor:
    """Sample (N, C, H, W) at the normalized points grid (N, Ho, Wo, 2) = (x, y) in [-1, 1]:
    out (N, C, Ho, Wo). ``padding_mode``: "zeros" (outside reads 0) or "border" (clamped).
    Gradients flow to the input and to the grid."""
    op = "grid_sample"
    x, gr = _float_pair(op, input_x, grid, ("input_x", "grid"))
    _check_ndim(op, "input_x", x, (4,), _LAYOUT[2])
    if gr.ndim != 4 or gr.shape[0] != x.shape[0] or gr.shape[3] != 2:
        raise op_error(op, "grid", gr, f"a tensor of shape ({x.shape[0]}, H_out, W_out, 2)")
    if interpolation_mode not in ("bilinear", "nearest"):
        raise op_error(op, "interpolation_mode", interpolation_mode, "'bilinear' or 'nearest'")
    if padding_mode not in ("zeros", "border"):
        raise op_error(op, "padding_mode", padding_mode, "'zeros' or 'border'")
    n, c, h, w = x.shape
    ho, wo = gr.shape[1:3]
    coords = []
    for k, size in ((0, w), (1, h)):
        g = reshape(getitem(gr, (Ellipsis, k)), (n, ho * wo))
        v = (g + 1) * ((size - 1) / 2) if align_corners else ((g + 1) * size - 1) / 2
        if padding_mode == "border":
            v = minimum(maximum(v, 0.0), float(size - 1))
        coords.append(v)
    out = sample_p.bind(x, coords[1], coords[0], mode=interpolation_mode)
    return reshape(out, (n, c, ho, wo))


def deformable_conv2d(
    x: Any,
    weight: Any,
    offsets: Any,
    kernel_size: Any,
    strides: Any,
    padding: Any,
    bias: Any = None,
    dilations: Any = (1, 1, 1, 1),
    groups: int = 1,
    deformable_groups: int = 1,
    modulated: bool = True,
) -> Tensor:
    """Deformable convolution (v2 when ``modulated``):
    y(p) = sum_k w_k * x(p + p_k + dp_k) * m_k, sampled bilinearly.

    ``offsets`` is (N, 3 * deformable_groups * KH * KW, H_out, W_out): the x offsets, then
    the y offsets, then the masks, each ordered (deformable group, kh, kw). ``strides`` and
    ``dilations`` are NCHW 4-tuples (N and C entries 1); ``padding`` is (top, bottom, left,
    right).
    """
    op = "deformable_conv2d"
    xt, w = _float_pair(op, x, weight, ("x", "weight"))
    off = cast(_tensor(op, "offsets", offsets), xt.dtype)
    _check_ndim(op, "x", xt, (4,), _LAYOUT[2])
    _check_ndim(op, "weight", w, (4,), "C_out, C_in / groups, KH, KW")
    k = _ints(op, "kernel_size", kernel_size, 2)
    st4 = _ints(op, "strides", strides, 4)
    dl4 = _ints(op, "dilations", dilations, 4)
    if st4[:2] != (1, 1) or dl4[:2] != (1, 1):
        raise op_error(op, "strides", strides, "1 for the N and C entries (NCHW order)")
    pad4 = _ints(op, "padding", padding, 4, minimum=0)
    groups = check_int(op, "groups", groups, 1)
    dg = check_int(op, "deformable_groups", deformable_groups, 1)
    n, c, h, wd = xt.shape
    if w.shape[2:] != k:
        raise op_error(op, "weight", w, f"kernel dimensions {k} (kernel_size)")
    if c % groups or w.shape[0] % groups or w.shape[1] * groups != c:
        raise ValueError(
            f"{op}: argument 'weight' has shape {w.shape}, which does not match argument "
            f"'x' with {c} channels and groups={groups}"
        )
    if c % dg:
        raise op_error(op, "deformable_groups", dg, f"a divisor of the {c} input channels")
    sh, sw, dh, dw = st4[2], st4[3], dl4[2], dl4[3]
    ho = _out_size(h, k[0], sh, pad4[0], pad4[1], dh)
    wo = _out_size(wd, k[1], sw, pad4[2], pad4[3], dw)
    kk = k[0] * k[1]
    if ho < 1 or wo < 1:
        raise op_error(op, "x", xt, f"a spatial size of at least the kernel {k}")
    if off.shape != (n, 3 * dg * kk, ho, wo):
        raise op_error(op, "offsets", off, f"a tensor of shape {(n, 3 * dg * kk, ho, wo)}")
    parts = reshape(off, (n, 3, dg, kk, ho, wo))
    ki, kj = np.divmod(np.arange(kk), k[1])
    base_y = (ki * dh)[:, None, None] + (np.arange(ho) * sh - pad4[0])[None, :, None]
    base_x = (kj * dw)[:, None, None] + (np.arange(wo) * sw - pad4[2])[None, None, :]
    py = getitem(parts, (slice(None), 1)) + _const(xt, np.broadcast_to(base_y, (kk, ho, wo)))
    px = getitem(parts, (slice(None), 0)) + _const(xt, np.broadcast_to(base_x, (kk, ho, wo)))
    length = ho * wo
    xs = reshape(xt, (n * dg, c // dg, h, wd))
    cols = sample_p.bind(
        xs, reshape(py, (n * dg, kk * length)), reshape(px, (n * dg, kk * length)), mode="bilinear"
    )
    cols = reshape(cols, (n, dg, c // dg, kk, length))
    if modulated:
        mask = reshape(getitem(parts, (slice(None), 2)), (n, dg, 1, kk, length))
        cols = cols * mask
    cols = reshape(cols, (n, groups, (c // groups) * kk, length))
    wm = reshape(w, (groups, w.shape[0] // groups, (c // groups) * kk))
    y = reshape(matmul(wm, cols), (n, w.shape[0], ho, wo))
    return _add_bias(op, y, bias)
