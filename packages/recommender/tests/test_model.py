"""WideDeepModel against NumPy float64: forward, one FTRL + (Lazy)Adam step, zero rows."""

from __future__ import annotations

import numpy as np
import pytest
from naive import adam, ftrl, rows_sum, wide_deep_forward, wide_deep_grads

from sporeling.core import Tensor, set_seed
from sporeling.recommender.models import WideDeepModel
from sporeling.recommender.train import NetWithLossClass, PredictWithSigmoid, TrainStepWrap

V, F, D, H, B = 50, 6, 3, 5, 8


def batch(seed, high=V):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, high, (B, F)).astype(np.int32)
    vals = rng.random((B, F)).astype(np.float32)
    y = (rng.random((B, 1)) < 0.4).astype(np.float32)
    return ids, vals, y


def params(net):
    return {p.name: p.asnumpy().astype(np.float64) for p in net.trainable_params()}


def make(sparse=True):
    set_seed(3)
    net = WideDeepModel(V, F, D, (H,), sparse=sparse, init_sigma=0.3)
    net.wide_b.set_data(Tensor(np.array([0.2], np.float32)))
    return net


def test_forward_matches_numpy():
    net = make()
    ids, vals, _ = batch(0)
    ids[0, 0], ids[1, 2] = V + 3, -1  # out of range: zero rows, as in MindSpore
    logits, table = net(Tensor(ids), Tensor(vals))
    want, _ = wide_deep_forward(params(net), ids, vals)
    np.testing.assert_allclose(logits.asnumpy(), want, rtol=1e-5, atol=1e-6)
    assert table is net.deep_embeddinglookup.embedding_table
    _, prob, _ = PredictWithSigmoid(net)(Tensor(ids), Tensor(vals), Tensor(np.zeros((B, 1))))
    np.testing.assert_allclose(prob.asnumpy(), 1 / (1 + np.exp(-want)), rtol=1e-5)


@pytest.mark.parametrize("sparse", [True, False])
def test_train_steps_match_numpy(sparse):
    net = make(sparse)
    l2 = 0.0 if sparse else 8e-5
    step = TrainStepWrap(NetWithLossClass(net, l2_coef=8e-5))
    assert type(step.optimizer_d).__name__ == ("LazyAdam" if sparse else "Adam")
    assert [p.name for p in step.weights_w] == ["wide_b", "wide_embeddinglookup.embedding_table"]
    p = params(net)
    state = {k: (np.full_like(v, 1.0), np.zeros_like(v)) for k, v in p.items() if "wide" in k}
    adam_state = {k: (np.zeros_like(v), np.zeros_like(v)) for k, v in p.items() if "wide" not in k}
    for t in (1, 2):
        ids, vals, y = batch(t)
        ids[0, 1] = V + 1  # an out-of-range id contributes nothing and changes nothing
        loss_w, loss_d, g = wide_deep_grads(p, ids, vals, y, l2)
        got_w, got_d = step(Tensor(ids), Tensor(vals), Tensor(y))
        np.testing.assert_allclose(float(got_w.asnumpy()), loss_w, rtol=1e-5)
        np.testing.assert_allclose(float(got_d.asnumpy()), loss_d, rtol=1e-5)
        touched = rows_sum(ids, np.zeros((ids.size, 1)), V)[0]
        for k in p:
            table = k.endswith("embedding_table")
            rows = touched if (table and sparse) else slice(None)
            if "wide" in k:
                a, lin = state[k]
                w, a2, lin2 = ftrl(p[k][rows], g[k][rows], a[rows], lin[rows])
                p[k][rows], a[rows], lin[rows] = w, a2, lin2
            else:
                m, v = adam_state[k]
                w, m2, v2 = adam(p[k][rows], g[k][rows], m[rows], v[rows], t)
                p[k][rows], m[rows], v[rows] = w, m2, v2
        for k, v in params(net).items():
            np.testing.assert_allclose(v, p[k], rtol=2e-4, atol=2e-6, err_msg=f"{k} step {t}")


def test_out_of_range_rows_are_zero_and_untouched():
    net = make()
    step = TrainStepWrap(NetWithLossClass(net))
    ids, vals, y = batch(5, high=V // 2)
    far = ids.copy()
    far[:, -1] = V + 7  # the last field always out of range
    out_far, _ = net(Tensor(far), Tensor(vals))
    vals0 = vals.copy()
    vals0[:, -1] = 0.0  # same as an in-range id with weight 0
    out_zero, _ = net(Tensor(ids), Tensor(vals0))
    np.testing.assert_allclose(out_far.asnumpy(), out_zero.asnumpy(), rtol=1e-6)
    before = net.deep_embeddinglookup.embedding_table.asnumpy().copy()
    step(Tensor(far), Tensor(vals), Tensor(y))
    after = net.deep_embeddinglookup.embedding_table.asnumpy()
    untouched = np.setdiff1d(np.arange(V), far)
    np.testing.assert_array_equal(after[untouched], before[untouched])


def test_bad_arguments():
    with pytest.raises(ValueError, match="'emb_dim' expected an int >= 1, got 0"):
        WideDeepModel(10, emb_dim=0)
