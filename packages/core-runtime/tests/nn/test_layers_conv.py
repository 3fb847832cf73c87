"""Conv layers: forward against a NumPy float64 reference, gradients, names, errors."""

import numpy as np
import pytest
from _layer_refs import check_layer_grad, conv_ref, conv_transpose_ref, same_pads

from sporeling.core import Tensor, nn


def _run(layer, x):
    for name in ("weight", "bias"):
        p = layer._params.get(name)
        if p is not None:
            p.set_data(Tensor(np.random.default_rng(1).standard_normal(p.shape).astype(np.float64)))
    return layer(Tensor(x)).asnumpy(), {n: p.asnumpy() for n, p in layer.parameters_and_names()}


CONV2D_CASES = [
    # (cin, cout, k, stride, pad_mode, padding, dilation, group, has_bias, hw)
    (2, 4, 3, 1, "same", 0, 1, 1, True, (6, 7)),
    (2, 4, 3, 2, "same", 0, 1, 1, False, (7, 6)),
    (2, 4, 3, 1, "valid", 0, 1, 1, True, (6, 6)),
    (2, 4, (2, 3), (2, 1), "valid", 0, 1, 1, False, (7, 6)),
    (4, 6, 3, 1, "pad", 1, 1, 2, True, (5, 5)),
    (4, 4, 3, 1, "pad", (1, 0, 2, 1), 1, 4, False, (5, 6)),
    (2, 2, 3, 1, "same", 0, 2, 1, True, (7, 7)),
    (2, 3, 3, 2, "pad", 2, (2, 1), 1, True, (8, 7)),
]


@pytest.mark.parametrize("case", CONV2D_CASES)
def test_conv2d_matches_reference(case):
    cin, cout, k, s, mode, pad, dil, g, bias, hw = case
    layer = nn.Conv2d(cin, cout, k, s, mode, pad, dil, g, bias)
    x = np.random.default_rng(0).standard_normal((2, cin) + hw)
    y, p = _run(layer, x)
    kk, ss, dd = layer.kernel_size, layer.stride, layer.dilation
    if mode == "same":
        pads = same_pads(hw, kk, ss, dd)
    else:
        pp = layer.padding
        pads = [(pp[0], pp[1]), (pp[2], pp[3])]
    ref = conv_ref(x, p["weight"], p.get("bias"), ss, pads, dd, g)
    np.testing.assert_allclose(y, ref, rtol=1e-10, atol=1e-10)


def test_conv2d_nhwc():
    layer = nn.Conv2d(2, 3, 3, data_format="NHWC")
    x = np.random.default_rng(0).standard_normal((1, 5, 5, 2))
    y, p = _run(layer, x)
    ref = conv_ref(x.transpose(0, 3, 1, 2), p["weight"], None, (1, 1), [(1, 1)] * 2, (1, 1), 1)
    np.testing.assert_allclose(y, ref.transpose(0, 2, 3, 1), atol=1e-10)


