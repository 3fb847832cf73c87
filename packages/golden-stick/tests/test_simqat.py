"""SimQAT: apply (wrapping, fusion, BN folding, redundant quantizers), setters and their
errors, training gradients, and the int8 export against the fake-quant network."""

import gs_nets
import numpy as np
import pytest

from sporeling.core import Tensor, nn, ops, value_and_grad
from sporeling.goldenstick import CompAlgo, QuantDtype, SimulatedQuantizationAwareTraining
from sporeling.goldenstick.deploy_runtime import qgemm
from sporeling.goldenstick.quantization import (
    BnFoldQuant,
    BnFoldQuantTwoConv,
    BnWithoutFoldQuant,
    Int8Linear,
    QuantizeWrapperCell,
)

RNG = np.random.default_rng(0)


def _wrappers(net):
    return [c for _, c in net.cells_and_names() if isinstance(c, QuantizeWrapperCell)]


def test_comp_algo_base_interface():
    algo = CompAlgo({})
    net = gs_nets.LeNet5()
    assert algo.apply(net) is net and algo.loss(abs) is abs
    assert len(algo.callbacks()) == 1 and algo.convert(net) is net
    with pytest.raises(TypeError, match="'config'"):
        CompAlgo([1])
    with pytest.raises(TypeError, match="'network'"):
        algo.apply("lenet")


def test_defaults_follow_the_code_not_the_docstring():
    policy = SimulatedQuantizationAwareTraining().policy()
    assert policy["weight_per_channel"] and policy["weight_symmetric"]
    assert not policy["act_symmetric"] and policy["freeze_bn"] == 10000000
    assert not policy["bn_fold"]


@pytest.mark.parametrize(
    "config,exc,match",
    [
        ({"quant_dtype": (QuantDtype.INT4, QuantDtype.INT8)}, NotImplementedError, "INT8"),
        ({"quant_dtype": "int8"}, TypeError, "QuantDtype"),
        ({"per_channel": (True, True)}, NotImplementedError, "per-channel activation"),
        ({"quant_delay": (-1, 0)}, ValueError, "act_quant_delay"),
        ({"quant_delay": 1.5}, TypeError, "act_quant_delay"),
        ({"symmetric": (1, True)}, TypeError, "act_symmetric"),
        ({"enable_fusion": "yes"}, TypeError, "enable_fusion"),
        ({"freeze_bn": -3}, ValueError, "freeze_bn"),
        ({"narrow_range": (False, False, False)}, ValueError, "pair"),
        ({"bogus": 1}, ValueError, "unknown config"),
    ],
)
def test_bad_configs_raise_mindspore_errors(config, exc, match):
    with pytest.raises(exc, match=match):
        SimulatedQuantizationAwareTraining(config)


def test_setters():
    algo = SimulatedQuantizationAwareTraining()
    algo.set_weight_per_channel(False)
    algo.set_act_quant_delay(5)
    algo.set_bn_fold(True)
    algo.set_enable_fusion(True)
    p = algo.policy()
    assert not p["weight_per_channel"] and p["act_quant_delay"] == 5 and p["bn_fold"]
    with pytest.raises(NotImplementedError):
        algo.set_weight_quant_dtype(QuantDtype.UINT8)
    with pytest.raises(TypeError, match="weight_narrow_range"):
        algo.set_weight_narrow_range(None)


def test_apply_wraps_every_conv_and_dense_and_keeps_outputs_close():
    net = gs_nets.LeNet5()
    x = Tensor(RNG.standard_normal((4, 1, 32, 32)).astype("f4"))
    qnet = SimulatedQuantizationAwareTraining().apply(net)
    assert len(_wrappers(qnet)) == 5
    qnet.set_train(True)
    out = qnet(x).asnumpy()
    ref = net(x).asnumpy()
    assert np.abs(out - ref).max() < 0.1 * np.abs(ref).max()
    params = qnet.trainable_params()
    _, grads = value_and_grad(lambda t: ops.reduce_sum(qnet(t) ** 2), None, params)(x)
    assert all(np.abs(g.asnumpy()).sum() > 0 for g in grads)  # STE lets gradients through


