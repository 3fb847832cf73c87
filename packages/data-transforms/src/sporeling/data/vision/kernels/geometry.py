"""Inverse-mapping warps (affine, perspective) with Pillow's sampling conventions.

For output pixel (x, y) the source point is `A @ (x + 0.5, y + 0.5, 1)` (divided by the
projective term), as libImaging/Geometry.c. NEAREST takes pixel `floor(src)`; BILINEAR
and BICUBIC (a = -1, Pillow's transform kernel) interpolate around `src - 0.5` with
edge clamping; a source point outside the image gives the fill colour. 8-bit results
are truncated toward zero, as Pillow does (so uint8 outputs match `Image.transform`).
NEAREST with an affine map runs Pillow's own 16.16 fixed-point stepping where Pillow does
(`_affine_fixed_kernel`), so those results equal `Image.transform`/`rotate` bit for bit.
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["warp", "NEAREST", "BILINEAR", "BICUBIC"]

NEAREST, BILINEAR, BICUBIC = 0, 1, 2


@numba.njit(cache=True, nogil=True, inline="always")
def _clip(v, n):  # pragma: no cover - compiled
    return 0 if v < 0 else (n - 1 if v >= n else v)


@numba.njit(cache=True, nogil=True, inline="always")
def _cubic(v1, v2, v3, v4, d):  # pragma: no cover - compiled
    p1 = v2
    p2 = -v1 + v3
    p3 = 2.0 * (v1 - v2) + v3 - v4
    p4 = -v1 + v2 - v3 + v4
    return p1 + d * (p2 + d * (p3 + d * p4))


@numba.njit(cache=True, nogil=True)
def _warp_kernel(src, out, a, mode, fill, lo, hi):  # pragma: no cover - compiled
    h, w, c = src.shape
    ho, wo, _ = out.shape
    for y in range(ho):
        for x in range(wo):
            xi = x + 0.5
            yi = y + 0.5
            den = a[6] * xi + a[7] * yi + 1.0
            sx = (a[0] * xi + a[1] * yi + a[2]) / den
            sy = (a[3] * xi + a[4] * yi + a[5]) / den
            if mode == 0:
                ix = -1 if sx < 0.0 else int(sx)
                iy = -1 if sy < 0.0 else int(sy)
                if ix < 0 or ix >= w or iy < 0 or iy >= h:
                    for ch in range(c):
                        out[y, x, ch] = fill[ch]
                else:
                    for ch in range(c):
                        out[y, x, ch] = src[iy, ix, ch]
                continue
            if sx < 0.0 or sx >= w or sy < 0.0 or sy >= h:
                for ch in range(c):
                    out[y, x, ch] = fill[ch]
                continue
            sx -= 0.5
            sy -= 0.5
            fx = math.floor(sx)
            fy = math.floor(sy)
            dx = sx - fx
            dy = sy - fy
            ix = int(fx)
            iy = int(fy)
            for ch in range(c):
                if mode == 1:
                    r0 = _clip(iy, h)
                    x0 = _clip(ix, w)
                    x1 = _clip(ix + 1, w)
                    v1 = src[r0, x0, ch] + (src[r0, x1, ch] - np.float64(src[r0, x0, ch])) * dx
                    if iy + 1 >= 0 and iy + 1 < h:
                        v2 = (
                            src[iy + 1, x0, ch]
                            + (src[iy + 1, x1, ch] - np.float64(src[iy + 1, x0, ch])) * dx
                        )
                    else:
                        v2 = v1
                    v = v1 + (v2 - v1) * dy
                else:
                    bx = ix - 1
                    by = iy - 1
                    x0 = _clip(bx, w)
                    x1 = _clip(bx + 1, w)
                    x2 = _clip(bx + 2, w)
                    x3 = _clip(bx + 3, w)
                    r = _clip(by, h)
                    v1 = _cubic(
                        np.float64(src[r, x0, ch]),
                        np.float64(src[r, x1, ch]),
                        np.float64(src[r, x2, ch]),
                        np.float64(src[r, x3, ch]),
                        dx,
                    )
                    v2 = v1
                    if by + 1 >= 0 and by + 1 < h:
                        r = by + 1
                        v2 = _cubic(
                            np.float64(src[r, x0, ch]),
                            np.float64(src[r, x1, ch]),
                            np.float64(src[r, x2, ch]),
                            np.float64(src[r, x3, ch]),
                            dx,
                        )
                    v3 = v2
                    if by + 2 >= 0 and by + 2 < h:
                        r = by + 2
                        v3 = _cubic(
                            np.float64(src[r, x0, ch]),
                            np.float64(src[r, x1, ch]),
                            np.float64(src[r, x2, ch]),
                            np.float64(src[r, x3, ch]),
                            dx,
                        )
                    v4 = v3
                    if by + 3 >= 0 and by + 3 < h:
                        r = by + 3
                        v4 = _cubic(
                            np.float64(src[r, x0, ch]),
                            np.float64(src[r, x1, ch]),
                            np.float64(src[r, x2, ch]),
                            np.float64(src[r, x3, ch]),
                            dx,
                        )
                    v = _cubic(v1, v2, v3, v4, dy)
                if v <= lo:
                    v = lo
                elif v >= hi:
                    v = hi
                out[y, x, ch] = v


@numba.njit(cache=True, nogil=True)
def _affine_nearest_kernel(src, out, h, w, c, ho, wo, a, fill):  # pragma: no cover - compiled
    # NEAREST with an affine map (no projective term): the same source point as
    # `_warp_kernel` (the division by den = 1.0 is exact, so it is left out, and a1 * yi
    # is computed once per row: the sum is evaluated in the same order). `src` and `out`
    # are flat C-order HWC buffers indexed with unsigned offsets (no negative-index
    # wraparound code): 1.6x faster than `_warp_kernel` on a rotated photo.
    a0, a1, a2, a3, a4, a5 = a[0], a[1], a[2], a[3], a[4], a[5]
    for y in range(ho):
        yi = y + 0.5
        ty = a1 * yi
        uy = a4 * yi
        o = np.uint64(y * wo * c)
        for x in range(wo):
            xi = x + 0.5
            sx = a0 * xi + ty + a2
            sy = a3 * xi + uy + a5
            if sx < 0.0 or sy < 0.0 or sx >= w or sy >= h:
                for ch in range(c):
                    out[o + np.uint64(ch)] = fill[ch]
            else:
                k = np.uint64((int(sy) * w + int(sx)) * c)
                for ch in range(c):
                    out[o + np.uint64(ch)] = src[k + np.uint64(ch)]
            o += np.uint64(c)


@numba.njit(cache=True, nogil=True, inline="always")
def _steps_inside(p, d, lo, hi, n):  # pragma: no cover - compiled
    """The steps t in [0, n) with lo <= p + t * d < hi, as a half-open range (integers)."""
    if d == 0:
        return (0, n) if lo <= p < hi else (0, 0)
    if d > 0:
        t0 = -((p - lo) // d)  # ceil((lo - p) / d)
        t1 = -((p - hi) // d)  # first t with p + t * d >= hi
    else:
        t0 = (p - hi) // (-d) + 1  # first t with p + t * d < hi
        t1 = (p - lo) // (-d) + 1  # first t with p + t * d < lo
    return min(max(t0, 0), n), min(max(t1, 0), n)


@numba.njit(cache=True, nogil=True)
def _affine_fixed_kernel(
    src, out, h, w, c, ho, wo, a0, a1, a3, a4, xo, yo, fill
):  # pragma: no cover
    # Pillow's `affine_fixed` (libImaging/Geometry.c), which `Image.transform(AFFINE)`
    # and `Image.rotate` run for NEAREST: 16.16 fixed-point source coordinates stepped by
    # integer increments, so the source pixel is the one Pillow picks, bit for bit, at
    # integer cost (the float kernel computed each point in double precision: 1.6x
    # Pillow's time, and a pixel off Pillow's where a coordinate rounds differently).
    # Pixels whose source is outside get the fill colour (Pillow's pre-filled output).
    # The source is inside for one run of each row (both coordinates are linear in the
    # step): that run is found with integer arithmetic, so its loop has no bounds checks.
    for y in range(ho):
        tx0, tx1 = _steps_inside(xo, a0, 0, w << 16, wo)
        ty0, ty1 = _steps_inside(yo, a3, 0, h << 16, wo)
        t0, t1 = max(tx0, ty0), min(tx1, ty1)
        if t1 < t0:
            t1 = t0
        o = np.uint64(y * wo * c)
        for _ in range(t0):
            for ch in range(c):
                out[o + np.uint64(ch)] = fill[ch]
            o += np.uint64(c)
        xx = xo + t0 * a0
        yy = yo + t0 * a3
        if c == 3:
            for _ in range(t1 - t0):
                k = np.uint64(((yy >> 16) * w + (xx >> 16)) * 3)
                out[o] = src[k]
                out[o + np.uint64(1)] = src[k + np.uint64(1)]
                out[o + np.uint64(2)] = src[k + np.uint64(2)]
                o += np.uint64(3)
                xx += a0
                yy += a3
        else:
            for _ in range(t1 - t0):
                k = np.uint64(((yy >> 16) * w + (xx >> 16)) * c)
                for ch in range(c):
                    out[o + np.uint64(ch)] = src[k + np.uint64(ch)]
                o += np.uint64(c)
                xx += a0
                yy += a3
        for _ in range(t1, wo):
            for ch in range(c):
                out[o + np.uint64(ch)] = fill[ch]
            o += np.uint64(c)
        xo += a1
        yo += a4


def _fix(v: float) -> int:
    """Pillow's FIX: 16.16 fixed point, rounded half up."""
    return math.floor(v * 65536.0 + 0.5)


