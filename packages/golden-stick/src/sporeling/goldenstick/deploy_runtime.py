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

from typing import Any

import numpy as np
from numba import njit, prange

from sporeling.core import Parameter, Tensor, nn, ops

__all__ = [
    "qgemm",
    "quantize_input",
    "im2col",
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


@njit(cache=True, parallel=True)
def _qgemm_kernel(a: np.ndarray, w: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """``a (M, K) int16 @ w (N, K) int16 .T`` accumulated in int32, as dot products over K
    (contiguous int16 rows: LLVM vectorises them into multiply-add of int16 pairs). Against
    the earlier form (weight rows scaled by each input level, vectorised over N) it is 3-8x
    faster on LeNet-5's layers (bench_int8.py)."""
    m, k = a.shape
    n = w.shape[0]
    out = np.empty((m, n), np.int32)
    for i in prange(m):
        for j in range(n):
            s = np.int32(0)
            for t in range(k):
                s += np.int32(a[i, t]) * np.int32(w[j, t])
            out[i, j] = s
    return out


def qgemm(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``a (M, K) int16 @ w (N, K) int8 .T`` accumulated in int32."""
    return _qgemm_kernel(np.ascontiguousarray(a, np.int16), np.ascontiguousarray(w, np.int16))


def quantize_input(x: np.ndarray, scale: float, zero_point: float, qmin: float, qmax: float):
    """``clip(round(x / scale), qmin - zp, qmax - zp)`` as int16: the zero-centred level of
    ``x`` on the fake quantizer's grid (same nudged grid, so the same level)."""
    levels = np.round(x.astype(np.float64) / scale)
    return np.clip(levels, qmin - zero_point, qmax - zero_point).astype(np.int16)


@njit(cache=True, parallel=True)
def im2col(
    x: np.ndarray, kh: int, kw: int, sh: int, sw: int, dh: int, dw: int, oh: int, ow: int
):  # pragma: no cover
    """Patches of a padded (N, C, H, W) int16 tensor as rows (N*OH*OW, C*KH*KW)."""
    n, c = x.shape[0], x.shape[1]
    cols = np.empty((n * oh * ow, c * kh * kw), np.int16)
    for r in prange(n * oh * ow):
        b = r // (oh * ow)
        rem = r % (oh * ow)
        oy = rem // ow
        ox = rem % ow
        col = 0
        for ci in range(c):
            for ky in range(kh):
                for kx in range(kw):
                    cols[r, col] = x[b, ci, oy * sh + ky * dh, ox * sw + kx * dw]
                    col += 1
    return cols


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

    def construct(self, x: Tensor) -> Tensor:
        data = x.asnumpy().astype(np.float32)
        s_in, zp, qmin, qmax = (float(v) for v in self.in_quant.asnumpy())
        xq = quantize_input(data, s_in, zp, qmin, qmax)
        w = self.weight_int8.asnumpy()
        if self.kind == "dense":
            lead = xq.shape[:-1]
            acc = qgemm(xq.reshape(-1, xq.shape[-1]), w)
            y = acc.astype(np.float32) * (s_in * self.weight_scale.asnumpy())
            y = y.reshape(*lead, w.shape[0]) + self.bias.asnumpy()
            bshape = (1,) * (y.ndim - 1) + (-1,)
        else:
            y = self._conv(xq, w, s_in)
            bshape = (1, -1, 1, 1)
        if self.has_affine:
            scale, shift = self.affine_scale.asnumpy(), self.affine_shift.asnumpy()
            y = y * scale.reshape(bshape) + shift.reshape(bshape)
        out = Tensor(y.astype(np.float32))
        if self.act is not None:
            out = self.act(out)
        grid = self.out_quant.asnumpy()
        if not np.isnan(grid).any():
            nmin, nmax, scale = (float(v) for v in grid)
            out = Tensor(
                fake_quant_array(out.asnumpy().astype(np.float64), nmin, nmax, scale).astype(
                    np.float32
                )
            )
        return out

    def _conv(self, xq: np.ndarray, w: np.ndarray, s_in: float) -> np.ndarray:
        cfg = self.conv
        kh, kw = w.shape[2], w.shape[3]
        (sh, sw), (dh, dw) = cfg["stride"], cfg["dilation"]
        n, _, h, wd = xq.shape
        if cfg["pad_mode"] == "same":
            pt, pb = _same_pads(h, kh, sh, dh)
            pl, pr = _same_pads(wd, kw, sw, dw)
        elif cfg["pad_mode"] == "pad":
            pt, pb, pl, pr = cfg["padding"]
        else:
            pt = pb = pl = pr = 0
        xp = np.pad(xq, ((0, 0), (0, 0), (pt, pb), (pl, pr)))  # level 0 is exactly 0.0
        oh = (h + pt + pb - (kh - 1) * dh - 1) // sh + 1
        ow = (wd + pl + pr - (kw - 1) * dw - 1) // sw + 1
        cols = im2col(np.ascontiguousarray(xp), kh, kw, sh, sw, dh, dw, oh, ow)
        acc = qgemm(cols, np.ascontiguousarray(w.reshape(w.shape[0], -1)))
        y = acc.astype(np.float32) * (s_in * self.weight_scale.asnumpy()) + self.bias.asnumpy()
        return np.ascontiguousarray(y.reshape(n, oh, ow, -1).transpose(0, 3, 1, 2))

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
