"""Dataset.split with MindSpore's size rules (the absolute sizes below are what MindSpore's
_get_absolute_split_sizes gives), and the module paths MindSpore scripts import."""

from __future__ import annotations

import numpy as np
import pytest

import sporeling.data as ds
from sporeling.data.engine.split import absolute_split_sizes


def _values(dataset):
    return [int(r["x"]) for r in dataset.create_dict_iterator(output_numpy=True, num_epochs=1)]


# (sizes, dataset size, MindSpore 2.10's _get_absolute_split_sizes), run by hand in MindSpore
MS_SIZES = [
    ([0.8, 0.2], 10, [8, 2]),
    ([0.33, 0.33, 0.34], 10, [4, 3, 3]),
    ([0.5, 0.5], 5, [3, 2]),
    ([0.35, 0.35, 0.3], 7, [3, 2, 2]),
    ([0.7, 0.3], 3, [2, 1]),
    ([0.1, 0.9], 7, [1, 6]),
    ([0.45, 0.45, 0.1], 11, [5, 5, 1]),
    ([6, 4], 10, [6, 4]),
]


@pytest.mark.parametrize(("sizes", "n", "want"), MS_SIZES)
def test_absolute_sizes_as_mindspore(sizes, n, want):
    assert absolute_split_sizes(sizes, n) == want


def test_rounding_that_cannot_add_up():
    # MindSpore: "Sum of calculated split sizes 8 is not equal to dataset size 6."
    with pytest.raises(RuntimeError, match="Sum of calculated split sizes 8 is not equal"):
        absolute_split_sizes([0.25] * 4, 6)


def test_split_rules_errors():
    data = ds.NumpySlicesDataset({"x": np.arange(10)}, shuffle=False)
    with pytest.raises(RuntimeError, match="Sum of split sizes 9 is not equal to dataset size 10"):
        data.split([5, 4])
    with pytest.raises(ValueError, match="do not sum up to 1"):
        data.split([0.5, 0.4])
    with pytest.raises(ValueError, match="list of int or list of float"):
        data.split([5, 0.5])
    with pytest.raises(ValueError, match="no negative or zero"):
        data.split([10, 0])
    with pytest.raises(ValueError, match="cannot be empty"):
        data.split([])
    with pytest.raises(RuntimeError, match="too small"):
        ds.NumpySlicesDataset({"x": np.arange(3)}, shuffle=False).split([0.9, 0.1])
    sharded = ds.NumpySlicesDataset({"x": np.arange(10)}, num_shards=2, shard_id=0)
    with pytest.raises(RuntimeError, match="should not be sharded"):
        sharded.split([0.5, 0.5])
    with pytest.raises(RuntimeError, match="randomize=True needs a random-access source"):
        data.map(lambda x: x, input_columns="x").split([0.5, 0.5])


def test_split_in_order_and_random():
    data = ds.NumpySlicesDataset({"x": np.arange(10)}, shuffle=False)
    a, b = data.split([0.8, 0.2], randomize=False)
    assert _values(a) == list(range(8)) and _values(b) == [8, 9]
    assert a.get_dataset_size() == 8 and b.get_dataset_size() == 2
    ds.config.set_seed(3)
    a, b, c = data.split([0.5, 0.3, 0.2])
    va, vb, vc = _values(a), _values(b), _values(c)
    assert sorted(va + vb + vc) == list(range(10)) and (len(va), len(vb), len(vc)) == (5, 3, 2)
    assert va != list(range(5))  # randomized
    assert _values(a) == va  # the same every epoch
    ds.config.set_seed(3)
    again = data.split([0.5, 0.3, 0.2])
    assert [_values(d) for d in again] == [va, vb, vc]  # deterministic under the seed
    pipeline = data.map(lambda x: x * 10, input_columns="x")
    first, second = pipeline.split([3, 7], randomize=False)
    assert _values(first) == [0, 10, 20] and _values(second)[0] == 30


def test_module_paths():
    from sporeling.data import transforms
    from sporeling.data import vision as v
    from sporeling.data.transforms import c_transforms as C
    from sporeling.data.transforms import py_transforms as P
    from sporeling.data.vision import transforms as VT

    assert VT.Resize is v.Resize and "RandomResizedCrop" in VT.__all__
    assert C.TypeCast(np.float32)(np.array([1, 2])).dtype == np.float32
    assert P.OneHotOp(3)(np.array([1])).tolist() == [[0, 1, 0]]
    data = ds.NumpySlicesDataset({"x": np.arange(3)}, shuffle=False)
    with pytest.raises(RuntimeError, match="Mixing old legacy"):
        data.map([C.TypeCast(np.float32), transforms.Fill(2)], input_columns="x")
    ok = data.map([C.TypeCast(np.float32), C.Fill(2)], input_columns="x")
    assert [float(r[0]) for r in ok.create_tuple_iterator(num_epochs=1, output_numpy=True)] == [
        2.0
    ] * 3
