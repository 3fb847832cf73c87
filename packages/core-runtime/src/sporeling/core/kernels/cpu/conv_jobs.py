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
from llvmlite import ir  # type: ignore[import-untyped]
from numba import types
from numba.extending import intrinsic
from numba.np.arrayobj import populate_array

from . import conv_backward as cb
from . import conv_forward as cf
from ._jobs import SLOT, inlining
from .conv_columns import JIT_INLINE

_intrinsic: Any = intrinsic

# ---- reading the packed arguments (:func:`._jobs.pack`'s layout) ----------------------
# Intrinsics rather than ``_jobs``' inlined view functions: each inlined call was copied,
# typed and lowered again (an array read per size), a third of a job's compile.


def _slot(builder: Any, args: Any, j: Any, at: int) -> Any:
    """Word ``at`` of argument ``j``'s slot in the block at address ``args``."""
    i64 = ir.IntType(64)
    base = builder.add(builder.mul(j, ir.Constant(i64, SLOT)), ir.Constant(i64, 1 + at))
    return builder.load(builder.gep(builder.inttoptr(args, i64.as_pointer()), [base]))


def _array(context: Any, builder: Any, aryty: Any, data: Any, shape: list[Any]) -> Any:
    """A C-contiguous array of type ``aryty`` over address ``data`` (int64) and ``shape``."""
    elem = context.get_data_type(aryty.dtype)
    size = context.get_abi_sizeof(elem)
    strides, step = [], ir.Constant(ir.IntType(64), size)
    for n in reversed(shape):
        strides.insert(0, step)
        step = builder.mul(step, n)
    ary = context.make_array(aryty)(context, builder)
    ptr = builder.inttoptr(data, elem.as_pointer())
    populate_array(ary, data=ptr, shape=shape, strides=strides, itemsize=size, meminfo=None)
    return ary._getvalue()


def _views(ndim: int) -> tuple[Any, Any]:
    """Intrinsics ``view(args, j, dtype)``: argument ``j``, an ``ndim``-d array of ``dtype``;
    ``part(args, j, dtype, k)``: its ``k``-th sub-array (``view(...)[k]``, ``ndim - 1`` d)."""

    def typed(dtype: Any, d: int) -> Any:
        return types.Array(dtype.instance_type, d, "C")

    def view(typingctx: Any, args: Any, j: Any, dtype: Any) -> Any:
        if not isinstance(dtype, types.NumberClass):
            return None

        def codegen(context: Any, builder: Any, sig: Any, a: Any) -> Any:
            shape = [_slot(builder, a[0], a[1], 1 + d) for d in range(ndim)]
            return _array(context, builder, sig.return_type, _slot(builder, a[0], a[1], 0), shape)

        return typed(dtype, ndim)(types.int64, types.int64, dtype), codegen

    def part(typingctx: Any, args: Any, j: Any, dtype: Any, k: Any) -> Any:
        if not isinstance(dtype, types.NumberClass):
            return None

        def codegen(context: Any, builder: Any, sig: Any, a: Any) -> Any:
            shape = [_slot(builder, a[0], a[1], 1 + d) for d in range(1, ndim)]
            count = ir.Constant(
                ir.IntType(64), context.get_abi_sizeof(context.get_data_type(sig.return_type.dtype))
            )
            for n in shape:
                count = builder.mul(count, n)
            data = builder.add(_slot(builder, a[0], a[1], 0), builder.mul(a[3], count))
            return _array(context, builder, sig.return_type, data, shape)

        return typed(dtype, ndim - 1)(types.int64, types.int64, dtype, types.int64), codegen

    return _intrinsic(view), _intrinsic(part)


view1, _ = _views(1)
view2, _ = _views(2)
view3, part3 = _views(3)
view4, part4 = _views(4)
_, part5 = _views(5)


@_intrinsic
def integer(typingctx: Any, args: Any, j: Any) -> Any:
    """Integer argument ``j`` of the block at address ``args``."""

    def codegen(context: Any, builder: Any, sig: Any, a: Any) -> Any:
        return _slot(builder, a[0], a[1], 0)

    return types.int64(types.int64, types.int64), codegen


@_intrinsic
def real32(typingctx: Any, args: Any, j: Any) -> Any:
    """Float argument ``j`` (a float64's bits) of the block at ``args``, as a float32."""

    def codegen(context: Any, builder: Any, sig: Any, a: Any) -> Any:
        value = builder.bitcast(_slot(builder, a[0], a[1], 0), ir.DoubleType())
        return builder.fptrunc(value, ir.FloatType())

    return types.float32(types.int64, types.int64), codegen


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
        part3(p, 5, _F, k), view1(p, 6, _I), integer(p, 7), real32(p, 8), real32(p, 9),
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
        view4(p, 5, _F), part3(p, 6, _F, k), view1(p, 7, _I), integer(p, 8), real32(p, 9),
        real32(p, 10), lo, hi,
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
        view4(p, 5, _F), part3(p, 6, _F, k), view1(p, 7, _I), integer(p, 8), real32(p, 9),
        real32(p, 10), lo, hi,
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
        part3(p, 5, _F, k), view1(p, 6, _I), integer(p, 7), real32(p, 8), real32(p, 9),
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
        real32(p, 9), lo, hi,
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
        part3(p, 5, _F, k), view1(p, 6, _I), integer(p, 7), real32(p, 8), lo, hi,
    )  # fmt: skip


@_with_kernel_flags
def weight_grad_32(args, k, lo, hi):  # pragma: no cover - compiled
    p = args
    _weight_grad(_gemm32(integer(p, 0)), p, k, lo, hi)


@_with_kernel_flags
def weight_grad_64(args, k, lo, hi):  # pragma: no cover - compiled
    p = args
    _weight_grad(_gemm64(integer(p, 0)), p, k, lo, hi)
