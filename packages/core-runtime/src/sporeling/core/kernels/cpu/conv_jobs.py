"""The per-image convolution kernels (:mod:`.conv_forward`, :mod:`.conv_backward`) as jobs
for :mod:`._jobs` (workers that never take the GIL): one wrapper per kernel, unpacking the
arguments that :func:`.conv_images._run` packs in the same order. Float32 kernels only: those on the
micro-kernel, and those that call OpenBLAS's ``cblas_sgemm``, whose address travels in the
packed arguments and becomes a typed pointer again in the job (one job per width of CBLAS's
integers, so that a disk cache never pairs code with the other width).

Each job's kernel and unpacking helper are inlined into its ``cfunc`` (``inline="always"``,
the cfunc compiled with the kernels' flags): compiled apart, each level was linked into the
next and optimised again there, three compiles of the same code on a cold cache. The
callees that several jobs share (im2col, col2im, the channels-last copy) are not linked:
they are :mod:`.conv_columns`' C functions, their addresses among the packed arguments.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numba
import numpy as np
from numba import types
from numba.extending import intrinsic

from . import conv_backward as cb
from . import conv_forward as cf
from ._jobs import inlining, integer, part3, part4, part5, real, view1, view2, view4
from .conv_columns import JIT_INLINE

_intrinsic: Any = intrinsic

_F, _I = np.float32, np.int64
#: every job inlines its kernel (``conv_columns.JIT_INLINE``) and so compiles with its flags
_with_kernel_flags = inlining(JIT_INLINE)


@_with_kernel_flags
def forward_implicit(args, k, lo, hi):  # pragma: no cover - compiled
    """(x, wp, out, xp, rest, offs, geo, groups):
    :func:`.conv_forward._forward_kernel_implicit`."""
    p = args
    cf._forward_kernel_implicit(
        view4(p, 0, _F), view4(p, 1, _F), view4(p, 2, _F), part4(p, 3, _F, k),
        part3(p, 4, _F, k), view1(p, 5, _I), view1(p, 6, _I), integer(p, 7), lo, hi,
    )  # fmt: skip


@_with_kernel_flags
def forward_flat(args, k, lo, hi):  # pragma: no cover - compiled
    """(x, wp, out, xp, wide, offs, geo, groups, hp):
    :func:`.conv_forward._forward_kernel_flat`."""
    p = args
    cf._forward_kernel_flat(
        view4(p, 0, _F), view4(p, 1, _F), view4(p, 2, _F), part3(p, 3, _F, k),
        part3(p, 4, _F, k), view1(p, 5, _I), view1(p, 6, _I), integer(p, 7), integer(p, 8),
        lo, hi,
    )  # fmt: skip


@_with_kernel_flags
def forward_pixels(args, k, lo, hi):  # pragma: no cover - compiled
    """(nhwc, x, wk, out, xq, ct, koffs, geo, kc): :func:`.conv_forward._forward_kernel_pixels`."""
    p = args
    cf._forward_kernel_pixels(
        integer(p, 0), view4(p, 1, _F), view2(p, 2, _F), view4(p, 3, _F), part4(p, 4, _F, k),
        part3(p, 5, _F, k), view1(p, 6, _I), view1(p, 7, _I), integer(p, 8), lo, hi,
    )  # fmt: skip


@_with_kernel_flags
def weight_grad_nhwc(args, k, lo, hi):  # pragma: no cover - compiled
    """(nhwc, x, gy, dwq, xq, gp, toffs, geo, groups, chunk):
    :func:`.conv_backward._weight_grad_kernel_nhwc`."""
    p = args
    cb._weight_grad_kernel_nhwc(
        integer(p, 0), view4(p, 1, _F), view4(p, 2, _F), part5(p, 3, _F, k),
        part4(p, 4, _F, k), part4(p, 5, _F, k), view2(p, 6, _I), view1(p, 7, _I),
        integer(p, 8), integer(p, 9), lo, hi,
    )  # fmt: skip


@_with_kernel_flags
def weight_grad_implicit(args, k, lo, hi):  # pragma: no cover - compiled
    """(x, gy, sums, xp, gyt, taps, pix, geo, groups, chunk):
    :func:`.conv_backward._weight_grad_kernel_implicit`."""
    p = args
    cb._weight_grad_kernel_implicit(
        view4(p, 0, _F), view4(p, 1, _F), part4(p, 2, _F, k), part4(p, 3, _F, k),
        part3(p, 4, _F, k), view1(p, 5, _I), view1(p, 6, _I), view1(p, 7, _I),
        integer(p, 8), integer(p, 9), lo, hi,
    )  # fmt: skip


# ---- kernels that call OpenBLAS's cblas_sgemm (a pointer in the packed arguments) -------


def _gemm_type(integer: Any) -> Any:
    """Numba's type of ``cblas_sgemm`` with CBLAS integers of ``integer`` (ctypes)."""
    e, p, f = ctypes.c_int, ctypes.c_void_p, ctypes.c_float
    proto = ctypes.CFUNCTYPE(
        None, e, e, e, *[integer] * 3, f, p, integer, p, integer, f, p, integer
    )
    return numba.typeof(proto(0))


