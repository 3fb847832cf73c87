"""Replay buffers against NumPy references: ring order, sum-tree sampling frequencies,
importance weights, and Algorithm R."""

from __future__ import annotations

import numpy as np
import pytest

import sporeling.core as ms
from sporeling.rl.core import PriorityReplayBuffer, ReservoirReplayBuffer, UniformReplayBuffer
from sporeling.rl.core import _buffer_kernels as K

SHAPES = [(2,), (1,)]
TYPES = [ms.float32, ms.int32]


def rows(start, k):
    return [np.arange(start, start + k, dtype=np.float32)[:, None].repeat(2, 1),
            np.arange(start, start + k, dtype=np.int32)[:, None]]  # fmt: skip


def test_uniform_ring_keeps_the_newest_in_order():
    buf = UniformReplayBuffer(4, 5, SHAPES, TYPES, seed=1)
    buf.insert(rows(0, 3))
    buf.insert([np.array([3.0, 3.0]), np.array([3])])  # a single transition
    buf.insert(rows(4, 4))
    assert buf.full() and buf.size() == 5
    held = buf.get_data_np()[1][:, 0]
    np.testing.assert_array_equal(held, [3, 4, 5, 6, 7])
    assert buf.get_item(0)[1].asnumpy().tolist() == [3]
    assert buf.get_item(-1)[1].asnumpy().tolist() == [7]
    buf.insert(rows(100, 12))  # more than capacity: the newest 5 survive
    np.testing.assert_array_equal(buf.get_data_np()[1][:, 0], [107, 108, 109, 110, 111])
    s, a = buf.sample()
    assert s.shape == (4, 2) and s.dtype == ms.float32 and a.dtype == ms.int32
    assert set(a.asnumpy()[:, 0]) <= set(range(107, 112))


def test_uniform_sampling_is_uniform():
    buf = UniformReplayBuffer(1000, 10, [(1,)], [ms.int32], seed=3)
    buf.insert([np.arange(10)[:, None]])
    counts = np.bincount(
        np.concatenate([buf.sample_np()[0][:, 0] for _ in range(20)]), minlength=10
    )
    assert np.all(np.abs(counts / 20000 - 0.1) < 0.01)


def test_insert_errors_name_the_element():
    buf = UniformReplayBuffer(2, 4, SHAPES, TYPES)
    with pytest.raises(ValueError, match=r"element 1 expected shape \(1,\) or \(k, \*\(1,\)\)"):
        buf.insert([np.zeros(2), np.zeros(3)])
    with pytest.raises(ValueError, match="expected 2 elements"):
        buf.insert([np.zeros(2)])
    with pytest.raises(ValueError, match="element 1 holds 3 transitions, element 0 holds 2"):
        buf.insert([np.zeros((2, 2)), np.zeros((3, 1))])
    with pytest.raises(RuntimeError, match="empty"):
        buf.sample()
    with pytest.raises(ValueError, match="capacity expected an int >= 1"):
        UniformReplayBuffer(2, 0, SHAPES, TYPES)


def test_sum_tree_kernels_against_numpy():
    rng = np.random.default_rng(0)
    values = rng.random(13)
    sum_tree, min_tree = np.zeros(32), np.full(32, np.inf)
    K.tree_update(sum_tree, min_tree, np.arange(13), values)
    assert sum_tree[1] == pytest.approx(values.sum()) and min_tree[1] == values.min()
    prefixes = rng.random(200) * values.sum()
    out = np.empty(200, np.int64)
    K.tree_find(sum_tree, prefixes, 13, out)
    np.testing.assert_array_equal(out, np.searchsorted(np.cumsum(values), prefixes, side="right"))


def test_priority_sampling_frequencies_and_weights():
    alpha, beta = 0.7, 0.5
    buf = PriorityReplayBuffer(alpha, 8, 64, [(1,)], [ms.int32], seed0=5)
    buf.insert([np.arange(6)[:, None]])
    pri = np.array([1.0, 2.0, 4.0, 0.5, 3.0, 1.5])
    buf.update_priorities(np.arange(6), pri)
    want = pri**alpha / (pri**alpha).sum()
    counts = np.zeros(6)
    for _ in range(400):
        idx, w, (data,) = buf.sample_np(beta)
        np.testing.assert_array_equal(data[:, 0], idx)
        np.testing.assert_allclose(w, (want[idx] / want.min()) ** -beta, rtol=1e-5)
        counts += np.bincount(idx, minlength=6)
    freq = counts / counts.sum()
    # 25,600 stratified draws: the frequencies are within 0.01 of p^alpha / sum p^alpha
    np.testing.assert_allclose(freq, want, atol=0.01)
    # new transitions get the largest priority seen so far
    buf.insert([np.array([6])])
    size = buf.sum_tree.shape[0] // 2
    assert buf.sum_tree[size + 6] == pytest.approx(4.0**alpha)
    with pytest.raises(ValueError, match="priorities must be > 0"):
        buf.update_priorities([0], [0.0])
    with pytest.raises(IndexError):
        buf.update_priorities([7], [1.0])


def test_reservoir_matches_algorithm_r_in_numpy():
    buf = ReservoirReplayBuffer(5, 3, [(1,)], [ms.int32], seed0=11)
    ref_rng = np.random.default_rng(11)
    ref = np.zeros(5, np.int32)
    seen = 0
    for start in range(0, 60, 7):
        k = min(7, 60 - start)
        buf.insert([np.arange(start, start + k)[:, None]])
        for i, u in enumerate(ref_rng.random(k)):  # Algorithm R with the same uniforms
            item = start + i
            if seen < 5:
                ref[seen] = item
            else:
                j = int(u * (seen + 1))
                if j < 5:
                    ref[j] = item
            seen += 1
    np.testing.assert_array_equal(buf._store.data[0][:, 0], ref)
    assert buf.size() == 5 and buf.full()


def test_reservoir_keeps_each_item_with_equal_probability():
    hits = np.zeros(40)
    for seed in range(1, 301):
        buf = ReservoirReplayBuffer(10, 1, [(1,)], [ms.int32], seed0=seed)
        buf.insert([np.arange(40)[:, None]])
        hits[buf._store.data[0][:, 0]] += 1
    # each of 40 items is kept with probability 10/40: 75 of 300 runs on average
    assert np.all(np.abs(hits - 75) < 30), hits
