"""SimQAT fusion with a layer's own activation (``nn.Dense(..., activation='relu')``) and
with biased Conv2d/Dense before a BatchNorm. In MindSpore 1.8 a Dense's activation runs
right after the product, before a BN that follows, so Dense(act) + BN is not the
Dense + BN fusion pattern: it is left unfused (the Dense quantized alone, the BN in
float). With quantization not yet active (quant_delay not reached), every fused or folded
form must give the float network's training-mode outputs, and the int8 export must keep
the layer's activation."""

import numpy as np
import pytest

from sporeling.core import Tensor, nn
from sporeling.goldenstick import SimulatedQuantizationAwareTraining
from sporeling.goldenstick.quantization import (
    BnFoldQuant,
    BnFoldQuantTwoConv,
    BnWithoutFoldQuant,
    DenseQuant,
    Int8Linear,
    QuantizeWrapperCell,
)

RNG = np.random.default_rng(7)
FORMS = {
    "no_fold": (False, True, BnWithoutFoldQuant),
    "one_conv": (True, True, BnFoldQuant),
    "two_conv": (True, False, BnFoldQuantTwoConv),
}


def _randomize(net):
    for _, cell in net.cells_and_names():
        if isinstance(cell, (nn.BatchNorm1d, nn.BatchNorm2d)):
            c = cell.num_features
            cell.gamma.set_data(Tensor(RNG.uniform(0.5, 1.5, c).astype("f4")))
            cell.beta.set_data(Tensor(RNG.normal(0, 0.3, c).astype("f4")))
        if isinstance(cell, (nn.Dense, nn.Conv2d)) and cell.bias is not None:
            cell.bias.set_data(Tensor(RNG.normal(0, 0.5, cell.bias.shape).astype("f4")))


class _DenseBn(nn.Cell):
    def __init__(self, activation=None, has_bias=True, relu=False):
        super().__init__()
        self.fc = nn.Dense(6, 5, activation=activation, has_bias=has_bias)
        self.bn = nn.BatchNorm1d(5)
        self.relu = nn.ReLU() if relu else None
        self.out = nn.Dense(5, 3)

    def construct(self, x):
        y = self.bn(self.fc(x))
        if self.relu is not None:
            y = self.relu(y)
        return self.out(y)


class _ConvBn(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, has_bias=True, pad_mode="valid")
        self.bn = nn.BatchNorm2d(4)
        self.relu = nn.ReLU()

    def construct(self, x):
        return self.relu(self.bn(self.conv(x)))


class _DenseActRelu(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(6, 5, activation="tanh")
        self.relu = nn.ReLU()

    def construct(self, x):
        return self.relu(self.fc(x))


def _nets():
    return {
        "dense_relu_act+bn": (lambda: _DenseBn("relu"), (8, 6)),
        "dense_sigmoid_act+bn+relu": (lambda: _DenseBn("sigmoid", relu=True), (8, 6)),
        "dense_bias+bn+relu": (lambda: _DenseBn(None, relu=True), (8, 6)),
        "dense_nobias+bn": (lambda: _DenseBn(None, has_bias=False), (8, 6)),
        "conv_bias+bn+relu": (_ConvBn, (2, 3, 7, 7)),
        "dense_tanh_act+relu": (_DenseActRelu, (8, 6)),
    }


def _handlers(net):
    return [c._handler for _, c in net.cells_and_names() if isinstance(c, QuantizeWrapperCell)]


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("kind", sorted(_nets()))
def test_fused_forms_match_float_network_before_quant_delay(kind, form):
    make, shape = _nets()[kind]
    net = make()
    _randomize(net)
    bn_fold, one_conv, folded_cls = FORMS[form]
    config = {
        "enable_fusion": True,
        "bn_fold": bn_fold,
        "one_conv_fold": one_conv,
        "quant_delay": (50, 50),
    }
    x = Tensor(RNG.standard_normal(shape).astype("f4"))
    net.set_train(True)
    ref = net(x).asnumpy()  # training mode: the BN uses the batch statistics
    qnet = SimulatedQuantizationAwareTraining(config).apply(net)
    kinds = {type(h) for h in _handlers(qnet)}
    layer_act = "_act" in kind
    has_bn = "+bn" in kind
    if has_bn and layer_act:  # Dense(act) + BN is not fused: the BN stays in float
        assert not any(isinstance(h, BnWithoutFoldQuant | BnFoldQuant) for h in kinds)
        assert DenseQuant in kinds
        assert any(isinstance(c, nn.BatchNorm1d) for _, c in qnet.cells_and_names())
    elif has_bn:
        assert folded_cls in kinds
    qnet.set_train(True)
    for _ in range(2):  # twice: the step counters move, quantization is still delayed
        out = qnet(x).asnumpy()
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind", ["dense_sigmoid_act+bn+relu", "dense_tanh_act+relu"])
def test_int8_export_keeps_the_layer_activation(kind):
    make, shape = _nets()[kind]
    net = make()
    _randomize(net)
    # symmetric activation grids: a dropped ReLU would not be hidden by a grid at 0
    config = {"enable_fusion": True, "bn_fold": True, "symmetric": (True, True)}
    algo = SimulatedQuantizationAwareTraining(config)
    qnet = algo.apply(net)
    x = Tensor(RNG.standard_normal(shape).astype("f4"))
    qnet.set_train(True)
    qnet(x)  # calibrate the activation grids
    qnet.set_train(False)
    wrappers = [c for _, c in qnet.cells_and_names() if isinstance(c, QuantizeWrapperCell)]
    seen = []
    for w in wrappers:
        w.register_forward_hook(lambda cell, inputs, out: seen.append((cell, inputs[0], out)))
    fq = qnet(x).asnumpy()
    names = {id(c): n for n, c in qnet.cells_and_names()}
    order = [names[id(cell)] for cell, _, _ in seen]
    inet = algo.convert(qnet)
    layers = dict(inet.cells_and_names())
    for (cell, inp, out), name in zip(seen, order):
        assert isinstance(layers[name], Int8Linear)
        step = float(cell._output_quantizer.quant_params()[2][0])
        got = layers[name](inp).asnumpy()
        assert np.abs(got - out.asnumpy()).max() <= step * 1.001, name
    out = inet(x).asnumpy()
    assert np.abs(out - fq).max() <= 0.25 * np.abs(fq).max()


@pytest.mark.parametrize("cls", [BnWithoutFoldQuant, BnFoldQuant, BnFoldQuantTwoConv])
def test_bn_cells_refuse_a_layer_with_its_own_activation(cls):
    dense, bn = nn.Dense(6, 5, activation="relu"), nn.BatchNorm1d(5)
    policy = SimulatedQuantizationAwareTraining().policy()
    with pytest.raises(ValueError, match="activation ReLU cannot be fused"):
        cls(dense, bn, policy)
