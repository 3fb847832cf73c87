"""Learning-rate schedules (Cells) and dynamic_lr lists: MindSpore 1.8's formulas and examples."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sporeling.core import Parameter, Tensor, int32, nn


def at(schedule, step):
    out = schedule(Tensor(np.array([step], np.int32)))
    assert out.dtype == "Float32" or str(out.dtype) == "Float32"
    return float(out)


@pytest.mark.parametrize("stair", [False, True])
def test_decay_schedules(stair):
    lr, rate, steps = 0.1, 0.9, 4
    for t in range(10):
        p = math.floor(t / steps) if stair else t / steps
        assert at(nn.ExponentialDecayLR(lr, rate, steps, stair), t) == pytest.approx(
            lr * rate**p, rel=1e-6
        )
        assert at(nn.NaturalExpDecayLR(lr, rate, steps, stair), t) == pytest.approx(
            lr * math.exp(-rate * p), rel=1e-6
        )
        assert at(nn.InverseDecayLR(lr, rate, steps, stair), t) == pytest.approx(
            lr / (1 + rate * p), rel=1e-6
        )


def test_cosine_polynomial_warmup_schedules():
    cos = nn.CosineDecayLR(0.01, 0.1, 4)
    poly = nn.PolynomialDecayLR(0.1, 0.01, 4, 0.5)
    poly_up = nn.PolynomialDecayLR(0.1, 0.01, 4, 0.5, update_decay_steps=True)
    warm = nn.WarmUpLR(0.1, 4)
    for t in range(10):
        tc = min(t, 4)
        assert at(cos, t) == pytest.approx(0.01 + 0.045 * (1 + math.cos(math.pi * tc / 4)))
        assert at(poly, t) == pytest.approx(0.09 * (1 - tc / 4) ** 0.5 + 0.01, rel=1e-6)
        horizon = 4 * max(math.ceil(t / 4), 1)
        assert at(poly_up, t) == pytest.approx(0.09 * (1 - t / horizon) ** 0.5 + 0.01, rel=1e-6)
        assert at(warm, t) == pytest.approx(0.1 * tc / 4)
    wc = nn.WarmUpCosineDecayLR(0.0, 0.1, 2, 4)
    assert [round(at(wc, t), 6) for t in range(8)] == pytest.approx(
        [0.0, 0.05, 0.1, 0.085355, 0.05, 0.014645, 0.0, 0.0], abs=1e-6
    )


def test_dynamic_lr_mindspore_examples():
    assert (
        nn.piecewise_constant_lr([2, 5, 10], [0.1, 0.05, 0.01])
        == [0.1] * 2 + [0.05] * 3 + [0.01] * 5
    )
    np.testing.assert_allclose(
        nn.exponential_decay_lr(0.1, 0.9, 6, 2, 1), [0.1, 0.1, 0.09, 0.09, 0.081, 0.081]
    )
    np.testing.assert_allclose(
        nn.natural_exp_decay_lr(0.1, 0.9, 6, 2, 2, True),
        [0.1, 0.1, 0.1, 0.1, 0.016529888822158657, 0.016529888822158657],
    )
    np.testing.assert_allclose(
        nn.inverse_decay_lr(0.1, 0.5, 6, 1, 1, True),
        [0.1, 0.06666666666666667, 0.05, 0.04, 0.03333333333333333, 0.028571428571428574],
    )
    np.testing.assert_allclose(
        nn.cosine_decay_lr(0.01, 0.1, 6, 2, 2), [0.1, 0.1, 0.055, 0.055, 0.01, 0.01]
    )
    np.testing.assert_allclose(
        nn.polynomial_decay_lr(0.1, 0.01, 6, 2, 2, 0.5),
        [0.1, 0.1, 0.07363961030678928, 0.07363961030678928, 0.01, 0.01],
    )
    assert nn.warmup_lr(0.1, 6, 2, 2) == [0.0, 0.0, 0.05, 0.05, 0.1, 0.1]
    # natural exp without stair does not divide by decay_epoch (MindSpore's formula)
    np.testing.assert_allclose(
        nn.natural_exp_decay_lr(0.1, 0.5, 4, 1, 3), [0.1 * math.exp(-0.5 * i) for i in range(4)]
    )
    up = nn.polynomial_decay_lr(0.1, 0.01, 6, 1, 2, 1.0, update_decay_epoch=True)
    np.testing.assert_allclose(up, [0.1, 0.055, 0.01, 0.0325, 0.01, 0.025])


def test_lr_argument_errors():
    with pytest.raises(TypeError, match="ExponentialDecayLR: argument 'learning_rate'"):
        nn.ExponentialDecayLR(1, 0.9, 2)
    with pytest.raises(ValueError, match="decay_steps"):
        nn.ExponentialDecayLR(0.1, 0.9, 0)
    with pytest.raises(TypeError, match="is_stair"):
        nn.InverseDecayLR(0.1, 0.9, 2, is_stair=1)
    with pytest.raises(ValueError, match="CosineDecayLR: argument 'max_lr'"):
        nn.CosineDecayLR(0.1, 0.01, 3)
    with pytest.raises(ValueError, match="warmup_steps"):
        nn.WarmUpLR(0.1, -1)
    with pytest.raises(ValueError, match="same length"):
        nn.piecewise_constant_lr([1, 2], [0.1])
    with pytest.raises(ValueError, match="increasing"):
        nn.piecewise_constant_lr([3, 2], [0.1, 0.2])
    with pytest.raises(TypeError, match="learning_rates\\[0\\]"):
        nn.piecewise_constant_lr([1], [1])
    with pytest.raises(ValueError, match="total_step"):
        nn.exponential_decay_lr(0.1, 0.9, 0, 1, 1)
    with pytest.raises(ValueError, match="cosine_decay_lr"):
        nn.cosine_decay_lr(0.1, 0.1, 4, 1, 1)
    with pytest.raises(TypeError, match="warmup_lr: argument 'learning_rate'"):
        nn.warmup_lr(1, 4, 1, 1)


def test_optimizer_group_dynamic_lr_and_get_lr():
    a = Parameter(np.zeros(2, np.float32), name="a")
    b = Parameter(np.zeros(3, np.float32), name="b")
    warm = nn.WarmUpLR(0.4, 2)
    opt = nn.SGD([{"params": [a], "lr": warm}, {"params": [b]}], learning_rate=0.1)
    assert opt.dynamic_lr and opt.is_group_lr and isinstance(opt.learning_rate, nn.CellList)
    for _ in range(3):
        opt((Tensor(np.ones(2, np.float32)), Tensor(np.ones(3, np.float32))))
    np.testing.assert_allclose(a.asnumpy(), -(0.0 + 0.2 + 0.4))
    np.testing.assert_allclose(b.asnumpy(), -0.3, rtol=1e-6)
    names = [n for n, _ in opt.parameters_and_names()]
    assert "global_step" in names
    lrs = opt.get_lr()
    assert [round(float(x), 6) for x in lrs] == [0.4, 0.1]


def test_dynamic_weight_decay_cell():
    class HalfDecay(nn.Cell):
        def construct(self, global_step):
            return Tensor(np.float32(0.5 if int(global_step.asnumpy()[0]) == 0 else 0.0))

    w = Parameter(np.ones(2, np.float32), name="w")
    opt = nn.Momentum([w], 0.1, 0.0, weight_decay=HalfDecay())
    assert opt.dynamic_weight_decay
    opt((Tensor(np.zeros(2, np.float32)),))
    np.testing.assert_allclose(w.asnumpy(), 1 - 0.1 * 0.5)


def test_int32_step_input():
    assert float(nn.WarmUpLR(0.1, 4)(Tensor(2, int32))) == pytest.approx(0.05)
