"""Golden stick's deploy layers, self-contained: int8 layers (SimQAT), bit-packed convs
(SLB) and fixed-grid activation quantizers.

This file imports only NumPy, Numba and ``sporeling.core`` -- never golden stick -- because
:func:`sporeling.goldenstick.export.export_network` copies it beside an exported model
(``sporeling_gs_runtime.py``), so the exported int8 and SLB models load where only
``sporeling-core-runtime`` is installed. Every layer is built from its structure alone
(shapes, strides, flags); its values are Parameters that the checkpoint fills, and
``export_args()`` gives the constructor arguments the exported description writes.
"""

from __future__ import annotations

import platform
from typing import Any

import numpy as np
from llvmlite import binding as llvm_binding
from llvmlite import ir
from numba import get_num_threads, njit, prange, types
from numba.core import cgutils
from numba.core import config as numba_config
from numba.extending import intrinsic

from sporeling.core import Parameter, Tensor, nn, ops

__all__ = [
    "qgemm",
    "pack_weight",
    "quantize_input",
    "fake_quant_array",
    "pack_bits",
    "unpack_bits",
    "slb_values",
    "FixedFakeQuant",
    "Int8Linear",
    "PackedConv2d",
    "QuantizedLayer",
]

# ---- kernels ----------------------------------------------------------------------------
#
# The integer product is tiled: a tile is TR output channels x TC columns (pixels of one
# image, or rows of a Dense input) of int32 sums, kept in vector registers while the
# reduction runs over pairs of int16 levels. Weights are packed once, (C_out rounded up to
# TR, K rounded up to even) int16; the other operand is packed per call into panels
# (column blocks, K / 2, TC, 2) by the im2col, so each step of a tile reads TC pairs
# contiguously and broadcasts one weight pair per channel: multiply-add of int16 pairs
# into int32 (x86's pmaddwd, vpdpwssd with VNNI), written in LLVM IR because LLVM does not
# find that form in a scalar loop. Where AVX2 is missing the same IR is written with
# generic vector operations (correct everywhere, slower).

TR, TC = 4, 16
_I16, _I32 = ir.IntType(16), ir.IntType(32)
_V16 = ir.VectorType(_I16, 16)
_V8 = ir.VectorType(_I32, 8)


def _host_has_avx2() -> bool:
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    if numba_config.CPU_NAME not in (None, "", "host"):
        return False  # a portable cache for another CPU: keep to generic IR
    try:
        return bool(llvm_binding.get_host_cpu_features().get("avx2", False))
    except Exception:  # pragma: no cover - an llvmlite without feature queries
        return False


_AVX2 = _host_has_avx2()


def _pmadd_avx2(builder: Any, x: Any, y: Any) -> Any:
    fnty = ir.FunctionType(_V8, [_V16, _V16])
    fn = builder.module.declare_intrinsic("llvm.x86.avx2.pmadd.wd", fnty=fnty)
    return builder.call(fn, [x, y])


def _pmadd_generic(builder: Any, x: Any, y: Any) -> Any:
    def half(v: Any, first: int) -> Any:
        mask = ir.Constant(ir.VectorType(_I32, 8), list(range(first, 16, 2)))
        return builder.sext(builder.shuffle_vector(v, v, mask), _V8)

    even = builder.mul(half(x, 0), half(y, 0))
    return builder.add(even, builder.mul(half(x, 1), half(y, 1)))


