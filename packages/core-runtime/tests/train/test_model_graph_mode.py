"""Model.train/fit under GRAPH_MODE: the whole training step (forward, backward, optimizer
update) runs as one compiled graph, with the same losses and weights as PYNATIVE_MODE."""

from __future__ import annotations

import numpy as np
import pytest

from sporeling.core import GRAPH_MODE, PYNATIVE_MODE, nn, set_context
from sporeling.core.random_state import set_seed
from sporeling.core.train import ArrayDataset, Callback, Model


class _Losses(Callback):
    def __init__(self) -> None:
        self.losses: list[float] = []

    def on_train_step_end(self, ctx):
        self.losses.append(float(ctx.original_args().net_outputs.asnumpy()))


def _data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 6)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int32) + (x[:, 2] > 1).astype(np.int32)
    return x, y


def _model(optimizer="momentum"):
    set_seed(3)
    net = nn.SequentialCell([nn.Dense(6, 16), nn.ReLU(), nn.Dense(16, 3)])
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    params = net.trainable_params()
    if optimizer == "momentum":
        opt = nn.Momentum(params, 0.1, 0.9)
    else:
        opt = nn.AdamWeightDecay(params, 0.01, weight_decay=0.01)
    return Model(net, loss, opt, metrics={"acc", "loss"}), net


def _train(mode, optimizer, fit=False):
    x, y = _data()
    model, net = _model(optimizer)
    record = _Losses()
    ds = ArrayDataset(x, y, batch_size=16)  # 16, 16 and a last batch of 8
    set_context(mode=mode)
    try:
        if fit:
            model.fit(3, ds, ArrayDataset(*_data(24, 1), batch_size=12), callbacks=[record])
        else:
            model.train(3, ds, callbacks=[record])
    finally:
        set_context(mode=PYNATIVE_MODE)
    return record.losses, [p.asnumpy() for p in net.trainable_params()], model


@pytest.mark.parametrize("optimizer", ["momentum", "adamw"])
def test_train_in_graph_mode_matches_eager_and_compiles_the_step(optimizer):
    eager, eager_w, _ = _train(PYNATIVE_MODE, optimizer)
    graph, graph_w, model = _train(GRAPH_MODE, optimizer)
    assert len(graph) == len(eager) == 9
    np.testing.assert_allclose(graph, eager, rtol=1e-5, atol=1e-6)
    for a, b in zip(graph_w, eager_w):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    compiled = model.train_network.__dict__.get("_graph_call")
    assert compiled is not None, "GRAPH_MODE did not compile the training step"
    assert compiled.compile_count == 2  # batches of 16 and the last batch of 8, once each
    graph_ir = next(iter(compiled._cache.values())).graph
    names = {m.prim.name for e in graph_ir.eqns for m in getattr(e.prim, "members", [e])}
    assert "optimizer_step" in names  # the update is inside the graph, with the backward


def test_fit_in_graph_mode_matches_eager():
    eager, eager_w, _ = _train(PYNATIVE_MODE, "momentum", fit=True)
    graph, graph_w, model = _train(GRAPH_MODE, "momentum", fit=True)
    np.testing.assert_allclose(graph, eager, rtol=1e-5, atol=1e-6)
    for a, b in zip(graph_w, eager_w):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert model.train_network.__dict__.get("_graph_call") is not None
