"""Pipeline operations: filter and bucket_batch_by_length."""

from __future__ import annotations

import json

import numpy as np
import pytest

import sporeling.data as ds
from sporeling.data import config
from sporeling.data.engine._rng import current_rng

LENGTHS = [1, 5, 2, 7, 3, 6, 2, 9]


class Ragged:
    """Row i: (s, id) with s = [i] * LENGTHS[i] (random access, so it can be shuffled)."""

    def __init__(self, lengths=LENGTHS):
        self.lengths = list(lengths)

    def __len__(self):
        return len(self.lengths)

    def __getitem__(self, i):
        return np.full(self.lengths[i], i, dtype=np.int32), np.int64(i)


def ragged(shuffle=False, lengths=LENGTHS):
    return ds.GeneratorDataset(Ragged(lengths), ["s", "id"], shuffle=shuffle)


def numbers(n=10):
    return ds.NumpySlicesDataset({"x": np.arange(n), "y": np.arange(n) * 10}, shuffle=False)


def rows(dataset, num_epochs=1):
    it = dataset.create_tuple_iterator(num_epochs=num_epochs, output_numpy=True)
    return [[v.tolist() for v in r] for r in it]


def augment(x):
    return x + current_rng().integers(0, 1000)


# ---- filter ----------------------------------------------------------------------------------
def test_filter_keeps_rows_where_predicate_is_true():
    d = numbers(10)
    f = d.filter(lambda x: x % 3 == 0, input_columns="x")
    assert f.get_col_names() == ["x", "y"]
    assert rows(f) == [[0, 0], [3, 30], [6, 60], [9, 90]]
    both = d.filter(lambda x, y: x + y > 50)  # input_columns=None: every column
    assert [r[0] for r in rows(both)] == [5, 6, 7, 8, 9]
    only_y = d.filter(lambda y: bool(y < 30), input_columns=["y"])
    assert [r[1] for r in rows(only_y)] == [0, 10, 20]
    none = d.filter(lambda x, y: False)
    assert rows(none) == [] and none.get_dataset_size() == 0


def test_filter_size_counts_once_and_composes():
    calls = []

    def pred(x):
        calls.append(int(x))
        return x % 2 == 1

    f = numbers(9).filter(pred, "x")
    assert f.get_dataset_size() == 4 and len(calls) == 9
    assert f.get_dataset_size() == 4 and len(calls) == 9  # cached
    assert f.batch(3).get_dataset_size() == 2
    assert f.repeat(2).get_dataset_size() == 8
    assert f.take(3).get_dataset_size() == 3
    assert sorted(r[0] for r in rows(f.shuffle(4))) == [1, 3, 5, 7]
    assert rows(f.batch(3)) == [[[1, 3, 5], [10, 30, 50]], [[7], [70]]]


def test_filter_workers_and_upstream_workers_keep_order():
    config.set_seed(3)
    d = numbers(40).map(augment, input_columns="x", num_parallel_workers=3)
    ref = rows(d.filter(lambda x: x % 2 == 0, "x"))
    for workers in (1, 4):
        got = rows(d.filter(lambda x: x % 2 == 0, "x", num_parallel_workers=workers))
        assert got == ref
    assert all(r[0] % 2 == 0 for r in ref) and len(ref) == 24  # of 40 rows, seed 3


def test_filter_errors():
    d = numbers(4)
    with pytest.raises(TypeError, match="'predicate'"):
        d.filter(3)
    with pytest.raises(RuntimeError, match="input_columns.*'nope'"):
        d.filter(lambda x: True, input_columns="nope")
    with pytest.raises(ValueError, match="num_parallel_workers"):
        d.filter(lambda x: True, num_parallel_workers=0)
    with pytest.raises(TypeError, match="num_parallel_workers"):
        d.filter(lambda x: True, num_parallel_workers="2")
    with pytest.raises(ds.PipelineError, match="must return a bool"):
        rows(d.filter(lambda x: x, "x"))

    def boom(x):
        if x == 2:
            raise ValueError("bad two")
        return True

    with pytest.raises(ds.PipelineError, match=r"row 2 of epoch 0.*bad two"):
        rows(d.filter(boom, ["x"]))


# ---- bucket_batch_by_length ------------------------------------------------------------------
# Boundaries [3, 6]: buckets [0, 3), [3, 6), [6, inf) with batch sizes 2, 2, 3.
# Rows by length: 0:1->b0, 1:5->b1, 2:2->b0 (b0 full: rows 0, 2), 3:7->b2, 4:3->b1 (b1 full:
# rows 1, 4), 5:6->b2, 6:2->b0, 7:9->b2 (b2 full: rows 3, 5, 7); end: b0 holds row 6.
EXPECTED_IDS = [[0, 2], [1, 4], [3, 5, 7], [6]]


