"""SimQAT's two-conv BN fold (``bn_fold=True, one_conv_fold=False``; MindSpore's
Conv2dBnFoldQuant) against a NumPy float64 reference of the same maths, its gradients by
central differences, the switch to running statistics after ``freeze_bn``, and the int8
export of a network trained with it."""

import gs_nets
import numpy as np
import pytest

from sporeling.core import Tensor, nn, ops, set_seed, value_and_grad
from sporeling.goldenstick import SimulatedQuantizationAwareTraining
from sporeling.goldenstick.quantization import (
    BnFoldQuant,
    BnFoldQuantTwoConv,
    Int8Linear,
    QuantizeWrapperCell,
)
from sporeling_testing.gradcheck import check_grad

RNG = np.random.default_rng(21)
EPS = 1e-5


def _cell(dtype="f4", quant_delay=0, freeze_bn=10000000, bias=True, stride=1):
    conv = nn.Conv2d(3, 4, 3, stride=stride, pad_mode="valid", has_bias=bias)
    bn = nn.BatchNorm2d(4, eps=EPS, momentum=0.9)
    vals = {
        conv.weight: RNG.standard_normal((4, 3, 3, 3)) * 0.4,
        bn.gamma: RNG.uniform(0.5, 1.5, 4),
        bn.beta: RNG.normal(0, 0.2, 4),
        bn.moving_mean: RNG.normal(0, 0.3, 4),
        bn.moving_variance: RNG.uniform(0.5, 2.0, 4),
    }
    if bias:
        vals[conv.bias] = RNG.normal(0, 0.5, 4)
    for p, v in vals.items():
        p.set_data(Tensor(v.astype(dtype)))
    policy = {
        "act_quant_delay": 0,
        "weight_quant_delay": quant_delay,
        "act_symmetric": False,
        "weight_symmetric": True,
        "act_narrow_range": False,
        "weight_narrow_range": False,
        "weight_per_channel": True,
        "freeze_bn": freeze_bn,
        "bn_fold": True,
        "one_conv_fold": False,
    }
    cell = BnFoldQuantTwoConv(conv, bn, policy)
    cell.set_train(True)
    return cell


def _conv_ref(x, w, stride=1):
    win = np.lib.stride_tricks.sliding_window_view(x, w.shape[2:], axis=(2, 3))
    win = win[:, :, ::stride, ::stride]
    return np.einsum("nchwij,ocij->nohw", win, w)


def _fq_ref(w):
    """Per output channel, symmetric 8-bit (grid [-128, 127] * scale), float64."""
    flat = w.reshape(w.shape[0], -1)
    a = np.maximum(-np.minimum(flat.min(1), 0), np.maximum(flat.max(1), 0))
    scale = np.where(a > 0, 2 * a / 255, 1.0)
    nmin, nmax = -128 * scale, 127 * scale
    c = np.clip(flat, nmin[:, None], nmax[:, None])
    q = np.round((c - nmin[:, None]) / scale[:, None]) * scale[:, None] + nmin[:, None]
    return q.reshape(w.shape)


def _ref(cell, x, batch=True, quant=True):
    """Conv2dBnFoldQuant's maths in float64 (w_fold in float32, as the cell forms it)."""
    conv, bn = cell.op, cell.bn
    w, b = conv.weight.asnumpy(), conv.bias.asnumpy() if conv.bias is not None else 0.0
    g, beta = bn.gamma.asnumpy(), bn.beta.asnumpy()
    mm, mv = bn.moving_mean.asnumpy(), bn.moving_variance.asnumpy()
    rstd32 = np.sqrt(mv + np.float32(EPS))
    wf = w * (g / rstd32)[:, None, None, None]
    wq = _fq_ref(wf.astype(np.float64)) if quant else wf.astype(np.float64)
    x = x.astype(np.float64)
    rstd = np.sqrt(mv.astype(np.float64) + EPS)
    s = cell.op.stride[0]
    y1 = _conv_ref(x, w.astype(np.float64), s) + np.reshape(b, (1, -1, 1, 1))
    mu, var = y1.mean((0, 2, 3)), y1.var((0, 2, 3))
    if batch:
        std, mean = np.sqrt(var + EPS), mu
    else:
        std, mean = rstd, mm.astype(np.float64)
    y2 = _conv_ref(x, wq, s) * (rstd / std)[None, :, None, None]
    out = y2 + (beta + g * (b - mean) / std)[None, :, None, None]
    n = y1.size // y1.shape[1]
    return out, (0.9 * mm + 0.1 * mu, 0.9 * mv + 0.1 * var * n / (n - 1))


