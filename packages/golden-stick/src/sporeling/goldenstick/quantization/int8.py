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

from sporeling.core import Tensor, nn

from ..deploy_runtime import Int8Linear
from .fake_quant import nudge
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
        kind = "conv2d"
        conv = {
            "stride": tuple(op.stride),
            "dilation": tuple(op.dilation),
            "pad_mode": op.pad_mode,
            "padding": tuple(op.padding),
        }
        if op.group != 1:  # grouped and depthwise convs: one product per group
            conv["group"] = int(op.group)
    act = handler.act
    if isinstance(op, nn.Dense) and op.activation is not None:  # the layer's own first
        act = op.activation if act is None else nn.SequentialCell([op.activation, act])
    if isinstance(handler, BnWithoutFoldQuant) is False and affine is not None:
        affine = None
    layer = Int8Linear(kind, w_int8.shape, affine is not None, act, conv)
    c = w_int8.shape[0]
    values = {
        "weight_int8": w_int8,
        "weight_scale": w_scale,
        "bias": np.zeros(c, np.float32) if b is None else np.asarray(b, np.float32),
        "in_quant": np.asarray(_grid(wrapper.input_quant_source(), strict), np.float64),
    }
    if out is not None:
        values["out_quant"] = np.asarray(out, np.float64)
    if affine is not None:
        values["affine_scale"] = np.asarray(affine[0], np.float32)
        values["affine_shift"] = np.asarray(affine[1], np.float32)
    for name, value in values.items():
        getattr(layer, name).set_data(Tensor(value))
    return layer


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
