"""Pipeline operations: map, batch, shuffle, repeat, take, skip, zip, concat, project, rename."""

from __future__ import annotations

import numpy as np
import pytest

import sporeling.data as ds
from sporeling.core import Tensor


def numbers(n=10, name="x"):
    return ds.NumpySlicesDataset({name: np.arange(n)}, shuffle=False)


def col(dataset, i=0):
    out = dataset.create_tuple_iterator(num_epochs=1, output_numpy=True)
    return [r[i].tolist() for r in out]


def count(dataset):
    return sum(1 for _ in dataset.create_tuple_iterator(num_epochs=1, output_numpy=True))


# ---- map -----------------------------------------------------------------------------------
def test_map_columns_and_order():
    d = ds.NumpySlicesDataset(
        {"a": np.arange(3), "b": np.arange(3) * 10, "c": -np.arange(3)}, shuffle=False
    )
    m = d.map(lambda a: a + 1)  # input_columns=None: the first column
    assert m.get_col_names() == ["a", "b", "c"] and col(m) == [1, 2, 3]
    two = d.map(lambda b: (b, b * 2), input_columns="b", output_columns=["b1", "b2"])
    assert two.get_col_names() == ["a", "b1", "b2", "c"]
    assert col(two, 2) == [0, 20, 40]
    merged = d.map(lambda a, c: a - c, input_columns=["a", "c"], output_columns="d")
    assert merged.get_col_names() == ["d", "b"] and col(merged) == [0, 2, 4]
    ordered = d.map(lambda a: a, column_order=["c", "a"])
    assert ordered.get_col_names() == ["c", "a"]
    chain = d.map([lambda a: a * 3, lambda a: a + 1], input_columns="a")
    assert col(chain) == [1, 4, 7]


def test_map_errors():
    d = numbers(3)
    with pytest.raises(RuntimeError, match="input_columns.*'nope'"):
        d.map(lambda x: x, input_columns="nope")
    with pytest.raises(ValueError, match="callables"):
        d.map([lambda x: x, 3])
    with pytest.raises(ValueError, match="operations"):
        d.map([])
    with pytest.raises(ValueError, match="on_error"):
        d.map(lambda x: x, on_error="ignore")
    with pytest.raises(TypeError, match="num_parallel_workers"):
        d.map(lambda x: x, num_parallel_workers=1.5)
    with pytest.raises(ValueError, match="num_parallel_workers"):
        d.map(lambda x: x, num_parallel_workers=0)
    with pytest.raises(TypeError, match="python_multiprocessing"):
        d.map(lambda x: x, python_multiprocessing="yes")
    wrong = d.map(lambda x: (x, x))  # two outputs for one output column
    with pytest.raises(ds.PipelineError, match="gave 2 value"):
        col(wrong)
    d2 = ds.NumpySlicesDataset({"x": [1], "y": [2]}, shuffle=False)
    with pytest.raises(ValueError, match="already exist"):
        d2.map(lambda x: x, input_columns="x", output_columns="y")


def test_map_on_error_skip_and_raise():
    def fragile(x):
        if x % 4 == 1:
            raise ValueError(f"bad {x}")
        return x

    d = numbers(10)
    with pytest.raises(ds.PipelineError, match=r"row 1 of epoch 0.*ValueError: bad 1"):
        col(d.map(fragile))
    skipped = d.map(fragile, on_error="skip")
    assert col(skipped) == [0, 2, 3, 4, 6, 7, 8]


