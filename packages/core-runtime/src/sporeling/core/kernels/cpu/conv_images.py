"""2-d convolutions one image at a time: im2col into a per-thread buffer that stays in cache,
then one single-threaded BLAS GEMM per image and group, called from inside Numba.

The batch-wide path (:mod:`.conv`) builds the columns of the whole batch, ``(C*KH*KW,
N*OH*OW)``: 38 MB for a ResNet-20 layer at batch 64, written once and read back by the GEMM
(and again by the weight gradient) from main memory; its result comes out as ``(C_out, N,
L)`` and needed a transposing copy (or left a strided view for the next op), and the
backward copied the incoming gradient into that layout first. Here each thread takes
whole images: the columns of one image (at most a few hundred KB for these layers) are
built in the thread's own buffer and multiplied while they are still in L2, the product
lands directly in the image's ``(C_out, OH*OW)`` block of the NCHW output, and the
gradients read the incoming gradient where it lies. The weight gradient rebuilds each
image's columns (in cache, cheaper than keeping the batch's columns from the forward) and
accumulates ``cols[n] @ g[n].T`` (the weight gradient, transposed) into a per-thread sum
(``beta = 1``), merged at the end.

The GEMM is OpenBLAS's ``cblas_?gemm`` (found by :mod:`.gemm_bias`), passed to the kernels
as a ctypes function: Numba calls it without the GIL and the cached kernels take the
function's address as an argument, so the disk cache stays valid across processes. The
threads are Sporeling's row workers (:mod:`._rows`), with the BLAS held to one thread for
the call (:func:`.blas.single_threaded_blas`): on 2 cores under load, OpenBLAS's own two
threads made a 64x288x8192 product 10-20x slower than one thread, and per-image products
are too small to share well anyway. :func:`available` says whether this path can run
(OpenBLAS with CBLAS, float32/float64); the op (``ops/nn/conv.py``) falls back to the
batch-wide path otherwise.

This module chooses the path and runs it; the Numba kernels are in :mod:`.conv_forward` and
:mod:`.conv_backward`, their job wrappers in :mod:`.conv_jobs`, and im2col, col2im and the
channels-last copy (C functions the kernels call by address, compiled once) in
:mod:`.conv_columns`.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _jobs, conv_jobs, microgemm
from ._rows import PARALLEL_MIN, max_blocks, run_blocks
from .blas import single_threaded_blas
from .conv_backward import (
    _data_grad_kernel,
    _data_grad_kernel_mk,
    _weight_grad_kernel,
    _weight_grad_kernel_implicit,
    _weight_grad_kernel_mk,
    _weight_grad_kernel_nhwc,
)
from .conv_columns import address
from .conv_forward import (
    _forward_kernel,
    _forward_kernel_flat,
    _forward_kernel_implicit,
    _forward_kernel_mk,
    _forward_kernel_pixels,
)
from .gemm_bias import _cblas

__all__ = ["available", "conv2d_images", "conv2d_data_grad_images", "conv2d_weight_grad_images"]

_CHARS = {np.dtype(np.float32): "s", np.dtype(np.float64): "d"}
Geometry = tuple[int, int, int, int, int, int]  # stride h/w, low pad h/w, dilation h/w


def available(dtype: Any) -> bool:
    """Whether the per-image kernels can run for ``dtype`` (an OpenBLAS with CBLAS found)."""
    char = _CHARS.get(np.dtype(dtype))
    return char is not None and _cblas(char) is not None


def _weight_cols_width(
    dtype: Any, geo: Geometry, groups: int, cin: int, cog: int, kw: int
) -> tuple[int, bool]:
    """The row width of C for :func:`_weight_grad_kernel_nhwc` and whether a kernel row's
    taps are merged into it, or ``(0, False)`` when the weight gradient does not read a
    channels-last copy. With one group and no dilation along the width, the ``KW`` taps of
    a kernel row read ``KW * C_in`` contiguous floats of the copy (adjacent pixels, all
    channels), so a 16-channel 3x3 layer's rows are 48 wide (a block of 32 and one of 16)
    instead of three rows of 16 (eight accumulators, one broadcast per FMA: the 16->16
    32x32 layer ran at ~65 GFLOPS on :func:`.microgemm.weight_rows`)."""
    width = kw * cin
    if groups == 1 and geo[5] == 1 and cin % 16 == 0 and width % 16 == 0:
        return (width, True) if _micro(dtype, cog, width) else (0, False)
    cig = cin // groups
    return (cig, False) if _channels_last_weight_grad(dtype, cig, cog) else (0, False)


def _channels_last_weight_grad(dtype: Any, cig: int, cog: int) -> bool:
    """Whether the weight gradient reads a channels-last padded copy of each image
    (:func:`_weight_grad_kernel_nhwc`): float32 on the micro-kernel, input channels per group
    in blocks of 32, output channels in blocks of 8. One thread, the conv2d benchmark's
    32->64 16x16 layer (32 images): 2.6-2.8 ms on :func:`.microgemm.weight_rows`, 2.0 ms
    this way (A packed, B rows of 32 channels); 32->32 16x16, 64->64 8x8 and 32->64 stride
    2 alike; 16->32 stride 2 1.7 -> 2.6 ms (the copy costs more than it saves), hence 32."""
    return cig % microgemm.NR == 0 and _micro(dtype, cog, cig)


def _implicit_weight_grad(dtype: Any, cig: int, cog: int) -> bool:
    """Whether the weight gradient skips im2col (:func:`_weight_grad_kernel_implicit`):
    float32 on the micro-kernel, channels per group in blocks of 8 in and 16 out (any
    stride: A's offsets step over the padded image as the output pixels do)."""
    return cog % (microgemm.NR // 2) == 0 and _micro(dtype, cig, microgemm.NR)


def _memo(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` computed once per key: the plans below depend on shapes and geometry only, and
    their meshgrids took 100-250 us a call, single-threaded, ~56 calls a ResNet-20 step
    (at 2 threads ~10% of the time around the conv jobs). The arrays are shared: read only."""
    cached = functools.lru_cache(maxsize=512)(fn)

    def call(*args: Any) -> Any:
        return cached(*[tuple(map(int, a)) if isinstance(a, (tuple, list)) else a for a in args])

    return call


@_memo
def _pixel_plan(
    x_shape: tuple[int, ...], geo: Geometry, kernel: tuple[int, int], out_hw: tuple[int, int]
) -> tuple[tuple[int, int], np.ndarray, np.ndarray]:
    """The padded plane (HP, WP) for :func:`_weight_grad_kernel_implicit`, the offsets of the
    kernel taps in it and those of the output pixels (any stride)."""
    (h, w), (kh, kw), (oh, ow) = x_shape[2:], kernel, out_hw
    sh, sw, ph, pw, dh, dw = geo
    hp = max(ph + h, (oh - 1) * sh + dh * (kh - 1) + 1)
    wpr = max(pw + w, (ow - 1) * sw + dw * (kw - 1) + 1)
    i, j = np.meshgrid(np.arange(kh), np.arange(kw), indexing="ij")
    taps = (i * dh * wpr + j * dw).reshape(-1).astype(np.int64)
    y, xx = np.meshgrid(np.arange(oh), np.arange(ow), indexing="ij")
    pix = (y * sh * wpr + xx * sw).reshape(-1).astype(np.int64)
    return (hp, wpr), taps, pix


_K_CHUNK = 128  # steps of K per pass of conv_pixels: B's chunk (K_CHUNK x C_out) in L1
_PIXEL_CHUNK = 128  # pixels per pass of weight_rows: B's chunk (128 x C_out floats) in L1
#: chunks of images per thread that a job is cut into (claimed from a counter): a late
#: worker then leaves a shorter tail on the other thread. 8 against 2, 2 threads, min and
#: median of 60-100 calls alternating in one process (load ~10, highest priority): LeNet-5's
#: five convolutions (64 images, 0.15-0.45 ms a call) 1.69 -> 1.61 ms in the sum of the
#: medians, the conv2d benchmark's six (32 images) 5.14 -> 4.81; the minima alike
CHUNKS_PER_THREAD = 8


def _padded(count: int, block: int) -> int:
    """``count`` channels up to a whole number of ``block``-wide micro-kernel blocks (zero
    weights, outputs dropped) when that at most doubles the work, else ``count``."""
    up = -(-count // block) * block
    return up if up <= 2 * count else count


def _implicit(dtype: Any, geo: Geometry, cog: int, ow: int) -> bool:
    """Whether the forward skips im2col (:func:`_forward_kernel_implicit`): stride 1, rows
    of whole blocks of 16 output pixels, and what :func:`_micro` asks for. Output channels
    per group not in blocks of 8 are padded (:func:`_padded`) on rows of whole blocks of
    32 only: one core, 64 images, native OpenBLAS, load ~15: 9->9 32x32 1.52 -> 1.29 ms
    (16 rows), but 18->18 16x16 0.83 -> 1.14 (24 rows in blocks of 16 pixels); a pruned
    network's 9, 18 or 36 channels (SCOP at rate 0.45) otherwise take OpenBLAS."""
    rows = _padded(cog, microgemm.MR) if ow % microgemm.NR == 0 else cog
    return geo[0] == 1 and geo[1] == 1 and ow % 16 == 0 and _micro(dtype, rows, 32)


def _pixels(dtype: Any, groups: int, cout: int, ow: int, kernel: tuple[int, int]) -> bool:
    """Whether the forward reads a channels-last copy of each image with blocks of 8 output
    pixels as A's rows (:func:`_forward_kernel_pixels`): float32 on the micro-kernel, one
    group, output rows of whole blocks of 8 (8x8 layers, any stride), output channels in
    blocks of 16 (at least 32; not padded: 36 -> 48 ran 0.65 -> 0.92 ms against OpenBLAS's
    SkylakeX kernels, one core, 64 images of 8x8), kernels larger than 1x1 (a strided 1x1
    projection reads a quarter of the pixels the copy moves: 32->64 1x1 stride 2 took 0.46
    ms this way against 0.33 on im2col, 64 images). One core, 64 images, against im2col:
    16->32 3x3 stride 2 2.8 -> 2.2 ms, 32->64 3x3 stride 2 2.05 -> 1.8; 64->64 8x8 alike
    (2.5-2.6 ms), but its input gradient, a forward of gy this way instead of col2im, 2.95
    -> 2.45."""
    return (
        groups == 1
        and ow % microgemm.MR == 0
        and cout % (microgemm.NR // 2) == 0
        and kernel[0] * kernel[1] > 1
        and _micro(dtype, microgemm.MR, cout)
    )


def _flat(
    dtype: Any,
    geo: Geometry,
    kernel: tuple[int, int],
    cog: int,
    x_shape: tuple[int, ...],
    out_hw: tuple[int, int],
) -> int:
    """The length of :func:`_forward_kernel_flat`'s run (OH*WP up to a block of 32), or 0
    where a stride-1 forward keeps im2col: float32 on the micro-kernel, at least 32 outputs,
    and at most 1.5x the work in padding (output channels up to a block of 8, WP - OW
    positions per row). One core, a new batch each call: LeNet-5's 6->16 5x5 14x14 layer
    (1.4x) 0.36 -> 0.29 ms for 64 images (im2col had taken most of it); its 1->6 5x5
    32x32 layer (1.52x) alike either way, 4->12 11x11 (1.58x) 0.013 -> 0.021 ms."""
    oh, ow = out_hw
    if geo[0] != 1 or geo[1] != 1 or oh * ow < microgemm.NR or not _micro(dtype, 8, 32):
        return 0
    (_, wpr), _ = _padded_plan(x_shape, geo, kernel, 1, out_hw)
    rows = -(-cog // microgemm.MR) * microgemm.MR
    if rows * wpr * 2 > 3 * cog * ow:
        return 0
    return -(-oh * wpr // microgemm.NR) * microgemm.NR


@_memo
def _pixel_offsets(
    x_shape: tuple[int, ...], geo: Geometry, kernel: tuple[int, int], out_hw: Any
) -> tuple[tuple[int, int], np.ndarray]:
    """The padded channels-last plane (HP, WP) for :func:`_forward_kernel_pixels` and the
    offsets (floats) of the K = (tap, channel) values of a window in it."""
    (hp, wpr), taps, _ = _pixel_plan(x_shape, geo, kernel, out_hw)
    c = x_shape[1]
    koffs = (taps[:, None] * c + np.arange(c)[None, :]).reshape(-1).astype(np.int64)
    return (hp, wpr), koffs


@_memo
def _padded_plan(
    x_shape: tuple[int, ...], geo: Geometry, kernel: tuple[int, int], groups: int, out_hw: Any
) -> tuple[tuple[int, int], np.ndarray]:
    """The padded plane (HP, WP) for :func:`_forward_kernel_implicit` and the offsets of
    one group's K = (channel, tap) input runs in it."""
    (h, w), (kh, kw), (oh, ow) = x_shape[2:], kernel, out_hw
    hp = max(geo[2] + h, oh + geo[4] * (kh - 1))
    wpr = max(geo[3] + w, ow + geo[5] * (kw - 1))
    cig = x_shape[1] // groups
    c, i, j = np.meshgrid(np.arange(cig), np.arange(kh), np.arange(kw), indexing="ij")
    offs = (c * hp * wpr + i * geo[4] * wpr + j * geo[5]).reshape(-1).astype(np.int64)
    return (hp, wpr), offs


def _as_forward(
    w: np.ndarray, geo: Geometry, groups: int, in_shape: tuple[int, ...]
) -> tuple[np.ndarray, Geometry] | None:
    """A stride-1 input gradient as a forward convolution of ``gy`` (weights flipped, in and
    out channels swapped per group, low pads ``d*(k-1) - p``), when that forward skips im2col
    (:func:`_implicit` or :func:`_pixels`): no col2im, the result lands in NCHW. Else None."""
    kh, kw = w.shape[2], w.shape[3]
    pads = (geo[4] * (kh - 1) - geo[2], geo[5] * (kw - 1) - geo[3])
    if geo[0] != 1 or geo[1] != 1 or min(pads) < 0:
        return None
    cog, cig = w.shape[0] // groups, w.shape[1]
    if not (
        _implicit(w.dtype, geo, cig, in_shape[3])
        or _pixels(w.dtype, groups, cig, in_shape[3], (kh, kw))
    ):
        return None
    wg = w[:, :, ::-1, ::-1].reshape(groups, cog, cig, kh, kw).transpose(0, 2, 1, 3, 4)
    wt = np.ascontiguousarray(wg).reshape(groups * cig, cog, kh, kw)
    return wt, (1, 1, pads[0], pads[1], geo[4], geo[5])


def _micro(dtype: Any, rows: int, length: int) -> bool:
    """Whether the products go to the micro-kernel: float32, an AVX-512 CPU, blocks of 8
    rows (``rows`` of C per group) and at least one block of 32 columns."""
    return (
        dtype == np.float32
        and rows % microgemm.MR == 0
        and length >= microgemm.NR
        and microgemm.available()
    )


def _packed(w2: np.ndarray, groups: int, transposed: bool, rows: int = 0) -> np.ndarray:
    """``w2`` (C_out, K) packed per group for :func:`.microgemm.gemm_blocks`: the group's
    rows (C_out/G, K), or with ``transposed`` its transpose (K, C_out/G); with ``rows``
    more than C_out/G, the group's rows followed by zero rows up to ``rows``."""
    cog, k = w2.shape[0] // groups, w2.shape[1]
    if rows > cog:
        wz = np.zeros((groups, rows, k), w2.dtype)
        wz[:, :cog] = w2.reshape(groups, cog, k)
        return _packed(wz.reshape(groups * rows, k), groups, transposed)
    if transposed:
        out = np.empty((groups, k // microgemm.MR, cog, microgemm.MR), w2.dtype)
        for g in range(groups):
            microgemm.pack_cols(w2[g * cog : (g + 1) * cog], out[g])
    else:
        out = np.empty((groups, cog // microgemm.MR, k, microgemm.MR), w2.dtype)
        for g in range(groups):
            microgemm.pack_rows(w2[g * cog : (g + 1) * cog], out[g])
    return out


def _geometry(geo: Geometry, kernel: tuple[int, int]) -> np.ndarray:
    return np.array((*geo, *kernel), np.int64)


def _threads(n_img: int, columns: int) -> int:
    """Threads for ``n_img`` images of ``columns`` im2col elements each: one below
    :data:`._rows.PARALLEL_MIN` elements in all (a hand-off costs more than it saves)."""
    if n_img * columns < PARALLEL_MIN:
        return 1
    return max(1, min(max_blocks(), n_img))


def _run(fn: Any, n_img: int, blocks: int, job: Any = None, args: tuple[Any, ...] = ()) -> None:
    """``fn(k, lo, hi)`` over ``blocks`` blocks of images, the BLAS held to one thread when
    there are several (on one block the BLAS keeps its own threads). A kernel with a job
    wrapper (:mod:`.conv_jobs`, ``job`` taking ``args`` packed) runs on :mod:`._jobs`'
    workers instead, which never take the GIL."""
    if blocks == 1:
        fn(0, 0, n_img)
        return
    chunks = blocks if n_img < 4 * blocks else 2 * blocks  # (each a Python call on _rows)
    if job is not None and _jobs.available():
        packed = _jobs.pack(*args, strict=False)
        if packed is not None:
            if n_img >= 4 * blocks:
                chunks = min(n_img, CHUNKS_PER_THREAD * blocks)
            if isinstance(args[0], int):  # a gemm's address: the BLAS on one thread
                with single_threaded_blas():
                    _jobs.run(_jobs.job(job), packed, n_img, blocks, chunks)
            else:
                _jobs.run(_jobs.job(job), packed, n_img, blocks, chunks)
            return
    with single_threaded_blas():
        run_blocks(fn, n_img, blocks, chunks=chunks)


def _gemm_job(name: str, dtype: Any, gemm: Any) -> Any:
    """The job of kernel ``name`` (:mod:`.conv_jobs`) for ``gemm``'s CBLAS integer width,
    or None (float64 kernels stay on :mod:`._rows`)."""
    if dtype != np.float32:
        return None
    j32, j64 = conv_jobs.gemm_jobs(name)
    return j64 if ctypes.sizeof(gemm.argtypes[3]) == 8 else j32


def _address(fn: Any) -> int:
    return int(ctypes.cast(fn, ctypes.c_void_p).value or 0)


def conv2d_images(
    x: np.ndarray, w: np.ndarray, geo: Geometry, groups: int, out_hw: tuple[int, int]
) -> np.ndarray:
    """Convolution of ``x`` (N, C, H, W) with ``w`` (C_out, C/groups, KH, KW), NCHW out;
    both C-contiguous of one dtype that :func:`available` accepts."""
    n, c = x.shape[:2]
    cout, kernel = w.shape[0], (w.shape[2], w.shape[3])
    out = np.empty((n, cout, *out_hw), x.dtype)
    rows, length = c * kernel[0] * kernel[1], out_hw[0] * out_hw[1]
    threads = _threads(n, rows * length)
    cols = np.empty((threads, rows, length), x.dtype)
    g2 = _geometry(geo, kernel)
    gemm, one, zero = _cblas(_CHARS[x.dtype]), x.dtype.type(1), x.dtype.type(0)
    w2 = w.reshape(cout, -1)
    pixels = _pixels(x.dtype, groups, cout, out_hw[1], kernel)
    # the row path first where both run: with a row's last 16 pixels paired with the next
    # row's (microgemm.conv_rows) it beat the pixel path on 16x16 layers with 32 out (one
    # core, 32 images: 64->32 forward 1.77 -> 1.48 ms, 32->64's input gradient 1.80 -> 1.49)
    if _implicit(x.dtype, geo, cout // groups, out_hw[1]):
        rows = _padded(cout // groups, microgemm.MR) if out_hw[1] % microgemm.NR == 0 else 0
        wp = _packed(w2, groups, False, rows)
        (hp, wpr), offs = _padded_plan(x.shape, geo, kernel, groups, out_hw)
        xp = np.zeros((threads, c, hp, wpr), x.dtype)
        rest = np.empty((threads, microgemm.MR, length), x.dtype)

        def block(k: int, lo: int, hi: int) -> None:
            _forward_kernel_implicit(x, wp, out, xp[k], rest[k], offs, g2, groups, lo, hi)

        args = (x, wp, out, xp, rest, offs, g2, groups)
        _run(block, n, threads, conv_jobs.forward_implicit, args)
        return out
    if pixels:
        # weights as (K, C_out) with K = (tap, channel), as the offsets run
        wk = np.ascontiguousarray(w.transpose(2, 3, 1, 0)).reshape(-1, cout)
        (hp, wpr), koffs = _pixel_offsets(x.shape, geo, kernel, out_hw)
        xq = np.zeros((threads, hp, wpr, c), x.dtype)
        ct = np.empty((threads, length, cout), x.dtype)

        nhwc = address("nhwc", x.dtype)  # (reads a C-contiguous image by address)
        x = np.ascontiguousarray(x)

        def block(k: int, lo: int, hi: int) -> None:
            _forward_kernel_pixels(nhwc, x, wk, out, xq[k], ct[k], koffs, g2, _K_CHUNK, lo, hi)

        args = (nhwc, x, wk, out, xq, ct, koffs, g2, _K_CHUNK)
        _run(block, n, threads, conv_jobs.forward_pixels, args)
        return out
    flat = _flat(x.dtype, geo, kernel, cout // groups, x.shape, out_hw)
    if flat:
        cog = cout // groups
        wp = _packed(w2, groups, False, -(-cog // microgemm.MR) * microgemm.MR)
        (hp, wpr), offs = _padded_plan(x.shape, geo, kernel, groups, out_hw)
        tail = -(-(geo[5] * (kernel[1] - 1) + microgemm.NR) // wpr)
        xp = np.zeros((threads, c * hp + tail, wpr), x.dtype)
        wide = np.empty((threads, wp.shape[1] * microgemm.MR, flat), x.dtype)

        def block(k: int, lo: int, hi: int) -> None:
            _forward_kernel_flat(x, wp, out, xp[k], wide[k], offs, g2, groups, hp, lo, hi)

        args = (x, wp, out, xp, wide, offs, g2, groups, hp)
        _run(block, n, threads, conv_jobs.forward_flat, args)
        return out
    i2c = address("im2col", x.dtype)
    if _micro(x.dtype, cout // groups, length):
        wp = _packed(w2, groups, transposed=False)

        def block(k: int, lo: int, hi: int) -> None:
            c = cols[k]
            _forward_kernel_mk(gemm, i2c, x, wp, w2, out, c, g2, groups, one, zero, lo, hi)

        args = (_address(gemm), i2c, x, wp, w2, out, cols, g2, groups, float(one), float(zero))
        _run(block, n, threads, _gemm_job("forward_mk", x.dtype, gemm), args)
        return out

    def block(k: int, lo: int, hi: int) -> None:
        _forward_kernel(gemm, i2c, x, w2, out, cols[k], g2, groups, one, zero, lo, hi)

    args = (_address(gemm), i2c, x, w2, out, cols, g2, groups, float(one), float(zero))
    _run(block, n, threads, _gemm_job("forward", x.dtype, gemm), args)
    return out


def conv2d_data_grad_images(
    gy: np.ndarray, w: np.ndarray, geo: Geometry, groups: int, in_shape: tuple[int, int, int, int]
) -> np.ndarray:
    """Gradient for the input of :func:`conv2d_images` (a transposed convolution of ``gy``)."""
    n = gy.shape[0]
    cout, kernel = w.shape[0], (w.shape[2], w.shape[3])
    flipped = _as_forward(w, geo, groups, in_shape)
    if flipped is not None:
        return conv2d_images(gy, *flipped, groups, in_shape[2:])
    dx = np.empty(in_shape, gy.dtype)
    rows, length = in_shape[1] * kernel[0] * kernel[1], gy.shape[2] * gy.shape[3]
    threads = _threads(n, rows * length)
    dcols = np.empty((threads, rows, length), gy.dtype)
    g2 = _geometry(geo, kernel)
    gemm, one, zero = _cblas(_CHARS[gy.dtype]), gy.dtype.type(1), gy.dtype.type(0)
    w2, c2i = w.reshape(cout, -1), address("col2im", gy.dtype)
    if _micro(gy.dtype, w2.shape[1], length):
        wpt = _packed(w2, groups, transposed=True)

        def block(k: int, lo: int, hi: int) -> None:
            d = dcols[k]
            _data_grad_kernel_mk(gemm, c2i, gy, wpt, w2, dx, d, g2, groups, one, zero, lo, hi)

        args = (_address(gemm), c2i, gy, wpt, w2, dx, dcols, g2, groups, float(one), float(zero))
        _run(block, n, threads, _gemm_job("data_grad_mk", gy.dtype, gemm), args)
        return dx

    def block(k: int, lo: int, hi: int) -> None:
        _data_grad_kernel(gemm, c2i, gy, w2, dx, dcols[k], g2, groups, one, zero, lo, hi)

    args = (_address(gemm), c2i, gy, w2, dx, dcols, g2, groups, float(one), float(zero))
    _run(block, n, threads, _gemm_job("data_grad", gy.dtype, gemm), args)
    return dx


def conv2d_weight_grad_images(
    x: np.ndarray, gy: np.ndarray, geo: Geometry, groups: int, kernel: tuple[int, int]
) -> np.ndarray:
    """Gradient for the weight of :func:`conv2d_images`, shape (C_out, C/groups, KH, KW)."""
    n, c = x.shape[:2]
    cout = gy.shape[1]
    rows, length = c * kernel[0] * kernel[1], gy.shape[2] * gy.shape[3]
    threads = _threads(n, rows * length)
    sums = np.zeros((threads, groups, rows // groups, cout // groups), x.dtype)
    g2 = _geometry(geo, kernel)
    width, merged = _weight_cols_width(x.dtype, geo, groups, c, cout // groups, kernel[1])
    if width:
        (hp, wpr), taps, pix = _pixel_plan(x.shape, geo, kernel, gy.shape[2:])
        if merged:  # one offset per kernel row: its taps are adjacent pixels of the copy
            taps = taps[:: kernel[1]]
        toffs = (taps[:, None] + pix[None, :]) * c
        xq = np.zeros((threads, hp, wpr, c), x.dtype)
        gp = np.empty((threads, cout // groups // 8, length, 8), x.dtype)
        dwq = np.zeros((threads, groups, taps.shape[0], cout // groups, width), x.dtype)

        nhwc = address("nhwc", x.dtype)  # (reads a C-contiguous image by address)
        x = np.ascontiguousarray(x)

        def block(k: int, lo: int, hi: int) -> None:
            s, q, p, chunk = dwq[k], xq[k], gp[k], _PIXEL_CHUNK
            _weight_grad_kernel_nhwc(nhwc, x, gy, s, q, p, toffs, g2, groups, chunk, lo, hi)

        args = (nhwc, x, gy, dwq, xq, gp, toffs, g2, groups, _PIXEL_CHUNK)
        _run(block, n, threads, conv_jobs.weight_grad_nhwc, args)
        dq = dwq[0]
        for k in range(1, threads):
            dq += dwq[k]
        if merged:  # (1, KH, C_out, KW*C_in) -> (C_out, C_in, KH, KW)
            dw = dq.reshape(kernel[0], cout, kernel[1], c).transpose(1, 3, 0, 2)
        else:  # (G, taps, C_out/G, C_in/G) -> (C_out, C_in/G, KH, KW)
            taps_n = kernel[0] * kernel[1]
            dw = dq.reshape(groups, taps_n, cout // groups, c // groups).transpose(0, 2, 3, 1)
        return np.ascontiguousarray(dw).reshape(cout, c // groups, *kernel)
    if _implicit_weight_grad(x.dtype, c // groups, cout // groups):
        (hp, wpr), taps, pix = _pixel_plan(x.shape, geo, kernel, gy.shape[2:])
        xp = np.zeros((threads, c, hp, wpr), x.dtype)
        gyt = np.empty((threads, length, cout), x.dtype)

        def block(k: int, lo: int, hi: int) -> None:
            _weight_grad_kernel_implicit(
                x, gy, sums[k], xp[k], gyt[k], taps, pix, g2, groups, _PIXEL_CHUNK, lo, hi
            )

        args = (x, gy, sums, xp, gyt, taps, pix, g2, groups, _PIXEL_CHUNK)
        _run(block, n, threads, conv_jobs.weight_grad_implicit, args)
        dwt = sums[0]
        for k in range(1, threads):
            dwt += sums[k]
        # rows (tap, channel) -> (C_out, C_in/G, KH, KW)
        taps_n = kernel[0] * kernel[1]
        dw = dwt.reshape(groups, taps_n, c // groups, cout // groups).transpose(0, 3, 2, 1)
        return np.ascontiguousarray(dw).reshape(cout, c // groups, *kernel)
    cols = np.empty((threads, rows, length), x.dtype)
    gemm, one = _cblas(_CHARS[x.dtype]), x.dtype.type(1)
    i2c, ga = address("im2col", x.dtype), _address(gemm)
    if _micro(x.dtype, rows // groups, 32) and cout // groups >= microgemm.NR // 2:
        gyt = np.empty((threads, length, cout), x.dtype)

        def block(k: int, lo: int, hi: int) -> None:
            s, c, t = sums[k], cols[k], gyt[k]
            _weight_grad_kernel_mk(gemm, i2c, x, gy, s, c, t, g2, groups, one, lo, hi)

        job = _gemm_job("weight_grad_mk", x.dtype, gemm)
        args: tuple[Any, ...] = (ga, i2c, x, gy, sums, cols, gyt, g2, groups, float(one))
    else:

        def block(k: int, lo: int, hi: int) -> None:
            _weight_grad_kernel(gemm, i2c, x, gy, sums[k], cols[k], g2, groups, one, lo, hi)

        job = _gemm_job("weight_grad", x.dtype, gemm)
        args = (ga, i2c, x, gy, sums, cols, g2, groups, float(one))
    _run(block, n, threads, job, args)
    dwt = sums[0]
    for k in range(1, threads):
        dwt += sums[k]
    return np.ascontiguousarray(dwt.transpose(0, 2, 1)).reshape(cout, c // groups, *kernel)
