"""A cache-blocked float32 2-d product on the AVX-512 ``8 x 32`` micro-kernel of
:mod:`.microgemm`: ``C = A @ B`` for any strides of A and B (so ``A.T @ B`` and ``A @ B.T``
are views, packed once per block), any M, N, K.

The loops follow GotoBLAS/BLIS: K in chunks of ``kc`` steps; per chunk B's rows are packed
into panels of 32 columns (``kc`` x 32, zero padded past N), and per ``mc`` rows of A those
rows are packed 8 at a time (zero padded past M); every (A block of 8 rows, B panel) pair
is one micro-kernel call, the B panel staying in L1 while the A blocks stream from L2.
Blocks that hang over C's last row or column go through an ``8 x 32`` scratch tile.
Only for CPUs with AVX-512 (:func:`.microgemm.available`).

Not dispatched by ``matmul``/``dense`` yet: against OpenBLAS on the GPT decoder step's and
the MLP's product shapes (one thread, same process, benchmarks/README.md "Packed micro-kernel
products") it reads 1.04-1.21x on the ``A @ B`` and ``A @ B.T`` shapes of the GPT step but
0.7-0.9x on the weight gradients (``A.T @ B`` with K = 2048) and the MLP's forward. On
an AMD Zen 5 the same (forward/input gradients 0.86-1.18, weight gradients 0.75-0.98, over
KC 256-512 and MC 64-256; README "Products on an AMD Zen 5").
"""

from __future__ import annotations

import numba
import numpy as np

from .microgemm import _JIT, MR, NR, _block32, available

__all__ = ["KC", "MC", "gemm"]

KC = 256  #: steps of K per packed chunk (B's 32-column panel: 32 KiB, in L1)
MC = 64  #: rows of A per packed block (64 KiB at KC, in L2)


@numba.jit(**_JIT)
def _pack_a(a, i0, mm, k0, kk, out):  # pragma: no cover - compiled
    """``a[i0:i0+mm, k0:k0+kk]`` into ``out[0:ceil(mm/8), 0:kk, 0:8]``, zeros past ``mm``."""
    nb = (mm + MR - 1) // MR
    if a.strides[1] <= a.strides[0]:  # rows contiguous-ish: walk K innermost
        for ib in range(nb):
            for r in range(MR):
                row = i0 + ib * MR + r
                if row < i0 + mm:
                    for s in range(kk):
                        out[ib, s, r] = a[row, k0 + s]
                else:
                    for s in range(kk):
                        out[ib, s, r] = 0.0
    else:  # columns contiguous (a transposed view): walk M innermost
        for ib in range(nb):
            w = min(MR, mm - ib * MR)
            for s in range(kk):
                for r in range(w):
                    out[ib, s, r] = a[i0 + ib * MR + r, k0 + s]
                for r in range(w, MR):
                    out[ib, s, r] = 0.0


@numba.jit(**_JIT)
def _pack_at(at, i0, mm, k0, kk, out):  # pragma: no cover - compiled
    """:func:`_pack_a` of ``a = at.T`` for ``at`` (K, M) C-contiguous (a weight gradient's
    ``dy.T``): each step's 8 values are one contiguous run of ``at``'s row, copied as a
    vector (the strided element loop of :func:`_pack_a` took ~0.56 ns per value)."""
    nb = (mm + MR - 1) // MR
    for ib in range(nb):
        c0 = i0 + ib * MR
        w = min(MR, mm - ib * MR)
        if w == MR:
            for s in range(kk):
                row = at[k0 + s]
                for r in range(MR):
                    out[ib, s, r] = row[c0 + r]
        else:
            for s in range(kk):
                for r in range(w):
                    out[ib, s, r] = at[k0 + s, c0 + r]
                for r in range(w, MR):
                    out[ib, s, r] = 0.0


@numba.jit(**_JIT)
def _pack_b(b, k0, kk, out):  # pragma: no cover - compiled
    """``b[k0:k0+kk, :]`` into panels ``out[0:ceil(N/32), 0:kk, 0:32]``, zeros past N."""
    n = b.shape[1]
    nb = (n + NR - 1) // NR
    if b.strides[1] <= b.strides[0]:
        for jb in range(nb):
            w = min(NR, n - jb * NR)
            for s in range(kk):
                for c in range(w):
                    out[jb, s, c] = b[k0 + s, jb * NR + c]
                for c in range(w, NR):
                    out[jb, s, c] = 0.0
    else:  # b is a transposed view: its columns are contiguous
        for jb in range(nb):
            for c in range(NR):
                col = jb * NR + c
                if col < n:
                    for s in range(kk):
                        out[jb, s, c] = b[k0 + s, col]
                else:
                    for s in range(kk):
                        out[jb, s, c] = 0.0


