"""Workers: thread and process map, determinism with any worker count, errors propagate."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

import sporeling.data as ds
from sporeling.data.engine._rng import current_rng
from sporeling.data.transforms import RandomApply, TensorOperation


class AddNoise(TensorOperation):
    """A random op like the vision ones: draws from self._rng()."""

    def __init__(self) -> None:
        self.scale = 1.0

    def _execute_numpy(self, x):
        return x + self._rng().normal(size=x.shape).astype(np.float32) * self.scale


def jitter(x):
    """A plain Python function drawing from the row's stream."""
    return x * np.float32(current_rng().uniform(0.5, 1.5))


def pipeline(workers, processes, seed=7):
    ds.config.set_seed(seed)
    data = np.arange(40 * 6, dtype=np.float32).reshape(40, 6)
    d = ds.NumpySlicesDataset({"x": data, "i": np.arange(40)})  # shuffled by default
    d = d.map(
        [AddNoise(), jitter, RandomApply([lambda x: -x], prob=0.5)],
        input_columns="x",
        num_parallel_workers=workers,
        python_multiprocessing=processes,
    )
    return d.batch(8)


def epochs(d, n=2):
    it = d.create_tuple_iterator(num_epochs=n, output_numpy=True)
    return [[tuple(a.copy() for a in row) for row in it] for _ in range(n)]


def same(a, b):
    assert len(a) == len(b)
    for ea, eb in zip(a, b):
        assert len(ea) == len(eb)
        for ra, rb in zip(ea, eb):
            for x, y in zip(ra, rb):
                np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("workers,processes", [(4, False), (4, True), (2, True)])
def test_same_output_with_any_workers(workers, processes):
    ref = epochs(pipeline(1, False))
    got = epochs(pipeline(workers, processes))
    same(ref, got)
    # the epochs differ from each other and the noise is really random
    assert not np.array_equal(ref[0][0][0], ref[1][0][0])


def test_seed_changes_output_and_unseeded_runs_differ():
    a = epochs(pipeline(1, False, seed=1), 1)
    b = epochs(pipeline(1, False, seed=2), 1)
    assert not np.array_equal(a[0][0][0], b[0][0][0])


def test_process_workers_really_are_processes():
    pids = ds.NumpySlicesDataset({"x": np.zeros(64)}, shuffle=False).map(
        lambda x: np.int64(os.getpid()), num_parallel_workers=3, python_multiprocessing=True
    )
    seen = {int(r[0]) for r in pids.create_tuple_iterator(num_epochs=1, output_numpy=True)}
    assert os.getpid() not in seen and len(seen) == 3


def test_process_workers_large_rows_and_objects():
    # rows bigger than max_rowsize go through the pipe; order is kept
    big = ds.NumpySlicesDataset({"i": np.arange(6)}, shuffle=False).map(
        lambda i: np.full((600, 600), i, np.float64),
        num_parallel_workers=2,
        python_multiprocessing=True,
        max_rowsize=1,
    )
    vals = [float(r[0][0, 0]) for r in big.create_tuple_iterator(num_epochs=1, output_numpy=True)]
    assert vals == [0, 1, 2, 3, 4, 5]
    strings = ds.NumpySlicesDataset({"i": np.arange(5)}, shuffle=False).map(
        lambda i: np.array(f"row-{int(i)}"), num_parallel_workers=2, python_multiprocessing=True
    )
    out = [str(r[0]) for r in strings.create_tuple_iterator(num_epochs=1, output_numpy=True)]
    assert out == [f"row-{i}" for i in range(5)]


def test_generator_dataset_parallel_reads():
    class Source:
        def __getitem__(self, i):
            return np.full((3,), i), np.int64(os.getpid())

        def __len__(self):
            return 20

    for processes in (False, True):
        d = ds.GeneratorDataset(
            Source(),
            ["v", "pid"],
            shuffle=False,
            num_parallel_workers=3,
            python_multiprocessing=processes,
        )
        out = list(d.create_tuple_iterator(num_epochs=1, output_numpy=True))
        assert [int(r[0][0]) for r in out] == list(range(20))
        assert (os.getpid() in {int(r[1]) for r in out}) is not processes


def boom(x):
    if int(x) == 13:
        raise KeyError("thirteen")
    return x


