"""SLB: softmax/arg-max weights against NumPy, temperature schedule epochs, bad dtypes,
bit packing, and the packed export reloaded in a fresh process."""

import gs_nets
import numpy as np
import pytest

from sporeling.core import (
    Tensor,
    load_checkpoint,
    load_param_into_net,
    nn,
    ops,
    save_checkpoint,
    set_seed,
    value_and_grad,
)
from sporeling.core import dtype as mstype
from sporeling.core.train import RunContext
from sporeling.goldenstick import QuantDtype, SlbQuantAwareTraining, TemperatureScheduler
from sporeling.goldenstick.datasets import synthetic
from sporeling.goldenstick.quantization import (
    Conv2dSlbQuant,
    PackedConv2d,
    SlbFakeQuantizerPerLayer,
    pack_bits,
    slb_values,
    unpack_bits,
)

RNG = np.random.default_rng(0)


def test_value_sets():
    np.testing.assert_array_equal(slb_values(1), [-1, 1])
    np.testing.assert_allclose(slb_values(2), [-1, -1 / 3, 1 / 3, 1])
    assert len(slb_values(4)) == 16


@pytest.mark.parametrize("bits", [1, 2, 4])
def test_softmax_weight_and_argmax_against_numpy(bits):
    q = SlbFakeQuantizerPerLayer(bits)
    values = slb_values(bits).astype(np.float64)
    logits = RNG.standard_normal((3, 4, len(values))).astype("f4")
    q.set_train(True)
    q.set_temperature(2.5)
    z = logits.astype(np.float64) * 2.5
    p = np.exp(z - z.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    np.testing.assert_allclose(q(Tensor(logits)).asnumpy(), (p * values).sum(-1), atol=1e-6)
    q.set_train(False)
    np.testing.assert_array_equal(q(Tensor(logits)).asnumpy(), values[logits.argmax(-1)])
    q.set_train(True)
    q.set_temperature_end_flag()
    np.testing.assert_array_equal(q(Tensor(logits)).asnumpy(), values[logits.argmax(-1)])


def test_logit_gradient_flows_in_training():
    conv = nn.Conv2d(2, 3, 3)
    layer = Conv2dSlbQuant(conv, 2)
    assert layer.weight.shape == (3, 2, 3, 3, 4)
    layer.set_train(True)
    x = Tensor(RNG.standard_normal((2, 2, 5, 5)).astype("f4"))
    _, g = value_and_grad(lambda t: ops.reduce_sum(layer(t) ** 2), None, [layer.weight])(x)
    assert np.abs(g[0].asnumpy()).sum() > 0


@pytest.mark.parametrize("bits", [1, 2, 4])
def test_logits_start_henormal_fan_out_as_golden_stick(bits):
    # 0.1's from_float: HeNormal(mode='fan_out', nonlinearity='relu') over the 5-d shape,
    # whatever the float weight is
    n = len(slb_values(bits))
    layer = Conv2dSlbQuant(nn.Conv2d(16, 32, 3, weight_init="ones"), bits)
    logits = layer.weight.asnumpy().astype(np.float64)
    assert logits.shape == (32, 16, 3, 3, n) and layer.weight.dtype == mstype.float32
    std = np.sqrt(2.0) / np.sqrt(32 * 3 * 3 * n)
    assert abs(logits.mean()) < 4 * std / np.sqrt(logits.size)
    assert logits.std() == pytest.approx(std, rel=0.05)
    # so at T = 1 the softmax is near uniform: every value keeps a gradient
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    assert p.max() < 1.2 / n


def test_training_changes_chosen_values():
    # a few SGD steps must move some arg-maxes; logits saturated at the start (an earlier
    # init from the float weight) left every one of them where it began
    set_seed(3)
    net = SlbQuantAwareTraining({"quant_dtype": QuantDtype.INT4}).apply(gs_nets.ConvBnNet())
    layers = [c for _, c in net.cells_and_names() if isinstance(c, Conv2dSlbQuant)]
    before = [layer.indices() for layer in layers]
    x, y = synthetic((3, 8, 8), 64, classes=5, seed=3)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    step = nn.TrainOneStepCell(
        nn.WithLossCell(net, loss), nn.Momentum(net.trainable_params(), 0.05, 0.9)
    )
    step.set_train(True)
    for _ in range(10):
        step(Tensor(x), Tensor(y))
    changed = np.mean(np.concatenate([(a.indices() != b).ravel() for a, b in zip(layers, before)]))
    assert changed > 0.01


def test_temperature_schedule_1_8_defaults():
    sched = TemperatureScheduler(None)
    assert (sched.epochs, sched.t_start_val, sched.t_factor) == (100, 1.0, 1.2)
    assert sched.schedule(20) == (None, False)  # start = int(100 * 0.2) = 20
    t, end = sched.schedule(30)
    assert t == pytest.approx(1.2**10) and not end
    t, end = sched.schedule(60)
    assert t == pytest.approx(1.2**40) and end
    t, _ = sched.schedule(90)
    assert t == pytest.approx(1.2**40)  # capped at end = int(100 * 0.6)


def test_scheduler_sets_every_quantizer_at_epoch_begin():
    net = SlbQuantAwareTraining({"quant_dtype": QuantDtype.INT2}).apply(gs_nets.ConvBnNet())
    sched = TemperatureScheduler(None, epoch_size=10)
    ctx = RunContext({"cur_epoch_num": 6, "train_network": net})
    sched.on_train_epoch_begin(ctx)
    quantizers = [c for _, c in net.cells_and_names() if isinstance(c, SlbFakeQuantizerPerLayer)]
    assert len(quantizers) == 2
    assert all(q.temperature == pytest.approx(1.2**4) and q.temperature_end for q in quantizers)


def test_builtin_callbacks_need_epoch_size():
    algo = SlbQuantAwareTraining({"epoch_size": 50, "t_factor": 1.5})
    (cb,) = algo.callbacks()
    assert isinstance(cb, TemperatureScheduler) and cb.epochs == 50 and cb.t_factor == 1.5
    with pytest.raises(ValueError, match="epoch_size"):
        SlbQuantAwareTraining({}).callbacks()


@pytest.mark.parametrize(
    "dtype,exc",
    [
        (QuantDtype.INT8, NotImplementedError),
        (QuantDtype.INT3, NotImplementedError),
        (2, TypeError),
    ],
)
def test_bad_dtypes(dtype, exc):
    with pytest.raises(exc):
        SlbQuantAwareTraining({"quant_dtype": dtype})


@pytest.mark.parametrize("bits", [1, 2, 4])
def test_pack_round_trip(bits):
    idx = RNG.integers(0, 2**bits, 1001).astype(np.uint8)
    packed = pack_bits(idx, bits)
    assert packed.dtype == np.uint8 and packed.size == -(-1001 * bits // 8)
    np.testing.assert_array_equal(unpack_bits(packed, bits, 1001), idx)


@pytest.mark.parametrize("act", [False, True])
def test_packed_export_matches_eval_network_and_reloads(tmp_path, act):
    algo = SlbQuantAwareTraining({"quant_dtype": QuantDtype.INT4, "enable_act_quant": act})
    net = gs_nets.ConvBnNet()
    qnet = algo.apply(net)
    x = Tensor(RNG.standard_normal((2, 3, 8, 8)).astype("f4"))
    qnet.set_train(True)
    qnet(x)
    qnet.set_train(False)
    ref = qnet(x).asnumpy()
    packed = algo.convert(qnet)
    layers = [c for _, c in packed.cells_and_names() if isinstance(c, PackedConv2d)]
    assert len(layers) == 2 and layers[0].packed.asnumpy().size == 8 * 3 * 3 * 3 // 2
    np.testing.assert_allclose(packed(x).asnumpy(), ref, rtol=1e-5, atol=1e-6)
    # the deploy structure rebuilt from scratch loads the packed checkpoint (a fresh process
    # does the same in test_cli)
    ckpt = str(tmp_path / "slb.safetensors")
    save_checkpoint(packed, ckpt)
    algo2 = SlbQuantAwareTraining({"quant_dtype": QuantDtype.INT4, "enable_act_quant": act})
    again = algo2.convert(algo2.apply(gs_nets.ConvBnNet()))
    missing, _ = load_param_into_net(again, load_checkpoint(ckpt))
    assert not missing
    np.testing.assert_allclose(again(x).asnumpy(), ref, rtol=1e-5, atol=1e-6)
