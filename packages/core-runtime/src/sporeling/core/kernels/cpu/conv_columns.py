"""One image's columns (im2col), its columns added back (col2im) and its channels-last copy,
each compiled once per dtype as a C function that the per-image convolution kernels
(:mod:`.conv_forward`, :mod:`.conv_backward`) and their jobs (:mod:`.conv_jobs`) call by
address.

Why by address: a Numba function that calls another jitted function links the callee's
LLVM module into its own and optimises and generates machine code for the whole again, so
im2col's code (1.1-1.2 s of CPU to compile alone) was compiled once more in each of the up
to eight kernels and jobs that call it (the forward and weight-gradient kernels with and
without the micro-kernel, each as a job and, for one-block calls, as a kernel). Called
through a pointer (:func:`native`, the address passed in as an int like OpenBLAS's GEMM),
the caller's module holds a call instruction only; one call per image, no measurable cost.
The addresses are per process (:func:`address`), never baked into cached code.

Also here: :func:`at`, an element's address, which every kernel uses.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numba
import numpy as np
from llvmlite import ir  # type: ignore[import-untyped]
from numba import types
from numba.extending import intrinsic

from ._config import JIT_SERIAL
from .conv import _valid_range

__all__ = ["JIT", "JIT_INLINE", "address", "at", "native"]

_intrinsic: Any = intrinsic
JIT = {**JIT_SERIAL, "nogil": True}
#: the per-image kernels (and the bodies below) are inlined into their jitted callers (a
#: job's ``cfunc``, compiled with the same flags, or this module's C functions) instead of
#: compiled on their own and linked: Numba optimises and generates machine code for every
#: linked callee again in each caller. A call from Python compiles them as usual.
JIT_INLINE = {**JIT, "inline": "always"}


@numba.jit(**JIT)  # linked into its C function, not inlined: see _im2col_c
def _im2col_image(x, n, cols, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow):  # pragma: no cover
    """Columns ``(C*KH*KW, OH*OW)`` of image ``n`` of ``x`` (N, C, H, W), zero padding.

    Loops over taps, then channels: each tap's valid ranges are found once, not once per row
    (with a row's (c, i, j) from divisions and two range calls per row, 64->64 8x8 took
    0.96 ms for 64 images against 0.35 ms now; the 16x16 layers 0.71-0.77 -> 0.50-0.54)."""
    _, n_ch, h, w = x.shape
    xf = x.reshape(-1)
    cf = cols.reshape(-1)
    u_sw = np.uint64(sw)
    u_ow = np.uint64(ow)
    length = np.uint64(oh * ow)
    flat = sh == 1 and sw == 1 and ow == w
    for i in range(kh):
        y0, y1 = _valid_range(oh, sh, i * dh - ph, h)
        for j in range(kw):
            x0, x1 = _valid_range(ow, sw, j * dw - pw, w)
            u_x0, u_x1 = np.uint64(x0), np.uint64(x1)
            for c in range(n_ch):
                base = np.uint64((c * kh + i) * kw + j) * length
                plane = (n * n_ch + c) * h * w
                if flat and y1 > y0 and x1 > x0:
                    # stride 1 and OW == W: the tap's valid block is one run of the input
                    # plane (a contiguous copy), with the padding columns it wrapped over
                    # zeroed after, one strided pass per such column
                    first, last = np.uint64(y0 * ow + x0), np.uint64((y1 - 1) * ow + x1)
                    s = np.uint64(plane + (y0 - ph + i * dh) * w + x0 + j * dw - pw)
                    for k in range(first):
                        cf[base + k] = 0
                    for k in range(last - first):
                        cf[base + first + k] = xf[s + k]
                    for k in range(last, length):
                        cf[base + k] = 0
                    for k in range(u_x0):
                        for y in range(y0, y1):
                            cf[base + np.uint64(y * ow) + k] = 0
                    for k in range(u_x1, u_ow):
                        for y in range(y0, y1):
                            cf[base + np.uint64(y * ow) + k] = 0
                    continue
                for y in range(oh):
                    o = base + np.uint64(y * ow)
                    if y < y0 or y >= y1:
                        for k in range(u_ow):
                            cf[o + k] = 0
                        continue
                    s = np.uint64(plane + (y * sh - ph + i * dh) * w + x0 * sw + j * dw - pw)
                    for k in range(u_x0):
                        cf[o + k] = 0
                    for k in range(u_x1 - u_x0):
                        cf[o + u_x0 + k] = xf[s + k * u_sw]
                    for k in range(u_x1, u_ow):
                        cf[o + k] = 0


@numba.jit(**JIT_INLINE)
def _col2im_image(cols, out, n, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow):  # pragma: no cover
    """Adds the columns ``(C*KH*KW, OH*OW)`` of one image into ``out[n]`` (zeroed first);
    the padding columns of ``cols`` are overwritten with zeros on the way."""
    _, n_ch, h, w = out.shape
    cf = cols.reshape(-1)
    of = out.reshape(-1)
    u_sw = np.uint64(sw)
    u_ow = np.uint64(ow)
    flat = sh == 1 and sw == 1 and ow == w
    base = n * n_ch * h * w
    for k in range(n_ch * h * w):
        of[base + k] = 0
    # each tap's valid ranges once, not once per channel (64->64 8x8: 0.65 -> 0.4 ms for 64
    # images); channels stay outside, so each output element sums its taps in order
    ranges = np.empty((kh * kw, 4), np.int64)
    for i in range(kh):
        y0, y1 = _valid_range(oh, sh, i * dh - ph, h)
        for j in range(kw):
            x0, x1 = _valid_range(ow, sw, j * dw - pw, w)
            ranges[i * kw + j, 0], ranges[i * kw + j, 1] = y0, y1
            ranges[i * kw + j, 2], ranges[i * kw + j, 3] = x0, x1
    for c in range(n_ch):
        plane = base + c * h * w
        for i in range(kh):
            for j in range(kw):
                y0, y1 = ranges[i * kw + j, 0], ranges[i * kw + j, 1]
                x0, x1 = ranges[i * kw + j, 2], ranges[i * kw + j, 3]
                u_x0, u_x1 = np.uint64(x0), np.uint64(x1)
                row = ((c * kh + i) * kw + j) * oh
                if flat and y1 > y0 and x1 > x0:
                    # as in _im2col_image: one contiguous run, after zeroing the columns
                    # that wrap over the padding (this buffer is scratch)
                    block = np.uint64(row * ow)
                    for k in range(u_x0):
                        for y in range(y0, y1):
                            cf[block + np.uint64(y * ow) + k] = 0
                    for k in range(u_x1, u_ow):
                        for y in range(y0, y1):
                            cf[block + np.uint64(y * ow) + k] = 0
                    first, last = np.uint64(y0 * ow + x0), np.uint64((y1 - 1) * ow + x1)
                    dst = np.uint64(plane + (y0 - ph + i * dh) * w + x0 + j * dw - pw)
                    for k in range(last - first):
                        of[dst + k] += cf[block + first + k]
                    continue
                for y in range(y0, y1):
                    src = np.uint64((row + y) * ow) + u_x0
                    dst = np.uint64(plane + (y * sh - ph + i * dh) * w + x0 * sw + j * dw - pw)
                    for k in range(u_x1 - u_x0):
                        of[dst + k * u_sw] += cf[src + k]


@_intrinsic
def at(typingctx: Any, a: Any, offset: Any) -> Any:
    """The address (uint64) of element ``offset`` (an integer, wrapping modulo 2**64 like a
    C pointer) of array ``a``'s buffer. An intrinsic, not an inlined function: every kernel
    uses it at several places, and each inlined call was typed and lowered again."""
    if not isinstance(a, types.Array) or not isinstance(offset, types.Integer):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        data = context.make_array(signature.args[0])(context, builder, value=args[0]).data
        i64 = ir.IntType(64)
        off = context.cast(builder, args[1], signature.args[1], types.int64)
        size = ir.Constant(i64, context.get_abi_sizeof(context.get_data_type(a.dtype)))
        return builder.add(builder.ptrtoint(data, i64), builder.mul(off, size))

    return types.uint64(a, offset), codegen


@numba.jit(**JIT_INLINE)
def _copy_image_nhwc(x, n, xq, ph, pw):  # pragma: no cover
    """Image ``x[n]`` (C_in, H, W) channels-last into the interior of ``xq`` (HP, WP, C_in).
    Pixels outside, channels inside: contiguous writes, one read stream per channel (64
    images of 16x32x32: 0.46 ms, against 1.2 ms with channels outside)."""
    _, cin, h, w = x.shape
    for yy in range(h):
        row = xq[ph + yy]
        for xx in range(w):
            dst = row[pw + xx]
            for c in range(cin):
                dst[c] = x[n, c, yy, xx]


# ---- the C functions: (pointer, pointer, 13 int64), one prototype for all three --------

_PROTO = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, *[ctypes.c_int64] * 13)
_FN = numba.typeof(_PROTO(0))


@_intrinsic
def native(typingctx: Any, addr: Any) -> Any:
    """``addr`` (from :func:`address`) as a callable C function of this module's prototype."""
    if not isinstance(addr, types.Integer):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.inttoptr(args[0], context.get_value_type(_FN))

    return _FN(types.int64), codegen


