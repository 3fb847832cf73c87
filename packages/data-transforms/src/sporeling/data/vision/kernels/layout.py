"""Memory-layout kernels of the per-image pipeline: flips, Normalize, Normalize + HWC2CHW.

* `hflip`: a left-right mirror copy. NumPy's copy of `img[:, ::-1]` walks 3-byte
  pixels with a generic strided loop (~10x slower than Pillow on an RGB photo); Pillow
  moves one 4-byte word per pixel (it stores RGB as RGBX). For RGB uint8 this kernel also
  moves one word per pixel, through uint32 views with a 3-byte stride (as fast as
  Pillow's `transpose`), other layouts pixel by pixel.
* `normalize_hwc` / `normalize_chw`: `(float32(x) - mean[c]) / std[c]`, the arithmetic of
  `Normalize` in single precision (a division, not a multiply by 1/std, so the results
  equal NumPy's bit for bit), in one pass that reads uint8 or float input and writes the
  float32 output; `normalize_chw` writes it in CHW order, which is `Normalize` followed
  by `HWC2CHW` without the intermediate HWC float image. `out` may be a slice of a
  larger (batch) array.
"""

from __future__ import annotations

import sys

import numba
import numpy as np

__all__ = [
    "drop_channels",
    "hflip",
    "normalize_chw",
    "normalize_chw_lut",
    "normalize_hwc",
    "normalize_lut",
]


@numba.njit(cache=True, nogil=True)
def _drop_channels_kernel(src, out):  # pragma: no cover - compiled
    h, w, c = out.shape
    for y in range(h):
        s = src[y]
        o = out[y]
        if c == 3:
            for x in range(w):
                o[x, 0] = s[x, 0]
                o[x, 1] = s[x, 1]
                o[x, 2] = s[x, 2]
        else:
            for x in range(w):
                for ch in range(c):
                    o[x, ch] = s[x, ch]


@numba.njit(cache=True, nogil=True)
def _rgbx_to_rgb_kernel(src32, out32, src, out):  # pragma: no cover - compiled
    # One 32-bit word per pixel: out32[p] views bytes 3p..3p+3 of `out` (3-byte stride),
    # so pixel p's X byte lands on pixel p+1's R byte, which the next store overwrites;
    # the last pixel goes byte by byte (its word would end past the array).
    for p in range(out32.size):
        out32[p] = src32[p]
    h, w, _ = out.shape
    for ch in range(3):
        out[h - 1, w - 1, ch] = src[h - 1, w - 1, ch]


def drop_channels(img: np.ndarray, channels: int) -> np.ndarray:
    """A new C-contiguous HWC array of the first `channels` channels of `img` (RGBX -> RGB:
    one word per pixel, ~2x faster than a byte loop and ~10x faster than NumPy's copy of
    the strided view); HW arrays are copied."""
    if img.ndim == 2 or img.shape[2] == channels:
        return img.copy()
    h, w, c = img.shape
    out = np.empty((h, w, channels), img.dtype)
    if (
        (c, channels) == (4, 3)
        and img.dtype == np.uint8
        and img.flags.c_contiguous
        and sys.byteorder == "little"
        and h * w > 0
    ):
        src32 = img.view(np.uint32).reshape(h * w)
        out32 = np.ndarray((h * w - 1,), np.uint32, out, 0, (3,))
        _rgbx_to_rgb_kernel(src32, out32, img, out)
    else:
        _drop_channels_kernel(img, out)
    return out


@numba.njit(cache=True, nogil=True)
def _hflip_kernel(src, out):  # pragma: no cover - compiled
    # Unsigned indices: Numba then skips the negative-index wraparound check, which
    # otherwise costs ~30 % here (and blocks vectorization of simpler loops).
    h, w, c = src.shape
    for y in range(h):
        s = src[y]
        o = out[y]
        for x in range(w):
            q = np.uint64(w - 1 - x)
            for ch in range(c):
                o[q, ch] = s[x, ch]


@numba.njit(cache=True, nogil=True)
def _hflip_2d_kernel(src, out):  # pragma: no cover - compiled
    # One machine word per pixel (gray, RGBA, ...): a reversed contiguous copy, vectorized.
    h, w = src.shape
    for y in range(h):
        s = src[y]
        o = out[y]
        for q in range(w):
            o[q] = s[np.uint64(w - 1 - q)]


