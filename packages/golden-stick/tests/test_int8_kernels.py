"""The int8 deploy kernels (tiled int16-pair products, fused im2col and epilogue) against a
NumPy reference of the same arithmetic: levels, int64 sums, then the float32 scale, bias,
BN affine, activation and the float64 output grid. Equal bit for bit, over geometries
that exercise the tails (channels not a multiple of the tile, pixels not a multiple of
16, an odd reduction length, strides, dilation, every pad mode)."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from sporeling.core import Tensor, nn, ops
from sporeling.goldenstick import SimulatedQuantizationAwareTraining
from sporeling.goldenstick.deploy_runtime import (
    TC,
    TR,
    Int8Linear,
    _same_pads,
    _tile_generic,
    pack_weight,
    qgemm,
)
from sporeling.goldenstick.quantization import QuantizeWrapperCell

RNG = np.random.default_rng(7)


def _levels(x, s, zp, qmin, qmax):
    return np.clip(np.rint(x.astype(np.float64) * (1.0 / s)), qmin - zp, qmax - zp)


def _epilogue_ref(acc, layer, s):
    """acc (..., C) int64 -> the layer's float32 output (channels last)."""
    s = float(s)  # a Python float times float32 weights stays float32, as in the layer
    y = acc.astype(np.float32) * (s * layer.weight_scale.asnumpy()) + layer.bias.asnumpy()
    if layer.has_affine:
        y = y * layer.affine_scale.asnumpy() + layer.affine_shift.asnumpy()
    y = y.astype(np.float32)
    if isinstance(layer.act, nn.ReLU):
        y = np.maximum(y, np.float32(0))
    elif isinstance(layer.act, nn.ReLU6):
        y = np.minimum(np.maximum(y, np.float32(0)), np.float32(6))
    elif layer.act is not None:
        y = layer.act(Tensor(y)).asnumpy()
    nmin, nmax, scale = layer.out_quant.asnumpy()
    if not np.isnan(scale):
        v = np.clip(y.astype(np.float64), nmin, nmax)
        if layer.act is None or isinstance(layer.act, (nn.ReLU, nn.ReLU6)):
            y = np.rint((v - nmin) * (1.0 / scale)) * scale + nmin
        else:  # the unfused path quantizes with fake_quant_array (a division)
            y = np.round((v - nmin) / scale) * scale + nmin
    return y.astype(np.float32)


