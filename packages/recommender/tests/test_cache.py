"""The embedding cache: training with a few-row cache (memory or disk level, with and without
prefetch) gives the parameters of training without one; eviction, write-back, prefetch and
checkpoint paths."""

from __future__ import annotations

import numpy as np
import pytest

from sporeling.core import Tensor, set_seed
from sporeling.recommender.cache import CachedEmbeddingLookup, cached_lookups
from sporeling.recommender.models import WideDeepModel
from sporeling.recommender.runner import ModelConfig, load, save
from sporeling.recommender.train import NetWithLossClass, TrainStepWrap

V, F, B = 400, 5, 3  # a batch holds at most 15 distinct ids


def batches(n, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        ids = np.minimum(rng.zipf(1.3, (B, F)) - 1, V + 5).astype(np.int32)  # some out of range
        yield (
            ids,
            rng.random((B, F)).astype(np.float32),
            (rng.random((B, 1)) < 0.4).astype(np.float32),
        )


def train(cache, steps=40, explicit=True, **opts):
    set_seed(7)
    net = WideDeepModel(V, F, 4, (6,), vocab_cache_size=cache, **opts)
    step = TrainStepWrap(NetWithLossClass(net))
    caches = cached_lookups(net)
    data = list(batches(steps))
    for i, (ids, vals, y) in enumerate(data):
        if explicit:
            for c in caches:
                c.prepare(ids)
                if i + 1 < len(data):  # "partial": the prefetch reads only some rows
                    nxt = data[i + 1][0]
                    c.prefetch(nxt[:1] if explicit == "partial" else nxt)
        step(Tensor(ids), Tensor(vals), Tensor(y))
    for c in caches:
        c.flush()
    return net, caches


def full_params(net):
    tables = {id(c.embedding_table): c.host_table for c in cached_lookups(net)}
    return {p.name: np.array(tables.get(id(p), p.asnumpy())) for p in net.trainable_params()}


@pytest.fixture(scope="module")
def reference():
    net, _ = train(0)
    return full_params(net)


@pytest.mark.parametrize(
    "cache, explicit, opts",
    [
        (16, True, {}),
        (25, False, {}),
        (V, True, {}),
        (20, True, {"prefetch": False}),
        (16, "partial", {}),
    ],  # fmt: skip
)
def test_same_parameters_as_without_cache(reference, cache, explicit, opts):
    net, caches = train(cache, explicit=explicit, **opts)
    got = full_params(net)
    for k, v in reference.items():
        np.testing.assert_array_equal(got[k], v, err_msg=k)
    st = caches[1].stats
    assert st.batches == 40 and 0 < st.hits < st.lookups
    if cache < V:
        assert st.write_backs > 0  # rows were evicted and written back
    if explicit and opts.get("prefetch", True):
        assert st.prefetched > 0  # rows came from the background reads
    if not opts.get("prefetch", True):
        assert st.prefetched == 0


def test_disk_level_matches_memory_level(tmp_path):
    def run(**opts):
        set_seed(7)
        net = WideDeepModel(V, F, 4, (6,), vocab_cache_size=16, **opts)
        host = np.random.default_rng(0).normal(0, 0.3, (V, 4)).astype(np.float32)
        cached_lookups(net)[1].load_table(host)
        cached_lookups(net)[0].load_table(host[:, :1])
        rng = np.random.default_rng(1)  # the disk level draws no RNG: give both the same start
        tables = {id(c.embedding_table) for c in cached_lookups(net)}
        for p in net.trainable_params():
            if id(p) not in tables:
                p.set_data(Tensor(rng.normal(0, 0.3, p.shape).astype(np.float32)))
        step = TrainStepWrap(NetWithLossClass(net))
        for ids, vals, y in batches(20):
            step(Tensor(ids), Tensor(vals), Tensor(y))
        for c in cached_lookups(net):
            c.flush()
        return full_params(net)

    mem = run()
    disk = run(storage="disk", path=str(tmp_path / "d"))
    assert (tmp_path / "d" / "deep" / "state-moment1.npy").exists()
    for k in mem:
        np.testing.assert_array_equal(mem[k], disk[k], err_msg=k)


def test_checkpoint_flushes_and_round_trips(tmp_path, reference):
    net, _ = train(16)
    cfg = ModelConfig(vocab_size=V, field_size=F, emb_dim=4, deep_layer_dims=[6],
                      vocab_cache_size=16)  # fmt: skip
    save(net, cfg, str(tmp_path / "m.ckpt"))
    plain, _ = load(str(tmp_path / "m.ckpt"), vocab_cache_size=0)
    for p in plain.trainable_params():
        np.testing.assert_array_equal(p.asnumpy(), reference[p.name], err_msg=p.name)
    again, _ = load(str(tmp_path / "m.ckpt"))
    ids, vals, _ = next(batches(1, seed=5))
    got = again(Tensor(ids), Tensor(vals))[0].asnumpy()
    np.testing.assert_allclose(got, plain(Tensor(ids), Tensor(vals))[0].asnumpy(), rtol=1e-6)


def test_errors():
    lookup = CachedEmbeddingLookup(100, 2, vocab_cache_size=4)
    with pytest.raises(ValueError, match="holds 6 distinct ids but vocab_cache_size is 4"):
        lookup(Tensor(np.arange(6, dtype=np.int32)))
    with pytest.raises(ValueError, match="'vocab_cache_size' expected an int >= 1, got 0"):
        CachedEmbeddingLookup(100, 2, vocab_cache_size=0)
    with pytest.raises(ValueError, match="needs argument 'path'"):
        CachedEmbeddingLookup(100, 2, vocab_cache_size=4, storage="disk")
    out = lookup(Tensor(np.array([[1, 200, -3]], np.int32)))
    assert np.all(out.asnumpy()[0, 1:] == 0) and np.any(out.asnumpy()[0, 0] != 0)


def test_disk_level_initialises_rows_on_first_use(tmp_path):
    big = 5_000_000  # 320 MB of table if it were written: the sparse file holds only touched rows
    lookup = CachedEmbeddingLookup(big, 16, vocab_cache_size=64, storage="disk",
                                   path=str(tmp_path / "big"), param_init="normal")  # fmt: skip
    ids = np.array([[3, big - 1, 12345, 3]], np.int32)
    out = lookup(Tensor(ids)).asnumpy()[0]
    np.testing.assert_array_equal(out[0], out[3])
    again = lookup._initial_rows(np.array([12345, 3]))  # order does not matter
    np.testing.assert_array_equal(again, out[[2, 0]])
    draws = lookup._initial_rows(np.arange(20000))
    assert abs(draws.mean()) < 5e-4 and 0.0097 < draws.std() < 0.0103
    lookup.flush()
    st = (tmp_path / "big" / "table.npy").stat()
    assert st.st_size > 300e6 and st.st_blocks * 512 < 10e6


def test_disk_level_same_parameters_with_any_cache_size(tmp_path):
    def run(cache, name):
        set_seed(7)
        net = WideDeepModel(V, F, 4, (6,), vocab_cache_size=cache, storage="disk",
                            path=str(tmp_path / name))  # fmt: skip
        step = TrainStepWrap(NetWithLossClass(net))
        for ids, vals, y in batches(25):
            step(Tensor(ids), Tensor(vals), Tensor(y))
        tables = {id(c.embedding_table): c.full_table() for c in cached_lookups(net)}
        return {p.name: np.array(tables.get(id(p), p.asnumpy())) for p in net.trainable_params()}

    whole, small = run(V, "a"), run(16, "b")
    for k in whole:
        np.testing.assert_array_equal(small[k], whole[k], err_msg=k)