@pytest.mark.parametrize("workers,processes", [(1, False), (3, False), (3, True)])
def test_worker_exceptions_propagate_promptly(workers, processes):
    d = ds.NumpySlicesDataset({"x": np.arange(200)}, shuffle=False).map(
        boom, num_parallel_workers=workers, python_multiprocessing=processes
    )
    t0 = time.perf_counter()
    with pytest.raises(ds.PipelineError, match="row 13 .*KeyError: 'thirteen'") as info:
        for _ in d.create_tuple_iterator(num_epochs=1, output_numpy=True):
            pass
    assert time.perf_counter() - t0 < 10
    assert info.value.row == 13


def test_dead_worker_process_is_reported():
    def die(x):
        if int(x) == 5:
            os._exit(3)
        return x

    d = ds.NumpySlicesDataset({"x": np.arange(50)}, shuffle=False).map(
        die, num_parallel_workers=2, python_multiprocessing=True
    )
    t0 = time.perf_counter()
    with pytest.raises(RuntimeError, match="worker process .* died .*exit code 3"):
        for _ in d.create_tuple_iterator(num_epochs=1, output_numpy=True):
            pass
    assert time.perf_counter() - t0 < 10


def test_source_errors_propagate():
    class Broken:
        def __getitem__(self, i):
            if i == 3:
                raise OSError("disk on fire")
            return (np.int64(i),)

        def __len__(self):
            return 8

    for workers in (1, 3):
        d = ds.GeneratorDataset(Broken(), ["x"], shuffle=False, num_parallel_workers=workers)
        with pytest.raises(ds.PipelineError, match="cannot read row 3.*disk on fire"):
            list(d.create_tuple_iterator(num_epochs=1, output_numpy=True))

    def gen():
        yield (np.int64(1),)
        raise ValueError("generator broke")

    with pytest.raises(ds.PipelineError, match="cannot read row 1: ValueError: generator broke"):
        list(ds.GeneratorDataset(gen, ["x"]).create_tuple_iterator(num_epochs=1))


def test_early_stop_cleans_up_workers():
    before = threading.active_count()
    d = ds.NumpySlicesDataset({"x": np.arange(1000)}, shuffle=False).map(
        lambda x: x + 1, num_parallel_workers=2, python_multiprocessing=True
    )
    it = d.create_tuple_iterator(num_epochs=1, output_numpy=True)
    assert int(next(it)[0]) == 1
    it.stop()
    deadline = time.time() + 5
    while threading.active_count() > before and time.time() < deadline:
        time.sleep(0.05)
    assert threading.active_count() <= before
    # a pipeline that stops early (take) and reuses its pool next epoch stays in order
    t = d.take(5)
    it = t.create_tuple_iterator(num_epochs=3, output_numpy=True)
    for _ in range(3):
        assert [int(r[0]) for r in it] == [1, 2, 3, 4, 5]


def test_batch_parallel_per_batch_map_matches_serial():
    def pbm(xs, info):
        rng = current_rng()
        return ([x + rng.integers(0, 1000) for x in xs],)

    def run(workers, processes):
        ds.config.set_seed(3)
        d = ds.NumpySlicesDataset({"x": np.arange(30)}, shuffle=False)
        d = d.batch(
            4, per_batch_map=pbm, num_parallel_workers=workers, python_multiprocessing=processes
        )
        return [r[0].tolist() for r in d.create_tuple_iterator(num_epochs=1, output_numpy=True)]

    ref = run(1, False)
    assert run(3, False) == ref == run(2, True)


def test_unified_vision_ops_same_output_with_any_workers():
    from sporeling.data import vision

    imgs = np.random.default_rng(0).integers(0, 255, (24, 40, 40, 3), dtype=np.uint8)

    def run(workers, processes):
        ds.config.set_seed(3)
        ops = [
            vision.RandomResizedCrop(24),
            vision.RandomHorizontalFlip(),
            vision.RandomColorAdjust(0.4, 0.4, 0.4),
        ]
        d = ds.NumpySlicesDataset({"image": imgs}).map(
            ops,
            input_columns="image",
            num_parallel_workers=workers,
            python_multiprocessing=processes,
        )
        it = d.batch(8).create_tuple_iterator(num_epochs=1, output_numpy=True)
        return np.concatenate([b[0] for b in it])

    ref = run(1, False)
    assert ref.shape == (24, 24, 24, 3)
    np.testing.assert_array_equal(ref, run(4, False))
    np.testing.assert_array_equal(ref, run(2, True))
