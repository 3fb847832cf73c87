"""AUCMetric (rank statistics) against a brute-force pair count, and scikit-learn if present."""

from __future__ import annotations

import numpy as np
import pytest

from sporeling.recommender.metrics import AUCMetric, auc_score, log_loss


def pairwise_auc(y, s):
    pos, neg = s[y == 1], s[y == 0]
    diff = pos[:, None] - neg[None, :]
    return ((diff > 0).sum() + 0.5 * (diff == 0).sum()) / (len(pos) * len(neg))


@pytest.mark.parametrize("seed", range(4))
def test_auc_equals_pair_count_with_ties(seed):
    rng = np.random.default_rng(seed)
    y = (rng.random(300) < 0.3).astype(float)
    s = np.round(rng.random(300) + 0.3 * y, 1)  # rounding makes many ties
    assert auc_score(y, s) == pytest.approx(pairwise_auc(y, s), abs=1e-12)


def test_auc_against_sklearn():
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(9)
    y = (rng.random(1000) < 0.2).astype(float)
    s = rng.random(1000) + 0.2 * y
    assert auc_score(y, s) == pytest.approx(metrics.roc_auc_score(y, s), abs=1e-12)


def test_metric_accumulates_batches_and_log_loss():
    rng = np.random.default_rng(1)
    y = (rng.random(100) < 0.5).astype(np.float32)
    p = np.clip(rng.random(100) * 0.5 + 0.5 * y, 0.01, 0.99)
    m = AUCMetric()
    for a in range(0, 100, 30):
        m.update(None, p[a : a + 30, None], y[a : a + 30, None])
    assert m.eval() == pytest.approx(pairwise_auc(y, p))
    want = -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))
    assert m.log_loss() == pytest.approx(want, rel=1e-6) == log_loss(y, p)
    m.clear()
    with pytest.raises(RuntimeError, match="never called"):
        m.eval()
    with pytest.raises(ValueError, match="both classes"):
        auc_score([1, 1], [0.2, 0.3])
