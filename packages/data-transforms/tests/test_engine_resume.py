"""Sharding covers every sample once; resume mid-epoch; samplers; training with Model."""

from __future__ import annotations

import json

import numpy as np
import pytest

import sporeling.data as ds
from sporeling.data import config
from sporeling.data.engine._rng import current_rng


def ids(dataset, epoch=0, col=0):
    dataset.set_epoch(epoch)
    it = dataset.create_tuple_iterator(num_epochs=1, output_numpy=True)
    return [int(v) for r in it for v in np.ravel(r[col])]


# ---- sharding --------------------------------------------------------------------------------
class Access:
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        return (np.int64(i),)

    def __len__(self):
        return self.n


def make_source(kind, n, **kw):
    if kind == "slices":
        return ds.NumpySlicesDataset({"i": np.arange(n)}, **kw)
    if kind == "random_access":
        return ds.GeneratorDataset(Access(n), ["i"], **kw)
    kw.pop("shuffle", None)

    def gen():
        for i in range(n):
            yield (np.int64(i),)

    return ds.GeneratorDataset(gen, ["i"], **kw)


@pytest.mark.parametrize(
    "kind,n,num_shards,shuffle",
    [
        ("slices", 10, 3, False),
        ("slices", 10, 3, True),
        ("slices", 17, 4, None),
        ("slices", 3, 5, True),  # more shards than rows: some shards are empty
        ("random_access", 23, 2, True),
        ("random_access", 9, 9, False),
        ("stream", 11, 3, False),
    ],
)
@pytest.mark.parametrize("seeded", [True, False])
def test_shards_cover_every_sample_exactly_once(kind, n, num_shards, shuffle, seeded, monkeypatch):
    if seeded:
        config.set_seed(21)
    else:
        monkeypatch.setitem(config._settings, "seed", None)  # shards must still agree
    for epoch in (0, 1):
        parts = []
        for shard_id in range(num_shards):
            d = make_source(kind, n, shuffle=shuffle, num_shards=num_shards, shard_id=shard_id)
            got = ids(d, epoch)
            assert len(got) == d.get_dataset_size()
            parts.extend(got)
        assert sorted(parts) == list(range(n))


def test_shards_with_batch_and_distributed_sampler():
    config.set_seed(4)
    parts, sizes = [], []
    for shard_id in range(3):
        sampler = ds.DistributedSampler(3, shard_id, shuffle=True)
        d = ds.NumpySlicesDataset({"i": np.arange(20)}, sampler=sampler).batch(4)
        sizes.append(d.get_dataset_size())
        parts.extend(ids(d))
    assert sorted(parts) == list(range(20)) and sizes == [2, 2, 2]
    with pytest.raises(RuntimeError, match="shard_id"):  # MindSpore's type (C++ check)
        ds.DistributedSampler(2, 2)
    with pytest.raises(RuntimeError, match="argument 'offset' other than -1 is not supported"):
        ds.DistributedSampler(2, 0, offset=1)
    with pytest.raises(RuntimeError, match="sampler and sharding cannot be specified"):
        ds.NumpySlicesDataset([1, 2], sampler=ds.SequentialSampler(), num_shards=2, shard_id=0)


def test_samplers():
    config.set_seed(8)
    data = {"i": np.arange(10)}
    assert ids(ds.NumpySlicesDataset(data, sampler=ds.SequentialSampler(2, 3))) == [2, 3, 4]
    r = ids(ds.NumpySlicesDataset(data, sampler=ds.RandomSampler()))
    assert sorted(r) == list(range(10)) and r != list(range(10))
    rep = ds.NumpySlicesDataset(data, sampler=ds.RandomSampler(replacement=True, num_samples=30))
    assert rep.get_dataset_size() == 30 and len(ids(rep)) == 30
    assert ids(ds.NumpySlicesDataset(data, sampler=ds.SubsetSampler([7, 1, 7]))) == [7, 1, 7]
    sub = ids(ds.NumpySlicesDataset(data, sampler=ds.SubsetRandomSampler([0, 2, 4, 6])))
    assert sorted(sub) == [0, 2, 4, 6]
    w = ds.NumpySlicesDataset(data, sampler=ds.WeightedRandomSampler([0] * 9 + [1], 5))
    assert ids(w) == [9] * 5
    assert ids(ds.NumpySlicesDataset(data, sampler=[3, 4])) == [3, 4]
    with pytest.raises(RuntimeError, match="sampler and num_samples"):  # as MindSpore
        ds.NumpySlicesDataset(data, sampler=ds.SequentialSampler(), num_samples=4)
    assert (
        ds.NumpySlicesDataset(data, sampler=ds.SequentialSampler(num_samples=4)).get_dataset_size()
        == 4
    )
    source = ds.NumpySlicesDataset(data, shuffle=False)
    source.use_sampler(ds.SubsetSampler([5, 2]))
    assert ids(source.map(lambda x: x)) == [5, 2]
    with pytest.raises(RuntimeError, match="out of range"):
        ids(ds.NumpySlicesDataset(data, sampler=ds.SubsetSampler([10])))
    with pytest.raises(RuntimeError, match="weights vector must not contain negative"):
        ds.WeightedRandomSampler([-1, 2])
    with pytest.raises(TypeError, match="replacement"):
        ds.RandomSampler(replacement=1)
    with pytest.raises(TypeError, match="sampler"):
        ds.NumpySlicesDataset(data, sampler="all")


