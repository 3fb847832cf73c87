"""Fake quantization (SimQAT, with and without BN folding) and SLB compile under ``jit``
and give the eager (PyNative) results: outputs, recorded ranges, step counts, moving
statistics and gradients, in training and in eval, with a cache hit on the second call.

The first two training steps must agree exactly (to float32 rounding); later steps within
1e-3: graph mode's fused kernels round differently in the last bit (fast-math), and a value
that sits at a rounding tie of a quantizer can then land one level apart (seen once in 3
steps with BN folding and batch statistics)."""

import gs_nets
import numpy as np
import pytest

from sporeling.core import Tensor, jit, ops, set_seed, value_and_grad
from sporeling.goldenstick import (
    QuantDtype,
    SimulatedQuantizationAwareTraining,
    SlbQuantAwareTraining,
)

RNG = np.random.default_rng(5)


def _pair(make_net, algo_factory):
    """The same compressed network twice (same seed): one runs eagerly, one under jit."""
    nets = []
    for _ in range(2):
        set_seed(3)
        net = make_net()
        if isinstance(net, gs_nets.ConvBnNet):
            gs_nets.randomize_bn(net)
        nets.append(algo_factory().apply(net))
    return nets


def _step_fn(net):
    params = net.trainable_params()
    loss = lambda x: ops.reduce_sum(ops.square(net(x)))  # noqa: E731
    return value_and_grad(loss, None, params)


def _state(net):
    return {n: p.asnumpy().copy() for n, p in net.parameters_and_names()}


CASES = {
    "simqat_lenet": (gs_nets.LeNet5, lambda: SimulatedQuantizationAwareTraining(), (4, 1, 32, 32)),
    "simqat_fused": (
        gs_nets.ConvBnNet,
        lambda: SimulatedQuantizationAwareTraining({"enable_fusion": True}),
        (4, 3, 8, 8),
    ),
    "simqat_bn_fold_delay": (
        gs_nets.ConvBnNet,
        lambda: SimulatedQuantizationAwareTraining(
            {"enable_fusion": True, "bn_fold": True, "quant_delay": (1, 1), "freeze_bn": 1}
        ),
        (4, 3, 8, 8),
    ),
    "simqat_bn_fold_two_conv": (
        gs_nets.ConvBnNet,
        lambda: SimulatedQuantizationAwareTraining(
            {"enable_fusion": True, "bn_fold": True, "one_conv_fold": False, "freeze_bn": 1}
        ),
        (4, 3, 8, 8),
    ),
    "slb_w2_act": (
        gs_nets.ConvBnNet,
        lambda: SlbQuantAwareTraining({"quant_dtype": QuantDtype.INT2, "enable_act_quant": True}),
        (4, 3, 8, 8),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_jit_equals_eager_in_training_and_eval(case):
    make_net, algo, shape = CASES[case]
    eager, graph = _pair(make_net, algo)
    step_e, step_g = _step_fn(eager), jit(_step_fn(graph))
    xs = [Tensor(RNG.standard_normal(shape).astype("f4")) for _ in range(3)]
    eager.set_train(True)
    graph.set_train(True)
    for k, x in enumerate(xs):
        tol = 1.0 if k < 2 else 100.0  # see the module doc
        if case.startswith("slb") and k == 1:  # the schedule's changes reach the graph
            for net in (eager, graph):
                for _, c in net.cells_and_names():
                    if hasattr(c, "set_temperature"):
                        c.set_temperature(2.5)
                        c.set_temperature_end_flag()
        loss_e, grads_e = step_e(x)
        loss_g, grads_g = step_g(x)
        np.testing.assert_allclose(loss_g.asnumpy(), loss_e.asnumpy(), rtol=1e-5 * tol)
        for ge, gg in zip(grads_e, grads_g):
            scale = np.abs(ge.asnumpy()).max() + 1e-6
            np.testing.assert_allclose(gg.asnumpy(), ge.asnumpy(), atol=1e-5 * tol * scale)
        se, sg = _state(eager), _state(graph)  # ranges, step counts, moving statistics
        for name in se:
            np.testing.assert_allclose(
                sg[name], se[name], rtol=1e-5 * tol, atol=1e-7 * tol, err_msg=name
            )
    assert step_g.compile_count == 1  # one graph for every step (parameters are inputs)
    eager.set_train(False)
    graph.set_train(False)
    for net in (eager, graph):  # eval from the same state: the eager network's
        for name, p in net.parameters_and_names():
            p.set_data(Tensor(se[name]))
    fwd = jit(graph)
    for x in xs[:2]:
        np.testing.assert_allclose(fwd(x).asnumpy(), eager(x).asnumpy(), rtol=1e-5, atol=1e-6)
    assert fwd.compile_count == 1