def _conv_ref(layer, x):
    s, zp, qmin, qmax = layer.in_quant.asnumpy()
    w = layer.weight_int8.asnumpy().astype(np.int64)
    co, ci, kh, kw = w.shape  # ci: inputs of one group
    cfg = layer.conv
    (sh, sw), (dh, dw) = cfg["stride"], cfg["dilation"]
    n, _, h, wd = x.shape
    if cfg["pad_mode"] == "same":
        (pt, pb), (pl, pr) = _same_pads(h, kh, sh, dh), _same_pads(wd, kw, sw, dw)
    elif cfg["pad_mode"] == "pad":
        pt, pb, pl, pr = cfg["padding"]
    else:
        pt = pb = pl = pr = 0
    xq = np.pad(_levels(x, s, zp, qmin, qmax), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    oh = (h + pt + pb - (kh - 1) * dh - 1) // sh + 1
    ow = (wd + pl + pr - (kw - 1) * dw - 1) // sw + 1
    acc = np.zeros((n, oh, ow, co), np.int64)
    groups = cfg.get("group", 1)
    cout = co // groups
    for i in range(kh):
        for j in range(kw):
            patch = xq[:, :, i * dh : i * dh + sh * (oh - 1) + 1 : sh, j * dw :][
                :, :, :, : sw * (ow - 1) + 1 : sw
            ]
            for g in range(groups):  # each group: its inputs, its outputs
                acc[..., g * cout : (g + 1) * cout] += np.einsum(
                    "nchw,oc->nhwo",
                    patch[:, g * ci : (g + 1) * ci].astype(np.int64),
                    w[g * cout : (g + 1) * cout, :, i, j],
                )
    return _epilogue_ref(acc, layer, s).transpose(0, 3, 1, 2)


def _make(kind, wshape, act=None, affine=False, out_grid=True, conv=None):
    layer = Int8Linear(kind, wshape, affine, act, conv)
    co = wshape[0]
    layer.weight_int8.set_data(Tensor(RNG.integers(-128, 128, wshape).astype(np.int8)))
    layer.weight_scale.set_data(Tensor(RNG.uniform(1e-3, 4e-3, co).astype(np.float32)))
    layer.bias.set_data(Tensor(RNG.normal(0, 0.3, co).astype(np.float32)))
    if affine:
        layer.affine_scale.set_data(Tensor(RNG.uniform(0.5, 1.5, co).astype(np.float32)))
        layer.affine_shift.set_data(Tensor(RNG.normal(0, 0.2, co).astype(np.float32)))
    layer.in_quant.set_data(Tensor(np.array([0.02, 120.0, 0.0, 255.0])))
    if out_grid:
        layer.out_quant.set_data(Tensor(np.array([-1.5, 1.5 * 127 / 128, 1.5 / 128])))
    return layer


CONV_CASES = [
    # (C_in, C_out, k, H, W, stride, pad_mode, padding, dilation[, group])
    (3, 5, 3, 9, 11, 1, "same", 0, 1),  # odd K (27), C_out not a multiple of 4
    (4, 8, 3, 8, 8, 2, "same", 0, 1),  # stride 2
    (2, 6, 5, 12, 10, 1, "valid", 0, 1),  # LeNet-like, K = 50
    (3, 4, 3, 10, 9, 1, "pad", (1, 2, 0, 1), 2),  # explicit asymmetric pads, dilation
    (16, 16, 3, 6, 6, 1, "same", 0, 1),
    (5, 3, 1, 7, 7, 2, "valid", 0, 1),  # 1x1, stride 2, odd K
    (4, 6, 3, 8, 9, 1, "same", 0, 1, 2),  # grouped: 2 inputs, 3 outputs per group
    (6, 6, 3, 7, 7, 2, "same", 0, 1, 6),  # depthwise, stride 2
]


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("act,affine,out_grid", [(nn.ReLU(), False, True), (None, True, False)])
def test_int8_conv_equals_reference(case, act, affine, out_grid):
    ci, co, k, h, w, stride, pad_mode, padding, dil, *group = case
    groups = group[0] if group else 1
    conv = {
        "stride": (stride, stride),
        "dilation": (dil, dil),
        "pad_mode": pad_mode,
        "padding": padding if isinstance(padding, tuple) else (padding,) * 4,
    }
    if groups > 1:
        conv["group"] = groups
    layer = _make("conv2d", (co, ci // groups, k, k), act, affine, out_grid, conv)
    x = RNG.normal(0, 1.5, (3, ci, h, w)).astype(np.float32)
    got = layer(Tensor(x)).asnumpy()
    np.testing.assert_array_equal(got, _conv_ref(layer, x))


@pytest.mark.parametrize("act", [nn.ReLU6(), nn.Sigmoid(), None])
def test_int8_dense_equals_reference(act):
    layer = _make("dense", (13, 37), act, affine=act is None)
    x = RNG.normal(0, 1.5, (2, 19, 37)).astype(np.float32)  # leading dims kept
    got = layer(Tensor(x)).asnumpy()
    s, zp, qmin, qmax = layer.in_quant.asnumpy()
    acc = _levels(x, s, zp, qmin, qmax).astype(np.int64) @ layer.weight_int8.asnumpy().T
    np.testing.assert_array_equal(got, _epilogue_ref(acc, layer, s))


def test_packed_weight_follows_set_data():
    layer = _make("dense", (6, 10), out_grid=False)
    x = Tensor(RNG.normal(0, 1, (4, 10)).astype(np.float32))
    first = layer(x).asnumpy()
    layer.weight_int8.set_data(Tensor(-layer.weight_int8.asnumpy()))
    layer.bias.set_data(Tensor(np.zeros(6, np.float32)))
    second = layer(x).asnumpy()
    assert not np.allclose(first, second)
    s, zp, qmin, qmax = layer.in_quant.asnumpy()
    acc = _levels(x.asnumpy(), s, zp, qmin, qmax).astype(np.int64)
    acc = acc @ layer.weight_int8.asnumpy().astype(np.int64).T
    np.testing.assert_array_equal(second, _epilogue_ref(acc, layer, s))


@pytest.mark.parametrize("m,k,n", [(7, 33, 5), (64, 400, 120), (100, 27, 6), (1, 2, 1)])
def test_qgemm_tails(m, k, n):
    a = RNG.integers(-255, 256, (m, k)).astype(np.int16)
    w = RNG.integers(-128, 128, (n, k)).astype(np.int8)
    np.testing.assert_array_equal(qgemm(a, w), a.astype(np.int64) @ w.astype(np.int64).T)


@njit(cache=True)
def _generic_tile(wp, panel, k2, acc):  # pragma: no cover - compiled
    _tile_generic(wp.reshape(-1), 0, wp.shape[1], panel.reshape(-1), 0, panel.shape[1] * 2, k2, acc)


def test_generic_tile_equals_reference():
    """The portable IR (used where AVX2 is missing) gives the same sums."""
    k = 21
    w = RNG.integers(-128, 128, (TR, k)).astype(np.int8)
    a = RNG.integers(-255, 256, (TC, k)).astype(np.int16)
    wp = pack_weight(w)
    pairs = np.zeros((wp.shape[1], TC + 3), np.int16)  # a wider row stride than TC
    pairs[:k, :TC] = a.T
    panel = np.ascontiguousarray(
        pairs.reshape(wp.shape[1] // 2, 2, TC + 3).transpose(0, 2, 1)
    ).view(np.uint32)[..., 0]
    acc = np.empty(TR * TC, np.int32)
    _generic_tile(wp, np.ascontiguousarray(panel), wp.shape[1] // 2, acc)
    ref = w.astype(np.int64) @ a.astype(np.int64).T
    np.testing.assert_array_equal(acc.reshape(TR, TC), ref)


class _GroupedConvNet(nn.Cell):
    """conv -> grouped conv -> depthwise conv -> global mean -> dense (MobileNet-like)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, weight_init="he_uniform")
        self.g = nn.Conv2d(8, 8, 3, group=2, weight_init="he_uniform")
        self.dw = nn.Conv2d(8, 8, 3, group=8, weight_init="he_uniform")
        self.relu = nn.ReLU()
        self.fc = nn.Dense(8, 4)

    def construct(self, x):
        x = self.relu(self.dw(self.relu(self.g(self.relu(self.conv(x))))))
        return self.fc(ops.mean(x, (2, 3)))


def test_grouped_and_depthwise_convs_convert_to_int8():
    """SimQAT's convert gives grouped and depthwise convs an int8 path too, each layer
    within one output step of its fake-quant layer."""
    algo = SimulatedQuantizationAwareTraining({"enable_fusion": True})
    qnet = algo.apply(_GroupedConvNet())
    x = Tensor(RNG.normal(0, 1, (4, 3, 10, 10)).astype(np.float32))
    qnet.set_train(True)
    qnet(x)
    qnet.set_train(False)
    seen = []
    wrappers = [c for _, c in qnet.cells_and_names() if isinstance(c, QuantizeWrapperCell)]
    for w in wrappers:
        w.register_forward_hook(lambda cell, inputs, out: seen.append((cell, inputs[0], out)))
    qnet(x)
    names = {id(c): n for n, c in qnet.cells_and_names()}
    inet = algo.convert(qnet)
    layers = dict(inet.cells_and_names())
    groups = sorted(layers[names[id(c)]].conv.get("group", 1) for c, _, _ in seen[:3])
    assert groups == [1, 2, 8]
    for cell, inp, out in seen:
        step = float(cell._output_quantizer.quant_params()[2][0])
        got = layers[names[id(cell)]](inp).asnumpy()
        assert np.abs(got - out.asnumpy()).max() <= step * 1.001
