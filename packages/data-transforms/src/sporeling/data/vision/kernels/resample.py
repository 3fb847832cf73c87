"""Separable convolution resize, the arithmetic of Pillow's `Image.resize`.

Pillow resizes with a convolution whose support grows with the downscale factor (so it
antialiases when shrinking), horizontal pass first, with 22-bit fixed-point
coefficients on 8-bit images (libImaging/Resample.c). `resize_array` computes the same
coefficients (`precompute_coeffs` there, reproduced in Numba) and runs the passes in
Numba, so uint8 results equal Pillow's bit for bit for one-pass resizes
(tests/test_vision_kernels.py checks every filter). When both axes change, recent Pillow
builds pick the pass order themselves (Pillow 10 is always horizontal first); we do
horizontal first except for a vertical downscale with a horizontal upscale, which
matches Pillow 13 on ~95% of random shapes; on the others pixels differ by rounding of
the intermediate (a level or two on photos, see the tolerance in the tests). Float
images use float coefficients (Pillow's mode "F").

Speed (uint8, the data pipeline's hot path): the vertical pass runs over whole rows
(W*C contiguous values, int32 accumulators, so LLVM vectorizes it); the horizontal pass
keeps one accumulator per channel; like Pillow, the horizontal pass only touches the
source rows the vertical pass will read. `region` resizes a rectangle of the source
without copying it out first (what RandomResizedCrop and the fused decode-crop use).
"""

from __future__ import annotations

import functools
import math
import sys

import numba
import numpy as np

__all__ = ["FILTERS", "resize_array", "resize_nearest"]

_PRECISION_BITS = 32 - 8 - 2

#: name -> (filter id in `_filter`, support), as Pillow's BOX, BILINEAR, HAMMING, BICUBIC, LANCZOS.
FILTERS = {
    "box": (0, 0.5),
    "bilinear": (1, 1.0),
    "hamming": (2, 1.0),
    "bicubic": (3, 2.0),
    "lanczos": (4, 3.0),
}


@numba.njit(cache=True, nogil=True)
def _sinc(x):  # pragma: no cover - compiled
    if x == 0.0:
        return 1.0
    x = x * math.pi
    return math.sin(x) / x


@numba.njit(cache=True, nogil=True)
def _filter(fid, x):  # pragma: no cover - compiled
    """Pillow's filter functions (libImaging/Resample.c), selected by id."""
    if fid == 0:  # box
        return 1.0 if -0.5 < x <= 0.5 else 0.0
    if fid == 4:  # lanczos: truncated sinc
        return _sinc(x) * _sinc(x / 3.0) if -3.0 <= x < 3.0 else 0.0
    x = -x if x < 0.0 else x
    if fid == 1:  # bilinear
        return 1.0 - x if x < 1.0 else 0.0
    if fid == 2:  # hamming
        if x == 0.0:
            return 1.0
        if x >= 1.0:
            return 0.0
        x = x * math.pi
        return math.sin(x) / x * (0.54 + 0.46 * math.cos(x))
    a = -0.5  # bicubic
    if x < 1.0:
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1
    if x < 2.0:
        return (((x - 5) * x + 8) * x - 4) * a
    return 0.0


@numba.njit(cache=True, nogil=True)
def _coeffs_kernel(in_size, in0, in1, out_size, fid, support):  # pragma: no cover - compiled
    # precompute_coeffs + normalize_coeffs_8bpc of libImaging/Resample.c, step for step
    # (sequential sums, `* (1 / filterscale)`, truncating casts), so weights match bitwise.
    scale = (in1 - in0) / out_size
    filterscale = scale if scale > 1.0 else 1.0
    support = support * filterscale
    ksize = int(math.ceil(support)) * 2 + 1
    bounds = np.zeros((out_size, 2), np.int64)
    kk = np.zeros((out_size, ksize), np.float64)
    fixed = np.zeros((out_size, ksize), np.int32)
    ss = 1.0 / filterscale
    one = float(1 << _PRECISION_BITS)
    for xx in range(out_size):
        center = in0 + (xx + 0.5) * scale
        xmin = int(center - support + 0.5)
        if xmin < 0:
            xmin = 0
        xmax = int(center + support + 0.5)
        if xmax > in_size:
            xmax = in_size
        xmax -= xmin
        ww = 0.0
        for x in range(xmax):
            w = _filter(fid, (x + xmin - center + 0.5) * ss)
            kk[xx, x] = w
            ww += w
        for x in range(xmax):
            if ww != 0.0:
                kk[xx, x] /= ww
            v = kk[xx, x]
            fixed[xx, x] = int(-0.5 + v * one) if v < 0 else int(0.5 + v * one)
        bounds[xx, 0] = xmin
        bounds[xx, 1] = xmax
    return bounds, kk, fixed