def _make_tile(pmadd: Any) -> Any:
    @intrinsic
    def tile(typingctx, w, w_off, ldw, b, b_off, ldb, k2, acc):  # pragma: no cover
        """``acc[r * TC + j] = sum_t w[w_off + r * ldw + t] * b16[b_off + (t // 2) * ldb + 2 *
        j + t % 2]``: TR x TC int32 sums of int16 products. ``w`` is int16, ``b`` any
        array read as int16 pairs (``b16``; offsets in int16 units), ``acc`` int32."""
        sig = types.void(w, w_off, ldw, b, b_off, ldb, k2, acc)

        def codegen(context, builder, sig, args):
            w, w_off, ldw, b, b_off, ldb, k2, acc = args
            wd = context.make_array(sig.args[0])(context, builder, w).data
            bd = context.make_array(sig.args[3])(context, builder, b).data
            bd = builder.bitcast(bd, _I16.as_pointer())
            ad = context.make_array(sig.args[7])(context, builder, acc).data
            intp = context.get_value_type(types.intp)
            zero = ir.Constant(_V8, [0] * 8)
            slots = [cgutils.alloca_once_value(builder, zero) for _ in range(TR * 2)]
            splat = ir.Constant(ir.VectorType(_I32, 8), [0] * 8)
            with cgutils.for_range(builder, k2) as loop:
                t2 = loop.index
                bp = builder.gep(bd, [builder.add(b_off, builder.mul(t2, ldb))])
                bv = [
                    builder.load(
                        builder.bitcast(
                            builder.gep(bp, [ir.Constant(intp, 16 * h)]), _V16.as_pointer()
                        ),
                        align=2,
                    )
                    for h in range(2)
                ]
                for r in range(TR):
                    row = builder.add(w_off, builder.mul(ir.Constant(intp, r), ldw))
                    wp = builder.gep(wd, [builder.add(row, builder.mul(t2, ir.Constant(intp, 2)))])
                    pair = builder.load(builder.bitcast(wp, _I32.as_pointer()), align=2)
                    vec = builder.insert_element(ir.Constant(_V8, None), pair, ir.Constant(_I32, 0))
                    vec = builder.bitcast(builder.shuffle_vector(vec, vec, splat), _V16)
                    for h in range(2):
                        slot = slots[r * 2 + h]
                        builder.store(
                            builder.add(builder.load(slot), pmadd(builder, vec, bv[h])), slot
                        )
            for r in range(TR):
                for h in range(2):
                    dst = builder.gep(ad, [ir.Constant(intp, r * TC + 8 * h)])
                    builder.store(
                        builder.load(slots[r * 2 + h]),
                        builder.bitcast(dst, _V8.as_pointer()),
                        align=4,
                    )
            return context.get_dummy_value()

        return sig, codegen

    return tile


_tile_generic = _make_tile(_pmadd_generic)
_tile = _make_tile(_pmadd_avx2) if _AVX2 else _tile_generic


