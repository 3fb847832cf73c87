"""Numba kernels of the batch-level vision ops (`sporeling.data.vision.batch`).

Every kernel takes the whole batch plus one row of random parameters per sample (drawn in
NumPy by the caller) and walks the batch once. Images are seen as (N, H, W, C) arrays; an
N-CHW batch is passed as its transposed (N, H, W, C) view, which Numba handles as a
strided ("A" layout) array. Kernels are serial, `cache=True` and `nogil=True`, so thread
workers run them side by side.

Integer outputs are rounded half to even (`np.rint`) and saturated to the dtype's range,
as OpenCV's `saturate_cast` does in MindSpore's C++ kernels.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def _store(v, lo, hi, is_int):
    # Round and saturate for integer outputs; float outputs are passed through.
    if is_int:
        v = np.rint(v)
        if v < lo:
            v = lo
        elif v > hi:
            v = hi
    return v


@numba.njit(cache=True, nogil=True)
def _mixup_kernel(images, perm, lam, out, lo, hi, is_int):
    """out[i] = lam[i] * images[i] + (1 - lam[i]) * images[perm[i]] on (N, M) rows."""
    n, m = images.shape
    for i in range(n):
        a = np.float64(lam[i])
        b = 1.0 - a
        j = perm[i]
        for k in range(m):
            v = a * np.float64(images[i, k]) + b * np.float64(images[j, k])
            out[i, k] = _store(v, lo, hi, is_int)


@numba.njit(cache=True, nogil=True)
def _cutmix_kernel(images, perm, boxes, out):
    """Copy each sample, then paste box (x, y, w, h) of images[perm[i]] where w > 0.

    `images` and `out` are (N, H, W, C) views; the sources are always the unmodified
    input images, as in MindSpore (a sample pasted into another is not pasted again).
    """
    n, h, w, c = images.shape
    for i in range(n):
        x0 = boxes[i, 0]
        y0 = boxes[i, 1]
        bw = boxes[i, 2]
        bh = boxes[i, 3]
        j = perm[i]
        for y in range(h):
            inside_y = bw > 0 and y0 <= y < y0 + bh
            for x in range(w):
                src = j if inside_y and x0 <= x < x0 + bw else i
                for ch in range(c):
                    out[i, y, x, ch] = images[src, y, x, ch]


@numba.njit(cache=True, nogil=True)
def _source_rows(oy, sy, ch, nearest):
    """Source rows (crop-relative) and the vertical weight of output row `oy`."""
    if nearest:
        ya = min(int(np.floor((oy + 0.5) * sy)), ch - 1)
        return ya, ya, np.float32(0.0)
    fy = max((oy + 0.5) * sy - 0.5, 0.0)
    ya = min(int(np.floor(fy)), ch - 1)
    return ya, min(ya + 1, ch - 1), np.float32(fy - ya)


@numba.njit(cache=True, nogil=True)
def _horizontal_rgb8(row, xa, xb, wx, dst):
    # top = ra[a] * w0 + ra[b] * w1 of `_resized_crop_one`, per channel, in float32
    for ox in range(xa.size):
        a = xa[ox]
        b = xb[ox]
        w1 = wx[ox]
        w0 = np.float32(1.0) - w1
        dst[3 * ox] = row[a, 0] * w0 + row[b, 0] * w1
        dst[3 * ox + 1] = row[a, 1] * w0 + row[b, 1] * w1
        dst[3 * ox + 2] = row[a, 2] * w0 + row[b, 2] * w1


@numba.njit(cache=True, nogil=True)
def _resized_crop_rgb8(img, y0, ch, sy, xa, xb, wx, out, nearest):
    """`_resized_crop_one`'s rows for uint8 RGB, separably: each source row's horizontal
    interpolation is computed once into a float32 row and reused by the next output row
    that needs it (a downscale by 1.3 shares about a third of its rows, an upscale most),
    then one vertical pass blends two such rows. The same float32 values, rounding (half
    to even: adding and subtracting 2**52 rounds a double in the default mode, with no
    libm `rint` call) and saturation as the per-pixel loop, so the same bytes; 2-4x
    faster per 224x224 image (the speed-ups of the per-image resize, issue 24)."""
    oh, ow, _ = out.shape
    n = 3 * ow
    rows = np.empty((2, n), np.float32)  # rows[0]: source row `have0`; rows[1]: `have1`
    have0 = -1
    have1 = -1
    magic = 4503599627370496.0  # 2**52
    line = np.empty(n, np.uint8)
    for oy in range(oh):
        ya, yb, wy = _source_rows(oy, sy, ch, nearest)
        if have0 != ya:
            if have1 == ya:
                rows[0, :] = rows[1, :]
            else:
                _horizontal_rgb8(img[ya + y0], xa, xb, wx, rows[0])
            have0 = ya
        if have1 != yb:
            _horizontal_rgb8(img[yb + y0], xa, xb, wx, rows[1])
            have1 = yb
        top = rows[0]
        bot = rows[1]
        for i in range(n):  # contiguous: vectorizes
            v = np.float64(top[i] + (bot[i] - top[i]) * wy)
            line[i] = (min(max(v, 0.0), 255.0) + magic) - magic
        orow = out[oy]
        for ox in range(ow):
            orow[ox, 0] = line[3 * ox]
            orow[ox, 1] = line[3 * ox + 1]
            orow[ox, 2] = line[3 * ox + 2]


@numba.njit(cache=True, nogil=True)
def _resized_crop_one(img, x0, y0, cw, ch, flip, out, nearest, lo, hi, is_int):
    """Crop (x0, y0, cw, ch) of one (H, W, C) image and resize it into `out` (OH, OW, C).

    Bilinear with pixel centres aligned (OpenCV INTER_LINEAR without antialiasing:
    src = (dst + 0.5) * scale - 0.5, clamped to the crop); `flip` mirrors the output
    horizontally in the same pass. Column indices and weights are computed once per call,
    not once per output pixel (about 1.4x faster on 224x224 outputs in the
    benchmarks/data transforms table, relative to the per-image op).
    """
    oh, ow, c = out.shape
    sy = ch / oh
    sx = cw / ow
    xa = np.empty(ow, np.int64)
    xb = np.empty(ow, np.int64)
    wx = np.empty(ow, np.float32)
    for ox in range(ow):
        tx = ow - 1 - ox if flip else ox
        if nearest:
            xa[tx] = min(int(np.floor((ox + 0.5) * sx)), cw - 1) + x0
            xb[tx] = xa[tx]
            wx[tx] = 0.0
            continue
        fx = max((ox + 0.5) * sx - 0.5, 0.0)
        i0 = min(int(np.floor(fx)), cw - 1)
        xa[tx] = i0 + x0
        xb[tx] = min(i0 + 1, cw - 1) + x0
        wx[tx] = fx - i0
    if c == 3 and is_int and lo == 0.0 and hi == 255.0:  # uint8 RGB: the fast path
        _resized_crop_rgb8(img, y0, ch, sy, xa, xb, wx, out, nearest)
        return
    for oy in range(oh):
        ya, yb, wy = _source_rows(oy, sy, ch, nearest)
        ra = img[ya + y0]
        rb = img[yb + y0]
        orow = out[oy]
        for ox in range(ow):
            a = xa[ox]
            b = xb[ox]
            w1 = wx[ox]
            w0 = np.float32(1.0) - w1
            for k in range(c):
                top = ra[a, k] * w0 + ra[b, k] * w1
                bot = rb[a, k] * w0 + rb[b, k] * w1
                orow[ox, k] = _store(top + (bot - top) * wy, lo, hi, is_int)


@numba.njit(cache=True, nogil=True)
def _column_taps(ow, c, x0, cw, flip, nearest):
    """Per output value (column * c + channel): the offsets of its two taps in the crop's
    part of a flattened source row, and their float32 weights, as `_resized_crop_one`
    computes them (w0 = 1 - w1 in float32). Unsigned offsets: Numba adds no negative-index
    wraparound to their loads, so the loops that read through them vectorize."""
    sx = cw / ow
    ia = np.empty(ow * c, np.uint32)
    ib = np.empty(ow * c, np.uint32)
    w0 = np.empty(ow * c, np.float32)
    w1 = np.empty(ow * c, np.float32)
    for ox in range(ow):
        if nearest:
            a = min(int(np.floor((ox + 0.5) * sx)), cw - 1)
            b = a
            v1 = np.float32(0.0)
        else:
            fx = max((ox + 0.5) * sx - 0.5, 0.0)
            a = min(int(np.floor(fx)), cw - 1)
            b = min(a + 1, cw - 1)
            v1 = np.float32(fx - a)
        tx = ow - 1 - ox if flip else ox
        for k in range(c):
            ia[tx * c + k] = a * c + k
            ib[tx * c + k] = b * c + k
            w0[tx * c + k] = np.float32(1.0) - v1
            w1[tx * c + k] = v1
    return ia, ib, w0, w1


@numba.njit(cache=True, nogil=True)
def _horizontal_flat(seg, rowf, ia, ib, w0, w1, dst):
    # the crop's part of a source row widened to float32 once (a contiguous, vectorized
    # loop), then top = ra[a] * w0 + ra[b] * w1 per output value through the tap tables:
    # no index arithmetic or int -> float conversion per value
    for j in range(rowf.size):
        rowf[j] = seg[j]
    for i in range(dst.size):
        dst[i] = rowf[ia[i]] * w0[i] + rowf[ib[i]] * w1[i]


@numba.njit(cache=True, nogil=True)
def _resized_crop_u8_flat(img, c, x0, y0, cw, ch, flip, out, nearest):
    """`_resized_crop_one` for a C-contiguous uint8 image seen as (H, W * c) rows, into a
    C-contiguous (OH, OW * c) output: the same float32 values in the same order, so the
    same bytes. Each needed source row is interpolated once (`_horizontal_flat`) and kept
    while output rows use it (the two rows swap roles instead of being copied); the
    vertical blend, rounding (np.rint of the float32 value: the same half-to-even integer
    as of its float64 widening) and saturation run in one vectorized loop straight into
    the output row. Random crops to 224x224: 300 -> 164 us per image against
    `_resized_crop_rgb8` (A/B in one process under load, issue 24)."""
    oh = out.shape[0]
    n = out.shape[1]
    ow = n // c
    sy = ch / oh
    ia, ib, w0, w1 = _column_taps(ow, c, x0, cw, flip, nearest)
    rowf = np.empty(cw * c, np.float32)
    rows = np.empty((2, n), np.float32)
    start = x0 * c
    stop = start + cw * c
    have = np.full(2, -1, np.int64)  # the source row held in rows[0] / rows[1]
    zero = np.float32(0.0)
    top_level = np.float32(255.0)
    for oy in range(oh):
        ya, yb, wy = _source_rows(oy, sy, ch, nearest)
        t = 0 if have[0] == ya else (1 if have[1] == ya else -1)
        if t < 0:
            t = 0 if have[1] == yb else 1  # keep the row the bottom tap needs
            _horizontal_flat(img[ya + y0, start:stop], rowf, ia, ib, w0, w1, rows[t])
            have[t] = ya
        b = 1 - t
        if have[b] != yb:
            if yb == ya:
                b = t
            else:
                _horizontal_flat(img[yb + y0, start:stop], rowf, ia, ib, w0, w1, rows[b])
                have[b] = yb
        top = rows[t]
        bot = rows[b]
        line = out[oy]
        for i in range(n):  # contiguous: vectorizes
            v = top[i] + (bot[i] - top[i]) * wy
            line[i] = np.uint8(np.int32(np.rint(min(max(v, zero), top_level))))


@numba.njit(cache=True, nogil=True)
def _resized_crop_u8_batch(images, c, boxes, flips, out, nearest):
    """`_resized_crop_u8_flat` over an (N, H, W * c) batch into (N, OH, OW * c)."""
    for i in range(images.shape[0]):
        _resized_crop_u8_flat(
            images[i],
            c,
            boxes[i, 0],
            boxes[i, 1],
            boxes[i, 2],
            boxes[i, 3],
            flips[i] != 0,
            out[i],
            nearest,
        )


@numba.njit(cache=True, nogil=True)
def _resized_crop_kernel(images, boxes, flips, out, nearest, lo, hi, is_int):
    """Per-sample crop box (x, y, w, h) and flip flag over an (N, H, W, C) batch."""
    for i in range(images.shape[0]):
        _resized_crop_one(
            images[i],
            boxes[i, 0],
            boxes[i, 1],
            boxes[i, 2],
            boxes[i, 3],
            flips[i] != 0,
            out[i],
            nearest,
            lo,
            hi,
            is_int,
        )


@numba.njit(cache=True, nogil=True)
def _hflip_kernel(images, flips, out):
    """out[i] = images[i] mirrored along W where flips[i], else a copy."""
    n, h, w, c = images.shape
    for i in range(n):
        if flips[i] == 0:
            out[i] = images[i]
            continue
        for y in range(h):
            src = images[i, y]
            dst = out[i, y]
            if c == 3:  # unrolled for RGB: 1.1-1.7x in an A/B on 32x224x224x3
                for x in range(w):
                    sx = w - 1 - x
                    dst[x, 0] = src[sx, 0]
                    dst[x, 1] = src[sx, 1]
                    dst[x, 2] = src[sx, 2]
                continue
            for x in range(w):
                sx = w - 1 - x
                for k in range(c):
                    dst[x, k] = src[sx, k]


@numba.njit(cache=True, nogil=True)
def _gray(r, g, b):
    # ITU-R 601-2 luma, as Pillow's "L" conversion and OpenCV's RGB2GRAY.
    return 0.299 * r + 0.587 * g + 0.114 * b


@numba.njit(cache=True, nogil=True)
def _shift_hue(r, g, b, shift):
    """Rotate the hue of one RGB pixel (0..255 floats) by `shift` turns (HSV model)."""
    mx = max(r, g, b)
    mn = min(r, g, b)
    v = mx
    d = mx - mn
    if d <= 0.0 or mx <= 0.0:
        return r, g, b  # grey: no hue to rotate
    s = d / mx
    if mx == r:
        h = ((g - b) / d) / 6.0
    elif mx == g:
        h = (2.0 + (b - r) / d) / 6.0
    else:
        h = (4.0 + (r - g) / d) / 6.0
    h = (h + shift) % 1.0
    h6 = h * 6.0
    sector = int(np.floor(h6)) % 6
    f = h6 - np.floor(h6)
    p = v * (1.0 - s)
    q = v * (1.0 - s * f)
    t = v * (1.0 - s * (1.0 - f))
    if sector == 0:
        return v, t, p
    if sector == 1:
        return q, v, p
    if sector == 2:
        return p, v, t
    if sector == 3:
        return p, q, v
    if sector == 4:
        return t, p, v
    return v, p, q


@numba.njit(cache=True, nogil=True)
def _color_adjust_kernel(images, factors, order, out, scratch):
    """Brightness, contrast, saturation and hue per sample, in a per-sample order.

    factors[i] = (brightness, contrast, saturation, hue); order[i] is a permutation of
    0..3 (0 brightness, 1 contrast, 2 saturation, 3 hue) as MindSpore's C++
    RandomColorAdjust shuffles them. Each step is rounded and saturated to 0..255 like a
    uint8 intermediate image; `scratch` is one (H, W, 3) float64 buffer.
    """
    n, h, w, _ = images.shape
    for i in range(n):
        for y in range(h):
            for x in range(w):
                for k in range(3):
                    scratch[y, x, k] = images[i, y, x, k]
        mean = 0.0
        for step in range(4):
            op = order[i, step]
            f = factors[i, op]
            if op == 3:
                if f == 0.0:
                    continue
            elif f == 1.0:
                continue
            if op == 1:
                # Blend with the mean grey level of the current image (Pillow's Contrast).
                acc = 0.0
                for y in range(h):
                    for x in range(w):
                        acc += _gray(scratch[y, x, 0], scratch[y, x, 1], scratch[y, x, 2])
                mean = np.rint(acc / (h * w))
            for y in range(h):
                for x in range(w):
                    r = scratch[y, x, 0]
                    g = scratch[y, x, 1]
                    b = scratch[y, x, 2]
                    if op == 0:
                        r, g, b = r * f, g * f, b * f
                    elif op == 1:
                        r = mean + f * (r - mean)
                        g = mean + f * (g - mean)
                        b = mean + f * (b - mean)
                    elif op == 2:
                        gr = _gray(r, g, b)
                        r = gr + f * (r - gr)
                        g = gr + f * (g - gr)
                        b = gr + f * (b - gr)
                    else:
                        r, g, b = _shift_hue(r, g, b, f)
                    scratch[y, x, 0] = _store(r, 0.0, 255.0, True)
                    scratch[y, x, 1] = _store(g, 0.0, 255.0, True)
                    scratch[y, x, 2] = _store(b, 0.0, 255.0, True)
        for y in range(h):
            for x in range(w):
                for k in range(3):
                    out[i, y, x, k] = scratch[y, x, k]