# ---- batch ---------------------------------------------------------------------------------
def test_batch_sizes_and_drop_remainder():
    d = numbers(10)
    assert d.batch(3).get_dataset_size() == 4
    assert col(d.batch(3)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert d.batch(3, drop_remainder=True).get_dataset_size() == 3
    assert col(d.batch(3, drop_remainder=True))[-1] == [6, 7, 8]
    assert d.batch(10, True).get_dataset_size() == 1 and d.batch(11, True).get_dataset_size() == 0
    assert count(d.batch(11, True)) == 0
    assert d.batch(3).get_batch_size() == 3 and d.get_batch_size() == 1
    # repeat + batch: batches cross repeat boundaries; batch + repeat keeps remainders
    assert d.repeat(2).batch(3).get_dataset_size() == 7 == count(d.repeat(2).batch(3))
    assert d.batch(3).repeat(2).get_dataset_size() == 8 == count(d.batch(3).repeat(2))
    assert d.batch(3, True).repeat(3).get_dataset_size() == 9
    with pytest.raises(ValueError, match="batch_size"):
        d.batch(0)
    with pytest.raises(TypeError, match="drop_remainder"):
        d.batch(2, drop_remainder=1)


def test_batch_callable_size():
    d = numbers(10)
    b = d.batch(lambda info: info.get_batch_num() + 1)  # 1, 2, 3, 4
    assert b.get_dataset_size() == 4
    assert col(b) == [[0], [1, 2], [3, 4, 5], [6, 7, 8, 9]]


def test_batch_per_batch_map():
    d = ds.NumpySlicesDataset({"x": np.arange(6), "y": np.arange(6) * 2}, shuffle=False)
    seen = []

    def pbm(xs, ys, info):
        seen.append((info.get_batch_num(), info.get_epoch_num()))
        assert isinstance(xs, list) and len(xs) == len(ys)
        return [x * 100 for x in xs], [y + 1 for y in ys]

    b = d.batch(4, per_batch_map=pbm, input_columns=["x", "y"])
    assert col(b) == [[0, 100, 200, 300], [400, 500]]
    assert seen[:2] == [(0, 0), (1, 0)]
    # output_columns with a different count
    c = d.batch(
        3,
        per_batch_map=lambda xs, info: (xs, [x * x for x in xs]),
        input_columns="x",
        output_columns=["x", "sq"],
    )
    assert c.get_col_names() == ["x", "sq", "y"] and col(c, 1) == [[0, 1, 4], [9, 16, 25]]
    bad = d.batch(3, per_batch_map=lambda xs, ys, info: (xs,), input_columns=["x", "y"])
    with pytest.raises(ds.PipelineError, match="per_batch_map returned 1"):
        col(bad)
    with pytest.raises(ValueError, match="per_batch_map"):
        d.batch(2, input_columns="x")


def test_batch_pad_info():
    data = [np.arange(n) for n in (1, 3, 2, 4)]
    d = ds.GeneratorDataset(lambda: ((a, np.int32(len(a))) for a in data), ["seq", "n"])
    with pytest.raises(ds.PipelineError, match="different shapes.*pad_info"):
        col(d.batch(2))
    padded = d.batch(2, pad_info={"seq": (None, -1)})
    out = col(padded)
    assert out == [[[0, -1, -1], [0, 1, 2]], [[0, 1, -1, -1], [0, 1, 2, 3]]]
    fixed = col(d.batch(4, pad_info={"seq": ([5], 0)}))
    assert np.asarray(fixed).shape == (1, 4, 5)
    with pytest.raises(ds.PipelineError, match="larger than the pad shape"):
        col(d.batch(4, pad_info={"seq": ([3], 0)}))
    with pytest.raises(ValueError, match="unknown column"):
        d.batch(2, pad_info={"zzz": (None, 0)})
    with pytest.raises(TypeError, match="pad_info"):
        d.batch(2, pad_info=[("seq", None)])


# ---- shuffle / repeat / take / skip ----------------------------------------------------------
def test_shuffle_buffer():
    ds.config.set_seed(11)
    d = numbers(50)
    s = d.shuffle(8)
    e1 = col(s)
    assert sorted(e1) == list(range(50)) and e1 != list(range(50))
    assert s.epoch == 1  # a new iterator continues with the next epoch...
    s.set_epoch(0)  # ...unless told where to start
    it = s.create_tuple_iterator(num_epochs=2, output_numpy=True)
    first = [int(r[0]) for r in it]
    second = [int(r[0]) for r in it]
    assert first == e1 and second != first and sorted(second) == list(range(50))
    assert s.get_dataset_size() == 50
    with pytest.raises(ValueError, match="buffer_size"):
        d.shuffle(1)
    with pytest.raises(ValueError, match="infinite"):
        col(d.repeat().shuffle(4).take(3))


def test_repeat_take_skip_sizes():
    d = numbers(5)
    assert col(d.repeat(3)) == list(range(5)) * 3
    assert d.repeat(3).get_dataset_size() == 15
    assert d.repeat().get_dataset_size() == -1 and d.get_repeat_count() == 1
    assert d.repeat(None).take(12).get_dataset_size() == 12
    assert col(d.repeat().take(12)) == (list(range(5)) * 3)[:12]
    assert col(d.take(3)) == [0, 1, 2] and d.take(3).get_dataset_size() == 3
    assert d.take(99).get_dataset_size() == 5 and d.take(-1).get_dataset_size() == 5
    assert col(d.skip(2)) == [2, 3, 4] and d.skip(2).get_dataset_size() == 3
    assert d.skip(9).get_dataset_size() == 0 == count(d.skip(9))
    combo = d.repeat(2).skip(3).take(4).batch(3)
    assert combo.get_dataset_size() == 2 and col(combo) == [[3, 4, 0], [1]]
    with pytest.raises(ValueError, match="count"):
        d.repeat(0)
    with pytest.raises(ValueError, match="count"):
        d.take(0)
    with pytest.raises(ValueError, match="count"):
        d.skip(-1)


# ---- zip / concat / project / rename ---------------------------------------------------------
def test_zip_concat_sizes():
    a, b = numbers(5, "a"), numbers(3, "b")
    z = a.zip(b)
    assert z.get_col_names() == ["a", "b"] and z.get_dataset_size() == 3 and count(z) == 3
    z2 = ds.zip((a, b, numbers(4, "c")))
    assert z2.get_dataset_size() == 3 and z2.get_col_names() == ["a", "b", "c"]
    with pytest.raises(RuntimeError, match="duplicate column 'a'"):
        a.zip(numbers(2, "a"))
    with pytest.raises(ValueError, match="two"):
        ds.zip((a,))
    c = numbers(3) + numbers(2)
    assert c.get_dataset_size() == 5 and col(c) == [0, 1, 2, 0, 1]
    c3 = numbers(2).concat([numbers(1), numbers(3)])
    assert c3.get_dataset_size() == 6 and col(c3.skip(2)) == [0, 0, 1, 2]
    with pytest.raises(RuntimeError, match="'column name' or 'column order'"):
        numbers(2, "a") + numbers(2, "b")
    with pytest.raises(TypeError, match="Dataset"):
        a.concat([1])


def test_project_rename_and_metadata():
    d = ds.NumpySlicesDataset(
        {"a": np.zeros((4, 2, 3), np.float32), "b": np.arange(4, dtype=np.int16)}, shuffle=False
    )
    p = d.project(["b", "a"])
    assert p.get_col_names() == ["b", "a"]
    assert p.batch(2).output_shapes() == [[2], [2, 2, 3]]
    assert p.output_types() == [np.dtype(np.int16), np.dtype(np.float32)]
    r = d.rename(["a", "b"], ["img", "lbl"])
    assert r.get_col_names() == ["img", "lbl"] and count(r) == 4
    with pytest.raises(RuntimeError, match="Invalid column.*'c'"):
        d.project("c")
    with pytest.raises(ValueError, match="one new name"):
        d.rename(["a", "b"], ["x"])
    with pytest.raises(ValueError, match="duplicate"):
        d.rename("a", "b")


# ---- iterators -------------------------------------------------------------------------------
def test_iterators_tensors_dicts_and_epochs():
    d = ds.NumpySlicesDataset({"x": np.arange(4.0), "s": ["a", "b", "c", "d"]}, shuffle=False)
    it = d.batch(2).create_tuple_iterator(num_epochs=2)
    e1 = list(it)
    assert isinstance(e1[0][0], Tensor) and e1[0][0].asnumpy().tolist() == [0.0, 1.0]
    assert isinstance(e1[0][1], np.ndarray)  # strings stay NumPy
    assert len(list(it)) == 2 and list(it) == []  # two epochs, then done
    dit = d.create_dict_iterator(num_epochs=1, output_numpy=True)
    first = next(dit)
    assert set(first) == {"x", "s"} and str(first["s"]) == "a"
    only = d.create_tuple_iterator(columns=["s"], num_epochs=1, output_numpy=True)
    assert [str(r[0]) for r in only] == ["a", "b", "c", "d"]
    with pytest.raises(ValueError, match="num_epochs"):
        d.create_tuple_iterator(num_epochs=0)
    with pytest.raises(RuntimeError, match="columns"):
        d.create_tuple_iterator(columns=["zz"])
    with pytest.raises(TypeError, match="output_numpy"):
        d.create_tuple_iterator(output_numpy=1)
    assert [r[0].asnumpy().tolist() for r in d.project("x")] == [0.0, 1.0, 2.0, 3.0]


def test_prefetch_size_is_respected():
    ds.config.set_prefetch_size(2)
    try:
        produced = []

        def gen():
            for i in range(50):
                produced.append(i)
                yield np.int64(i)

        it = ds.GeneratorDataset(gen, ["x"]).create_tuple_iterator(num_epochs=1, output_numpy=True)
        next(it)
        import time

        time.sleep(0.2)
        assert len(produced) <= 5  # 1 consumed + queue of 2 + one in hand (+ slack)
        it.stop()
    finally:
        ds.config.set_prefetch_size(16)


def test_apply_and_bad_apply():
    d = numbers(4)
    assert d.apply(lambda x: x.batch(2)).get_dataset_size() == 2
    with pytest.raises(TypeError, match="apply_func"):
        d.apply(lambda x: 3)
