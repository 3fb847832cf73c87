"""A float32 GEMM micro-kernel written as explicit 512-bit vector code, for the per-image
convolution products (:mod:`.conv_images`).

OpenBLAS ran the per-image products of ResNet-20's 16-, 32- and 64-channel layers at
80-125 GFLOPS on one core (16x144x1024, 32x288x256, 64x576x64 with the columns in cache),
where PyTorch's oneDNN convolutions reach ~150-170. Loops written in plain Numba do not get
there: LLVM vectorises the innermost loop only, so the accumulators go through memory
(a register-blocked loop nest with 64-128 scalar accumulators compiled to 5-10 GFLOPS).
This module emits the LLVM IR of the blocked kernel itself (a Numba ``intrinsic``): an
``8 x 32`` block of C held in sixteen ``<16 x float>`` registers, each step of K loading
two vectors of a row of B and broadcasting eight values of A (packed 8 rows side by side,
:func:`pack_rows`, :func:`pack_cols`) into sixteen fused multiply-adds. Same shapes, same
run: 104-166 GFLOPS against OpenBLAS's 89-138 (one core, load ~12).

Only for CPUs with AVX-512 (:func:`available`): with 256-bit registers the sixteen
accumulators would need 32 registers of 16 and spill. Columns past the last full block of
32 are left to the caller (OpenBLAS).
"""

from __future__ import annotations

import functools
from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from ._config import JIT_SERIAL

__all__ = [
    "MR",
    "NR",
    "available",
    "conv_pixels",
    "conv_rows",
    "gemm_blocks",
    "gemm_rows",
    "pack_cols",
    "pack_rows",
    "weight_cols",
    "weight_rows",
]

MR = 8  #: rows of C per block (broadcast values of A per step)
_NV, _VW = 2, 16  # vectors per block row, lanes per vector
NR = _NV * _VW  #: columns of C per block

_JIT = {**JIT_SERIAL, "nogil": True}


@functools.cache
def available() -> bool:
    """Whether the host CPU has AVX-512 (the kernel's sixteen accumulators need 32 registers)."""
    try:
        from llvmlite import binding

        return bool(binding.get_host_cpu_features().get("avx512f", False))
    except Exception:  # pragma: no cover - an llvmlite without the query
        return False


_F32 = ir.FloatType()
_VEC = ir.VectorType(_F32, _VW)
_I64 = ir.IntType(64)
_I32 = ir.IntType(32)