_GEMM32, _GEMM64 = _gemm_type(ctypes.c_int32), _gemm_type(ctypes.c_int64)


@_intrinsic
def _gemm32(typingctx: Any, addr: Any) -> Any:
    """``addr`` as ``cblas_sgemm`` with 32-bit CBLAS integers."""
    if not isinstance(addr, types.Integer):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.inttoptr(args[0], context.get_value_type(_GEMM32))

    return _GEMM32(types.int64), codegen


@_intrinsic
def _gemm64(typingctx: Any, addr: Any) -> Any:
    """``addr`` as ``cblas_sgemm`` with 64-bit CBLAS integers (OpenBLAS's INTERFACE64)."""
    if not isinstance(addr, types.Integer):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.inttoptr(args[0], context.get_value_type(_GEMM64))

    return _GEMM64(types.int64), codegen


def gemm_jobs(name: str) -> tuple[Any, Any]:
    """The two wrappers (32- and 64-bit CBLAS integers) of kernel ``name``; each compiles
    only if used, and their caches cannot mix up the two widths."""
    return globals()[f"{name}_32"], globals()[f"{name}_64"]


# Each kernel: a helper that unpacks (its arguments after the gemm pointer, argument 0) and
# is compiled per gemm type, and one job per integer width.


@numba.njit(cache=True, inline="always")
def _forward(gemm, p, k, lo, hi):  # pragma: no cover - compiled
    """(gemm, im2col, x, w2, out, cols, geo, groups, one, zero):
    :func:`.conv_forward._forward_kernel`."""
    cf._forward_kernel(
        gemm, integer(p, 1), view4(p, 2, _F), view2(p, 3, _F), view4(p, 4, _F),
        part3(p, 5, _F, k), view1(p, 6, _I), integer(p, 7), _F(real(p, 8)), _F(real(p, 9)),
        lo, hi,
    )  # fmt: skip


@_with_kernel_flags
def forward_32(args, k, lo, hi):  # pragma: no cover - compiled
    p = args
    _forward(_gemm32(integer(p, 0)), p, k, lo, hi)


@_with_kernel_flags
def forward_64(args, k, lo, hi):  # pragma: no cover - compiled
    p = args
    _forward(_gemm64(integer(p, 0)), p, k, lo, hi)


@numba.njit(cache=True, inline="always")
def _forward_mk(gemm, p, k, lo, hi):  # pragma: no cover - compiled
    """(gemm, im2col, x, wp, w2, out, cols, geo, groups, one, zero):
    :func:`.conv_forward._forward_kernel_mk`."""
    cf._forward_kernel_mk(
        gemm, integer(p, 1), view4(p, 2, _F), view4(p, 3, _F), view2(p, 4, _F),
        view4(p, 5, _F), part3(p, 6, _F, k), view1(p, 7, _I), integer(p, 8), _F(real(p, 9)),
        _F(real(p, 10)), lo, hi,
    )  # fmt: skip


@_with_kernel_flags
def forward_mk_32(args, k, lo, hi):  # pragma: no cover - compiled
    p = args
    _forward_mk(_gemm32(integer(p, 0)), p, k, lo, hi)


@_with_kernel_flags
def forward_mk_64(args, k, lo, hi):  # pragma: no cover - compiled
    p = args
    _forward_mk(_gemm64(integer(p, 0)), p, k, lo, hi)