@numba.jit(**_JIT)
def _gemm(a, at, b, c, kc, mc):  # pragma: no cover - compiled
    m, k = a.shape
    n = b.shape[1]
    nbj = (n + NR - 1) // NR
    kb = min(kc, k)
    bp = np.empty((nbj, kb, NR), np.float32)
    # A read in place when its rows are contiguous (the kernel broadcasts its 8 rows' values
    # from 8 rows at a stride; only a tail of < 8 rows is packed); a transposed view of A is
    # packed (read in place it costs a cache line per step of K: 0.44-0.75x OpenBLAS)
    direct = a.strides[1] == 4 and a.strides[0] > 0
    sa, sk = a.strides[0] // 4, a.strides[1] // 4
    ap = np.empty(((min(mc, m) + MR - 1) // MR if not direct else 1, kb, MR), np.float32)
    tile = np.empty((MR, NR), np.float32)
    u4 = np.uint64(4)
    ldc = c.strides[0] // 4
    t_addr = tile.ctypes.data
    mfull = m - m % MR
    for k0 in range(0, k, kc):
        kk = min(kc, k - k0)
        acc = k0 > 0
        _pack_b(b, k0, kk, bp)
        if direct and mfull < m:
            _pack_a(a, mfull, m - mfull, k0, kk, ap)
        for i0 in range(0, m, mc):
            mm = min(mc, m - i0)
            if at.shape[0] > 0:
                _pack_at(at, i0, mm, k0, kk, ap)
            elif not direct:
                _pack_a(a, i0, mm, k0, kk, ap)
            nbi = (mm + MR - 1) // MR
            for jb in range(nbj):
                j0 = jb * NR
                w = min(NR, n - j0)
                b_addr = bp.ctypes.data + np.uint64(jb * bp.shape[1] * NR) * u4
                for ib in range(nbi):
                    row = i0 + ib * MR
                    h = min(MR, m - row)
                    if direct and h == MR:
                        a_addr = a.ctypes.data + np.uint64(row * sa + k0 * sk) * u4
                        a_sa, a_sk = sa, sk
                    else:
                        blk = 0 if direct else ib
                        a_addr = ap.ctypes.data + np.uint64(blk * ap.shape[1] * MR) * u4
                        a_sa, a_sk = 1, MR
                    if h == MR and w == NR:
                        c_addr = c.ctypes.data + np.uint64(row * ldc + j0) * u4
                        _block32(a_addr, a_sa, a_sk, b_addr, NR, c_addr, ldc, kk, acc)
                    else:
                        _block32(a_addr, a_sa, a_sk, b_addr, NR, t_addr, NR, kk, False)
                        for r in range(h):
                            for q in range(w):
                                if acc:
                                    c[row + r, j0 + q] += tile[r, q]
                                else:
                                    c[row + r, j0 + q] = tile[r, q]


def gemm(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``a @ b`` for float32 2-d ``a`` (M, K) and ``b`` (K, N) of any strides (transposed
    views are packed as they lie), into ``out`` (M, N) when given; AVX-512 CPUs only."""
    if not available():
        raise RuntimeError("packed_gemm.gemm needs a CPU with AVX-512 (microgemm.available())")
    for name, x in (("a", a), ("b", b)):
        if not isinstance(x, np.ndarray) or x.dtype != np.float32 or x.ndim != 2:
            raise TypeError(f"gemm: {name} must be a 2-d float32 ndarray, got {_describe(x)}")
    m, k = a.shape
    if b.shape[0] != k:
        raise ValueError(f"gemm: b has {b.shape[0]} rows, expected K = {k} (a's columns)")
    n = b.shape[1]
    if out is None:
        out = np.empty((m, n), np.float32)
    elif out.shape != (m, n) or out.dtype != np.float32:
        raise ValueError(f"gemm: out must be float32 of shape {(m, n)}, got {_describe(out)}")
    if m == 0 or n == 0:
        return out
    if k == 0:
        out[...] = 0
        return out
    # a transposed view of a C-contiguous (K, M) array is packed from that array
    at = a.T if a.strides[1] != 4 and a.T.flags.c_contiguous else _NO_AT
    if out.strides[1] == 4 and out.strides[0] > 0:
        _gemm(a, at, b, out, KC, MC)
    else:  # the kernel writes rows of unit stride
        tmp = np.empty((m, n), np.float32)
        _gemm(a, at, b, tmp, KC, MC)
        out[...] = tmp
    return out


_NO_AT = np.empty((0, 0), np.float32)


def _describe(x: object) -> str:
    if isinstance(x, np.ndarray):
        return f"{x.dtype} array of shape {x.shape}"
    return type(x).__name__
