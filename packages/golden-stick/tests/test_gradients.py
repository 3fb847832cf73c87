"""Numerical gradient checks (float64 central differences) of the differentiable cells:
KfConv2d's knockoff mixing and SLB's softmax weights."""

import numpy as np

from sporeling.core import Tensor, nn, ops, value_and_grad
from sporeling.goldenstick.pruner import KfConv2d
from sporeling.goldenstick.quantization import SlbFakeQuantizerPerLayer
from sporeling_testing.gradcheck import check_grad

RNG = np.random.default_rng(3)


def _kf64():
    conv = nn.Conv2d(2, 3, 3, pad_mode="valid")
    conv.weight.set_data(Tensor(RNG.standard_normal((3, 2, 3, 3))))
    kf = KfConv2d(conv, nn.Identity())
    kf.kfscale.set_data(Tensor(RNG.uniform(0, 1, (1, 3, 1, 1))))
    kf.set_train(True)
    return kf


def test_kfconv2d_input_gradient():
    kf = _kf64()
    check_grad(lambda x: kf(x), [RNG.standard_normal((4, 2, 5, 5))])


def test_kfconv2d_kfscale_gradient_matches_formula():
    kf = _kf64()
    x = Tensor(RNG.standard_normal((4, 2, 5, 5)))
    u = RNG.standard_normal((4, 3, 3, 3))
    _, (g,) = value_and_grad(lambda t: ops.reduce_sum(kf(t) * Tensor(u)), None, [kf.kfscale])(x)
    y = kf.conv(x).asnumpy()
    ref = (u[:2] * (y[:2] - y[2:])).sum(axis=(0, 2, 3)).reshape(1, 3, 1, 1)
    np.testing.assert_allclose(g.asnumpy(), ref, rtol=1e-10, atol=1e-10)


def test_slb_softmax_weight_gradient():
    q = SlbFakeQuantizerPerLayer(2)
    q.set_train(True)
    q.set_temperature(1.7)
    check_grad(lambda logits: q(logits), [RNG.standard_normal((3, 2, 4))])