@pytest.mark.parametrize("bias,stride", [(True, 1), (False, 2)])
def test_forward_and_moving_statistics_match_numpy(bias, stride):
    cell = _cell(bias=bias, stride=stride)
    x = (RNG.standard_normal((3, 3, 9, 9)) * 2 + 0.5).astype("f4")
    ref, (mean, var) = _ref(cell, x)
    out = cell(Tensor(x)).asnumpy()
    np.testing.assert_allclose(out, ref, rtol=2e-4, atol=2e-4)
    np.testing.assert_allclose(cell.bn.moving_mean.asnumpy(), mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(cell.bn.moving_variance.asnumpy(), var, rtol=1e-5, atol=1e-6)


def test_without_quantization_it_is_the_training_batchnorm():
    cell = _cell(quant_delay=100)
    x = Tensor(RNG.standard_normal((4, 3, 8, 8)).astype("f4"))
    conv, bn = cell.op, cell.bn
    ref = bn(conv(x)).asnumpy()  # (bn in training mode: batch statistics)
    np.testing.assert_allclose(cell(x).asnumpy(), ref, rtol=1e-4, atol=1e-4)


def _stateless(cell):
    """``cell`` called with its moving statistics and step count restored first (so that
    every finite-difference evaluation sees the same running std)."""
    params = [cell.bn.moving_mean, cell.bn.moving_variance, cell.step_count]
    saved = [p.asnumpy().copy() for p in params]

    def run(x):
        for p, v in zip(params, saved):
            p.set_data(Tensor(v))
        return cell(x)

    return run


def test_input_gradient_numerically():
    cell = _cell("f8", quant_delay=1000)  # the STE's rounding is not differentiable
    check_grad(_stateless(cell), [RNG.standard_normal((3, 3, 6, 6))])


@pytest.mark.parametrize("name", ["weight", "bias", "gamma", "beta"])
def test_parameter_gradients_numerically(name):
    cell = _cell("f8", quant_delay=1000)
    run = _stateless(cell)
    param = (
        {"weight": cell.op.weight, "bias": cell.op.bias}[name]
        if name in ("weight", "bias")
        else getattr(cell.bn, name)
    )
    x = Tensor(RNG.standard_normal((3, 3, 6, 6)))
    u = Tensor(RNG.standard_normal((3, 4, 4, 4)))
    _, (g,) = value_and_grad(lambda t: ops.reduce_sum(run(t) * u), None, [param])(x)
    base = param.asnumpy().copy()
    d = RNG.standard_normal(base.shape)
    vals = []
    for sign in (1, -1):
        param.set_data(Tensor(base + sign * 1e-6 * d))
        vals.append(float(ops.reduce_sum(run(x) * u).asnumpy()))
    param.set_data(Tensor(base))
    numeric = (vals[0] - vals[1]) / 2e-6
    assert float(np.sum(g.asnumpy() * d)) == pytest.approx(numeric, rel=1e-5, abs=1e-7)


def test_after_freeze_bn_running_statistics_are_used():
    cell = _cell(freeze_bn=1)
    x = (RNG.standard_normal((3, 3, 8, 8)) * 1.5 - 0.7).astype("f4")
    cell(Tensor(x))  # step 1: batch statistics, moving ones updated
    mm, mv = cell.bn.moving_mean.asnumpy().copy(), cell.bn.moving_variance.asnumpy().copy()
    ref, _ = _ref(cell, x, batch=False)
    out = cell(Tensor(x)).asnumpy()  # step 2: frozen
    np.testing.assert_allclose(out, ref, rtol=2e-4, atol=2e-4)
    np.testing.assert_array_equal(cell.bn.moving_mean.asnumpy(), mm)
    np.testing.assert_array_equal(cell.bn.moving_variance.asnumpy(), mv)
    assert cell.steps == 2
    cell.set_train(False)  # eval: the same running-statistics form
    np.testing.assert_allclose(cell(Tensor(x)).asnumpy(), ref, rtol=2e-4, atol=2e-4)


def test_one_conv_fold_statistics_include_the_conv_bias():
    """Both forms: without quantization, training output = conv + BN in training mode,
    and the moving mean tracks the conv output with its bias (what eval and the int8
    export subtract)."""
    cell = _cell(quant_delay=100)
    one = BnFoldQuant(cell.op, cell.bn, {**_policy_of(cell), "one_conv_fold": True})
    one.set_train(True)
    x = Tensor(RNG.standard_normal((4, 3, 8, 8)).astype("f4"))
    mm = cell.bn.moving_mean.asnumpy().copy()
    ref = cell.bn(cell.op(x)).asnumpy()
    expected_mean = 0.9 * mm + 0.1 * cell.op(x).asnumpy().mean((0, 2, 3))
    cell.bn.moving_mean.set_data(Tensor(mm))
    np.testing.assert_allclose(one(x).asnumpy(), ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(cell.bn.moving_mean.asnumpy(), expected_mean, rtol=1e-5)


def _policy_of(cell):
    return {
        "weight_quant_delay": cell.fake_quant_weight.quant_delay,
        "weight_symmetric": True,
        "weight_narrow_range": False,
        "weight_per_channel": True,
        "freeze_bn": cell.freeze_bn,
        "bn_fold": True,
    }


def test_trained_two_conv_network_converts_to_int8():
    set_seed(2)
    net = gs_nets.ConvBnNet()
    gs_nets.randomize_bn(net)
    algo = SimulatedQuantizationAwareTraining(
        {"enable_fusion": True, "bn_fold": True, "one_conv_fold": False, "freeze_bn": 3}
    )
    qnet = algo.apply(net)
    kinds = [
        type(c._handler) for _, c in qnet.cells_and_names() if isinstance(c, QuantizeWrapperCell)
    ]
    assert kinds.count(BnFoldQuantTwoConv) == 2
    x = Tensor(RNG.standard_normal((8, 3, 8, 8)).astype("f4"))
    target = Tensor(RNG.standard_normal((8, 5)).astype("f4"))
    params = qnet.trainable_params()
    step = value_and_grad(lambda t: ops.reduce_sum(ops.square(qnet(t) - target)), None, params)
    qnet.set_train(True)
    losses = []
    for _ in range(5):  # 3 steps on batch statistics, then frozen
        loss, grads = step(x)
        losses.append(float(loss.asnumpy()))
        for p, g in zip(params, grads):
            p.set_data(Tensor(p.asnumpy() - 0.01 * g.asnumpy()))
    assert losses[2] < losses[0]  # (the switch to running statistics moves the loss)
    qnet.set_train(False)
    seen = []
    for _, w in qnet.cells_and_names():
        if isinstance(w, QuantizeWrapperCell):
            w.register_forward_hook(lambda cell, inputs, out: seen.append((cell, inputs[0], out)))
    fq = qnet(x).asnumpy()
    names = {id(c): n for n, c in qnet.cells_and_names()}
    order = [names[id(cell)] for cell, _, _ in seen]
    inet = algo.convert(qnet)
    layers = dict(inet.cells_and_names())
    for (cell, inp, out), name in zip(seen, order):
        assert isinstance(layers[name], Int8Linear)
        step_size = float(cell._output_quantizer.quant_params()[2][0])
        got = layers[name](inp).asnumpy()
        assert np.abs(got - out.asnumpy()).max() <= step_size * 1.001, name
    out = inet(x).asnumpy()
    assert np.median(np.abs(out - fq)) == 0.0
