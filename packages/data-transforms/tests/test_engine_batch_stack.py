"""`batch` builds its arrays as rows arrive (`engine.map_batch._Stacker`): same results as
stacking at the end, and the same fallbacks (padding, the shape error) when rows differ;
batch arrays the consumer dropped are reused (`_BufferPool`), never one still held."""

from __future__ import annotations

import time

import numpy as np
import pytest

import sporeling.data as ds
from sporeling.data.engine.map_batch import _BufferPool, _Stacker


def batches(d, **kw):
    return list(d.create_tuple_iterator(output_numpy=True, num_epochs=1, **kw))


def test_stacker_copies_rows_into_one_array():
    rows = [(np.full((2, 3), k, np.float32), np.int64(k)) for k in range(4)]
    s = _Stacker(4)
    for k, row in enumerate(rows):
        s.add(k, row)
    images, labels = s.result(4)
    assert labels is None  # scalars: left to np.stack
    np.testing.assert_array_equal(images, np.stack([r[0] for r in rows]))
    assert not any(np.shares_memory(images, r[0]) for r in rows)
    assert s.result(3)[0].shape == (3, 2, 3)


def test_stacker_gives_up_on_a_column_whose_rows_differ():
    s = _Stacker(3)
    s.add(0, (np.zeros(3, np.uint8), np.zeros(2)))
    s.add(1, (np.zeros(4, np.uint8), np.zeros(2, np.float32)))  # other shape / dtype
    s.add(2, (np.zeros(3, np.uint8), np.zeros(2)))
    assert s.result(3) == [None, None]
    s = _Stacker(2)
    s.add(0, ([1, 2], np.zeros(1, object)))  # not arrays / object arrays
    assert s.result(2) == [None, None]


def test_batched_pipeline_equals_stacking():
    x = np.arange(10 * 4 * 3, dtype=np.float32).reshape(10, 4, 3)
    d = ds.NumpySlicesDataset({"x": x, "y": np.arange(10)}, shuffle=False)
    d = d.map(lambda v: v * 2, input_columns="x").batch(4)
    out = batches(d)
    assert [b[0].shape for b in out] == [(4, 4, 3), (4, 4, 3), (2, 4, 3)]
    np.testing.assert_array_equal(np.concatenate([b[0] for b in out]), x * 2)
    np.testing.assert_array_equal(np.concatenate([b[1] for b in out]), np.arange(10))


def test_rows_of_different_shapes_still_pad_or_raise():
    data = [np.arange(n, dtype=np.int32) for n in (3, 5, 3, 2)]
    d = ds.GeneratorDataset(lambda: ((a,) for a in data), column_names=["v"], shuffle=False)
    with pytest.raises(ds.PipelineError, match="rows of different shapes"):
        batches(d.batch(4))
    (padded,) = batches(d.batch(4, pad_info={"v": (None, -1)}))
    assert padded[0].shape == (4, 5) and padded[0][3].tolist() == [0, 1, -1, -1, -1]


def _address(a):
    return a.__array_interface__["data"][0]


def test_pool_reuses_only_buffers_nobody_holds():
    pool = _BufferPool(2)
    first = _address(pool.empty((4, 3), np.float32))
    for hold in (lambda a: a[1:], memoryview, lambda a: a, lambda a: a.reshape(12)):
        held = hold(pool.buffers[0])
        assert _address(pool.empty((4, 3), np.float32)) != first  # held: another one
        del held
        assert _address(pool.empty((4, 3), np.float32)) == first  # dropped: reused
    assert pool.empty((5, 3), np.float32).shape == (5, 3)  # another shape: a new array
    assert pool.empty((4, 3), np.int32).dtype == np.int32  # another dtype: a new array
    assert len(pool.buffers) == 2
    assert _BufferPool(0).empty((2,), np.uint8).shape == (2,)  # no pooling


def slow_plus_one(v):
    time.sleep(0.003)
    return v + 1


def test_pipeline_reuses_batches_the_consumer_dropped_and_never_others(monkeypatch):
    reused = []
    original = _BufferPool.empty

    def spy(self, shape, dtype):
        pooled = {id(b) for b in self.buffers}  # ids only: no reference kept
        out = original(self, shape, dtype)
        reused.append(id(out) in pooled)
        return out

    monkeypatch.setattr(_BufferPool, "empty", spy)
    before = ds.config.get_prefetch_size()
    ds.config.set_prefetch_size(2)
    try:
        x = np.arange(200 * 6, dtype=np.float32).reshape(200, 6)
        # ~3 ms per row, like image rows: the iterator hands batches over one by one then
        # (it groups rows that come faster), so few are in flight at a time
        d = ds.NumpySlicesDataset({"x": x}, shuffle=False).map(slow_plus_one, input_columns="x")
        kept = []
        it = d.batch(2).create_tuple_iterator(output_numpy=True, num_epochs=1)
        for k, (b,) in enumerate(it):
            np.testing.assert_array_equal(b, x[2 * k : 2 * k + 2] + 1)
            if k % 5 == 0:
                kept.append((k, b))  # held: never overwritten
    finally:
        ds.config.set_prefetch_size(before)
    for k, b in kept:
        np.testing.assert_array_equal(b, x[2 * k : 2 * k + 2] + 1)
    assert len(reused) == 100 and sum(reused) >= 25  # dropped batches' arrays came back