@functools.lru_cache(maxsize=1024)
def _coeffs(
    in_size: int, in0: float, in1: float, out_size: int, name: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bounds[out, 2] = (xmin, count), float weights[out, k], fixed-point weights[out, k])."""
    fid, support = FILTERS[name]
    return _coeffs_kernel(int(in_size), float(in0), float(in1), int(out_size), fid, support)


@numba.njit(cache=True, nogil=True, inline="always")
def _u(i):  # pragma: no cover - compiled
    return np.uint64(i)


@numba.njit(cache=True, nogil=True, inline="always")
def _clip8(v):  # pragma: no cover - compiled
    return 0 if v < 0 else (255 if v > 255 else v)


_LITTLE = sys.byteorder == "little"
_ROW_BLOCK = 32  # rows per block of the horizontal pass (bench: 16-64 within 5 %)


@numba.njit(cache=True, nogil=True, inline="always")
def _filter_block(blk, out, y0, nb, bounds, kk, x0, acc, tile):  # pragma: no cover - compiled
    # The horizontal filter over one block of rows gathered column-major in `blk` (see
    # `_resample_h_u8_kernel`): each output column sums its taps over the block's int32
    # lanes (len(acc) = rows * C, vectorized), then rounds and clips them into its row of
    # `tile` (also vectorized), and the block's rows go from `tile` into out[y0 : y0 + nb]
    # (rounding and clipping value by value there instead cost ~25 us per 224x224 image).
    wo, c = out.shape[1], out.shape[2]
    lanes = acc.shape[0]
    half = np.int32(1 << (_PRECISION_BITS - 1))
    for xx in range(wo):
        xmin = bounds[xx, 0] - x0
        n = bounds[xx, 1]
        acc[:] = half
        for t in range(n):
            k = kk[xx, t]
            col = blk[_u(xmin + t)]
            for lane in range(lanes):
                acc[lane] += np.int32(col[lane]) * k
        tr = tile[_u(xx)]
        for lane in range(lanes):
            tr[lane] = _clip8(acc[lane] >> _PRECISION_BITS)
    for r in range(nb):
        o = out[_u(y0 + r)]
        q = _u(r * c)
        if c == 3:
            for xx in range(wo):
                tr = tile[_u(xx)]
                op = o[_u(xx)]
                op[0] = tr[q]
                op[1] = tr[q + _u(1)]
                op[2] = tr[q + _u(2)]
        else:
            for xx in range(wo):
                for ch in range(c):
                    o[_u(xx), ch] = tile[_u(xx), q + _u(ch)]


@numba.njit(cache=True, nogil=True)
def _resample_h_u8_kernel(src, row0, out, bounds, kk, B):  # pragma: no cover - compiled
    # out[y, xx, :] from src[row0 + y, bounds[xx, 0] : + bounds[xx, 1], :]. Rows go in blocks
    # of B, copied column-major into `blk` (blk[p] = pixel p of the B rows, B*C values), so
    # each tap is one multiply-add over B*C contiguous int32 lanes, which LLVM vectorizes;
    # a pixel-by-pixel loop (Pillow's) is scalar and ~1.8x slower here. Indices are cast
    # to unsigned (`_u`) where Numba cannot see they are >= 0: it then drops its
    # negative-index wraparound code (~13 % of this kernel).
    rows, wo, c = out.shape
    x0 = bounds[0, 0]
    x1 = bounds[wo - 1, 0] + bounds[wo - 1, 1]
    blk = np.empty((x1 - x0, B * c), np.uint8)
    acc = np.empty(B * c, np.int32)
    tile = np.empty((wo, B * c), np.uint8)
    for y0 in range(0, rows, B):
        nb = min(B, rows - y0)
        for r in range(nb):
            s = src[_u(row0 + y0 + r)]
            q = _u(r * c)
            if c == 3:
                for p in range(x1 - x0):
                    sp = s[_u(x0 + p)]
                    bp = blk[p]
                    bp[q] = sp[0]
                    bp[q + _u(1)] = sp[1]
                    bp[q + _u(2)] = sp[2]
            else:
                for p in range(x1 - x0):
                    for ch in range(c):
                        blk[p, q + _u(ch)] = s[_u(x0 + p), ch]
        _filter_block(blk, out, y0, nb, bounds, kk, x0, acc, tile)


@numba.njit(cache=True, nogil=True)
def _resample_h_rgbx_kernel(src32, row0, out, bounds, kk, blk, blk32):  # pragma: no cover
    # `_resample_h_u8_kernel` for an RGBX source (Pillow's RGB storage) and RGB output:
    # each pixel moves into the block as one 32-bit word. blk32[p, r] views bytes
    # 3r..3r+3 of blk[p] (3-byte stride), so pixel r's X byte lands on pixel r+1's R
    # byte, which the next row overwrites (blk has one spare byte per row for the last).
    rows, wo = out.shape[0], out.shape[1]
    x0 = bounds[0, 0]
    x1 = bounds[wo - 1, 0] + bounds[wo - 1, 1]
    B = blk32.shape[1]
    acc = np.empty(B * 3, np.int32)
    tile = np.empty((wo, B * 3), np.uint8)
    for y0 in range(0, rows, B):
        nb = min(B, rows - y0)
        for r in range(nb):
            s = src32[_u(row0 + y0 + r)]
            for p in range(x1 - x0):
                blk32[p, r] = s[_u(x0 + p)]
        _filter_block(blk, out, y0, nb, bounds, kk, x0, acc, tile)


@numba.njit(cache=True, nogil=True)
def _resample_v_u8_kernel(src, col0, out, bounds, kk):  # pragma: no cover - compiled
    # Rows as flat W*C vectors: out[yy, :] = sum_t src[ymin + t, col0 : col0 + n] * k[t].
    # The innermost loops run over contiguous values with int32 accumulators: SIMD.
    # Rows with 2-4 taps (bilinear up to a 1.5x shrink, bicubic upscales) sum their taps
    # in one expression per value, without the accumulator array (random crops resized to
    # 224x224: 175-180 -> 148-152 us per image, load ~6);
    # the sum's order and int32 wraparound are the accumulator's, so the bytes are too.
    ho, n_out = out.shape
    acc = np.empty(n_out, np.int32)
    half = np.int32(1 << (_PRECISION_BITS - 1))
    for yy in range(ho):
        ymin = bounds[yy, 0]
        n = bounds[yy, 1]
        o = out[yy]
        if 2 <= n <= 4:
            r0 = src[ymin, col0 : col0 + n_out]
            r1 = src[ymin + 1, col0 : col0 + n_out]
            k0 = kk[yy, 0]
            k1 = kk[yy, 1]
            if n == 2:
                for x in range(n_out):
                    v = np.int32(half + np.int32(r0[x]) * k0 + np.int32(r1[x]) * k1)
                    o[x] = _clip8(v >> _PRECISION_BITS)
                continue
            r2 = src[ymin + 2, col0 : col0 + n_out]
            k2 = kk[yy, 2]
            if n == 3:
                for x in range(n_out):
                    v = np.int32(
                        half + np.int32(r0[x]) * k0 + np.int32(r1[x]) * k1 + np.int32(r2[x]) * k2
                    )
                    o[x] = _clip8(v >> _PRECISION_BITS)
                continue
            r3 = src[ymin + 3, col0 : col0 + n_out]
            k3 = kk[yy, 3]
            for x in range(n_out):
                v = np.int32(
                    half
                    + np.int32(r0[x]) * k0
                    + np.int32(r1[x]) * k1
                    + np.int32(r2[x]) * k2
                    + np.int32(r3[x]) * k3
                )
                o[x] = _clip8(v >> _PRECISION_BITS)
            continue
        acc[:] = half
        for t in range(n):
            k = kk[yy, t]
            row = src[ymin + t, col0 : col0 + n_out]
            for x in range(n_out):
                acc[x] += np.int32(row[x]) * k
        for x in range(n_out):
            o[x] = _clip8(acc[x] >> _PRECISION_BITS)


@numba.njit(cache=True, nogil=True)
def _resample_h_f_kernel(src, row0, out, bounds, k):  # pragma: no cover - compiled
    rows, wo, c = out.shape
    for y in range(rows):
        s = src[row0 + y]
        for xx in range(wo):
            xmin = bounds[xx, 0]
            n = bounds[xx, 1]
            for ch in range(c):
                ss = 0.0
                for t in range(n):
                    ss += s[xmin + t, ch] * k[xx, t]
                out[y, xx, ch] = ss


@numba.njit(cache=True, nogil=True)
def _resample_v_f_kernel(src, col0, out, bounds, k):  # pragma: no cover - compiled
    ho, n_out = out.shape
    acc = np.empty(n_out, np.float64)
    for yy in range(ho):
        ymin = bounds[yy, 0]
        n = bounds[yy, 1]
        acc[:] = 0.0
        for t in range(n):
            kt = k[yy, t]
            row = src[ymin + t, col0 : col0 + n_out]
            for x in range(n_out):
                acc[x] += row[x] * kt
        for x in range(n_out):
            out[yy, x] = acc[x]


def _pass_h(
    x: np.ndarray,
    row0: int,
    rows: int,
    col0: int,
    size: tuple[int, float, float],
    out_w: int,
    name: str,
    channels: int,
) -> np.ndarray:
    """Horizontal pass: rows [row0, row0 + rows) of `x`, source columns from `col0`, the
    first `channels` channels; `size` = (columns, box start, box end) as Pillow's
    precompute_coeffs takes them."""
    bounds, wf, wi = _coeffs(size[0], size[1], size[2], out_w, name)
    if col0:
        bounds = bounds + np.array([col0, 0], np.int64)
    out = np.empty((rows, out_w, channels), dtype=x.dtype)
    if x.dtype != np.uint8:
        _resample_h_f_kernel(x, row0, out, bounds, wf)
    elif x.shape[2] == 4 and channels == 3 and x.flags.c_contiguous and _LITTLE:
        # RGBX -> RGB: one 32-bit word per pixel into the block (`_resample_h_rgbx_kernel`)
        pixels = int(bounds[-1, 0] + bounds[-1, 1] - bounds[0, 0])
        stride = 3 * _ROW_BLOCK + 1
        blk = np.empty((pixels, stride), np.uint8)
        blk32 = np.ndarray((pixels, _ROW_BLOCK), np.uint32, blk, 0, (stride, 3))
        src32 = x.view(np.uint32).reshape(x.shape[0], x.shape[1])
        _resample_h_rgbx_kernel(src32, row0, out, bounds, wi, blk, blk32)
    else:
        _resample_h_u8_kernel(x, row0, out, bounds, wi, _ROW_BLOCK)
    return out


def _pass_v(
    x: np.ndarray,
    shift: int,
    col0: int,
    width: int,
    size: tuple[int, float, float],
    out_h: int,
    name: str,
) -> np.ndarray:
    """Vertical pass (all channels): source row r of the coefficients is row r + `shift`
    of `x`; columns [col0, col0 + width); `size` = (rows, box start, box end)."""
    c = x.shape[2]
    bounds, wf, wi = _coeffs(size[0], size[1], size[2], out_h, name)
    if shift:
        bounds = bounds + np.array([shift, 0], np.int64)
    flat = x.reshape(x.shape[0], x.shape[1] * c)
    out = np.empty((out_h, width, c), dtype=x.dtype)
    if x.dtype == np.uint8:
        _resample_v_u8_kernel(flat, col0 * c, out.reshape(out_h, width * c), bounds, wi)
    else:
        _resample_v_f_kernel(flat, col0 * c, out.reshape(out_h, width * c), bounds, wf)
    return out


def resize_array(
    img: np.ndarray,
    out_h: int,
    out_w: int,
    name: str = "bilinear",
    region: tuple[int, int, int, int] | None = None,
    box: tuple[float, float, float, float] | None = None,
    channels: int | None = None,
    order: str = "pillow",
) -> np.ndarray:
    """Resize an HW or HWC array (uint8 or float) like Pillow's `resize(..., resample=name)`.

    `region=(top, left, height, width)` resizes that rectangle of `img`: the result of
    `resize_array(img[top:top+height, left:left+width], ...)`, without copying it out.
    `box=(y0, x0, y1, x1)`, in the region's coordinates (fractions allowed), is Pillow's
    `box` argument: the area of the region mapped onto the output (default: all of it);
    pixels outside the region are never read. `channels` keeps only the first channels
    (an RGBX buffer resized to RGB). `order="pillow"` runs the two passes in Pillow's
    order (bitwise results); `order="fast"` runs the vertical pass first whenever it
    shrinks, so the horizontal pass (the slower one) sees fewer rows; the intermediate is
    rounded at another point, so results may differ from Pillow's by a level.
    """
    squeeze = img.ndim == 2
    x = img[:, :, None] if squeeze else img
    top, left, h, w = region if region is not None else (0, 0, x.shape[0], x.shape[1])
    by0, bx0, by1, bx1 = box if box is not None else (0.0, 0.0, float(h), float(w))
    keep = x.shape[2] if channels is None else channels
    need_h = out_w != w or bx0 != 0 or bx1 != w
    need_v = out_h != h or by0 != 0 or by1 != h
    if order == "fast":
        v_first = out_h < h
    elif order == "pillow":
        v_first = out_h < h and out_w > w  # see the module docstring
    else:
        raise ValueError(f"resize_array: order must be 'pillow' or 'fast', got {order!r}.")
    if x.dtype != np.uint8:
        x = x.astype(np.float32, copy=False)
    if not x.flags.c_contiguous:
        x = np.ascontiguousarray(x[top : top + h, left : left + w])
        top = left = 0
    if need_v and need_h and v_first:
        tmp = _pass_v(x, top, left, w, (h, by0, by1), out_h, name)
        out = _pass_h(tmp, 0, out_h, 0, (w, bx0, bx1), out_w, name, keep)
    elif need_h and need_v:
        # Like Pillow, the horizontal pass only covers the rows the vertical pass reads.
        vb = _coeffs(h, by0, by1, out_h, name)[0]
        r0, r1 = int(vb[0, 0]), int(vb[-1, 0] + vb[-1, 1])
        tmp = _pass_h(x, top + r0, r1 - r0, left, (w, bx0, bx1), out_w, name, keep)
        out = _pass_v(tmp, -r0, 0, out_w, (h, by0, by1), out_h, name)
    elif need_h:
        out = _pass_h(x, top, h, left, (w, bx0, bx1), out_w, name, keep)
    elif need_v:
        out = _pass_v(x, top, left, w, (h, by0, by1), out_h, name)
    else:
        out = x[top : top + h, left : left + w]
    if out.shape[2] != keep or out.base is not None:  # a view of `img`, or RGBX left
        out = out[:, :, :keep].copy()
    return out[:, :, 0] if squeeze else out


def _nearest_index(n_in: int, n_out: int) -> np.ndarray:
    # Pillow (ImagingScaleAffine) accumulates the source coordinate by repeated addition
    # in double precision; doing the same reproduces its choice at exact .0 boundaries.
    step = n_in / n_out
    pos = step * 0.5
    idx = np.empty(n_out, dtype=np.int64)
    for i in range(n_out):
        idx[i] = min(int(pos), n_in - 1)
        pos += step
    return idx


def resize_nearest(img: np.ndarray, out_h: int, out_w: int) -> np.ndarray:
    """Pillow's NEAREST resize: source index floor((i + 0.5) * in / out)."""
    h, w = img.shape[:2]
    ys = _nearest_index(h, out_h)
    xs = _nearest_index(w, out_w)
    return img[ys[:, None], xs[None, :]]