def test_fusion_and_redundant_quantizer_removal():
    net = gs_nets.LeNet5()
    qnet = SimulatedQuantizationAwareTraining({"enable_fusion": True}).apply(net)
    wrappers = _wrappers(qnet)
    assert len(wrappers) == 5
    # fc1+relu -> fc2+relu -> fc3 follow each other directly: their input quantizers go
    dropped = [w for w in wrappers if w._input_quantizer is None]
    assert len(dropped) == 2 and all(w.input_source is not None for w in dropped)
    assert "self.relu(" not in qnet._rewrite_source  # the ReLUs are fused


@pytest.mark.parametrize("bn_fold,one_conv", [(False, True), (True, True), (True, False)])
def test_conv_bn_fusion_matches_float_network_in_eval(bn_fold, one_conv):
    net = gs_nets.ConvBnNet()
    gs_nets.randomize_bn(net)
    x = Tensor(RNG.standard_normal((2, 3, 8, 8)).astype("f4"))
    for _, cell in net.cells_and_names():  # calibrate on the statistics eval uses
        if isinstance(cell, nn.BatchNorm2d):
            cell.use_batch_statistics = False
    config = {"enable_fusion": True, "bn_fold": bn_fold, "freeze_bn": 0, "one_conv_fold": one_conv}
    qnet = SimulatedQuantizationAwareTraining(config).apply(net)
    kinds = {type(w._handler) for w in _wrappers(qnet)}
    expected = (
        BnWithoutFoldQuant if not bn_fold else BnFoldQuant if one_conv else BnFoldQuantTwoConv
    )
    assert expected in kinds
    qnet.set_train(True)
    qnet(x)  # observe the activation ranges
    qnet.set_train(False)
    net.set_train(False)
    ref = net(x).asnumpy()
    out = qnet(x).asnumpy()
    assert np.abs(out - ref).max() < 0.08 * (np.abs(ref).max() + 1e-3)


def test_qgemm_matches_integer_reference():
    a = RNG.integers(-255, 256, (7, 33)).astype(np.int16)
    w = RNG.integers(-128, 128, (5, 33)).astype(np.int8)
    np.testing.assert_array_equal(qgemm(a, w), a.astype(np.int64) @ w.astype(np.int64).T)


@pytest.mark.parametrize(
    "fusion,fold,one_conv",
    [(False, False, True), (True, False, True), (True, True, True), (True, True, False)],
)
def test_int8_export_matches_fake_quant_within_one_step(fusion, fold, one_conv):
    net = gs_nets.ConvBnNet() if fusion else gs_nets.LeNet5()
    gs_nets.randomize_bn(net)
    shape = (4, 3, 8, 8) if fusion else (4, 1, 32, 32)
    x = Tensor(RNG.standard_normal(shape).astype("f4"))
    algo = SimulatedQuantizationAwareTraining(
        {"enable_fusion": fusion, "bn_fold": fold, "one_conv_fold": one_conv}
    )
    qnet = algo.apply(net)
    qnet.set_train(True)
    qnet(x)
    qnet.set_train(False)
    seen = []
    for w in _wrappers(qnet):
        w.register_forward_hook(lambda cell, inputs, out: seen.append((cell, inputs[0], out)))
    fq = qnet(x).asnumpy()
    names = {id(c): n for n, c in qnet.cells_and_names()}
    order = [names[id(cell)] for cell, _, _ in seen]
    inet = algo.convert(qnet)
    layers = dict(inet.cells_and_names())
    assert all(isinstance(layers[n], Int8Linear) for n in order)
    assert all(layers[n].weight_int8.asnumpy().dtype == np.int8 for n in order)
    # each int8 layer, given the fake-quant layer's input, is within one output step
    for (cell, inp, out), name in zip(seen, order):
        step = float(cell._output_quantizer.quant_params()[2][0])
        got = layers[name](inp).asnumpy()
        assert np.abs(got - out.asnumpy()).max() <= step * 1.001, name
    # end to end, a rare one-level flip may propagate, but outputs agree
    out = inet(x).asnumpy()
    assert np.median(np.abs(out - fq)) == 0.0
    assert np.abs(out - fq).max() <= 0.25 * np.abs(fq).max()


def test_convert_needs_calibration():
    algo = SimulatedQuantizationAwareTraining()
    qnet = algo.apply(gs_nets.LeNet5())
    with pytest.raises(ValueError, match="seen no data"):
        algo.convert(qnet)