def _im2col_c(x, cols, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow):  # pragma: no cover
    """``cols`` (C*KH*KW, OH*OW) from the image at ``x`` (C, H, W). Calls im2col compiled on
    its own: inlined here (as col2im and the copy are), LeNet-5's 1->6 forward ran 8-20%
    slower (one thread, same process), linked it runs as fast as before."""
    xa = numba.carray(x, (1, c, h, w))
    _im2col_image(
        xa, 0, numba.carray(cols, (c * kh * kw, oh * ow)), kh, kw, sh, sw, ph, pw, dh, dw, oh, ow
    )


def _col2im_c(cols, out, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow):  # pragma: no cover
    """The image at ``out`` (C, H, W) from ``cols`` (C*KH*KW, OH*OW), overwritten."""
    ca = numba.carray(cols, (c * kh * kw, oh * ow))
    _col2im_image(ca, numba.carray(out, (1, c, h, w)), 0, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow)


def _nhwc_c(x, xq, c, h, w, hp, wp, ph, pw, u0, u1, u2, u3, u4, u5):  # pragma: no cover
    """The image at ``x`` (C, H, W) channels-last into the interior of ``xq`` (HP, WP, C)."""
    _copy_image_nhwc(numba.carray(x, (1, c, h, w)), 0, numba.carray(xq, (hp, wp, c)), ph, pw)


_BODIES = {"im2col": _im2col_c, "col2im": _col2im_c, "nhwc": _nhwc_c}
_CFUNCS: dict[tuple[str, Any], Any] = {}


def address(name: str, dtype: Any) -> int:
    """The address of C function ``name`` (``im2col``, ``col2im``, ``nhwc``) for ``dtype``
    (float32 or float64), compiled (or loaded from Numba's disk cache) on first use."""
    key = (name, np.dtype(dtype))
    fn = _CFUNCS.get(key)
    if fn is None:
        if name not in _BODIES or key[1] not in (np.float32, np.float64):
            raise ValueError(
                f"conv_columns.address: name {name!r}, dtype {key[1]}: expected one of "
                f"{sorted(_BODIES)} and float32 or float64"
            )
        ptr = types.CPointer(numba.from_dtype(key[1]))
        sig = types.void(ptr, ptr, *[types.int64] * 13)
        flags = {k: v for k, v in JIT.items() if k in ("cache", "fastmath", "error_model")}
        fn = _CFUNCS[key] = numba.cfunc(sig, **flags)(_BODIES[name])
    return int(fn.address)