@numba.njit(cache=True, nogil=True)
def _hflip_rgb_words_kernel(src32, out32, src, out):  # pragma: no cover - compiled
    # RGB rows through uint32 views with a 3-byte stride: src32[y, x] holds the byte before
    # pixel x + 1 and its 3 bytes, out32[y, q] pixel q's 3 bytes and the next byte. Pixel
    # q gets its word shifted by 8 (little endian: drops the leading byte); writing left
    # to right, each word's 4th byte is overwritten by the next pixel. One load and one
    # store per pixel instead of three each; the first source / last output pixel of a
    # row go byte by byte (their words would reach outside the row).
    h, w, c = src.shape
    for y in range(h):
        s32 = src32[y]
        o32 = out32[y]
        for q in range(w - 1):
            o32[q] = s32[np.uint64(w - 2 - q)] >> 8
        o = out[y]
        s = src[y]
        o[w - 1, 0] = s[0, 0]
        o[w - 1, 1] = s[0, 1]
        o[w - 1, 2] = s[0, 2]


def hflip(img: np.ndarray) -> np.ndarray:
    """Mirror an HW or HWC array left-right into a new C-contiguous array."""
    x = img[:, :, None] if img.ndim == 2 else img
    out = np.empty(x.shape, x.dtype)
    hflip_into(x, out)
    return out[:, :, 0] if img.ndim == 2 else out


def hflip_into(x: np.ndarray, out: np.ndarray) -> None:
    """Write HWC `x` mirrored left-right into `out` (same shape and dtype; a C-contiguous
    pair of RGB/word-sized pixels takes the word kernels, anything else the generic one)."""
    h, w, c = x.shape
    pixel = c * x.dtype.itemsize
    if not (x.flags.c_contiguous and out.flags.c_contiguous) or w < 2 or x.dtype.hasobject:
        _hflip_kernel(x, out)
    elif pixel in (1, 2, 4, 8):
        word = np.dtype(f"u{pixel}")
        _hflip_2d_kernel(x.view(word).reshape(h, w), out.view(word).reshape(h, w))
    elif pixel == 3 and sys.byteorder == "little":
        row = 3 * w
        src32 = np.ndarray((h, w - 1), np.uint32, x, offset=2, strides=(row, 3))
        out32 = np.ndarray((h, w - 1), np.uint32, out, offset=0, strides=(row, 3))
        _hflip_rgb_words_kernel(src32, out32, x, out)
    else:
        _hflip_kernel(x, out)


@numba.njit(cache=True, nogil=True)
def _normalize_chw_kernel(src, mean, std, out, flip):  # pragma: no cover - compiled
    # out[ch, y, x] = (src[y, x', ch] - mean[ch]) / std[ch], x' = x (or w-1-x if `flip`).
    # Each row is first split into float32 channel rows (scalar loads of the interleaved
    # pixels), then normalized channel row by channel row: those loops are contiguous and
    # vectorize (4x faster than one loop over interleaved pixels, which stays scalar).
    h, w, c = src.shape
    tmp = np.empty((c, w), np.float32)
    for y in range(h):
        row = src[y]
        if c == 3 and not flip:
            t0 = tmp[0]
            t1 = tmp[1]
            t2 = tmp[2]
            for x in range(w):
                t0[x] = row[x, 0]
                t1[x] = row[x, 1]
                t2[x] = row[x, 2]
        elif c == 3:
            t0 = tmp[0]
            t1 = tmp[1]
            t2 = tmp[2]
            for x in range(w):
                q = w - 1 - x
                t0[q] = row[x, 0]
                t1[q] = row[x, 1]
                t2[q] = row[x, 2]
        else:
            for x in range(w):
                q = w - 1 - x if flip else x
                for ch in range(c):
                    tmp[ch, q] = row[x, ch]
        for ch in range(c):
            m = mean[ch]
            s = std[ch]
            t = tmp[ch]
            orow = out[ch, y]
            for x in range(w):
                orow[x] = (t[x] - m) / s


@numba.njit(cache=True, nogil=True)
def _normalize_hwc_kernel(src, mean, std, out):  # pragma: no cover - compiled
    # Rows as flat W*C vectors against mean/std tiled to the same length: contiguous, SIMD.
    h, w, c = src.shape
    n = w * c
    mt = np.empty(n, np.float32)
    st = np.empty(n, np.float32)
    for x in range(w):
        for ch in range(c):
            mt[x * c + ch] = mean[ch]
            st[x * c + ch] = std[ch]
    for y in range(h):
        row = src[y].reshape(n)
        orow = out[y].reshape(n)
        for i in range(n):
            orow[i] = (np.float32(row[i]) - mt[i]) / st[i]


