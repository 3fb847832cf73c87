"""SimQAT's extension hooks: ``custom_transforms`` (PatternEngines applied after the
built-in fusions) and ``custom_policies`` (Cell type -> LayerPolicy or factory), their
effect on the quantized network and on ``convert``, and their config errors."""

import gs_nets
import numpy as np
import pytest

from sporeling.core import Tensor, nn, ops, value_and_grad
from sporeling.core.rewrite import Node, PatternEngine, Replacement
from sporeling.goldenstick import SimulatedQuantizationAwareTraining
from sporeling.goldenstick.quantization import (
    Conv2dQuant,
    DenseQuant,
    Int8Linear,
    LayerPolicy,
    QuantizeWrapperCell,
    SimulatedFakeQuantizerPerChannel,
    SimulatedFakeQuantizerPerLayer,
    SimulatedLayerPolicy,
)

RNG = np.random.default_rng(11)


def _wrappers(net):
    return [c for _, c in net.cells_and_names() if isinstance(c, QuantizeWrapperCell)]


class ConvReLU6(nn.Cell):
    """A user's fused cell (what a custom transform builds)."""

    def __init__(self, op, act):
        super().__init__(auto_prefix=False)
        self.op = op
        self.act = act

    def construct(self, x):
        return self.act(self.op(x))


class _FuseReLU6(Replacement):
    def build(self, pattern, is_chain_pattern, matched):
        conv, act = (n.get_instance() for n in matched.values())
        first = next(iter(matched.values()))
        name = "_".join(n.get_name() for n in matched.values())
        return [Node.create_call_cell(ConvReLU6(conv, act), [name], first.get_args(), name=name)]


class ConvReLU6Policy(SimulatedLayerPolicy):
    """Quantizes ConvReLU6: the conv's weight fake-quantized, ReLU6 after it."""

    def wrap_cell(self, handler):
        inner = Conv2dQuant(handler.op, self.config, handler.act)
        return QuantizeWrapperCell(inner, self.get_input_quantizer(), self.get_output_quantizer())


class Relu6Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, weight_init="he_uniform")
        self.relu6 = nn.ReLU6()
        self.conv2 = nn.Conv2d(8, 4, 3, stride=2, weight_init="he_uniform")
        self.fc = nn.Dense(4, 5, weight_init="he_uniform")

    def construct(self, x):
        x = self.relu6(self.conv1(x))
        return self.fc(ops.mean(self.conv2(x), (2, 3)))


def test_custom_transform_and_policy_quantize_a_users_fused_cell():
    net = Relu6Net()
    engine = PatternEngine([nn.Conv2d, nn.ReLU6], _FuseReLU6())
    algo = SimulatedQuantizationAwareTraining(
        {"custom_transforms": [engine], "custom_policies": {ConvReLU6: ConvReLU6Policy()}}
    )
    qnet = algo.apply(net)
    assert "self.relu6(" not in qnet._rewrite_source  # fused by the custom transform
    wrappers = _wrappers(qnet)
    assert len(wrappers) == 3
    fused = [w for w in wrappers if isinstance(w._handler.act, nn.ReLU6)]
    assert len(fused) == 1 and fused[0]._handler.op is net.conv1
    # the policy is deep-copied per layer: no quantizer is shared between layers
    quantizers = [q for w in wrappers for q in (w._input_quantizer, w._output_quantizer) if q]
    assert len({id(q) for q in quantizers}) == len(quantizers)
    x = Tensor(RNG.standard_normal((4, 3, 9, 9)).astype("f4"))
    qnet.set_train(True)
    out = qnet(x).asnumpy()
    ref = net(x).asnumpy()
    assert np.abs(out - ref).max() < 0.1 * np.abs(ref).max()
    _, grads = value_and_grad(
        lambda t: ops.reduce_sum(qnet(t) ** 2), None, qnet.trainable_params()
    )(x)
    assert all(np.abs(g.asnumpy()).sum() > 0 for g in grads)
    qnet.set_train(False)
    fq = qnet(x).asnumpy()
    inet = algo.convert(qnet)
    assert sum(isinstance(c, Int8Linear) for _, c in inet.cells_and_names()) == 3
    assert np.median(np.abs(inet(x).asnumpy() - fq)) <= 1e-6 + 0.02 * np.abs(fq).max()


def test_custom_transform_runs_after_the_builtin_fusions():
    """With fusion on, Conv2d+ReLU is already fused when the custom engine runs: a custom
    [Conv2d, ReLU] pattern then finds nothing."""
    seen = []

    class Spy(Replacement):
        def build(self, pattern, is_chain_pattern, matched):
            seen.append(list(matched))
            return []

    algo = SimulatedQuantizationAwareTraining(
        {"enable_fusion": True, "custom_transforms": [PatternEngine([nn.Conv2d, nn.ReLU], Spy())]}
    )
    algo.apply(gs_nets.ConvBnNet())
    assert seen == []
    algo = SimulatedQuantizationAwareTraining(
        {"custom_transforms": (PatternEngine([nn.Conv2d, nn.BatchNorm2d], Spy()),)}
    )
    algo.apply(gs_nets.ConvBnNet())
    assert len(seen) == 2  # without fusion: conv1+bn1 and conv2+bn2


