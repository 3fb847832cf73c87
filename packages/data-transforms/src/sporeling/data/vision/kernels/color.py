"""Colour kernels with Pillow's arithmetic (libImaging Convert.c, Blend.c, Filter.c).

* `rgb_to_l`: L = (19595 R + 38470 G + 7471 B + 0x8000) >> 16.
* `blend`: out = in1 + alpha * (in2 - in1) in single precision, truncated, clipped to
  [0, 255] (ImageEnhance's Color/Contrast/Brightness/Sharpness are blends).
* `smooth3x3`: ImageFilter.SMOOTH ([[1,1,1],[1,5,1],[1,1,1]] / 13), border pixels copied.
* `rgb_to_hsv_u8` / `hsv_to_rgb_u8`: Pillow's 8-bit HSV mode.
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["blend", "gaussian_blur", "hsv_to_rgb_u8", "rgb_to_hsv_u8", "rgb_to_l", "smooth3x3"]


def rgb_to_l(img: np.ndarray) -> np.ndarray:
    """HWC RGB uint8 -> HW uint8 luminance, as `Image.convert("L")`."""
    x = img.astype(np.uint32)
    return ((x[..., 0] * 19595 + x[..., 1] * 38470 + x[..., 2] * 7471 + 0x8000) >> 16).astype(
        np.uint8
    )


@numba.njit(cache=True, nogil=True)
def _blend_kernel(a, b, alpha, out):  # pragma: no cover - compiled
    fa = np.float32(alpha)
    flat_a = a.ravel()
    flat_b = b.ravel()
    flat_o = out.ravel()
    for i in range(flat_a.size):
        v = np.float32(np.int32(flat_a[i])) + fa * np.float32(
            np.int32(flat_b[i]) - np.int32(flat_a[i])
        )
        if v <= 0.0:
            flat_o[i] = 0
        elif v >= 255.0:
            flat_o[i] = 255
        else:
            flat_o[i] = np.uint8(v)


def blend(a: np.ndarray, b: np.ndarray, alpha: float) -> np.ndarray:
    """`Image.blend(a, b, alpha)` on uint8 arrays of one shape; float arrays blend in float."""
    if a.dtype != np.uint8 or b.dtype != np.uint8:
        return (a.astype(np.float32) + np.float32(alpha) * (b.astype(np.float32) - a)).astype(
            np.float32
        )
    a = np.ascontiguousarray(a)
    b = np.ascontiguousarray(np.broadcast_to(b, a.shape))
    out = np.empty_like(a)
    _blend_kernel(a, b, float(alpha), out)
    return out


@numba.njit(cache=True, nogil=True)
def _smooth_kernel(src, out):  # pragma: no cover - compiled
    h, w, c = src.shape
    out[:] = src
    for y in range(1, h - 1):
        for x in range(1, w - 1):
            for ch in range(c):
                s = (
                    np.float32(src[y - 1, x - 1, ch])
                    + np.float32(src[y - 1, x, ch])
                    + np.float32(src[y - 1, x + 1, ch])
                    + np.float32(src[y, x - 1, ch])
                    + np.float32(5.0) * np.float32(src[y, x, ch])
                    + np.float32(src[y, x + 1, ch])
                    + np.float32(src[y + 1, x - 1, ch])
                    + np.float32(src[y + 1, x, ch])
                    + np.float32(src[y + 1, x + 1, ch])
                ) / np.float32(13.0)
                v = s + np.float32(0.5)
                out[y, x, ch] = 0 if v <= 0 else (255 if v >= 255 else np.uint8(v))


def smooth3x3(img: np.ndarray) -> np.ndarray:
    """ImageFilter.SMOOTH on a uint8 HW/HWC array."""
    x = np.ascontiguousarray(img[:, :, None] if img.ndim == 2 else img)
    out = np.empty_like(x)
    _smooth_kernel(x, out)
    return out[:, :, 0] if img.ndim == 2 else out


@numba.njit(cache=True, nogil=True)
def _rgb_to_hsv_kernel(src, out):  # pragma: no cover - compiled
    h, w, _ = src.shape
    for y in range(h):
        for x in range(w):
            r = src[y, x, 0]
            g = src[y, x, 1]
            b = src[y, x, 2]
            maxc = max(r, max(g, b))
            minc = min(r, min(g, b))
            out[y, x, 2] = maxc
            if minc == maxc:
                out[y, x, 0] = 0
                out[y, x, 1] = 0
                continue
            cr = np.float32(np.int32(maxc) - np.int32(minc))
            s = cr / np.float32(maxc)
            rc = np.float32(np.int32(maxc) - np.int32(r)) / cr
            gc = np.float32(np.int32(maxc) - np.int32(g)) / cr
            bc = np.float32(np.int32(maxc) - np.int32(b)) / cr
            if r == maxc:
                hh = bc - gc
            elif g == maxc:
                hh = np.float32(2.0 + rc - bc)
            else:
                hh = np.float32(4.0 + gc - rc)
            hh = np.float32(np.fmod(np.float64(hh) / 6.0 + 1.0, 1.0))
            uh = np.int32(np.float64(hh) * 255.0)
            us = np.int32(np.float64(s) * 255.0)
            out[y, x, 0] = 0 if uh < 0 else (255 if uh > 255 else uh)
            out[y, x, 1] = 0 if us < 0 else (255 if us > 255 else us)


def rgb_to_hsv_u8(img: np.ndarray) -> np.ndarray:
    """`Image.convert("HSV")` on an HWC RGB uint8 array."""
    out = np.empty_like(img)
    _rgb_to_hsv_kernel(np.ascontiguousarray(img), out)
    return out


@numba.njit(cache=True, nogil=True)
def _hsv_to_rgb_kernel(src, out):  # pragma: no cover - compiled
    hgt, w, _ = src.shape
    for y in range(hgt):
        for x in range(w):
            h = src[y, x, 0]
            s = src[y, x, 1]
            v = src[y, x, 2]
            if s == 0:
                out[y, x, 0] = v
                out[y, x, 1] = v
                out[y, x, 2] = v
                continue
            hf = np.float64(np.float32(h)) * 6.0 / 255.0
            i = int(math.floor(hf))
            f = np.float32(hf - i)
            fs = np.float32(np.float64(np.float32(s)) / 255.0)
            fv = np.float32(v)
            p = round(np.float64(fv * (np.float32(1.0) - fs)))
            q = round(np.float64(fv * (np.float32(1.0) - fs * f)))
            t = round(np.float64(fv * (np.float32(1.0) - fs * (np.float32(1.0) - f))))
            up = 0 if p < 0 else (255 if p > 255 else p)
            uq = 0 if q < 0 else (255 if q > 255 else q)
            ut = 0 if t < 0 else (255 if t > 255 else t)
            k = i % 6
            if k == 0:
                r, g, b = v, ut, up
            elif k == 1:
                r, g, b = uq, v, up
            elif k == 2:
                r, g, b = up, v, ut
            elif k == 3:
                r, g, b = up, uq, v
            elif k == 4:
                r, g, b = ut, up, v
            else:
                r, g, b = v, up, uq
            out[y, x, 0] = r
            out[y, x, 1] = g
            out[y, x, 2] = b


def hsv_to_rgb_u8(img: np.ndarray) -> np.ndarray:
    """`Image.convert("RGB")` of an 8-bit HSV image, as an HWC uint8 array."""
    out = np.empty_like(img)
    _hsv_to_rgb_kernel(np.ascontiguousarray(img), out)
    return out


@numba.njit(cache=True, nogil=True)
def _conv_rows_kernel(src, out, k):  # pragma: no cover - compiled
    # 1-D convolution along axis 1 with BORDER_REFLECT_101 (OpenCV's default).
    h, w, c = src.shape
    r = k.size // 2
    for y in range(h):
        for x in range(w):
            for ch in range(c):
                s = 0.0
                for t in range(k.size):
                    xx = x + t - r
                    if w == 1:
                        xx = 0
                    else:
                        while xx < 0 or xx >= w:
                            xx = -xx if xx < 0 else 2 * (w - 1) - xx
                    s += src[y, xx, ch] * k[t]
                out[y, x, ch] = s


def _gaussian_kernel1d(ksize: int, sigma: float) -> np.ndarray:
    if sigma <= 0:
        sigma = ((ksize - 1) * 0.5 - 1) * 0.3 + 0.8
    x = np.arange(ksize, dtype=np.float64) - (ksize - 1) / 2.0
    k = np.exp(-(x * x) / (2.0 * sigma * sigma))
    return k / k.sum()


def gaussian_blur(
    img: np.ndarray, ksize: tuple[int, int], sigma: tuple[float, float]
) -> np.ndarray:
    """Separable Gaussian blur, `ksize`/`sigma` as (x, y), reflect-101 borders (cv2 style)."""
    squeeze = img.ndim == 2
    x = np.ascontiguousarray(img[:, :, None] if squeeze else img).astype(np.float64)
    kx = _gaussian_kernel1d(ksize[0], sigma[0])
    ky = _gaussian_kernel1d(ksize[1], sigma[1])
    tmp = np.empty_like(x)
    _conv_rows_kernel(x, tmp, kx)
    t2 = np.ascontiguousarray(tmp.transpose(1, 0, 2))
    out = np.empty_like(t2)
    _conv_rows_kernel(t2, out, ky)
    out = out.transpose(1, 0, 2)
    if img.dtype == np.uint8:
        out = np.clip(np.rint(out), 0, 255).astype(np.uint8)
    else:
        out = out.astype(img.dtype if np.issubdtype(img.dtype, np.floating) else np.float32)
    return out[:, :, 0] if squeeze else out