def test_int8_linear_rejects_bad_kind():
    with pytest.raises(ValueError, match="'kind'"):
        Int8Linear("conv3d", (1, 1))
    with pytest.raises(ValueError, match="'conv'"):
        Int8Linear("conv2d", (1, 1, 3, 3))
    assert isinstance(nn.Dense(2, 2), nn.Cell)


def test_int8_weights_equal_fake_quant_weights():
    from sporeling.goldenstick.quantization import (
        SimulatedFakeQuantizerPerChannel,
        quantize_weight,
    )

    w = RNG.standard_normal((64, 3, 3, 3)).astype("f4") * RNG.uniform(0.01, 3, (64, 1, 1, 1))
    w = w.astype("f4")
    fq = SimulatedFakeQuantizerPerChannel(64)(Tensor(w)).asnumpy()
    q, scale = quantize_weight(w, True, False)
    assert q.dtype == np.int8 and q.min() >= -128 and q.max() <= 127
    np.testing.assert_allclose(q * scale[:, None, None, None], fq, rtol=1e-6, atol=1e-7)


def test_net_transformer_pattern_transform():
    from sporeling.core.rewrite import PatternEngine
    from sporeling.goldenstick import NetTransformer
    from sporeling.goldenstick.quantization import Conv2dBnAct
    from sporeling.goldenstick.quantization.simqat import _FuseReplacement

    nt = NetTransformer(gs_nets.ConvBnNet())
    names = [n.get_name() for n in nt.nodes()]
    assert "conv1" in names and "bn1" in names
    assert nt.pattern_transform(
        PatternEngine([nn.Conv2d, nn.BatchNorm2d], _FuseReplacement(Conv2dBnAct))
    )
    assert "self.conv1_bn1(" in nt.get_code()
    x = Tensor(RNG.standard_normal((1, 3, 8, 8)).astype("f4"))
    assert nt.get_network()(x).shape == (1, 5)


class _DenseBn(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(6, 4, weight_init="he_uniform")
        self.bn = nn.BatchNorm1d(4)
        self.relu = nn.ReLU()

    def construct(self, x):
        return self.relu(self.bn(self.fc(x)))


@pytest.mark.parametrize("bn_fold,one_conv", [(False, True), (True, True), (True, False)])
def test_dense_bn_relu_fusion(bn_fold, one_conv):
    net = _DenseBn()
    gs_nets.randomize_bn(net)
    net.bn.use_batch_statistics = False
    algo = SimulatedQuantizationAwareTraining(
        {"enable_fusion": True, "bn_fold": bn_fold, "freeze_bn": 0, "one_conv_fold": one_conv}
    )
    qnet = algo.apply(net)
    (wrapper,) = _wrappers(qnet)
    assert wrapper._handler.act is not None and wrapper._handler.bn is net.bn
    x = Tensor(RNG.standard_normal((8, 6)).astype("f4"))
    qnet.set_train(True)
    qnet(x)
    qnet.set_train(False)
    net.set_train(False)
    ref = net(x).asnumpy()
    assert np.abs(qnet(x).asnumpy() - ref).max() < 0.05 * np.abs(ref).max()
    out = algo.convert(qnet)(x).asnumpy()
    assert np.abs(out - qnet(x).asnumpy()).max() <= 1.001 * float(
        wrapper._output_quantizer.quant_params()[2][0]
    )


def test_bn_fold_uses_batch_statistics_until_freeze_bn():
    net = gs_nets.ConvBnNet()
    qnet = SimulatedQuantizationAwareTraining(
        {"enable_fusion": True, "bn_fold": True, "freeze_bn": 1}
    ).apply(net)
    x = Tensor(RNG.standard_normal((2, 3, 8, 8)).astype("f4") * 3 + 1)
    qnet.set_train(True)
    before = net.bn1.moving_mean.asnumpy().copy()
    qnet(x)
    after_one = net.bn1.moving_mean.asnumpy().copy()
    qnet(x)
    assert not np.allclose(before, after_one)  # step 1: batch statistics update the BN
    np.testing.assert_array_equal(net.bn1.moving_mean.asnumpy(), after_one)  # frozen
