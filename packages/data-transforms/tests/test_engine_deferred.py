"""A batch right above a map writes the map's flip + Normalize + HWC2CHW results straight
into its arrays (`DeferredArray`, `vision._fused._DeferredCHW`): the same values as the
unfused ops, real arrays everywhere else; a 1-worker map moves heavy rows to a thread."""

from __future__ import annotations

import time

import numpy as np
import pytest

import sporeling.data as ds
from sporeling.data import config, vision
from sporeling.data.engine.base import DeferredArray
from sporeling.data.engine.workers import WorkerPool
from sporeling.data.vision import _fused
from sporeling.data.vision.kernels.layout import normalize_chw, normalize_chw_lut, normalize_lut

MEAN = [124.0, 116.0, 104.0]
STD = [58.0, 57.0, 57.5]


@pytest.fixture
def fusion():
    before = config.get_map_fusion()
    yield
    config.set_map_fusion(before)


def images(n=11, h=7, w=9, c=3, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, h, w, c), dtype=np.uint8)


def ops():
    return [vision.RandomHorizontalFlip(), vision.Normalize(MEAN, STD), vision.HWC2CHW()]


def run(x, fused, workers=1, batch=4, processes=False, **batch_kw):
    config.set_map_fusion(fused)
    config.set_seed(3)
    d = ds.NumpySlicesDataset({"x": x}, shuffle=False)
    d = d.map(
        ops(), input_columns="x", num_parallel_workers=workers, python_multiprocessing=processes
    )
    if batch:
        d = d.batch(batch, **batch_kw)
    return [r[0].copy() for r in d.create_tuple_iterator(output_numpy=True, num_epochs=1)]


def count_writes(monkeypatch):
    calls = []
    write = _fused._DeferredCHW.write_into

    def spy(self, out):
        calls.append(out.shape)
        write(self, out)

    monkeypatch.setattr(_fused._DeferredCHW, "write_into", spy)
    return calls


@pytest.mark.parametrize("workers", [1, 3])
def test_batch_writes_the_rows_and_equals_the_unfused_ops(workers, fusion, monkeypatch):
    x = images()
    expect = run(x, fused=False, workers=workers)
    calls = count_writes(monkeypatch)
    got = run(x, fused=True, workers=workers)
    assert len(calls) == len(x) and calls[0] == (3, 7, 9)
    assert [b.shape for b in got] == [(4, 3, 7, 9), (4, 3, 7, 9), (3, 3, 7, 9)]
    for a, b in zip(got, expect):
        np.testing.assert_array_equal(a, b)


def test_no_deferred_values_without_a_stacking_batch(fusion, monkeypatch):
    x = images(6)
    calls = count_writes(monkeypatch)
    rows = run(x, fused=True, batch=0)  # the map's own rows: real arrays
    assert all(type(r) is np.ndarray and r.dtype == np.float32 for r in rows)
    seen = []

    def per_batch(xs, info):
        seen.extend(type(v) for v in xs)
        return (np.stack(xs),)

    run(x, fused=True, batch=3, per_batch_map=per_batch, input_columns=["x"])
    assert seen == [np.ndarray] * 6 and calls == []
    # map in worker processes: outputs go through shared memory as arrays
    np.testing.assert_array_equal(
        np.concatenate(run(x, fused=True, workers=2, processes=True)),
        np.concatenate(run(x, fused=False, workers=2, processes=True)),
    )
    assert calls == []


def test_rows_of_other_shapes_still_raise_or_pad(fusion):
    config.set_map_fusion(True)
    shapes = [(5, 6), (5, 6), (4, 6), (5, 6)]  # the third row stops the stacking
    data = [np.full((*s, 3), 100, np.uint8) for s in shapes]
    d = ds.GeneratorDataset(lambda: ((a,) for a in data), column_names=["v"], shuffle=False)
    d = d.map([vision.Normalize(MEAN, STD), vision.HWC2CHW()], input_columns="v")
    with pytest.raises(ds.PipelineError, match="rows of different shapes"):
        list(d.batch(4).create_tuple_iterator(output_numpy=True, num_epochs=1))
    (padded,) = list(
        d.batch(4, pad_info={"v": ([3, 5, 6], -1.0)}).create_tuple_iterator(
            output_numpy=True, num_epochs=1
        )
    )
    one = normalize_chw(data[0], np.array(MEAN, np.float32), np.array(STD, np.float32))
    np.testing.assert_array_equal(padded[0][0], one)
    assert padded[0][2][:, 4].tolist() == [[-1.0] * 6] * 3