def _codegen(nv: int, table: bool = False, atable: bool = False, split: bool = False) -> Any:
    """LLVM IR of ``C[0:8, 0:16*nv] (=, or += when acc) A[0:8, 0:k] @ B[0:k, 0:16*nv]``; with
    ``table``, B's row ``step`` starts ``offsets[step]`` floats after B (implicit GEMM); with
    ``atable``, A's column ``step`` starts ``offsets[step]`` floats after A (``sk`` is the
    offsets' address: the pixels of an image read in a padded copy, :func:`weight_rows`);
    with ``split`` (two extra arguments), vector ``v`` of B's and C's rows lies ``v * bvs``
    and ``v * cvs`` floats after their start instead of ``16 * v`` (two output rows)."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        a_i, sa, sk, b_i, ldb_, c_i, ldc_, kk, acc_ = args[:9]

        def at(v: int, stride: int) -> Any:  # vector v's offset in B's (0) or C's (1) row
            if split:
                return builder.mul(ir.Constant(_I64, v), args[9 + stride])
            return ir.Constant(_I64, v * _VW)

        fptr, vptr = _F32.as_pointer(), _VEC.as_pointer()
        a_p = builder.inttoptr(a_i, fptr)
        b_p = builder.inttoptr(b_i, fptr)
        c_p = builder.inttoptr(c_i, fptr)
        module = builder.module
        name = "llvm.fma.v16f32"
        fma = module.globals.get(name) or ir.Function(
            module, ir.FunctionType(_VEC, [_VEC, _VEC, _VEC]), name
        )
        zero = ir.Constant(_VEC, [0.0] * _VW)
        undef = ir.Constant(_VEC, ir.Undefined)
        splat = ir.Constant(ir.VectorType(_I32, _VW), [0] * _VW)
        pre = builder.block
        loop = builder.append_basic_block("mk_loop")
        body = builder.append_basic_block("mk_body")
        done = builder.append_basic_block("mk_done")
        builder.branch(loop)
        builder.position_at_end(loop)
        step = builder.phi(_I64)
        step.add_incoming(ir.Constant(_I64, 0), pre)
        accs = []
        for _ in range(MR * nv):
            p = builder.phi(_VEC)
            p.add_incoming(zero, pre)
            accs.append(p)
        builder.cbranch(builder.icmp_signed("<", step, kk), body, done)
        builder.position_at_end(body)
        if table:  # ldb_ is the address of the int64 offsets
            offs = builder.inttoptr(ldb_, _I64.as_pointer())
            brow = builder.gep(b_p, [builder.load(builder.gep(offs, [step]))])
        else:
            brow = builder.gep(b_p, [builder.mul(step, ldb_)])
        bvec = []
        for v in range(nv):
            ptr = builder.bitcast(builder.gep(brow, [at(v, 0)]), vptr)
            load = builder.load(ptr)
            load.align = 4
            bvec.append(load)
        if atable:
            aoffs = builder.inttoptr(sk, _I64.as_pointer())
            acol = builder.gep(a_p, [builder.load(builder.gep(aoffs, [step]))])
        else:
            acol = builder.gep(a_p, [builder.mul(step, sk)])
        new = []
        for r in range(MR):
            s = builder.load(builder.gep(acol, [builder.mul(ir.Constant(_I64, r), sa)]))
            bc = builder.shuffle_vector(
                builder.insert_element(undef, s, ir.Constant(_I32, 0)), undef, splat
            )
            for v in range(nv):
                new.append(builder.call(fma, [bc, bvec[v], accs[r * nv + v]]))
        end = builder.block
        step.add_incoming(builder.add(step, ir.Constant(_I64, 1)), end)
        for p, n in zip(accs, new, strict=True):
            p.add_incoming(n, end)
        builder.branch(loop)
        builder.position_at_end(done)
        flag = acc_
        if acc_.type != ir.IntType(1):
            flag = builder.icmp_unsigned("!=", acc_, ir.Constant(acc_.type, 0))
        with builder.if_else(flag) as (add, put):
            for branch, accumulate in ((add, True), (put, False)):
                with branch:
                    for r in range(MR):
                        crow = builder.gep(c_p, [builder.mul(ir.Constant(_I64, r), ldc_)])
                        for v in range(nv):
                            gep = builder.gep(crow, [at(v, 1)])
                            ptr = builder.bitcast(gep, vptr)
                            value = accs[r * nv + v]
                            if accumulate:
                                old = builder.load(ptr)
                                old.align = 4
                                value = builder.fadd(old, value)
                            builder.store(value, ptr).align = 4
        return context.get_dummy_value()

    return codegen


_SIG = types.void(
    types.uint64,  # A's address
    types.int64,  # A's stride between rows (floats)
    types.int64,  # A's stride between steps of K
    types.uint64,  # B
    types.int64,  # B's row stride
    types.uint64,  # C
    types.int64,  # C's row stride
    types.int64,  # K
    types.boolean,  # add to C (else overwrite)
)


@intrinsic
def _block32(
    typingctx: Any, a: Any, sa: Any, sk: Any, b: Any, ldb: Any, c: Any, ldc: Any, k: Any, acc: Any
) -> Any:
    """``C[0:8, 0:32] (=, or += when acc) A[0:8, 0:k] @ B[0:k, 0:32]`` with A's value
    ``(r, step)`` at ``a + r * sa + step * sk`` (packed: ``sa=1, sk=8``; a row-major matrix:
    ``sa=lda, sk=1``), B's and C's rows ``ldb``/``ldc`` floats apart; addresses as uint64."""
    return _SIG, _codegen(2)


@intrinsic
def _block16(
    typingctx: Any, a: Any, sa: Any, sk: Any, b: Any, ldb: Any, c: Any, ldc: Any, k: Any, acc: Any
) -> Any:
    """:func:`_block32` for 16 columns (eight accumulators)."""
    return _SIG, _codegen(1)


_SIG_TABLE = types.void(
    types.uint64,
    types.int64,
    types.int64,
    types.uint64,
    types.uint64,  # the address of B's row offsets (int64, in floats), instead of ldb
    types.uint64,
    types.int64,
    types.int64,
    types.boolean,
)


@intrinsic
def _table32(
    typingctx: Any, a: Any, sa: Any, sk: Any, b: Any, offs: Any, c: Any, ldc: Any, k: Any, acc: Any
) -> Any:
    """:func:`_block32` with B's rows at ``b + offsets[step]``: the rows of a convolution's
    columns read straight from the (padded) input, one offset per (channel, tap)."""
    return _SIG_TABLE, _codegen(2, table=True)


@intrinsic
def _table16(
    typingctx: Any, a: Any, sa: Any, sk: Any, b: Any, offs: Any, c: Any, ldc: Any, k: Any, acc: Any
) -> Any:
    """:func:`_table32` for 16 columns."""
    return _SIG_TABLE, _codegen(1, table=True)


_SIG_TABLE2 = types.void(*_SIG_TABLE.args, types.int64, types.int64)


@intrinsic
def _table2rows(
    typingctx: Any,
    a: Any,
    sa: Any,
    sk: Any,
    b: Any,
    offs: Any,
    c: Any,
    ldc: Any,
    k: Any,
    acc: Any,
    bvs: Any,
    cvs: Any,
) -> Any:
    """:func:`_table32` with its two vectors of 16 columns ``bvs`` floats apart in B and
    ``cvs`` in C: the last 16 pixels of two output rows as one block (sixteen accumulators
    instead of :func:`_table16`'s eight; one core, 32 images of 32->64 16x16: 84 GMAC/s
    on blocks of 16, 108 on rows of 32)."""
    return _SIG_TABLE2, _codegen(2, table=True, split=True)


_SIG_ATABLE = types.void(
    types.uint64,
    types.int64,
    types.uint64,  # the address of A's column offsets (int64, in floats), instead of sk
    types.uint64,
    types.int64,
    types.uint64,
    types.int64,
    types.int64,
    types.boolean,
)


@intrinsic
def _apix32(
    typingctx: Any, a: Any, sa: Any, offs: Any, b: Any, ldb: Any, c: Any, ldc: Any, k: Any, acc: Any
) -> Any:
    """:func:`_block32` with A's column ``step`` at ``a + offsets[step]`` (rows ``sa`` apart):
    a weight gradient's A read from a padded image, one offset per output pixel."""
    return _SIG_ATABLE, _codegen(2, atable=True)


