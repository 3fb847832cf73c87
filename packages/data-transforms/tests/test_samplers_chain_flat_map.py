"""Sampler chaining (add_child), PKSampler, flat_map and padded_batch. The chaining and
flat_map orders are what MindSpore 2.10 gives for the same calls (run by hand)."""

from __future__ import annotations

import numpy as np
import pytest

import sporeling.data as ds


def _col(dataset, name="x"):
    return [r[name].tolist() for r in dataset.create_dict_iterator(output_numpy=True, num_epochs=1)]


def test_child_sampler_picks_from_the_parents_input():
    parent = ds.SequentialSampler(start_index=1, num_samples=3)
    parent.add_child(ds.DistributedSampler(2, 1, shuffle=False))
    data = ds.NumpySlicesDataset({"x": np.arange(10)}, sampler=parent)
    # the child gives rows 1, 3, 5, 7, 9; the parent takes 3 of them from position 1
    assert _col(data) == [3, 5, 7]
    assert data.get_dataset_size() == 3
    assert parent.get_child() is not None
    with pytest.raises(RuntimeError, match="already has a child"):
        parent.add_child(ds.SequentialSampler())
    with pytest.raises(TypeError, match="expected a Sampler"):
        ds.SequentialSampler().add_child([1, 2])
    subset = ds.SubsetSampler([2, 0])
    subset.add_child(ds.SequentialSampler(start_index=5))
    assert _col(ds.NumpySlicesDataset({"x": np.arange(10)}, sampler=subset)) == [7, 5]


def test_pk_sampler():
    labels = np.array([0, 1, 2, 0, 1, 0, 2, 2, 1, 0])
    data = ds.NumpySlicesDataset(
        {"x": np.arange(10), "label": labels}, sampler=ds.PKSampler(2), shuffle=None
    )
    # Classes in sorted order, num_val rows each. MindSpore 2.10 draws a class's rows at
    # random with replacement even with shuffle=False (ImageFolderDataset, by hand); here
    # shuffle=False takes the first num_val rows of each class.
    assert _col(data) == [0, 3, 1, 4, 2, 6]
    three = ds.NumpySlicesDataset(
        {"x": np.arange(4), "label": np.array([5, 5, 7, 5])}, sampler=ds.PKSampler(3)
    )
    assert _col(three) == [0, 1, 3, 2, 2, 2]  # a small class repeats its rows
    ds.config.set_seed(2)
    shuffled = _col(
        ds.NumpySlicesDataset(
            {"x": np.arange(10), "label": labels}, sampler=ds.PKSampler(2, shuffle=True)
        )
    )
    assert sorted(labels[shuffled].tolist()) == [0, 0, 1, 1, 2, 2]
    with pytest.raises(ValueError, match="class_column 'cls'"):
        _col(
            ds.NumpySlicesDataset({"x": np.arange(3)}, sampler=ds.PKSampler(1, class_column="cls"))
        )
    with pytest.raises(NotImplementedError, match="num_class"):
        ds.PKSampler(2, num_class=3)


def test_flat_map():
    data = ds.NumpySlicesDataset({"x": np.array([1, 2, 3])}, shuffle=False)

    def expand(x):
        return ds.NumpySlicesDataset({"y": np.arange(int(x)) * 10 + int(x)}, shuffle=False)

    flat = data.flat_map(expand)
    assert flat.get_col_names() == ["y"]
    assert _col(flat, "y") == [1, 2, 12, 3, 13, 23]
    assert flat.get_dataset_size() == 6
    assert _col(flat.skip(2), "y") == [12, 3, 13, 23]
    with pytest.raises(TypeError, match="must return a Dataset"):
        _col(data.flat_map(lambda x: [x]), "x")


def test_padded_batch():
    data = ds.GeneratorDataset(
        lambda: ((np.arange(n, dtype=np.int32), np.float32(n)) for n in (1, 3, 2)),
        ["v", "w"],
    )
    batch = next(data.padded_batch(3).create_dict_iterator(output_numpy=True, num_epochs=1))
    assert batch["v"].tolist() == [[0, 0, 0], [0, 1, 2], [0, 1, 0]]
    assert batch["w"].tolist() == [1.0, 3.0, 2.0]
    padded = data.padded_batch(2, pad_info={"v": ([4], -1)})
    first = next(padded.create_dict_iterator(output_numpy=True, num_epochs=1))
    assert first["v"].tolist() == [[0, -1, -1, -1], [0, 1, 2, -1]]