def _fixed_point_ok(a: np.ndarray, ho: int, wo: int) -> bool:
    """Pillow's check_fixed at the four corners: coordinates within +-32768 (so 16.16
    values fit in 32 bits), and not a pure scale/translation (Pillow's ScaleAffine)."""
    if a[1] == 0 and a[3] == 0:
        return False
    for x, y in ((0, 0), (wo, ho), (0, ho), (wo, 0)):
        if not (
            abs(x * a[0] + y * a[1] + a[2]) < 32768.0 and abs(x * a[3] + y * a[4] + a[5]) < 32768.0
        ):
            return False
    return True


def warp(
    img: np.ndarray,
    coeffs: tuple[float, ...] | list[float],
    out_size: tuple[int, int],
    mode: int,
    fill: float | tuple[float, ...] = 0,
) -> np.ndarray:
    """Warp an HW/HWC array: `coeffs` is Pillow's AFFINE (6) or PERSPECTIVE (8) data,
    `out_size` is (height, width)."""
    squeeze = img.ndim == 2
    x = np.ascontiguousarray(img[:, :, None] if squeeze else img)
    if x.dtype != np.uint8 and x.dtype != np.float32:
        x = x.astype(np.float32)
    c = x.shape[2]
    a = np.zeros(8, dtype=np.float64)
    a[: len(coeffs)] = coeffs
    fills = np.broadcast_to(np.asarray(fill, dtype=np.float64).reshape(-1), (c,)).copy()
    out = np.empty((out_size[0], out_size[1], c), dtype=x.dtype)
    if x.dtype == np.uint8:
        lo, hi = 0.0, 255.0
    else:
        lo, hi = -np.inf, np.inf
    affine = a[6] == 0.0 and a[7] == 0.0
    if mode == NEAREST and affine and _fixed_point_ok(a, *out_size):
        h, w, _ = x.shape
        _affine_fixed_kernel(
            x.reshape(-1), out.reshape(-1), h, w, c, out_size[0], out_size[1],
            _fix(a[0]), _fix(a[1]), _fix(a[3]), _fix(a[4]),
            _fix(a[2] + a[1] * 0.5 + a[0] * 0.5), _fix(a[5] + a[4] * 0.5 + a[3] * 0.5),
            fills.astype(x.dtype),
        )  # fmt: skip
    elif mode == NEAREST and affine:
        h, w, _ = x.shape
        ho, wo = out_size
        flat_in, flat_out, f = x.reshape(-1), out.reshape(-1), fills.astype(x.dtype)
        _affine_nearest_kernel(flat_in, flat_out, h, w, c, ho, wo, a, f)
    else:
        _warp_kernel(x, out, a, mode, fills.astype(x.dtype), lo, hi)
    return out[:, :, 0] if squeeze else out
