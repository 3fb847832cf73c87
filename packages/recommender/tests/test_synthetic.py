"""The synthetic Criteo-like generator: layout, power-law frequencies, learnable labels."""

from __future__ import annotations

import numpy as np
import pytest

from sporeling.recommender.metrics import auc_score
from sporeling.recommender.records import RecordStore
from sporeling.recommender.synthetic import SyntheticCriteo, generate


def test_layout_and_power_law(tmp_path):
    gen = SyntheticCriteo(13 + 26 * 1000, alpha=1.2)
    ids, vals, label = gen.rows(20000)
    assert ids.shape == (20000, 39) and ids.dtype == np.int32 and label.shape == (20000, 1)
    np.testing.assert_array_equal(ids[:, :13], np.broadcast_to(np.arange(13), (20000, 13)))
    for j in (0, 25):  # each field keeps to its own id range
        col = ids[:, 13 + j] - (13 + 1000 * j)
        assert col.min() >= 0 and col.max() < 1000
    counts = np.bincount(ids[:, 13] - 13, minlength=1000).astype(float)
    # frequency of rank r ~ (r + 1)^-1.2: ranks 0 and 9 differ by ~10^1.2 = 15.8
    assert 8 < counts[0] / max(counts[9], 1) < 30
    assert 0.05 < label.mean() < 0.6
    # the labels follow the hidden per-id weights, so the true score ranks them well
    score = gen._hidden(ids[:, 13:].astype(np.int64)).sum(1)
    assert auc_score(label, score) > 0.7


def test_generate_writes_records(tmp_path):
    generate(tmp_path / "s", rows=2050, vocab_size=5000, test_rows=500, line_per_sample=100)
    store = RecordStore(tmp_path / "s", "train")
    assert len(store) == 20 and store.vocab_size == 5000
    assert len(RecordStore(tmp_path / "s", "test")) == 5
    with pytest.raises(ValueError, match="'vocab_size' expected >= 39"):
        SyntheticCriteo(10)