def _check(op: str, img: np.ndarray, mean: np.ndarray) -> np.ndarray:
    x = img[:, :, None] if img.ndim == 2 else img
    if x.ndim != 3:
        raise ValueError(f"{op}: expected an HW or HWC image, got shape {img.shape}.")
    if mean.size not in (1, x.shape[2]):
        raise ValueError(f"{op}: {mean.size} mean values for an image with {x.shape[2]} channels.")
    if x.dtype == np.bool_ or not (
        np.issubdtype(x.dtype, np.integer) or np.issubdtype(x.dtype, np.floating)
    ):
        raise TypeError(f"{op}: expected an integer or float image, got dtype {x.dtype}.")
    return x


def _per_channel(v: np.ndarray, c: int) -> np.ndarray:
    v = np.asarray(v, np.float32).reshape(-1)
    return np.ascontiguousarray(np.broadcast_to(v, (c,)) if v.size == 1 else v)


def normalize_hwc(
    img: np.ndarray, mean: np.ndarray, std: np.ndarray, op: str = "Normalize"
) -> np.ndarray:
    """(img - mean) / std per channel as float32, same layout (HW stays HW)."""
    x = np.ascontiguousarray(_check(op, img, mean))
    c = x.shape[2]
    out = np.empty(x.shape, np.float32)
    _normalize_hwc_kernel(x, _per_channel(mean, c), _per_channel(std, c), out)
    return out[:, :, 0] if img.ndim == 2 else out


def normalize_chw(
    img: np.ndarray,
    mean: np.ndarray,
    std: np.ndarray,
    out: np.ndarray | None = None,
    flip: bool = False,
) -> np.ndarray:
    """(img - mean) / std per channel as float32 in CHW order (an HW image gives 1HW);
    `flip=True` mirrors it left-right in the same pass."""
    x = _check("Normalize+HWC2CHW", img, mean)
    h, w, c = x.shape
    if out is None:
        out = np.empty((c, h, w), np.float32)
    elif out.shape != (c, h, w) or out.dtype != np.float32:
        raise ValueError(
            f"Normalize+HWC2CHW: out must be float32 of shape {(c, h, w)}, got "
            f"{out.dtype} {out.shape}."
        )
    _normalize_chw_kernel(x, _per_channel(mean, c), _per_channel(std, c), out, flip)
    return out


def normalize_lut(mean: np.ndarray, std: np.ndarray, channels: int) -> np.ndarray:
    """(channels, 256) float32: entry [c, v] = (float32(v) - mean[c]) / std[c], Normalize's
    value for the uint8 level v (the same single-precision subtract and divide, so equal
    bit for bit); a uint8 image is normalized by looking its levels up."""
    m = _per_channel(mean, channels)[:, None]
    s = _per_channel(std, channels)[:, None]
    return np.ascontiguousarray((np.arange(256, dtype=np.float32)[None, :] - m) / s)


@numba.njit(cache=True, nogil=True)
def _normalize_chw_lut_kernel(src, lut, out, flip):  # pragma: no cover - compiled
    # RGB: each pixel read once, its three levels looked up into the three planes (~12 %
    # faster than a plane at a time when `out` is a row of a batch array not in cache).
    h, w, c = src.shape
    if c == 3:
        l0, l1, l2 = lut[0], lut[1], lut[2]
        for y in range(h):
            row = src[y]
            o0, o1, o2 = out[0, y], out[1, y], out[2, y]
            for x in range(w):
                q = w - 1 - x if flip else x
                o0[q] = l0[row[x, 0]]
                o1[q] = l1[row[x, 1]]
                o2[q] = l2[row[x, 2]]
        return
    for ch in range(c):
        lc = lut[ch]
        for y in range(h):
            row = src[y]
            orow = out[ch, y]
            if flip:
                for x in range(w):
                    orow[w - 1 - x] = lc[row[x, ch]]
            else:
                for x in range(w):
                    orow[x] = lc[row[x, ch]]


def normalize_chw_lut(
    img: np.ndarray, lut: np.ndarray, flip: bool = False, out: np.ndarray | None = None
) -> np.ndarray:
    """`normalize_chw` of a uint8 HWC image through `normalize_lut`'s table (bitwise equal)."""
    if img.ndim != 3 or img.dtype != np.uint8 or lut.shape != (img.shape[2], 256):
        raise ValueError(
            f"normalize_chw_lut: expected a uint8 HWC image and a (C, 256) table, got "
            f"{img.dtype} {img.shape} and {lut.shape}."
        )
    h, w, c = img.shape
    if out is None:
        out = np.empty((c, h, w), np.float32)
    _normalize_chw_lut_kernel(img, lut, out, bool(flip))
    return out