def test_deferred_value_converts_like_an_array():
    img = images(1, 5, 4)[0]
    lut = normalize_lut(np.array(MEAN, np.float32), np.array(STD, np.float32), 3)
    v = _fused._DeferredCHW(img, lut, True)
    assert isinstance(v, DeferredArray) and v.shape == (3, 5, 4) and v.dtype == np.float32
    expect = normalize_chw(img, np.array(MEAN, np.float32), np.array(STD, np.float32), flip=True)
    np.testing.assert_array_equal(np.asarray(v), expect)
    assert np.asarray(v, np.float64).dtype == np.float64


@pytest.mark.parametrize("shape", [(1, 1, 3), (7, 9, 3), (13, 5, 1), (6, 11, 4)])
@pytest.mark.parametrize("flip", [False, True])
def test_normalize_through_the_table_is_bitwise(shape, flip):
    img = np.random.default_rng(1).integers(0, 256, shape, dtype=np.uint8)
    c = shape[2]
    for mean, std in ((MEAN[:1] * c, STD[:1] * c), ([0.5] * c, [0.3] * c), ([255.0], [1e-3])):
        m, s = np.array(mean, np.float32), np.array(std, np.float32)
        lut = normalize_lut(m, s, c)
        expect = normalize_chw(img, m, s, flip=flip)
        np.testing.assert_array_equal(normalize_chw_lut(img, lut, flip), expect)
        out = np.full((2, c, *shape[:2]), np.nan, np.float32)
        normalize_chw_lut(img, lut, flip, out[1])  # a batch row
        np.testing.assert_array_equal(out[1], expect)
        ref = (img.astype(np.float32) - m) / s  # NumPy's float32 arithmetic
        ref = ref[:, ::-1] if flip else ref
        np.testing.assert_array_equal(normalize_chw_lut(img, lut, flip), ref.transpose(2, 0, 1))
    with pytest.raises(ValueError, match=r"uint8 HWC image and a \(C, 256\) table"):
        normalize_chw_lut(img.astype(np.float32), lut, flip)
    with pytest.raises(ValueError, match=r"uint8 HWC image and a \(C, 256\) table"):
        normalize_chw_lut(img, lut[:, :10], flip)


def _tasks(n):
    return [((0, 0, 1, k), (np.float32(k),), k) for k in range(n)]


def test_single_worker_moves_heavy_rows_to_a_thread_only():
    from sporeling.data.engine._rng import current_rng

    def heavy(v):
        time.sleep(0.001)
        return (v + np.float32(current_rng().uniform()),)

    first = []

    def cheap(v):  # a slow first call (say, compilation) does not make it heavy
        if not first:
            first.append(time.sleep(0.05))
        return (v + np.float32(current_rng().uniform()),)

    results = {}
    for name, fn, overlap in (
        ("inline", heavy, False),
        ("thread", heavy, True),
        ("cheap", cheap, True),
    ):
        pool = WorkerPool(fn, 1, overlap=overlap)
        try:
            results[name] = [(tag, out[0]) for tag, out in pool.imap(_tasks(30))]
            results[name] += [(tag, out[0]) for tag, out in pool.imap(_tasks(5))]  # 2nd epoch
            runner = pool._runner
            assert (runner.thread is not None) == (name == "thread")
        finally:
            pool.close()
    assert [t for t, _ in results["thread"]] == list(range(30)) + list(range(5))
    assert results["thread"] == results["inline"]  # same per-row draws, same order
    assert [v for _, v in results["cheap"]] == [v for _, v in results["inline"]]
