"""Networks, policies, DiscountedReturn, OUNoise, SoftUpdate against NumPy references."""

from __future__ import annotations

import math

import numpy as np
import pytest

import sporeling.core as ms
from sporeling.core import Tensor, nn, ops
from sporeling.rl.network import FullyConnectedLayers, GruNet
from sporeling.rl.policy import EpsilonGreedyPolicy, GreedyPolicy, RandomPolicy
from sporeling.rl.utils import DiscountedReturn, OUNoise, SoftUpdate
from sporeling_testing.gradcheck import check_grad


def _mlp_ref(net, x):
    h = np.asarray(x, np.float64)
    dense = [c for c in net.fc_layers if isinstance(c, nn.Dense)]
    for i, d in enumerate(dense):
        h = h @ d.weight.asnumpy().astype(np.float64).T + d.bias.asnumpy()
        if i < len(dense) - 1:
            h = np.maximum(h, 0.0)
    return h


def test_fully_connected_layers_forward_and_gradient():
    ms.set_seed(0)
    net = FullyConnectedLayers([4, 8, 8, 3], weight_init="he_uniform")
    x = np.random.default_rng(0).standard_normal((5, 4))
    np.testing.assert_allclose(net(Tensor(x.astype(np.float32))).asnumpy(), _mlp_ref(net, x),
                               rtol=1e-5, atol=1e-6)  # fmt: skip
    net64 = FullyConnectedLayers([4, 8, 3])
    for p in net64.trainable_params():
        p.set_data(Tensor(p.asnumpy().astype(np.float64)))
    check_grad(lambda t: net64(t), [x + 0.01])
    with pytest.raises(ValueError, match="fc_layer_params expected >= 2 positive ints"):
        FullyConnectedLayers([4])


def test_gru_net_is_the_core_gru():
    ms.set_seed(0)
    net = GruNet(3, 5, weight_init=None)
    x = Tensor(np.random.default_rng(1).standard_normal((4, 2, 3)).astype(np.float32))
    h = Tensor(np.zeros((1, 2, 5), np.float32))
    y, hn = net(x, h)
    y2, hn2 = net.gru(x, h)
    assert y.shape == (4, 2, 5) and hn.shape == (1, 2, 5)
    np.testing.assert_array_equal(y.asnumpy(), y2.asnumpy())
    np.testing.assert_array_equal(hn.asnumpy()[0], y.asnumpy()[-1])


def test_policies():
    ms.set_seed(3)
    net = nn.Dense(2, 4)
    s = np.random.default_rng(0).standard_normal((64, 2)).astype(np.float32)
    greedy = GreedyPolicy(net)(Tensor(s)).asnumpy()
    np.testing.assert_array_equal(greedy, net(Tensor(s)).asnumpy().argmax(-1))
    eg = EpsilonGreedyPolicy(net, (64,), 1.0, 0.1, 100.0, 4)
    assert eg.epsilon(0) == pytest.approx(1.0)
    assert eg.epsilon(100) == pytest.approx(0.1 + 0.9 * math.exp(-1))
    linear = EpsilonGreedyPolicy(net, (64,), 1.0, 0.1, 100.0, 4, schedule="linear")
    assert [linear.epsilon(t) for t in (0, 50, 100, 1000)] == pytest.approx([1.0, 0.55, 0.1, 0.1])
    never = EpsilonGreedyPolicy(net, (64,), 0.0, 0.0, 1.0, 4)
    np.testing.assert_array_equal(never(Tensor(s), 0).asnumpy(), greedy)
    always = EpsilonGreedyPolicy(net, (64,), 1.0, 1.0, 1.0, 4)
    draws = np.concatenate([always(Tensor(s), 0).asnumpy() for _ in range(50)])
    assert np.all(np.abs(np.bincount(draws, minlength=4) / draws.size - 0.25) < 0.03)
    r = RandomPolicy(3, (1000,))().asnumpy()
    assert r.dtype == np.int32 and set(r.tolist()) == {0, 1, 2}
    with pytest.raises(ValueError, match="expected 0 <= epsi_low <= epsi_high <= 1"):
        EpsilonGreedyPolicy(net, 1, 0.1, 0.5, 1.0, 4)
    with pytest.raises(ValueError, match="schedule expected 'exponential' or 'linear'"):
        EpsilonGreedyPolicy(net, 1, 0.5, 0.5, 1.0, 4, schedule="cosine")


def test_discounted_return_against_a_python_loop():
    rng = np.random.default_rng(0)
    reward = rng.standard_normal((7, 3)).astype(np.float32)
    done = rng.random((7, 3)) < 0.3
    last = rng.standard_normal(3).astype(np.float32)
    gamma = 0.9
    want = np.zeros((7, 3))
    for n in range(3):
        running = float(last[n])
        for t in range(6, -1, -1):
            running = reward[t, n] + gamma * running * (1.0 - done[t, n])
            want[t, n] = running
    got = DiscountedReturn(gamma)(Tensor(reward), Tensor(done), Tensor(last)).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="gamma expected a float in"):
        DiscountedReturn(1.5)


def test_ou_noise_recursion():
    ms.set_seed(9)
    noise = OUNoise(0.2, 0.15, (2,))
    ref_rng = np.random.default_rng(9 + 104729)
    x = np.zeros(2)
    for _ in range(5):
        out = noise(Tensor(np.ones(2, np.float32))).asnumpy()
        x = x - 0.15 * x + 0.2 * ref_rng.standard_normal(2)
        np.testing.assert_allclose(out, 1.0 + x, rtol=1e-5)


def test_soft_update():
    a = ms.Parameter(Tensor(np.ones(3, np.float32)), name="a")
    b = ms.Parameter(Tensor(np.zeros(3, np.float32)), name="b")
    up = SoftUpdate(0.25, 2, [a], [b])
    assert up() is False and np.all(b.asnumpy() == 0)
    assert up() is True
    np.testing.assert_allclose(b.asnumpy(), 0.25)
    up(), up()
    np.testing.assert_allclose(b.asnumpy(), 0.25 + 0.25 * 0.75)
    with pytest.raises(ValueError, match="differ"):
        SoftUpdate(0.1, 1, [a], [ms.Parameter(Tensor(np.zeros(2, np.float32)), name="c")])
    assert ops is not None