@pytest.mark.parametrize(
    "k,s,mode,pad,dil,g",
    [(3, 1, "same", 0, 1, 1), (3, 2, "valid", 0, 2, 1), (2, 1, "pad", 1, 1, 2)],
)
def test_conv1d_matches_reference(k, s, mode, pad, dil, g):
    layer = nn.Conv1d(4, 2, k, s, mode, pad, dil, g, has_bias=True)
    assert layer.weight.shape == (2, 4 // g, 1, k)  # MindSpore 1.8 keeps a 4-d weight
    x = np.random.default_rng(0).standard_normal((2, 4, 9))
    y, p = _run(layer, x)
    pads = same_pads((9,), (k,), (s,), (dil,)) if mode == "same" else [(pad, pad)]
    ref = conv_ref(x, p["weight"][:, :, 0], p["bias"], (s,), pads, (dil,), g)
    np.testing.assert_allclose(y, ref, atol=1e-10)


def test_conv3d_matches_reference():
    layer = nn.Conv3d(2, 2, 2, stride=(1, 2, 1), pad_mode="valid", has_bias=True)
    x = np.random.default_rng(0).standard_normal((1, 2, 3, 5, 4))
    y, p = _run(layer, x)
    ref = conv_ref(x, p["weight"], p["bias"], (1, 2, 1), [(0, 0)] * 3, (1, 1, 1), 1)
    np.testing.assert_allclose(y, ref, atol=1e-10)


@pytest.mark.parametrize(
    "k,s,mode,pad,dil,g,expect",
    [
        (3, 2, "same", 0, 1, 1, (8, 10)),  # in * stride
        (3, 2, "valid", 0, 1, 1, (9, 11)),  # in * stride + max(k - stride, 0)
        (2, 3, "valid", 0, 1, 1, (12, 15)),  # kernel smaller than stride: in * stride
        (3, 2, "pad", 1, 1, 2, (7, 9)),  # in * stride - 2 * pad + k - stride
        (3, 1, "valid", 0, 2, 1, (8, 9)),
    ],
)
def test_conv2d_transpose_sizes_and_values(k, s, mode, pad, dil, g, expect):
    layer = nn.Conv2dTranspose(4, 2, k, s, mode, pad, dil, g, has_bias=True)
    assert layer.weight.shape == (4, 2 // g, k, k)
    x = np.random.default_rng(0).standard_normal((2, 4, 4, 5))
    y, p = _run(layer, x)
    assert y.shape[2:] == expect
    if mode == "same":
        kd = dil * (k - 1) + 1
        pads = [((max(kd - s, 0)) // 2, max(kd - s, 0) - max(kd - s, 0) // 2)] * 2
    elif mode == "pad":
        pads = [(pad, pad)] * 2
    else:
        pads = [(0, 0)] * 2
    ref = conv_transpose_ref(x, p["weight"], p["bias"], (s, s), pads, (dil, dil), g, expect)
    np.testing.assert_allclose(y, ref, atol=1e-10)


def test_conv1d_transpose():
    layer = nn.Conv1dTranspose(2, 3, 3, 2, "pad", 1)
    assert layer.weight.shape == (2, 3, 1, 3)
    x = np.random.default_rng(0).standard_normal((1, 2, 5))
    y, p = _run(layer, x)
    assert y.shape == (1, 3, 9)
    ref = conv_transpose_ref(x, p["weight"][:, :, 0], None, (2,), [(1, 1)], (1,), 1, (9,))
    np.testing.assert_allclose(y, ref, atol=1e-10)


@pytest.mark.parametrize(
    "layer,shape",
    [
        (lambda: nn.Conv2d(2, 2, 2, 2, "pad", 1, 1, 2, True), (1, 2, 3, 3)),
        (lambda: nn.Conv2d(2, 2, 3, 1, "same", 0, 2, 1, True), (1, 2, 4, 3)),
        (lambda: nn.Conv1d(2, 2, 2, 1, "valid", has_bias=True), (1, 2, 4)),
        (lambda: nn.Conv2dTranspose(2, 2, 2, 2, "valid", has_bias=True), (1, 2, 2, 2)),
    ],
)
def test_conv_gradients(layer, shape):
    cell = layer()
    x = np.random.default_rng(0).standard_normal(shape)
    check_layer_grad(cell, x, ["weight", "bias"])


def test_conv_defaults_names_and_init():
    c = nn.Conv2d(3, 8, 3)
    assert c.pad_mode == "same" and not c.has_bias and c.bias is None
    assert [n for n, _ in c.parameters_and_names()] == ["weight"]
    assert c.weight.shape == (8, 3, 3, 3) and c.weight.dtype.name.lower() == "float32"
    # MindSpore 2.x default: HeUniform(sqrt(5)), U(-b, b) with b = 1/sqrt(fan_in = 3*3*3)
    bound = 1 / np.sqrt(27)
    w = c.weight.asnumpy()
    assert np.abs(w).max() <= bound and abs(float(w.std()) - bound / np.sqrt(3)) < 0.2 * bound
    c = nn.Conv2d(4, 8, 3, group=2, has_bias=True)
    assert c.weight.shape == (8, 2, 3, 3) and c.bias.shape == (8,)
    assert np.abs(c.bias.asnumpy()).max() <= 1 / np.sqrt(2 * 9)  # fan_in of a group's weight
    old = nn.Conv2d(3, 8, 3, weight_init="normal")  # MindSpore 1.8's default, by name
    assert abs(float(old.weight.asnumpy().std()) - 0.01) < 0.003  # Normal(sigma=0.01)
    assert "input_channels=4, output_channels=8, kernel_size=(3, 3)" in repr(c)


def test_conv_errors():
    with pytest.raises(ValueError, match="Conv2d: argument 'padding'"):
        nn.Conv2d(2, 2, 3, pad_mode="same", padding=1)
    with pytest.raises(ValueError, match="Conv2d: argument 'group'"):
        nn.Conv2d(3, 4, 3, group=2)
    with pytest.raises(ValueError, match="Conv2d: argument 'pad_mode'"):
        nn.Conv2d(2, 2, 3, pad_mode="full")
    with pytest.raises(TypeError, match="Conv2d: argument 'kernel_size'"):
        nn.Conv2d(2, 2, 3.0)
    with pytest.raises(ValueError, match="Conv2d: argument 'weight_init'"):
        nn.Conv2d(2, 2, 3, weight_init=Tensor(np.zeros((2, 2, 2, 2), np.float32)))
    c = nn.Conv2d(2, 2, 3)
    with pytest.raises(ValueError, match="3 channels.*in_channels=2"):
        c(Tensor(np.zeros((1, 3, 4, 4), np.float32)))
    with pytest.raises(ValueError, match="Conv2d: the input expected a 4-d"):
        c(Tensor(np.zeros((3, 4, 4), np.float32)))
