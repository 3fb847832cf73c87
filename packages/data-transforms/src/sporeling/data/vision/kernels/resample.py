"""Separable convolution resize, the arithmetic of Pillow's `Image.resize`.

Pillow resizes with a convolution whose support grows with the downscale factor (so it
antialiases when shrinking), horizontal pass first, with 22-bit fixed-point
coefficients on 8-bit images (libImaging/Resample.c). `resize_array` computes the same
coefficients in NumPy and runs the passes in Numba, so uint8 results equal Pillow's
bit for bit for one-pass resizes (tests/test_vision_kernels.py checks every filter).
When both axes change, recent Pillow builds pick the pass order themselves (Pillow 10
is always horizontal first); we do horizontal first except for a vertical downscale
with a horizontal upscale, which matches Pillow 13 on ~95% of random shapes; on the
others pixels differ by rounding of the intermediate (a level or two on photos, see
the tolerance in the tests). Float images use float coefficients (Pillow's mode "F").
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np

__all__ = ["FILTERS", "resize_array", "resize_nearest"]

_PRECISION_BITS = 32 - 8 - 2


def _bilinear(x: np.ndarray) -> np.ndarray:
    x = np.abs(x)
    return np.where(x < 1.0, 1.0 - x, 0.0)


def _bicubic(x: np.ndarray) -> np.ndarray:
    a = -0.5
    x = np.abs(x)
    return np.where(
        x < 1.0,
        ((a + 2.0) * x - (a + 3.0)) * x * x + 1,
        np.where(x < 2.0, (((x - 5) * x + 8) * x - 4) * a, 0.0),
    )


def _box(x: np.ndarray) -> np.ndarray:
    return np.where((x > -0.5) & (x <= 0.5), 1.0, 0.0)


def _sinc(x: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        px = x * math.pi
        return np.where(x == 0.0, 1.0, np.sin(px) / px)


def _lanczos(x: np.ndarray) -> np.ndarray:
    return np.where((x > -3.0) & (x < 3.0), _sinc(x) * _sinc(x / 3.0), 0.0)


def _hamming(x: np.ndarray) -> np.ndarray:
    x = np.abs(x)
    with np.errstate(invalid="ignore", divide="ignore"):
        px = x * math.pi
        v = np.sin(px) / px * (0.54 + 0.46 * np.cos(px))
    return np.where(x == 0.0, 1.0, np.where(x >= 1.0, 0.0, v))


#: name -> (filter, support), as Pillow's filters (BOX, BILINEAR, HAMMING, BICUBIC, LANCZOS).
FILTERS = {
    "box": (_box, 0.5),
    "bilinear": (_bilinear, 1.0),
    "hamming": (_hamming, 1.0),
    "bicubic": (_bicubic, 2.0),
    "lanczos": (_lanczos, 3.0),
}


@functools.lru_cache(maxsize=256)
def _coeffs(
    in_size: int, in0: float, in1: float, out_size: int, name: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bounds[out, 2] = (xmin, count), float weights[out, k], fixed-point weights[out, k])."""
    fn, support = FILTERS[name]
    scale = (in1 - in0) / out_size
    filterscale = max(scale, 1.0)
    support = support * filterscale
    ksize = int(math.ceil(support)) * 2 + 1
    center = in0 + (np.arange(out_size) + 0.5) * scale
    # C's (int) truncates toward zero; both bounds are clamped afterwards.
    xmin = np.trunc(center - support + 0.5).astype(np.int64)
    xmin = np.maximum(xmin, 0)
    xmax = np.trunc(center + support + 0.5).astype(np.int64)
    xmax = np.minimum(xmax, in_size) - xmin
    taps = np.arange(ksize)
    w = fn((taps[None, :] + xmin[:, None] - center[:, None] + 0.5) / filterscale)
    w = np.where(taps[None, :] < xmax[:, None], w, 0.0)
    total = w.sum(axis=1, keepdims=True)
    w = np.where(total != 0.0, w / np.where(total == 0.0, 1.0, total), w)
    fixed = np.where(
        w < 0,
        np.trunc(-0.5 + w * (1 << _PRECISION_BITS)),
        np.trunc(0.5 + w * (1 << _PRECISION_BITS)),
    ).astype(np.int64)
    bounds = np.stack([xmin, xmax], axis=1)
    return bounds, w.astype(np.float64), fixed


