"""DeepFM and DCN-v2: forward against NumPy float64, gradient checks of their new pieces,
and every model learning the synthetic data end to end."""

from __future__ import annotations

import numpy as np
import pytest

from sporeling.core import Tensor, set_seed
from sporeling.recommender.models import CrossLayer, DCNv2Model, DeepFMModel, fm_interaction
from sporeling.recommender.runner import ModelConfig, train
from sporeling.recommender.synthetic import generate
from sporeling.recommender.train import NetWithLossClass, TrainStepWrap
from sporeling_testing.gradcheck import check_grad

V, F, D, B = 40, 5, 3, 6


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, V + 3, (B, F)).astype(np.int32)  # a few out of range: zero rows
    return ids, rng.random((B, F)).astype(np.float32)


def emb(table, ids):
    ok = (ids >= 0) & (ids < len(table))
    return table[np.where(ok, ids, 0)] * ok[..., None]


def mlp(p, prefix, x, n):
    for i in range(1, n + 1):
        x = x @ p[f"{prefix}.dense_layer_{i}.weight"].T + p[f"{prefix}.dense_layer_{i}.bias"]
        x = np.maximum(x, 0) if i < n else x
    return x


def params(net):
    return {p.name: p.asnumpy().astype(np.float64) for p in net.trainable_params()}


def test_deepfm_forward():
    set_seed(0)
    net = DeepFMModel(V, F, D, (7,), init_sigma=0.3)
    ids, vals = inputs()
    p = params(net)
    m = vals[..., None].astype(np.float64)
    first = (emb(p["wide_embeddinglookup.embedding_table"], ids) * m).sum(1) + p["wide_b"]
    v = emb(p["deep_embeddinglookup.embedding_table"], ids) * m
    fm = np.zeros((B, 1))
    for i in range(F):
        for j in range(i + 1, F):
            fm[:, 0] += (v[:, i] * v[:, j]).sum(1)
    want = first + fm + mlp(p, "deep", v.reshape(B, -1), 2)
    np.testing.assert_allclose(net(Tensor(ids), Tensor(vals))[0].asnumpy(), want, rtol=1e-4,
                               atol=1e-6)  # fmt: skip


def test_dcn_v2_forward():
    set_seed(0)
    net = DCNv2Model(V, F, D, (7,), num_cross_layers=2, init_sigma=0.3)
    ids, vals = inputs(1)
    p = params(net)
    x0 = (emb(p["deep_embeddinglookup.embedding_table"], ids) * vals[..., None]).reshape(B, -1)
    x = x0
    for i in range(2):
        w, b = p[f"cross.{i}.dense.weight"], p[f"cross.{i}.dense.bias"]
        x = x0 * (x @ w.T + b) + x
    want = mlp(p, "deep", x, 2)
    np.testing.assert_allclose(net(Tensor(ids), Tensor(vals))[0].asnumpy(), want, rtol=1e-4,
                               atol=1e-6)  # fmt: skip


def test_gradients_of_fm_and_cross():
    rng = np.random.default_rng(0)
    check_grad(fm_interaction, [rng.normal(size=(3, 4, 2))])
    layer = CrossLayer(4, init_sigma=0.5)
    for p in layer.trainable_params():
        p.set_data(Tensor(p.asnumpy().astype(np.float64)))
    check_grad(lambda x0, x: layer(x0, x), [rng.normal(size=(3, 4)), rng.normal(size=(3, 4))])


def test_dcn_v2_trains_without_a_wide_part():
    net = DCNv2Model(V, F, D, (7,))
    step = TrainStepWrap(NetWithLossClass(net))
    assert step.optimizer_w is None and type(step.optimizer_d).__name__ == "LazyAdam"
    ids, vals = inputs(2)
    before = net.deep_embeddinglookup.embedding_table.asnumpy().copy()
    step(Tensor(ids), Tensor(vals), Tensor(np.ones((B, 1), np.float32)))
    assert not np.array_equal(before, net.deep_embeddinglookup.embedding_table.asnumpy())


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    path = tmp_path_factory.mktemp("syn") / "data"
    generate(path, rows=6000, vocab_size=13 + 26 * 40, test_rows=2000, line_per_sample=100)
    return str(path)


@pytest.mark.parametrize("model", ["wide_deep", "deepfm", "dcn_v2"])
def test_models_learn_synthetic_data(synthetic, model):
    cfg = ModelConfig(model=model, emb_dim=4, deep_layer_dims=[16])
    # Adam at 3e-3 (MindSpore's 3.5e-4 is for millions of steps; DCN-v2 has no FTRL part)
    out = train(synthetic, cfg, epochs=2, batch_size=200, adam_lr=3e-3, log=lambda s: None)
    aucs = [e["eval_auc"] for e in out["epochs"]]
    assert aucs[-1] > 0.62, aucs
