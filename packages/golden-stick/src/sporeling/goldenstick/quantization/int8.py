"""SimQAT's deploy form: int8 weights with per-channel scales and a real integer path.

An :class:`Int8Linear` layer keeps ``weight_int8`` (int8) and ``weight_scale`` (float32
per output channel); at run time the input is put on its quantizer's grid as integers,
multiplied in int32 by a Numba kernel, and scaled back:
``y = acc * in_scale * w_scale + bias`` (then BN affine, activation and the output
quantizer, as in the fake-quant network). Since the fake-quant network computes the same
products of grid values in float, the two agree up to float rounding (at most one
quantization step after the output quantizer).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sporeling.core import Parameter, Tensor, nn

from .fake_quant import fake_quant_array, nudge
from .int8_kernels import im2col, qgemm, quantize_input
from .quant_cells import BnFoldQuant, BnWithoutFoldQuant, Conv2dQuant, QuantizeWrapperCell

__all__ = ["Int8Linear", "convert_to_int8", "quantize_weight"]


def quantize_weight(
    w: np.ndarray, per_channel: bool, narrow_range: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 levels and scales of a weight (C_out first): the fake quantizer's
    grid, shifted so the zero point is 0."""
    flat = w.reshape(w.shape[0], -1).astype(np.float64)
    if per_channel:
        lo, hi = flat.min(axis=1), flat.max(axis=1)
    else:
        lo, hi = np.full(w.shape[0], flat.min()), np.full(w.shape[0], flat.max())
    nmin, nmax, scale, zp = nudge(lo, hi, 8, True, narrow_range)
    levels = np.round(
        (np.clip(flat, nmin[:, None], nmax[:, None]) - nmin[:, None]) / scale[:, None]
    )
    q = levels + np.round(nmin / scale)[:, None]  # zero-centred level: nmin / scale = qmin - zp
    return q.reshape(w.shape).astype(np.int8), scale.astype(np.float32)


def _same_pads(size: int, k: int, s: int, d: int) -> tuple[int, int]:
    out = -(-size // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
    return total // 2, total - total // 2


class Int8Linear(nn.Cell):
    """An int8 Conv2d or Dense (deploy form of a SimQAT layer)."""

    def __init__(
        self,
        kind: str,
        weight_int8: np.ndarray,
        weight_scale: np.ndarray,
        bias: Any,
        in_quant: tuple[float, float, float, float],
        out_quant: Any,
        affine: Any = None,
        act: nn.Cell | None = None,
        conv: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        if kind not in ("conv2d", "dense"):
            raise ValueError(
                f"Int8Linear: argument 'kind' expected 'conv2d' or 'dense', got {kind!r}"
            )
        self.kind = kind
        self.weight_int8 = Parameter(
            weight_int8.astype(np.int8), name="weight_int8", requires_grad=False
        )
        self.weight_scale = Parameter(
            weight_scale.astype(np.float32), name="weight_scale", requires_grad=False
        )
        c = weight_int8.shape[0]
        b = np.zeros(c, np.float32) if bias is None else np.asarray(bias, np.float32)
        self.bias = Parameter(b, name="bias", requires_grad=False)
        # grids and the BN affine are parameters too, so a checkpoint holds the whole layer
        self.in_quant = Parameter(  # scale, zero point, qmin, qmax
            np.asarray(in_quant, np.float64), name="in_quant", requires_grad=False
        )
        out = np.full(3, np.nan) if out_quant is None else np.asarray(out_quant, np.float64)
        self.out_quant = Parameter(out, name="out_quant", requires_grad=False)  # nmin, nmax, scale
        self.has_affine = affine is not None
        scale = np.ones(c) if affine is None else affine[0]
        shift = np.zeros(c) if affine is None else affine[1]
        self.affine_scale = Parameter(
            np.asarray(scale, np.float32), name="affine_scale", requires_grad=False
        )
        self.affine_shift = Parameter(
            np.asarray(shift, np.float32), name="affine_shift", requires_grad=False
        )
        self.act = act
        self.conv = dict(conv or {})

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
        if not np.isnan(self.out_quant.asnumpy()).any():
            nmin, nmax, scale = (float(v) for v in self.out_quant.asnumpy())
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


def _grid(quantizer: Any, strict: bool = True) -> tuple[float, float, float, float]:
    if not strict and (quantizer is None or not quantizer.calibrated):
        return 1.0, 0.0, 0.0, 255.0  # a placeholder a checkpoint overwrites
    if quantizer is None or not quantizer.calibrated:
        raise ValueError(
            "convert: a layer's input quantizer has seen no data; run the fake-quant network "
            "in training mode (QAT or a calibration pass) before convert"
        )
    nmin, nmax, scale, zp = quantizer.quant_params()
    qmin = 1.0 if quantizer.narrow_range else 0.0
    return float(scale[0]), float(zp[0]), qmin, float(2**quantizer.num_bits - 1)


def _int8_layer(wrapper: QuantizeWrapperCell, strict: bool = True) -> Int8Linear:
    handler = wrapper._handler
    if not isinstance(handler, (Conv2dQuant, BnFoldQuant)):
        raise TypeError(f"convert: unsupported quantized layer {type(handler).__name__}")
    w, b, affine = handler.folded()
    wq = handler.fake_quant_weight
    per_channel = type(wq).__name__.endswith("PerChannel")
    if not wq.symmetric:
        raise NotImplementedError("convert: the int8 path needs symmetric weight quantization")
    w_int8, w_scale = quantize_weight(w, per_channel, wq.narrow_range)
    out_q = wrapper._output_quantizer
    out = None
    if out_q is not None and (out_q.calibrated or not strict):
        nmin, nmax, scale, _ = out_q.quant_params()
        out = (nmin[0], nmax[0], scale[0])
    op = handler.op
    conv = None
    kind = "dense"
    if isinstance(op, nn.Conv2d):
        if op.group != 1:
            raise NotImplementedError("convert: grouped convolutions have no int8 path yet")
        kind = "conv2d"
        conv = {
            "stride": tuple(op.stride),
            "dilation": tuple(op.dilation),
            "pad_mode": op.pad_mode,
            "padding": tuple(op.padding),
        }
    act = handler.act
    if isinstance(op, nn.Dense) and op.activation is not None:
        act = op.activation
    if isinstance(handler, BnWithoutFoldQuant) is False and affine is not None:
        affine = None
    return Int8Linear(
        kind,
        w_int8,
        w_scale,
        b,
        _grid(wrapper.input_quant_source(), strict),
        out,
        affine,
        act,
        conv,
    )


def convert_to_int8(network: nn.Cell, strict: bool = True) -> nn.Cell:
    """Replace (in place) every QuantizeWrapperCell under ``network`` by an Int8Linear.

    ``strict=False`` accepts quantizers that have seen no data (placeholder grids): the
    structure to load an exported int8 checkpoint into."""
    network.set_train(False)
    for _, cell in list(network.cells_and_names()):
        for name, child in list(cell.name_cells().items()):
            if isinstance(child, QuantizeWrapperCell):
                cell.insert_child_to_cell(name, _int8_layer(child, strict))
    fresh = {
        id(p)
        for _, c in network.cells_and_names()
        if isinstance(c, Int8Linear)
        for p in c.get_parameters()
    }
    from ..pruner.physical import drop_unused_cells

    drop_unused_cells(network)  # the float layers the int8 ones replaced
    for path, param in network.parameters_and_names():
        if id(param) in fresh:
            param.name = path  # the int8 layers' parameters are named by their place
    return network