@numba.njit(cache=True, nogil=True)
def _resample_h_u8_kernel(src, out, bounds, kk):  # pragma: no cover - compiled
    h, wo, c = out.shape
    half = 1 << (_PRECISION_BITS - 1)
    for y in range(h):
        for xx in range(wo):
            xmin = bounds[xx, 0]
            n = bounds[xx, 1]
            for ch in range(c):
                ss = half
                for x in range(n):
                    ss += np.int64(src[y, xmin + x, ch]) * kk[xx, x]
                v = ss >> _PRECISION_BITS
                out[y, xx, ch] = 0 if v < 0 else (255 if v > 255 else v)


@numba.njit(cache=True, nogil=True)
def _resample_v_u8_kernel(src, out, bounds, kk):  # pragma: no cover - compiled
    ho, w, c = out.shape
    half = 1 << (_PRECISION_BITS - 1)
    for yy in range(ho):
        ymin = bounds[yy, 0]
        n = bounds[yy, 1]
        for x in range(w):
            for ch in range(c):
                ss = half
                for y in range(n):
                    ss += np.int64(src[ymin + y, x, ch]) * kk[yy, y]
                v = ss >> _PRECISION_BITS
                out[yy, x, ch] = 0 if v < 0 else (255 if v > 255 else v)


@numba.njit(cache=True, nogil=True)
def _resample_h_f_kernel(src, out, bounds, k):  # pragma: no cover - compiled
    h, wo, c = out.shape
    for y in range(h):
        for xx in range(wo):
            xmin = bounds[xx, 0]
            n = bounds[xx, 1]
            for ch in range(c):
                ss = 0.0
                for x in range(n):
                    ss += src[y, xmin + x, ch] * k[xx, x]
                out[y, xx, ch] = ss


@numba.njit(cache=True, nogil=True)
def _resample_v_f_kernel(src, out, bounds, k):  # pragma: no cover - compiled
    ho, w, c = out.shape
    for yy in range(ho):
        ymin = bounds[yy, 0]
        n = bounds[yy, 1]
        for x in range(w):
            for ch in range(c):
                ss = 0.0
                for y in range(n):
                    ss += src[ymin + y, x, ch] * k[yy, y]
                out[yy, x, ch] = ss


def resize_array(img: np.ndarray, out_h: int, out_w: int, name: str = "bilinear") -> np.ndarray:
    """Resize an HW or HWC array (uint8 or float) like Pillow's `resize(..., resample=name)`."""
    squeeze = img.ndim == 2
    x = img[:, :, None] if squeeze else img
    h, w, c = x.shape
    if (out_h, out_w) == (h, w):
        return img.copy()
    is_u8 = x.dtype == np.uint8
    if not is_u8:
        x = x.astype(np.float32, copy=False)
    x = np.ascontiguousarray(x)
    if out_h < h and out_w > w:  # vertical pass first (see module docstring)
        return _resize_v_then_h(x, out_h, out_w, name, is_u8, squeeze)
    if out_w != w:
        bounds, wf, wi = _coeffs(w, 0.0, float(w), out_w, name)
        tmp = np.empty((h, out_w, c), dtype=x.dtype)
        if is_u8:
            _resample_h_u8_kernel(x, tmp, bounds, wi)
        else:
            _resample_h_f_kernel(x, tmp, bounds, wf)
        x = tmp
    if out_h != h:
        bounds, wf, wi = _coeffs(h, 0.0, float(h), out_h, name)
        tmp = np.empty((out_h, out_w, c), dtype=x.dtype)
        if is_u8:
            _resample_v_u8_kernel(x, tmp, bounds, wi)
        else:
            _resample_v_f_kernel(x, tmp, bounds, wf)
        x = tmp
    return x[:, :, 0] if squeeze else x


def _resize_v_then_h(
    x: np.ndarray, out_h: int, out_w: int, name: str, is_u8: bool, squeeze: bool
) -> np.ndarray:
    h, w, c = x.shape
    bounds, wf, wi = _coeffs(h, 0.0, float(h), out_h, name)
    tmp = np.empty((out_h, w, c), dtype=x.dtype)
    if is_u8:
        _resample_v_u8_kernel(x, tmp, bounds, wi)
    else:
        _resample_v_f_kernel(x, tmp, bounds, wf)
    bounds, wf, wi = _coeffs(w, 0.0, float(w), out_w, name)
    out = np.empty((out_h, out_w, c), dtype=x.dtype)
    if is_u8:
        _resample_h_u8_kernel(tmp, out, bounds, wi)
    else:
        _resample_h_f_kernel(tmp, out, bounds, wf)
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