def test_custom_policy_overrides_and_leaves_layers_float():
    net = gs_nets.LeNet5()
    # Dense layers: per-layer weights (an instance, copied per layer)
    algo = SimulatedQuantizationAwareTraining(
        {"custom_policies": {nn.Dense: SimulatedLayerPolicy({"weight_per_channel": False})}}
    )
    wrappers = _wrappers(algo.apply(net))
    kinds = {type(w._handler): type(w._handler.fake_quant_weight) for w in wrappers}
    assert kinds == {
        Conv2dQuant: SimulatedFakeQuantizerPerChannel,
        DenseQuant: SimulatedFakeQuantizerPerLayer,
    }
    # a factory returning None leaves that layer in float; it sees each cell
    cells = []

    def first_conv_float(cell):
        cells.append(cell)
        return None if cell is net.conv1 else SimulatedLayerPolicy(algo.policy())

    qnet = SimulatedQuantizationAwareTraining(
        {"custom_policies": {nn.Conv2d: first_conv_float}}
    ).apply(net)
    assert cells == [net.conv1, net.conv2]
    handlers = [w._handler.op for w in _wrappers(qnet)]
    assert net.conv1 not in handlers and net.conv2 in handlers and len(handlers) == 4
    assert "self.conv1(" in qnet._rewrite_source


class MyConv(nn.Conv2d):
    pass


class CountingPolicy(SimulatedLayerPolicy):
    built = 0

    def wrap_cell(self, handler):
        CountingPolicy.built += 1
        return super().wrap_cell(handler)


def test_custom_policy_matches_subclasses_by_mro():
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.conv = MyConv(2, 3, 3)
            self.fc = nn.Dense(3, 2)

        def construct(self, x):
            return self.fc(ops.mean(self.conv(x), (2, 3)))

    CountingPolicy.built = 0
    qnet = SimulatedQuantizationAwareTraining(
        {"custom_policies": {nn.Conv2d: CountingPolicy()}}
    ).apply(Net())
    assert CountingPolicy.built == 1 and len(_wrappers(qnet)) == 2


class _Chain(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(6, 5)
        self.fc2 = nn.Dense(5, 4)
        self.fc3 = nn.Dense(4, 3)

    def construct(self, x):
        return self.fc3(self.fc2(self.fc1(x)))


class _Fc2(nn.Dense):
    pass


def test_redundant_quantizers_dropped_only_between_equal_grids():
    net = _Chain()
    net.fc2 = _Fc2(5, 4)  # its own type, to give it a policy of its own
    sym = SimulatedLayerPolicy({"act_symmetric": True})
    qnet = SimulatedQuantizationAwareTraining({"custom_policies": {_Fc2: sym}}).apply(net)
    w1, w2, w3 = (qnet.fc1_quant, qnet.fc2_quant, qnet.fc3_quant)
    # fc1 (asymmetric) -> fc2 (symmetric input): kept; fc2 -> fc3: kept (output symmetric)
    assert w2._input_quantizer is not None and w3._input_quantizer is not None
    qnet = SimulatedQuantizationAwareTraining().apply(_Chain())
    assert qnet.fc2_quant._input_quantizer is None and qnet.fc3_quant._input_quantizer is None
    assert qnet.fc2_quant.input_source is qnet.fc1_quant._output_quantizer
    assert w1._input_quantizer is not None


class NoQuantizers(LayerPolicy):
    """A policy with no activation quantizers: only the weight is fake-quantized."""

    def wrap_cell(self, handler):
        return DenseQuant(handler, SimulatedLayerPolicy().config)


def test_a_minimal_layer_policy():
    net = _Chain()
    qnet = SimulatedQuantizationAwareTraining(
        {"custom_policies": {nn.Dense: NoQuantizers()}}
    ).apply(net)
    assert not _wrappers(qnet)
    assert sum(isinstance(c, DenseQuant) for _, c in qnet.cells_and_names()) == 3
    x = Tensor(RNG.standard_normal((2, 6)).astype("f4"))
    assert np.abs(qnet(x).asnumpy() - net(x).asnumpy()).max() < 0.05


@pytest.mark.parametrize(
    "config,match",
    [
        (
            {"custom_transforms": PatternEngine([nn.Conv2d, nn.ReLU])},
            "'custom_transforms' expected",
        ),
        ({"custom_transforms": [PatternEngine([nn.Conv2d]), "fuse"]}, "item 1 .*'fuse'"),
        ({"custom_policies": [nn.Dense]}, "'custom_policies' expected a dict"),
        ({"custom_policies": {"Dense": SimulatedLayerPolicy()}}, "key 'Dense' expected a Cell"),
        ({"custom_policies": {int: SimulatedLayerPolicy()}}, "key <class 'int'>"),
        ({"custom_policies": {nn.Dense: 3}}, "value for Dense .* got 3"),
    ],
)
def test_bad_custom_hooks_name_key_and_value(config, match):
    with pytest.raises(TypeError, match=match):
        SimulatedQuantizationAwareTraining(config)


def test_bad_policy_results_at_apply():
    algo = SimulatedQuantizationAwareTraining({"custom_policies": {nn.Dense: lambda c: "int8"}})
    with pytest.raises(TypeError, match="factory for Dense .* got 'int8'"):
        algo.apply(_Chain())

    class Bad(SimulatedLayerPolicy):
        def wrap_cell(self, handler):
            return 42

    algo = SimulatedQuantizationAwareTraining({"custom_policies": {nn.Dense: Bad()}})
    with pytest.raises(TypeError, match="Bad.wrap_cell expected .* got 42"):
        algo.apply(_Chain())
    with pytest.raises(ValueError, match="unknown config keys"):
        SimulatedLayerPolicy({"bits": 4})