def padded(ids, width, value=0, lengths=LENGTHS):
    return [[i] * lengths[i] + [value] * (width - lengths[i]) for i in ids]


def test_bucket_batch_semantics_and_padding():
    b = ragged().bucket_batch_by_length(["s"], [3, 6], [2, 2, 3], pad_info={"s": (None, -1)})
    got = rows(b)
    assert [r[1] for r in got] == EXPECTED_IDS
    assert got[0][0] == padded([0, 2], 2, -1)
    assert got[1][0] == padded([1, 4], 5, -1)
    assert got[2][0] == padded([3, 5, 7], 9, -1)
    assert got[3][0] == [[6, 6]]
    assert b.get_dataset_size() == 4 and b.get_col_names() == ["s", "id"]
    # a column not in pad_info is padded to the longest row with 0
    b2 = ragged().bucket_batch_by_length(["s"], [3, 6], [2, 2, 3], pad_info={})
    assert rows(b2)[2][0] == padded([3, 5, 7], 9, 0)
    # a fixed pad shape
    b3 = ragged().bucket_batch_by_length(["s"], [3, 6], [2, 2, 3], pad_info={"s": ([10], 7)})
    assert rows(b3)[1][0] == padded([1, 4], 10, 7)


def test_bucket_batch_drop_remainder_and_sizes():
    kw = dict(pad_info={"s": (None, 0)})
    b = ragged().bucket_batch_by_length("s", [3, 6], [2, 2, 3], drop_remainder=True, **kw)
    assert [r[1] for r in rows(b)] == EXPECTED_IDS[:3] and b.get_dataset_size() == 3
    # one bucket per row: every row is its own batch, in input order
    one = ragged().bucket_batch_by_length(["s"], [100], [1, 1], **kw)
    assert [r[1] for r in rows(one)] == [[i] for i in range(8)]
    # no boundaries: one bucket, plain batching with padding
    plain = ragged().bucket_batch_by_length(["s"], [], [3], **kw)
    assert [r[1] for r in rows(plain)] == [[0, 1, 2], [3, 4, 5], [6, 7]]
    assert plain.get_dataset_size() == 3
    assert plain.repeat(2).get_dataset_size() == 6
    big = ragged().bucket_batch_by_length(["s"], [3, 6], [5, 5, 5], **kw)
    assert [r[1] for r in rows(big)] == [[0, 2, 6], [1, 4], [3, 5, 7]]
    dropped = ragged().bucket_batch_by_length(["s"], [3, 6], [5, 5, 5], drop_remainder=True)
    assert rows(dropped) == [] and dropped.get_dataset_size() == 0


def test_bucket_batch_boundaries_and_length_function():
    # lengths exactly on a boundary go to the upper bucket: [0, 2), [2, 5), [5, inf)
    lengths = [2, 5, 1, 4, 0]
    b = ragged(lengths=lengths).bucket_batch_by_length(
        ["s"], [2, 5], [10, 10, 10], pad_info={"s": (None, 0)}
    )
    assert [r[1] for r in rows(b)] == [[2, 4], [0, 3], [1]]
    # element_length_function over several columns: length = id, boundaries [4]
    by_id = ragged().bucket_batch_by_length(
        ["s", "id"], [4], [3, 3], element_length_function=lambda s, i: int(i), pad_info={}
    )
    assert [r[1] for r in rows(by_id)] == [[0, 1, 2], [4, 5, 6], [3], [7]]
    # scalars have length 0
    sc = numbers(5).bucket_batch_by_length(["x"], [1], [2, 2])
    assert rows(sc) == [[[0, 1], [0, 10]], [[2, 3], [20, 30]], [[4], [40]]]


def test_bucket_batch_pad_to_bucket_boundary():
    b = ragged().bucket_batch_by_length(
        ["s"], [3, 6, 10], [2, 2, 3, 1], pad_info={"s": ([None], 0)}, pad_to_bucket_boundary=True
    )
    got = rows(b)
    assert [r[1] for r in got] == EXPECTED_IDS
    assert got[0][0] == padded([0, 2], 2) and got[3][0] == padded([6], 2)
    assert got[1][0] == padded([1, 4], 5)
    assert got[2][0] == padded([3, 5, 7], 9)
    last = ragged().bucket_batch_by_length(
        ["s"], [3, 6], [2, 2, 3], pad_info={"s": ([None], 0)}, pad_to_bucket_boundary=True
    )
    with pytest.raises(ValueError, match="last bucket"):
        rows(last)