def pack_weight(w: np.ndarray) -> np.ndarray:
    """Integer weights ``(C_out, ...)`` as the kernels read them: ``(C_out`` rounded up to
    ``TR``, ``K`` rounded up to even) int16, zero filled (a zero weight cancels whatever the
    padding of the other operand holds)."""
    w2 = np.asarray(w).reshape(w.shape[0], -1)
    co, k = w2.shape
    out = np.zeros((-(-co // TR) * TR, k + k % 2), np.int16)
    out[:co, :k] = w2
    return out


@njit(cache=True, inline="always")
def _epilogue(acc, nr, c0, chan, flags, grid, tmp):  # pragma: no cover - compiled
    """Rows ``0 .. nr`` of a tile (channels ``c0 + r``) into ``tmp`` (TR x TC float32):
    ``acc * scale + bias`` (float32), the BN affine, ReLU / ReLU6 and the output grid
    ``(nmin, nmax, scale, 1 / scale)`` in float64, times the reciprocal as the fake
    quantizer computes it. Whole rows of TC (a constant trip count, contiguous): LLVM
    vectorises them; the flags are tested once per row."""
    aff, act, quant = flags
    g0, g1, g2, inv = grid[0], grid[1], grid[2], grid[3]
    zero, six = np.float32(0.0), np.float32(6.0)
    for r in range(nr):
        c = c0 + r
        f0, f1, f2, f3 = chan[0, c], chan[1, c], chan[2, c], chan[3, c]
        a = acc[r * TC : (r + 1) * TC]
        t = tmp[r * TC : (r + 1) * TC]
        if not aff and act == 1 and quant:  # Conv + BN folded + ReLU, the common case
            for j in range(TC):
                y = max(np.float32(a[j]) * f0 + f1, zero)
                v = min(max(np.float64(y), g0), g1)
                t[j] = np.float32(np.rint((v - g0) * inv) * g2 + g0)
            continue
        for j in range(TC):
            y = np.float32(a[j]) * f0 + f1
            if aff:
                y = y * f2 + f3
            if act >= 1:
                y = max(y, zero)
                if act == 2:
                    y = min(y, six)
            if quant:
                v = min(max(np.float64(y), g0), g1)
                y = np.float32(np.rint((v - g0) * inv) * g2 + g0)
            t[j] = y


@njit(cache=True, inline="always")
def _level(v, inv, lo, hi):  # pragma: no cover - compiled
    """The zero-centred level of ``v`` on the input grid ``(1 / scale, lo, hi)`` (scalars:
    read from the grid array inside the loop, they were reloaded at every store)."""
    q = np.rint(np.float64(v) * inv)
    return np.int16(min(max(q, lo), hi))


@njit(cache=True, inline="always")
def _pair(a, b):  # pragma: no cover - compiled
    """Two int16 levels as one little-endian pair (``a`` first), the panels' element."""
    return np.uint32(np.uint16(a)) | (np.uint32(np.uint16(b)) << np.uint32(16))


@njit(cache=True)
def _gemm_panel(
    wf, kp, co, panel, p, acc, dst, c_stride, p_stride, chan, flags, grid, rowlen, valid, coff
):  # pragma: no cover
    """Every tile of ``W (co, kp) x panel (kp / 2, >= p) pairs``, each through the epilogue.
    Panel column ``q = row * rowlen + col`` is an output only where ``col < valid``, at
    ``dst[c * c_stride + (row * valid + col) * p_stride]`` (a stride-1 conv's panel runs
    over padded rows, ``rowlen`` > ``valid``; elsewhere ``rowlen == valid``); the
    per-channel values of channel ``c`` are ``chan[:, coff + c]`` (a conv group's)."""
    k2, ldb = panel.shape
    pf = panel.reshape(-1)
    tmp = np.empty(TR * TC, np.float32)
    for blk in range(-(-p // TC)):
        q0 = blk * TC
        width = min(TC, p - q0)
        for c0 in range(0, co, TR):
            _tile(wf, c0 * kp, kp, pf, q0 * 2, ldb * 2, k2, acc)
            nr = min(TR, co - c0)
            _epilogue(acc, nr, coff + c0, chan, flags, grid, tmp)
            j = 0
            while j < width:  # runs of one row
                row = (q0 + j) // rowlen
                col = q0 + j - row * rowlen
                run = min(width - j, rowlen - col)
                if col < valid:
                    n = min(run, valid - col)
                    for r in range(nr):
                        at = (c0 + r) * c_stride + (row * valid + col) * p_stride
                        src = tmp[r * TC + j : r * TC + j + n]
                        for i in range(n):
                            dst[at + i * p_stride] = src[i]
                j += run


@njit(cache=True)
def _pairs(q, sa, sb):  # pragma: no cover - compiled
    """``q[i] = pair(sa[i], sb[i])``: one row of a panel (its own function: written inline
    beside the strided case, this loop ran 3x slower)."""
    for i in range(q.size):
        q[i] = _pair(sa[i], sb[i])


@njit(cache=True)
def _conv_image(
    xb, cbase, qin, wf, kp, co, geo, oh, ow, chan, coff, flags, grid, ob, xq, panel, acc
):  # pragma: no cover
    """One image ``xb (C, H, W)`` (its channels ``cbase ..``, as many as ``xq`` has: one
    conv group) of :func:`_qconv` into ``ob`` (its flat NCHW output): the
    image's levels into ``xq`` (padded; the border stays zero), its im2col ``panel`` of
    level pairs, the tiles and the epilogue. The buffers are the thread's, reused: fresh
    ones per image (zeroed, page-faulted) cost as much as the product."""
    _, h, wd = xb.shape
    c = xq.shape[0]
    kh, kw, sh, sw, pt, pl, dh, dw, pb, pr = geo
    k2 = kp // 2
    k = c * kh * kw
    p = oh * ow
    inv, lo, hi = qin[0], qin[1], qin[2]
    for ci in range(c):
        for y in range(h):
            src = xb[cbase + ci, y]
            dst = xq[ci, y + pt]
            dst = dst[pl : pl + wd]
            for xx in range(wd):
                dst[xx] = _level(src[xx], inv, lo, hi)
    if sh == 1 and sw == 1:
        # a tap's inputs for every output pixel are one run of the padded image when the
        # panel's columns walk the padded rows (width wpd, of which ow are outputs)
        wpd = wd + pl + pr
        plane = xq.shape[1] * wpd
        q = (oh - 1) * wpd + ow
        flat = xq.reshape(-1)
        for t2 in range(k2):
            ka = 2 * t2
            kb = ka + 1
            oa = ka // (kh * kw) * plane + (ka // kw) % kh * dh * wpd + ka % kw * dw
            prow = panel[t2]
            if kb < k:
                ob_ = kb // (kh * kw) * plane + (kb // kw) % kh * dh * wpd + kb % kw * dw
                _pairs(prow[:q], flat[oa : oa + q], flat[ob_ : ob_ + q])
            else:
                _pairs(prow[:q], flat[oa : oa + q], np.zeros(q, np.int16))
        _gemm_panel(wf, kp, co, panel, q, acc, ob, p, 1, chan, flags, grid, wpd, ow, coff)
        return
    ta = np.zeros(ow, np.int16)
    tb = np.zeros(ow, np.int16)
    for t2 in range(k2):
        ka = 2 * t2
        ca, ya, xa = ka // (kh * kw), (ka // kw) % kh * dh, ka % kw * dw
        kb = min(ka + 1, k - 1)
        cb, yb, xb_ = kb // (kh * kw), (kb // kw) % kh * dh, kb % kw * dw
        last = ka + 1 >= k
        prow = panel[t2]  # (1-d views taken in two steps: C layout)
        for oy in range(oh):
            ra = xq[ca, oy * sh + ya]
            rb = xq[cb, oy * sh + yb]
            for ox in range(ow):
                ta[ox] = ra[xa + ox * sw]
                tb[ox] = 0 if last else rb[xb_ + ox * sw]
            _pairs(prow[oy * ow : (oy + 1) * ow], ta, tb)
    _gemm_panel(wf, kp, co, panel, p, acc, ob, p, 1, chan, flags, grid, ow, ow, coff)


@njit(cache=True, parallel=True)
def _qconv(x, qin, wp, co, groups, geo, oh, ow, chan, flags, grid, threads):  # pragma: no cover
    """int8 Conv2d of float32 NCHW ``x``, one image per thread (:func:`_conv_image`, a
    function of its own: in the parallel loop's body the same code ran 2x slower), one
    conv group after another (``wp``: the groups' packed weights stacked).
    ``geo`` = (kh, kw, sh, sw, pad top, pad left, dh, dw, pad bottom, pad right)."""
    n, c, h, wd = x.shape
    kh, kw, sh, sw, pt, pl, dh, dw, pb, pr = geo
    out = np.empty((n, co, oh, ow), np.float32)
    wf = wp.reshape(-1)
    kp = wp.shape[1]
    cin, cout = c // groups, co // groups
    rows = wp.shape[0] // groups  # packed rows of one group
    p = oh * ow
    # panel columns: whole tiles plus one (a row stride off a multiple of 4 KiB); columns
    # past the image's pixels hold stale levels that only reach discarded sums
    pst = (-(-(oh * (wd + pl + pr)) // TC) + 1) * TC  # >= either panel layout
    chunks = max(1, min(n, threads))
    for t in prange(chunks):
        xq = np.zeros((cin, h + pt + pb, wd + pl + pr), np.int16)
        panel = np.empty((kp // 2, pst), np.uint32)
        acc = np.empty(TR * TC, np.int32)
        for b in range(t * n // chunks, (t + 1) * n // chunks):
            ob = out[b].reshape(-1)
            for g in range(groups):
                _conv_image(
                    x[b],
                    g * cin,
                    qin,
                    wf[g * rows * kp : (g + 1) * rows * kp],
                    kp,
                    cout,
                    geo,
                    oh,
                    ow,
                    chan,
                    g * cout,
                    flags,
                    grid,
                    ob[g * cout * p : (g + 1) * cout * p],
                    xq,
                    panel,
                    acc,
                )
    return out


@njit(cache=True)
def _dense_panel(xq, k2):  # pragma: no cover - compiled
    """The panel of level pairs of ``xq (M, K)`` int16: ``(K / 2, columns)``, one column a row."""
    m, k = xq.shape
    panel = np.zeros((k2, (-(-m // TC) + 1) * TC), np.uint32)
    for i in range(m):
        for t2 in range(k2):
            second = xq[i, 2 * t2 + 1] if 2 * t2 + 1 < k else np.int16(0)
            panel[t2, i] = _pair(xq[i, 2 * t2], second)
    return panel


@njit(cache=True)
def _qdense(x, qin, wp, co, chan, flags, grid):  # pragma: no cover - compiled
    """int8 Dense of float32 ``x (M, K)`` (the batch's rows are the panel's columns)."""
    m, k = x.shape
    xq = np.empty((m, k), np.int16)
    for i in range(m):
        for kk in range(k):
            xq[i, kk] = _level(x[i, kk], qin[0], qin[1], qin[2])
    out = np.empty((m, co), np.float32)
    acc = np.empty(TR * TC, np.int32)
    panel = _dense_panel(xq, wp.shape[1] // 2)
    _gemm_panel(
        wp.reshape(-1),
        wp.shape[1],
        co,
        panel,
        m,
        acc,
        out.reshape(-1),
        1,
        co,
        chan,
        flags,
        grid,
        m,
        m,
        0,
    )
    return out


@njit(cache=True)
def _qgemm_kernel(a, wp, co):  # pragma: no cover - compiled
    m = a.shape[0]
    out = np.empty((m, co), np.int32)
    acc = np.empty(TR * TC, np.int32)
    panel = _dense_panel(a, wp.shape[1] // 2)
    k2, ldb = panel.shape
    pf = panel.reshape(-1)
    for blk in range(-(-m // TC)):
        width = min(TC, m - blk * TC)
        for c0 in range(0, co, TR):
            _tile(wp.reshape(-1), c0 * wp.shape[1], wp.shape[1], pf, blk * TC * 2, ldb * 2, k2, acc)
            for r in range(min(TR, co - c0)):
                for j in range(width):
                    out[blk * TC + j, c0 + r] = acc[r * TC + j]
    return out


def qgemm(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``a (M, K) int16 @ w (N, K) int8 .T`` accumulated in int32 (the tiled kernel)."""
    a = np.ascontiguousarray(a, np.int16)
    return _qgemm_kernel(a, pack_weight(np.asarray(w)), int(w.shape[0]))


def quantize_input(x: np.ndarray, scale: float, zero_point: float, qmin: float, qmax: float):
    """``clip(round(x / scale), qmin - zp, qmax - zp)`` as int16: the zero-centred level of
    ``x`` on the fake quantizer's grid (same nudged grid, so the same level)."""
    levels = np.round(x.astype(np.float64) / scale)
    return np.clip(levels, qmin - zero_point, qmax - zero_point).astype(np.int16)


def fake_quant_array(x: np.ndarray, nmin: Any, nmax: Any, scale: Any) -> np.ndarray:
    """``round((clip(x) - nmin) / scale) * scale + nmin`` (NumPy)."""
    clipped = np.clip(x, nmin, nmax)
    return np.round((clipped - nmin) / scale) * scale + nmin


def pack_bits(indices: np.ndarray, num_bits: int) -> np.ndarray:
    """``num_bits``-bit indices packed into uint8, little end first (8 / num_bits a byte)."""
    flat = np.asarray(indices, np.uint8).reshape(-1)
    per = 8 // num_bits
    pad = (-flat.size) % per
    flat = np.concatenate([flat, np.zeros(pad, np.uint8)]).reshape(-1, per)
    shifts = (np.arange(per) * num_bits).astype(np.uint8)
    return np.bitwise_or.reduce(flat << shifts, axis=1).astype(np.uint8)


def unpack_bits(packed: np.ndarray, num_bits: int, count: int) -> np.ndarray:
    """Inverse of :func:`pack_bits` (the first ``count`` indices)."""
    per = 8 // num_bits
    shifts = (np.arange(per) * num_bits).astype(np.uint8)
    mask = np.uint8(2**num_bits - 1)
    return ((np.asarray(packed, np.uint8)[:, None] >> shifts) & mask).reshape(-1)[:count]


def slb_values(num_bits: int) -> np.ndarray:
    """The value set of a ``num_bits`` weight: {-1, +1} for 1 bit, else linspace(-1, 1)."""
    if num_bits == 1:
        return np.array([-1.0, 1.0], np.float32)
    return np.linspace(-1.0, 1.0, 2**num_bits).astype(np.float32)


def _same_pads(size: int, k: int, s: int, d: int) -> tuple[int, int]:
    out = -(-size // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
    return total // 2, total - total // 2


# ---- layers -------------------------------------------------------------------------------


def _fixed(value: np.ndarray, name: str) -> Parameter:
    """A deploy value: a Parameter (so checkpoints hold it) that is never trained."""
    return Parameter(value, name=name, requires_grad=False)


class FixedFakeQuant(nn.Cell):
    """An activation quantizer with a fixed grid ``(nmin, nmax, scale)`` (the deploy form of
    a calibrated fake quantizer); a NaN grid (never calibrated) passes values through."""

    def __init__(self) -> None:
        super().__init__()
        self.grid = _fixed(np.full(3, np.nan), "grid")

    def construct(self, x: Tensor) -> Tensor:
        grid = self.grid.asnumpy()
        if np.isnan(grid).any():
            return x
        data = x.asnumpy()
        return Tensor(fake_quant_array(data.astype(np.float64), *grid).astype(data.dtype))

    def export_args(self) -> dict[str, Any]:
        return {}


class QuantizedLayer(nn.Cell):
    """``out_quant(layer(in_quant(x)))`` with fixed activation grids (either may be None)."""

    def __init__(self, layer: nn.Cell, in_quant: bool, out_quant: bool) -> None:
        super().__init__()
        self.layer = layer
        self.in_quant = FixedFakeQuant() if in_quant else None
        self.out_quant = FixedFakeQuant() if out_quant else None

    def construct(self, x: Tensor) -> Tensor:
        if self.in_quant is not None:
            x = self.in_quant(x)
        y = self.layer(x)
        return self.out_quant(y) if self.out_quant is not None else y

    def export_args(self) -> dict[str, Any]:
        return {
            "layer": self.layer,
            "in_quant": self.in_quant is not None,
            "out_quant": self.out_quant is not None,
        }


class Int8Linear(nn.Cell):
    """An int8 Conv2d or Dense (deploy form of a SimQAT layer).

    ``weight_int8`` (int8, output channel first) and ``weight_scale`` (float32 per output
    channel); the input is put on its quantizer's grid (``in_quant``: scale, zero point,
    qmin, qmax) as integers, multiplied in int32 and scaled back:
    ``y = acc * in_scale * w_scale + bias``, then the BN affine (unfolded fusion), the
    activation and the output grid (``out_quant``: nmin, nmax, scale; NaN for none)."""

    def __init__(
        self,
        kind: str,
        weight_shape: tuple[int, ...],
        has_affine: bool = False,
        act: nn.Cell | None = None,
        conv: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        if kind not in ("conv2d", "dense"):
            raise ValueError(
                f"Int8Linear: argument 'kind' expected 'conv2d' or 'dense', got {kind!r}"
            )
        if kind == "conv2d" and not conv:
            raise ValueError("Int8Linear: argument 'conv' is needed for kind 'conv2d'")
        self.kind = kind
        shape = tuple(int(s) for s in weight_shape)
        c = shape[0]
        self.weight_int8 = _fixed(np.zeros(shape, np.int8), "weight_int8")
        self.weight_scale = _fixed(np.ones(c, np.float32), "weight_scale")
        self.bias = _fixed(np.zeros(c, np.float32), "bias")
        self.in_quant = _fixed(np.array([1.0, 0.0, 0.0, 255.0]), "in_quant")
        self.out_quant = _fixed(np.full(3, np.nan), "out_quant")
        self.has_affine = bool(has_affine)
        self.affine_scale = _fixed(np.ones(c, np.float32), "affine_scale")
        self.affine_shift = _fixed(np.zeros(c, np.float32), "affine_shift")
        self.act = act
        self.conv = {k: (tuple(v) if isinstance(v, list) else v) for k, v in (conv or {}).items()}

    def export_args(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "weight_shape": tuple(self.weight_int8.shape),
            "has_affine": self.has_affine,
            "act": self.act,
            "conv": self.conv or None,
        }

    def _prepared(self) -> tuple:
        """``(qin, packed weight, chan, grid)`` for the kernels, made once per set of value
        arrays: a new checkpoint value (``set_data``) is a new array and is prepared again
        (values changed in place are not seen)."""
        names = ("weight_int8", "weight_scale", "bias", "in_quant", "out_quant")
        arrays = [getattr(self, n).asnumpy() for n in names]
        arrays += [self.affine_scale.asnumpy(), self.affine_shift.asnumpy()]
        cached = self.__dict__.get("_prep_cache")
        if cached is not None and all(a is b for a, b in zip(cached[0], arrays)):
            return cached[1]
        w, w_scale, bias, in_q, out_q, aff_s, aff_b = arrays
        s_in, zp, qmin, qmax = (float(v) for v in in_q)
        qin = np.array([1.0 / s_in, qmin - zp, qmax - zp])
        chan = np.empty((4, w.shape[0]), np.float32)
        chan[0] = s_in * w_scale  # float32, as acc * (s_in * w_scale)
        chan[1], chan[2], chan[3] = bias, aff_s, aff_b
        grid = np.append(np.asarray(out_q, np.float64), 0.0)
        grid[3] = 1.0 / grid[2]
        groups = int(self.conv.get("group", 1)) if self.kind == "conv2d" else 1
        per = w.shape[0] // groups  # a conv group's packed weights, stacked
        packed = np.concatenate([pack_weight(w[g * per : (g + 1) * per]) for g in range(groups)])
        prepared = (qin, packed, chan, grid)
        self.__dict__["_prep_cache"] = (arrays, prepared)
        return prepared

    def _act_code(self) -> int:
        """0: none, 1: ReLU, 2: ReLU6 (fused into the kernel); -1: another Cell (run after)."""
        if self.act is None:
            return 0
        if type(self.act) is nn.ReLU:
            return 1
        if type(self.act) is nn.ReLU6:
            return 2
        return -1

    def construct(self, x: Tensor) -> Tensor:
        data = np.ascontiguousarray(x.asnumpy(), np.float32)
        qin, wp, chan, grid = self._prepared()
        co = int(self.weight_int8.shape[0])
        act = self._act_code()
        fused = act >= 0
        has_out = fused and not np.isnan(grid).any()
        flags = (int(self.has_affine), max(act, 0), int(has_out))
        if self.kind == "dense":
            lead = data.shape[:-1]
            y = _qdense(data.reshape(-1, data.shape[-1]), qin, wp, co, chan, flags, grid)
            y = y.reshape(*lead, co)
        else:
            y = self._conv(data, qin, wp, co, chan, flags, grid)
        out = Tensor(y)
        if fused:
            return out
        out = self.act(out)
        if not np.isnan(grid).any():
            nmin, nmax, scale = (float(v) for v in grid[:3])
            out = Tensor(
                fake_quant_array(out.asnumpy().astype(np.float64), nmin, nmax, scale).astype(
                    np.float32
                )
            )
        return out

    def _conv(self, data: np.ndarray, qin, wp, co, chan, flags, grid) -> np.ndarray:
        cfg = self.conv
        kh, kw = int(self.weight_int8.shape[2]), int(self.weight_int8.shape[3])
        (sh, sw), (dh, dw) = cfg["stride"], cfg["dilation"]
        _, _, h, wd = data.shape
        if cfg["pad_mode"] == "same":
            pt, pb = _same_pads(h, kh, sh, dh)
            pl, pr = _same_pads(wd, kw, sw, dw)
        elif cfg["pad_mode"] == "pad":
            pt, pb, pl, pr = cfg["padding"]
        else:
            pt = pb = pl = pr = 0
        oh = (h + pt + pb - (kh - 1) * dh - 1) // sh + 1
        ow = (wd + pl + pr - (kw - 1) * dw - 1) // sw + 1
        geo = tuple(int(v) for v in (kh, kw, sh, sw, pt, pl, dh, dw, pb, pr))
        groups = int(cfg.get("group", 1))
        threads = get_num_threads()
        return _qconv(data, qin, wp, co, groups, geo, oh, ow, chan, flags, grid, threads)

    def extend_repr(self) -> str:
        return f"kind={self.kind}, weight={tuple(self.weight_int8.shape)} int8"


class PackedConv2d(nn.Cell):
    """Deploy form of an SLB conv: value indices packed into ``packed`` (uint8, 8 / bits
    per byte) over the value set; the float weight is unpacked once per call."""

    def __init__(
        self,
        shape: tuple[int, ...],
        num_bits: int,
        stride: Any = 1,
        pad_mode: str = "same",
        padding: Any = 0,
        dilation: Any = 1,
        group: int = 1,
        has_bias: bool = False,
    ) -> None:
        super().__init__()
        if num_bits not in (1, 2, 4):
            raise ValueError(
                f"PackedConv2d: argument 'num_bits' expected 1, 2 or 4, got {num_bits!r}"
            )
        self.num_bits = num_bits
        self.shape = tuple(int(s) for s in shape)
        count = int(np.prod(self.shape))
        self.packed = _fixed(np.zeros(-(-count * num_bits // 8), np.uint8), "packed")
        self.values = slb_values(num_bits)
        self.bias = None
        if has_bias:
            self.bias = _fixed(np.zeros(self.shape[0], np.float32), "bias")
        self.stride, self.pad_mode, self.padding = stride, pad_mode, padding
        self.dilation, self.group = dilation, group

    def export_args(self) -> dict[str, Any]:
        return {
            "shape": self.shape,
            "num_bits": self.num_bits,
            "stride": tuple(self.stride) if isinstance(self.stride, list) else self.stride,
            "pad_mode": self.pad_mode,
            "padding": tuple(self.padding) if isinstance(self.padding, list) else self.padding,
            "dilation": tuple(self.dilation) if isinstance(self.dilation, list) else self.dilation,
            "group": self.group,
            "has_bias": self.bias is not None,
        }

    def weight(self) -> Tensor:
        count = int(np.prod(self.shape))
        idx = unpack_bits(self.packed.asnumpy(), self.num_bits, count)
        return Tensor(self.values[idx].reshape(self.shape))

    def construct(self, x: Tensor) -> Tensor:
        pad = self.padding if self.pad_mode == "pad" else 0
        return ops.conv2d(
            x, self.weight(), self.bias, self.stride, self.pad_mode, pad, self.dilation, self.group
        )