@intrinsic
def _apix16(
    typingctx: Any, a: Any, sa: Any, offs: Any, b: Any, ldb: Any, c: Any, ldc: Any, k: Any, acc: Any
) -> Any:
    """:func:`_apix32` for 16 columns."""
    return _SIG_ATABLE, _codegen(1, atable=True)


@numba.jit(**_JIT)
def _apix_columns(a, sa, offs, b, ldb, c, ldc, k, acc, full, half):  # pragma: no cover
    """One block of 8 rows of C across its columns with :func:`_apix32` (``full`` columns in
    blocks of 32) and, when ``half``, :func:`_apix16` for the last 16."""
    u4 = np.uint64(4)
    for j in range(0, full, NR):
        uj = np.uint64(j) * u4
        _apix32(a, sa, offs, b + uj, ldb, c + uj, ldc, k, acc)
    if half:
        uj = np.uint64(full) * u4
        _apix16(a, sa, offs, b + uj, ldb, c + uj, ldc, k, acc)


@numba.jit(**_JIT)
def weight_rows(xp_addr, plane, taps, pix, rows, b_addr, ldb, c_addr, n, chunk):  # pragma: no cover
    """Implicit-GEMM weight gradient of one image and group, no im2col: ``C[t * rows + ci, :n]
    += sum_p xp[ci * plane + taps[t] + pix[p]] * B[p, :n]`` for ``xp`` the padded input
    (channel planes ``plane`` floats apart), ``B`` the output gradient transposed (pixels,
    channels; rows ``ldb`` apart), ``C`` (taps * rows, n) row-major; ``rows`` a multiple of 8,
    ``n`` of 16. The pixels go in chunks of ``chunk`` so that B's rows stay in L1 while
    every (tap, 8 channels) block of C takes them."""
    k, nt = pix.shape[0], taps.shape[0]
    full = n - n % NR
    half = n - full >= NR // 2
    u4 = np.uint64(4)
    for p0 in range(0, k, chunk):
        kc = min(chunk, k - p0)
        po = pix.ctypes.data + np.uint64(p0 * 8)
        b0 = b_addr + np.uint64(p0 * ldb) * u4
        for t in range(nt):
            for i in range(rows // MR):
                a = xp_addr + np.uint64(i * MR * plane + taps[t]) * u4
                c = c_addr + np.uint64((t * rows + i * MR) * n) * u4
                _apix_columns(a, plane, po, b0, ldb, c, n, kc, True, full, half)


@numba.jit(**_JIT)
def weight_cols(ap, offs, xq_addr, c_addr, ldc, n, chunk):  # pragma: no cover
    """Implicit-GEMM weight gradient with the image channels-last: ``C[t, co, :n] += sum_p
    A[co, p] xq[offs[t, p] + 0:n]`` for ``A`` the output gradient packed by
    :func:`pack_rows` (``ap``), ``xq`` the padded image (pixels, channels), ``offs[t, p]``
    the offset of pixel ``p``'s window at tap ``t``, ``C`` (taps, M, ldc) row-major; ``n``
    a multiple of 16. Pixels in chunks of ``chunk`` (A's block stays in L1 across taps)."""
    nt, k = offs.shape
    full = n - n % NR
    half = n - full >= NR // 2
    u4 = np.uint64(4)
    m = ap.shape[0] * MR
    for p0 in range(0, k, chunk):
        kc = min(chunk, k - p0)
        for i in range(ap.shape[0]):
            a = ap.ctypes.data + np.uint64((i * k + p0) * MR) * u4
            for t in range(nt):
                po = offs.ctypes.data + np.uint64(t * k + p0) * np.uint64(8)
                c = c_addr + np.uint64((t * m + i * MR) * ldc) * u4
                for j in range(0, full, NR):
                    uj = np.uint64(j) * u4
                    _table32(a, 1, MR, xq_addr + uj, po, c + uj, ldc, kc, True)
                if half:
                    uj = np.uint64(full) * u4
                    _table16(a, 1, MR, xq_addr + uj, po, c + uj, ldc, kc, True)


@numba.jit(**_JIT)
def conv_pixels(
    xq_addr, koffs, bk_addr, c_addr, n, oh, ow, sh, sw, row, ch, kc
):  # pragma: no cover
    """Implicit-GEMM convolution of one image read channels-last, any stride: ``C[p, :n] =
    sum_k xq[pix(p) + koffs[k]] * B[k, :n]`` for ``xq`` the padded image (pixels ``row``
    apart per padded row, ``ch`` floats per pixel), ``pix(p)`` the window origin of output
    pixel ``p = y * ow + x`` (``(y * sh * row + x * sw) * ch``), ``B`` the weights as
    (K, n) rows (``K`` = (tap, channel)), ``C`` (OH*OW, n) row-major (pixels by channels);
    ``ow`` a multiple of 8, ``n`` of 16. Blocks of 8 pixels of one output row are the
    kernel's 8 rows of A (``sw * ch`` floats apart), so no output row needs blocks of 16
    or 32 pixels (8x8 outputs, stride 2). K goes in chunks of ``kc`` steps, each over every
    pixel block, so that B's chunk (``kc`` x n floats) stays in L1 (64 images of 64->64
    8x8, one core: 2.34 ms with K = 576 in one pass, 2.22 with chunks of 128)."""
    k = koffs.shape[0]
    full = n - n % NR
    half = n - full >= NR // 2
    u4 = np.uint64(4)
    sa = sw * ch
    for k0 in range(0, k, kc):
        kk = min(kc, k - k0)
        o_addr = koffs.ctypes.data + np.uint64(k0 * 8)
        b0 = bk_addr + np.uint64(k0 * n) * u4
        acc = k0 > 0
        for y in range(oh):
            for x in range(0, ow, MR):
                a = xq_addr + np.uint64((y * sh * row + x * sw) * ch) * u4
                c = c_addr + np.uint64((y * ow + x) * n) * u4
                _apix_columns(a, sa, o_addr, b0, n, c, n, kk, acc, full, half)


@numba.jit(**_JIT)
def conv_rows(ap, offs, xp_addr, wp_row, c_addr, ldc, oh, ow):  # pragma: no cover
    """Implicit-GEMM stride-1 convolution of one image and group: ``C[co, y, x] = sum_k
    A[co, k] xp[offs[k] + y * wp_row + x]`` for ``A`` packed by :func:`pack_rows` (``ap``),
    ``xp`` the padded input (its rows ``wp_row`` floats apart), ``C`` the output channels'
    planes (``ldc`` floats apart, rows of ``ow``); ``ow`` a multiple of 16. No im2col: each
    block of 32 output pixels of a row reads its K input runs where they lie; a row's last
    16 pixels (``ow`` not a multiple of 32) pair with the next row's (:func:`_table2rows`)."""
    k = offs.shape[0]
    o_addr = offs.ctypes.data
    full = ow - ow % NR
    tail = full < ow
    u4 = np.uint64(4)
    for i in range(ap.shape[0]):
        a_addr = ap.ctypes.data + np.uint64(i * k * MR * 4)
        c_blk = c_addr + np.uint64(i * MR * ldc * 4)
        y = 0
        while y < oh:
            rows = 2 if tail and y + 1 < oh else 1
            for yy in range(y, y + rows):
                for x in range(0, full, NR):
                    b = xp_addr + np.uint64(yy * wp_row + x) * u4
                    c = c_blk + np.uint64(yy * ow + x) * u4
                    _table32(a_addr, 1, MR, b, o_addr, c, ldc, k, False)
            if tail:
                b = xp_addr + np.uint64(y * wp_row + full) * u4
                c = c_blk + np.uint64(y * ow + full) * u4
                if rows == 2:
                    _table2rows(a_addr, 1, MR, b, o_addr, c, ldc, k, False, wp_row, ow)
                else:
                    _table16(a_addr, 1, MR, b, o_addr, c, ldc, k, False)
            y += rows


@numba.jit(**_JIT)
def pack_rows(a, out):  # pragma: no cover - compiled
    """``a`` (M, K) into ``out`` (M // 8, K, 8): each block of 8 rows, one step of K after
    the other (M a multiple of 8)."""
    m, k = a.shape
    for i in range(m // MR):
        for kk in range(k):
            for r in range(MR):
                out[i, kk, r] = a[i * MR + r, kk]


@numba.jit(**_JIT)
def pack_cols(a, out):  # pragma: no cover - compiled
    """``a.T`` packed as :func:`pack_rows` packs ``a.T``: ``a`` (K, M) into (M // 8, K, 8)."""
    k, m = a.shape
    for i in range(m // MR):
        for kk in range(k):
            for r in range(MR):
                out[i, kk, r] = a[kk, i * MR + r]


@numba.jit(**_JIT)
def gemm_blocks(ap, k, b_addr, ldb, c_addr, ldc, n, acc):  # pragma: no cover - compiled
    """``C[:, :n - n % 32] (=|+=) A @ B`` for ``A`` packed by :func:`pack_rows` (``ap``, its
    M // 8 blocks), ``B`` (K, n) and ``C`` (M, n) float32 at the given addresses with row
    strides ``ldb``/``ldc`` (in floats). Returns the columns done (a multiple of 32); the
    caller does the rest."""
    full = n - n % NR
    uc = np.uint64(ldc)
    for i in range(ap.shape[0]):
        a_addr = ap.ctypes.data + np.uint64(i * k * MR * 4)
        c_row = c_addr + np.uint64(i * MR) * uc * np.uint64(4)
        for j in range(0, full, NR):
            uj = np.uint64(j * 4)
            _block32(a_addr, 1, MR, b_addr + uj, ldb, c_row + uj, ldc, k, acc)
    return full


@numba.jit(**_JIT)
def gemm_rows(a_addr, lda, m, k, b_addr, ldb, c_addr, ldc, n, acc):  # pragma: no cover
    """``C[:m, :done] (=|+=) A @ B`` with ``A`` (m, K) a row-major matrix read in place (its
    values broadcast from ``lda``-strided rows: no packing), m a multiple of 8; blocks of 32
    columns, then one of 16. Returns ``done``, the columns done; the caller does the rest."""
    full = n - n % NR
    done = full + NR // 2 if n - full >= NR // 2 else full
    for i in range(m // MR):
        a_row = a_addr + np.uint64(i * MR * lda * 4)
        c_row = c_addr + np.uint64(i * MR * ldc * 4)
        for j in range(0, full, NR):
            uj = np.uint64(j * 4)
            _block32(a_row, lda, 1, b_addr + uj, ldb, c_row + uj, ldc, k, acc)
        if done > full:
            uj = np.uint64(full * 4)
            _block16(a_row, lda, 1, b_addr + uj, ldb, c_row + uj, ldc, k, acc)
    return done