def test_bucket_batch_without_pad_info_needs_equal_shapes():
    b = ragged().bucket_batch_by_length(["s"], [3, 6], [2, 2, 3])
    with pytest.raises(ValueError, match="different shapes"):
        rows(b)
    same = ragged(lengths=[2, 2, 4, 4]).bucket_batch_by_length(["s"], [3], [2, 2])
    assert [r[1] for r in rows(same)] == [[0, 1], [2, 3]]


def test_bucket_batch_argument_errors():
    d = ragged()
    f = d.bucket_batch_by_length
    with pytest.raises(RuntimeError, match="'column_names'.*'nope'"):
        f(["nope"], [3], [1, 1])
    with pytest.raises(ValueError, match="'column_names' should not be empty"):  # MindSpore
        f([], [3], [1, 1])
    with pytest.raises(TypeError, match="'bucket_boundaries'"):
        f(["s"], 3, [1, 1])
    with pytest.raises(TypeError, match="'bucket_boundaries'"):
        f(["s"], [3.5], [1, 1])
    with pytest.raises(ValueError, match="'bucket_boundaries'.*positive"):
        f(["s"], [0, 3], [1, 1, 1])
    with pytest.raises(ValueError, match="'bucket_boundaries'.*strictly increasing"):
        f(["s"], [3, 3], [1, 1, 1])
    with pytest.raises(ValueError, match="'bucket_batch_sizes'.*one element more"):
        f(["s"], [3], [1])
    with pytest.raises(ValueError, match="'bucket_batch_sizes'.*positive"):
        f(["s"], [3], [1, 0])
    with pytest.raises(ValueError, match="'column_names'.*exactly one"):
        f(["s", "id"], [3], [1, 1])
    with pytest.raises(TypeError, match="'element_length_function'"):
        f(["s"], [3], [1, 1], element_length_function=5)
    with pytest.raises(TypeError, match="'pad_info'"):
        f(["s"], [3], [1, 1], pad_info=[("s", 0)])
    with pytest.raises(ValueError, match="'pad_info'.*'z'"):
        f(["s"], [3], [1, 1], pad_info={"z": (None, 0)})
    with pytest.raises(TypeError, match="'pad_to_bucket_boundary'"):
        f(["s"], [3], [1, 1], pad_to_bucket_boundary="yes")
    with pytest.raises(TypeError, match="'drop_remainder'"):
        f(["s"], [3], [1, 1], drop_remainder=1)
    bad = f(["s"], [3], [1, 1], element_length_function=lambda s: -1)
    with pytest.raises(ValueError, match=">= 0"):
        rows(bad)
    bad = f(["s"], [3], [1, 1], element_length_function=lambda s: "long")
    with pytest.raises(TypeError, match="must return an int"):
        rows(bad)


# ---- resume ----------------------------------------------------------------------------------
def pipeline(workers):
    d = ds.GeneratorDataset(Ragged(LENGTHS * 5), ["s", "id"], shuffle=True)
    d = d.map(augment, input_columns="id", num_parallel_workers=workers)
    d = d.filter(lambda s: s.shape[0] != 5, input_columns="s", num_parallel_workers=workers)
    return d.bucket_batch_by_length(["s"], [3, 6], [2, 3, 2], pad_info={"s": (None, -1)})


@pytest.mark.parametrize("workers", [1, 3])
def test_resume_mid_epoch_gives_identical_batches(workers):
    config.set_seed(11)
    d = pipeline(workers)
    size = d.get_dataset_size()
    assert size == 18  # 40 rows, 35 kept: b0 15 rows -> 8, b1 5 -> 2, b2 15 -> 8
    it = d.create_tuple_iterator(num_epochs=2, output_numpy=True)
    first = [[v.tolist() for v in r] for r in it]
    assert len(first) == size
    for _ in range(6):
        next(it)
    state = json.loads(json.dumps(it.get_state()))
    assert state["epoch"] == 1 and state["step"] == 6
    reference = [[v.tolist() for v in r] for r in it]
    resumed = pipeline(workers).create_tuple_iterator(num_epochs=1, output_numpy=True, state=state)
    assert [[v.tolist() for v in r] for r in resumed] == reference
    assert len(reference) == size - 6


def test_resume_filter_alone():
    config.set_seed(12)
    d = ds.NumpySlicesDataset({"x": np.arange(30)}).map(augment).filter(lambda x: x % 2 == 0)
    it = d.create_tuple_iterator(num_epochs=1, output_numpy=True)
    for _ in range(3):
        next(it)
    state = it.get_state()
    ref = [r[0].tolist() for r in it]
    again = d.create_tuple_iterator(num_epochs=1, output_numpy=True, state=state)
    assert [r[0].tolist() for r in again] == ref
