"""Pooling layers against NumPy float64 references; gradients; errors."""

import numpy as np
import pytest
from _layer_refs import check_layer_grad, pool_ref, same_pads

from sporeling.core import Tensor, nn


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize(
    "k,s,mode,hw",
    [
        (2, 2, "valid", (4, 6)),
        (3, 2, "same", (5, 7)),
        ((2, 3), (1, 2), "valid", (5, 6)),
        (3, 1, "same", (4, 4)),
    ],
)
def test_pool2d_matches_reference(kind, k, s, mode, hw):
    cls = nn.MaxPool2d if kind == "max" else nn.AvgPool2d
    layer = cls(k, s, mode)
    x = np.random.default_rng(0).standard_normal((2, 3) + hw)
    y = layer(Tensor(x)).asnumpy()
    kk, ss = layer.kernel_size, layer.stride
    pads = same_pads(hw, kk, ss, (1, 1)) if mode == "same" else [(0, 0)] * 2
    np.testing.assert_allclose(y, pool_ref(x, kk, ss, pads, kind), atol=1e-12)


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("k,s,mode", [(2, 2, "valid"), (3, 2, "same")])
def test_pool1d_matches_reference(kind, k, s, mode):
    cls = nn.MaxPool1d if kind == "max" else nn.AvgPool1d
    x = np.random.default_rng(0).standard_normal((2, 3, 7))
    y = cls(k, s, mode)(Tensor(x)).asnumpy()
    pads = same_pads((7,), (k,), (s,), (1,)) if mode == "same" else [(0, 0)]
    np.testing.assert_allclose(y, pool_ref(x, (k,), (s,), pads, kind), atol=1e-12)


def test_pool_nhwc():
    x = np.random.default_rng(0).standard_normal((1, 4, 4, 2))
    y = nn.MaxPool2d(2, 2, data_format="NHWC")(Tensor(x)).asnumpy()
    ref = pool_ref(x.transpose(0, 3, 1, 2), (2, 2), (2, 2), [(0, 0)] * 2, "max")
    np.testing.assert_allclose(y, ref.transpose(0, 2, 3, 1))
    y = nn.AvgPool2d(2, 2, data_format="NHWC")(Tensor(x)).asnumpy()
    ref = pool_ref(x.transpose(0, 3, 1, 2), (2, 2), (2, 2), [(0, 0)] * 2, "avg")
    np.testing.assert_allclose(y, ref.transpose(0, 2, 3, 1), atol=1e-12)


def _adaptive_ref(x, oh, ow, kind):
    h, w = x.shape[-2:]
    out = np.zeros(x.shape[:-2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            a, b = (i * h) // oh, -(-((i + 1) * h) // oh)
            c, d = (j * w) // ow, -(-((j + 1) * w) // ow)
            win = x[..., a:b, c:d]
            out[..., i, j] = win.max((-1, -2)) if kind == "max" else win.mean((-1, -2))
    return out


@pytest.mark.parametrize("out", [(2, 3), 1, (3, None)])
def test_adaptive_pool2d(out):
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 7))
    oh, ow = (out, out) if isinstance(out, int) else out
    ow = 7 if ow is None else ow
    np.testing.assert_allclose(
        nn.AdaptiveAvgPool2d(out)(Tensor(x)).asnumpy(), _adaptive_ref(x, oh, ow, "avg"), atol=1e-12
    )
    np.testing.assert_allclose(
        nn.AdaptiveMaxPool2d(out)(Tensor(x)).asnumpy(), _adaptive_ref(x, oh, ow, "max")
    )


def test_adaptive_pool1d():
    x = np.random.default_rng(0).standard_normal((2, 3, 7))
    ref = _adaptive_ref(x[:, :, None, :], 1, 3, "avg")[:, :, 0]
    np.testing.assert_allclose(nn.AdaptiveAvgPool1d(3)(Tensor(x)).asnumpy(), ref, atol=1e-12)
    ref = _adaptive_ref(x[:, :, None, :], 1, 3, "max")[:, :, 0]
    np.testing.assert_allclose(nn.AdaptiveMaxPool1d(3)(Tensor(x)).asnumpy(), ref)


@pytest.mark.parametrize(
    "layer,shape",
    [
        (lambda: nn.MaxPool2d(2, 1, "same"), (1, 2, 3, 3)),
        (lambda: nn.AvgPool2d(3, 2, "same"), (1, 1, 4, 5)),
        (lambda: nn.AvgPool1d(2, 1), (1, 2, 4)),
        (lambda: nn.AdaptiveAvgPool2d((2, 2)), (1, 1, 3, 5)),
        (lambda: nn.AdaptiveMaxPool2d(2), (1, 1, 4, 4)),
    ],
)
def test_pool_gradients(layer, shape):
    # distinct, well-separated values keep max pooling away from ties
    x = np.random.default_rng(3).permutation(int(np.prod(shape))).reshape(shape) * 0.1
    check_layer_grad(layer(), x, [])


def test_pool_defaults_and_errors():
    p = nn.MaxPool2d()
    assert (p.kernel_size, p.stride, p.pad_mode) == ((1, 1), (1, 1), "valid")
    assert (
        repr(nn.MaxPool2d(2, 2)) == "MaxPool2d<kernel_size=(2, 2), stride=(2, 2), pad_mode=VALID>"
    )
    with pytest.raises(ValueError, match="MaxPool2d: argument 'pad_mode'"):
        nn.MaxPool2d(2, 2, "pad")
    with pytest.raises(ValueError, match="AvgPool2d: argument 'kernel_size'"):
        nn.AvgPool2d(0)
    with pytest.raises(ValueError, match="smaller than kernel_size"):
        nn.MaxPool2d(3)(Tensor(np.zeros((1, 1, 2, 2), np.float32)))
    with pytest.raises(ValueError, match="MaxPool1d: the input expected a 3-d"):
        nn.MaxPool1d(2)(Tensor(np.zeros((1, 1, 2, 2), np.float32)))
    with pytest.raises(ValueError, match="AdaptiveAvgPool2d: argument 'output_size'"):
        nn.AdaptiveAvgPool2d(0)
