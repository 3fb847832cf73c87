"""Sampler chaining (add_child), PKSampler, flat_map and padded_batch. The chaining and
flat_map orders are what MindSpore 2.10 gives for the same calls (run by hand)."""

from __future__ import annotations

import itertools

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
    ds.config.set_seed(4)
    data = ds.NumpySlicesDataset(
        {"x": np.arange(10), "label": labels}, sampler=ds.PKSampler(2), shuffle=None
    )
    # Classes in sorted order, num_val rows each, drawn from the class's rows (MindSpore's
    # PKSamplerRT); the same seed gives the same rows
    first = _col(data)
    assert labels[first].tolist() == [0, 0, 1, 1, 2, 2]
    ds.config.set_seed(4)
    again = ds.NumpySlicesDataset({"x": np.arange(10), "label": labels}, sampler=ds.PKSampler(2))
    assert _col(again) == first
    three = ds.NumpySlicesDataset(
        {"x": np.arange(4), "label": np.array([5, 5, 7, 5])}, sampler=ds.PKSampler(3)
    )
    assert _col(three)[3:] == [2, 2, 2]  # a class smaller than num_val repeats its rows
    ds.config.set_seed(2)
    shuffled = _col(
        ds.NumpySlicesDataset(
            {"x": np.arange(10), "label": labels}, sampler=ds.PKSampler(2, shuffle=True)
        )
    )
    assert sorted(labels[shuffled].tolist()) == [0, 0, 1, 1, 2, 2]
    capped = ds.NumpySlicesDataset(
        {"x": np.arange(10), "label": labels}, sampler=ds.PKSampler(2, num_samples=3)
    )
    assert labels[_col(capped)].tolist() == [0, 0, 1]
    with pytest.raises(ValueError, match="class_column 'cls'"):
        _col(
            ds.NumpySlicesDataset({"x": np.arange(3)}, sampler=ds.PKSampler(1, class_column="cls"))
        )
    with pytest.raises(NotImplementedError, match="num_class"):
        ds.PKSampler(2, num_class=3)
    with pytest.raises(RuntimeError, match="num_val"):  # MindSpore's type (C++ check)
        ds.PKSampler(0)


def test_pk_sampler_draws():
    """Each slot is a uniform draw with replacement from its class, new every epoch; with
    shuffle=True the class order is random too (MindSpore's PKSamplerRT). Statistical
    bounds: 3,000 epochs, each bound more than 5 standard deviations from its expectation."""
    labels = np.array([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2])
    for shuffle in (False, True):
        data = ds.NumpySlicesDataset(
            {"x": np.arange(12), "label": labels}, sampler=ds.PKSampler(3, shuffle=shuffle)
        )
        _col(data)  # binds the labels to the sampler
        epochs = np.stack([data.sampler.get_indices(12, (7, e)) for e in range(3000)])
        blocks = labels[epochs].reshape(3000, 3, 3)
        assert (blocks == blocks[:, :, :1]).all()  # each block of 3 is one class
        orders = {tuple(b[:, 0]) for b in blocks}
        assert orders == ({(0, 1, 2)} if not shuffle else set(itertools.permutations(range(3))))
        counts = np.bincount(epochs.reshape(-1), minlength=12)
        assert ((counts > 2250 - 230) & (counts < 2250 + 230)).all(), counts  # 3000*9/12
        class0 = epochs[labels[epochs[:, 0]] == 0][:, :3] if not shuffle else None
        if class0 is not None:
            # with replacement: P(a repeat among 3 draws of 4 rows) = 1 - 24/64 = 0.625
            repeats = np.mean([len(set(r)) < 3 for r in class0.tolist()])
            assert 0.57 < repeats < 0.68, repeats
    assert not np.array_equal(epochs[0], epochs[1]) or not np.array_equal(epochs[1], epochs[2])


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
