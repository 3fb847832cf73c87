"""Fake-quant maths against an independent NumPy reference, and straight-through grads."""

import numpy as np
import pytest

from sporeling.core import Tensor, grad, ops
from sporeling.goldenstick.quantization import (
    SimulatedFakeQuantizerPerChannel,
    SimulatedFakeQuantizerPerLayer,
    nudge,
)


def ref_fake_quant(x, lo, hi, bits=8, symmetric=False, narrow=False):
    """TensorFlow's FakeQuantWithMinMaxVars, written out in float64."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    if symmetric:
        a = max(-lo, hi)
        lo, hi = -a, a
    qmin, qmax = (1 if narrow else 0), 2**bits - 1
    scale = (hi - lo) / (qmax - qmin)
    zp_from_min = qmin - lo / scale
    zp = qmin if zp_from_min < qmin else qmax if zp_from_min > qmax else round(zp_from_min)
    if symmetric:
        zp = int(np.ceil((qmin + qmax) / 2))  # the exact midpoint (int8's zero)
    nmin, nmax = (qmin - zp) * scale, (qmax - zp) * scale
    c = np.clip(x, nmin, nmax)
    return np.floor((c - nmin) / scale + 0.5) * scale + nmin, (nmin, nmax, scale)


@pytest.mark.parametrize("symmetric", [False, True])
@pytest.mark.parametrize("narrow", [False, True])
def test_per_layer_matches_reference(symmetric, narrow):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((4, 3, 5)) * 2 + 0.3).astype(np.float32)
    q = SimulatedFakeQuantizerPerLayer(symmetric=symmetric, narrow_range=narrow)
    q.set_train(True)
    out = q(Tensor(x)).asnumpy()
    ref, (_, _, scale) = ref_fake_quant(
        x.astype(np.float64), x.min(), x.max(), 8, symmetric, narrow
    )
    # ties may round differently (half-even vs half-up): at most one level apart, rarely
    diff = np.abs(out - ref)
    assert diff.max() <= scale * 1.0001 and np.mean(diff > 1e-5) < 1e-2
    assert float(q.minq.asnumpy()[0]) == pytest.approx(x.min())
    levels = np.unique(np.round((out - out.min()) / scale, 3))
    assert np.allclose(levels, np.round(levels))  # every output sits on the grid


def test_zero_is_exact_and_grid_has_256_levels():
    nmin, nmax, scale, zp = nudge(-1.3, 2.1)
    assert (nmax - nmin) / scale == pytest.approx(255)
    assert (-nmin / scale) == pytest.approx(zp)  # 0.0 is a level
    nmin, nmax, _, _ = nudge(np.array([-1.0, 0.0]), np.array([0.5, 0.0]), symmetric=True)
    assert nmin[0] == pytest.approx(-nmax[0] - 2 / 255)


def test_per_channel_weights_symmetric():
    rng = np.random.default_rng(1)
    w = rng.standard_normal((4, 2, 3, 3)).astype(np.float32) * np.array([1, 5, 0.1, 2])[
        :, None, None, None
    ].astype(np.float32)
    q = SimulatedFakeQuantizerPerChannel(4, symmetric=True)
    out = q(Tensor(w)).asnumpy()
    for c in range(4):
        ref, (_, _, scale) = ref_fake_quant(
            w[c].astype(np.float64), w[c].min(), w[c].max(), 8, True
        )
        assert np.abs(out[c] - ref).max() <= scale * 1.0001
        assert np.abs(out[c] - w[c]).max() <= scale  # error within one step


def test_straight_through_gradient_is_one_inside_zero_outside():
    q = SimulatedFakeQuantizerPerLayer()
    q.set_train(True)
    q(Tensor(np.array([-1.0, 1.0], np.float32)))  # observe the range [-1, 1]
    q.set_train(False)
    x = Tensor(np.array([-3.0, -0.5, 0.2, 0.99, 2.5], np.float32))
    g = grad(lambda t: ops.reduce_sum(q(t) * Tensor(np.arange(1, 6, dtype=np.float32))))(x)
    np.testing.assert_array_equal(g.asnumpy(), [0.0, 2.0, 3.0, 4.0, 0.0])


def test_quant_delay_passes_through_first_steps():
    q = SimulatedFakeQuantizerPerLayer(quant_delay=2)
    q.set_train(True)
    x = Tensor(np.linspace(-1, 1, 7).astype(np.float32) + 0.001)
    np.testing.assert_array_equal(q(x).asnumpy(), x.asnumpy())
    np.testing.assert_array_equal(q(x).asnumpy(), x.asnumpy())
    assert not np.array_equal(q(x).asnumpy(), x.asnumpy())  # step 3: quantized


def test_ema_tracks_range():
    q = SimulatedFakeQuantizerPerLayer(ema=True, ema_decay=0.5)
    q.set_train(True)
    q(Tensor(np.array([-1.0, 1.0], np.float32)))
    q(Tensor(np.array([-3.0, 3.0], np.float32)))
    assert float(q.maxq.asnumpy()[0]) == pytest.approx(2.0)


def test_uncalibrated_eval_is_identity_and_bad_args():
    q = SimulatedFakeQuantizerPerLayer()
    x = Tensor(np.array([0.123], np.float32))
    assert q(x).asnumpy()[0] == np.float32(0.123)
    with pytest.raises(ValueError, match="'num_bits'"):
        SimulatedFakeQuantizerPerLayer(num_bits=9)
    with pytest.raises(ValueError, match="'quant_delay'"):
        SimulatedFakeQuantizerPerLayer(quant_delay=-1)