# ---- resume --------------------------------------------------------------------------------
def augment(x):
    return x + current_rng().integers(0, 1000)


def resumable_pipeline(workers=1):
    d = ds.NumpySlicesDataset({"x": np.arange(37), "y": np.arange(37) * 2})  # shuffled source
    d = d.shuffle(5).map(augment, input_columns="x", num_parallel_workers=workers)
    return d.batch(4, drop_remainder=False).repeat(2)


def as_lists(batches):
    return [[a.tolist() for a in b] for b in batches]


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize("seeded", [True, False])
def test_resume_mid_epoch_gives_identical_batches(workers, seeded, monkeypatch):
    if seeded:
        config.set_seed(99)
    else:
        monkeypatch.setitem(config._settings, "seed", None)
    d = resumable_pipeline(workers)
    size = d.get_dataset_size()
    assert size == 20
    # stop in the middle of epoch 1, save the state, then keep going for the reference
    it = d.create_tuple_iterator(num_epochs=3, output_numpy=True)
    as_lists(it)
    for _ in range(7):
        next(it)
    state = json.loads(json.dumps(it.get_state()))
    assert state["epoch"] == 1 and state["step"] == 7
    reference = [as_lists(it), as_lists(it)]
    # resume with a freshly built pipeline (as a new process would)
    fresh = resumable_pipeline(workers)
    resumed = fresh.create_tuple_iterator(num_epochs=2, output_numpy=True, state=state)
    assert as_lists(resumed) == reference[0] and len(reference[0]) == 13
    assert as_lists(resumed) == reference[1]
    assert as_lists(resumed) == []


def test_resume_with_set_state_and_dict_iterator():
    config.set_seed(5)
    d = ds.NumpySlicesDataset({"x": np.arange(10)}).map(augment).batch(3)
    it = d.create_dict_iterator(num_epochs=1, output_numpy=True)
    ref = [r["x"].tolist() for r in it]
    d.set_epoch(0)
    it = d.create_dict_iterator(num_epochs=1, output_numpy=True)
    next(it)
    state = it.get_state()
    it2 = d.create_dict_iterator(num_epochs=1, output_numpy=True)
    it2.set_state(state)
    assert [r["x"].tolist() for r in it2] == ref[1:]
    with pytest.raises(ValueError, match="same pipeline"):
        d.batch(2).create_tuple_iterator(state=state)
    with pytest.raises(ValueError, match="get_state"):
        it2.set_state({"epoch": 0})


def test_resume_at_epoch_end_and_through_stream_source():
    config.set_seed(6)

    def gen():
        for i in range(9):
            yield (np.int64(i),)

    d = ds.GeneratorDataset(gen, ["x"]).map(augment).batch(2)
    it = d.create_tuple_iterator(num_epochs=2, output_numpy=True)
    ref = [as_lists(it), as_lists(it)]
    d.set_epoch(0)
    it = d.create_tuple_iterator(num_epochs=2, output_numpy=True)
    list(it)
    state = it.get_state()  # at the end of epoch 0
    again = d.create_tuple_iterator(num_epochs=1, output_numpy=True, state=state)
    assert as_lists(again) == ref[1]
    d.set_epoch(0)
    it = d.create_tuple_iterator(num_epochs=1, output_numpy=True)
    next(it), next(it)
    again = d.create_tuple_iterator(num_epochs=1, output_numpy=True, state=it.get_state())
    assert as_lists(again) == ref[0][2:]


# ---- Model integration ---------------------------------------------------------------------
def test_model_trains_over_numpy_slices_dataset():
    from sporeling.core import nn
    from sporeling.core.train import Model

    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5]], np.float32)).astype(np.float32)
    config.set_seed(1)
    data = ds.NumpySlicesDataset({"x": x, "y": y}).batch(16)
    net = nn.Dense(3, 1)
    loss = nn.MSELoss()

    def mse():
        pred = net(__import__("sporeling.core", fromlist=["Tensor"]).Tensor(x)).asnumpy()
        return float(((pred - y) ** 2).mean())

    before = mse()
    model = Model(net, loss_fn=loss, optimizer=nn.SGD(net.trainable_params(), learning_rate=0.1))
    model.train(8, data)
    after = mse()
    assert after < before * 0.2
    assert data.epoch == 8  # the dataset's epochs advanced with training