@numba.njit(cache=True, inline="always")
def _data_grad_mk(gemm, p, k, lo, hi):  # pragma: no cover - compiled
    """(gemm, col2im, gy, wpt, w2, dx, dcols, geo, groups, one, zero):
    :func:`.conv_backward._data_grad_kernel_mk`."""
    cb._data_grad_kernel_mk(
        gemm, integer(p, 1), view4(p, 2, _F), view4(p, 3, _F), view2(p, 4, _F),
        view4(p, 5, _F), part3(p, 6, _F, k), view1(p, 7, _I), integer(p, 8), _F(real(p, 9)),
        _F(real(p, 10)), lo, hi,
    )  # fmt: skip


@_with_kernel_flags
def data_grad_mk_32(args, k, lo, hi):  # pragma: no cover - compiled
    p = args
    _data_grad_mk(_gemm32(integer(p, 0)), p, k, lo, hi)


@_with_kernel_flags
def data_grad_mk_64(args, k, lo, hi):  # pragma: no cover - compiled
    p = args
    _data_grad_mk(_gemm64(integer(p, 0)), p, k, lo, hi)


@numba.njit(cache=True, inline="always")
def _data_grad(gemm, p, k, lo, hi):  # pragma: no cover - compiled
    """(gemm, col2im, gy, w2, dx, dcols, geo, groups, one, zero):
    :func:`.conv_backward._data_grad_kernel`."""
    cb._data_grad_kernel(
        gemm, integer(p, 1), view4(p, 2, _F), view2(p, 3, _F), view4(p, 4, _F),
        part3(p, 5, _F, k), view1(p, 6, _I), integer(p, 7), _F(real(p, 8)), _F(real(p, 9)),
        lo, hi,
    )  # fmt: skip


@_with_kernel_flags
def data_grad_32(args, k, lo, hi):  # pragma: no cover - compiled
    p = args
    _data_grad(_gemm32(integer(p, 0)), p, k, lo, hi)


@_with_kernel_flags
def data_grad_64(args, k, lo, hi):  # pragma: no cover - compiled
    p = args
    _data_grad(_gemm64(integer(p, 0)), p, k, lo, hi)


@numba.njit(cache=True, inline="always")
def _weight_grad_mk(gemm, p, k, lo, hi):  # pragma: no cover - compiled
    """(gemm, im2col, x, gy, sums, cols, gyt, geo, groups, one):
    :func:`.conv_backward._weight_grad_kernel_mk`."""
    cb._weight_grad_kernel_mk(
        gemm, integer(p, 1), view4(p, 2, _F), view4(p, 3, _F), part4(p, 4, _F, k),
        part3(p, 5, _F, k), part3(p, 6, _F, k), view1(p, 7, _I), integer(p, 8),
        _F(real(p, 9)), lo, hi,
    )  # fmt: skip


@_with_kernel_flags
def weight_grad_mk_32(args, k, lo, hi):  # pragma: no cover - compiled
    p = args
    _weight_grad_mk(_gemm32(integer(p, 0)), p, k, lo, hi)


@_with_kernel_flags
def weight_grad_mk_64(args, k, lo, hi):  # pragma: no cover - compiled
    p = args
    _weight_grad_mk(_gemm64(integer(p, 0)), p, k, lo, hi)


@numba.njit(cache=True, inline="always")
def _weight_grad(gemm, p, k, lo, hi):  # pragma: no cover - compiled
    """(gemm, im2col, x, gy, sums, cols, geo, groups, one):
    :func:`.conv_backward._weight_grad_kernel`."""
    cb._weight_grad_kernel(
        gemm, integer(p, 1), view4(p, 2, _F), view4(p, 3, _F), part4(p, 4, _F, k),
        part3(p, 5, _F, k), view1(p, 6, _I), integer(p, 7), _F(real(p, 8)), lo, hi,
    )  # fmt: skip


@_with_kernel_flags
def weight_grad_32(args, k, lo, hi):  # pragma: no cover - compiled
    p = args
    _weight_grad(_gemm32(integer(p, 0)), p, k, lo, hi)


@_with_kernel_flags
def weight_grad_64(args, k, lo, hi):  # pragma: no cover - compiled
    p = args
    _weight_grad(_gemm64(integer(p, 0)), p, k, lo, hi)
