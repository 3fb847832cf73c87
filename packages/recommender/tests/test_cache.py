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


# ---- the host-memory level between the cache and the disk table ------------------------


def start_from(net, seed=0):
    """The same initial parameters for any net (the disk level draws its rows from a hash)."""
    host = np.random.default_rng(seed).normal(0, 0.3, (V, 4)).astype(np.float32)
    caches = cached_lookups(net)
    for c in caches:
        c.load_table(host[:, : c.embedding_size])
    tables = {id(c.embedding_table) for c in caches}
    rng = np.random.default_rng(seed + 1)
    for p in net.trainable_params():
        if id(p) in tables:
            continue
        if "embedding_table" in p.name:  # an uncached lookup
            p.set_data(Tensor(host[:, : p.shape[1]].copy()))
        else:
            p.set_data(Tensor(rng.normal(0, 0.3, p.shape).astype(np.float32)))


def train_levels(cache, steps=30, explicit=True, finish=True, **opts):
    set_seed(7)
    net = WideDeepModel(V, F, 4, (6,), vocab_cache_size=cache, **opts)
    start_from(net)
    step = TrainStepWrap(NetWithLossClass(net))
    caches = cached_lookups(net)
    data = list(batches(steps, seed=3))
    for i, (ids, vals, y) in enumerate(data):
        if explicit:
            for c in caches:
                c.prepare(ids)
                if i + 1 < len(data):
                    nxt = data[i + 1][0]
                    c.prefetch(nxt[:1] if explicit == "partial" else nxt)
        step(Tensor(ids), Tensor(vals), Tensor(y))
        if i == steps // 2:  # an epoch's end in the middle: flush every level
            for c in caches:
                c.flush()
    if not finish:
        return net, caches
    tables = {id(c.embedding_table): np.array(c.full_table()) for c in caches}
    params = {p.name: np.array(tables.get(id(p), p.asnumpy())) for p in net.trainable_params()}
    return params, caches


@pytest.fixture(scope="module")
def level_reference():
    return train_levels(0)[0]


@pytest.mark.parametrize(
    "cache, host, explicit, opts",
    [
        (16, 20, True, {}),
        (16, 40, "partial", {}),
        (20, 24, False, {}),
        (16, 30, True, {"prefetch": False}),
        (16, 1, True, {}),  # a host level smaller than one write-back: rows pass through
    ],  # fmt: skip
)
def test_host_level_same_parameters_as_without_cache(
    tmp_path, level_reference, cache, host, explicit, opts
):
    got, caches = train_levels(cache, explicit=explicit, storage="disk",
                               path=str(tmp_path / "t"), host_cache_size=host, **opts)  # fmt: skip
    for k, v in level_reference.items():
        np.testing.assert_array_equal(got[k], v, err_msg=k)
    st = caches[1].stats
    assert st.write_backs > 0 and 0 < st.hits < st.lookups  # the fast cache evicted rows
    assert st.host_lookups > 0 and st.disk_write_backs > 0 and st.disk_reads > 0
    assert st.disk_write_batches <= st.disk_write_backs
    if host > 1:
        assert 0 < st.host_hits < st.host_lookups  # the host level served some misses
    hc = caches[1].host_cache
    assert hc is not None and (hc.id_of >= 0).sum() <= host and not hc.dirty.any()
    if explicit and opts.get("prefetch", True):
        assert st.prefetched > 0


def test_host_level_writes_sorted_batches_and_evicts_lru(tmp_path):
    lookup = CachedEmbeddingLookup(V, 2, vocab_cache_size=3, storage="disk",
                                   path=str(tmp_path / "t"), host_cache_size=4)  # fmt: skip
    hc = lookup.host_cache
    written = []
    disk_write = hc._write_disk

    def spy(ids, rows, states):
        written.append(ids.copy())
        disk_write(ids, rows, states)

    hc._write_disk = spy
    for ids in ([9, 5, 7], [1, 2, 3], [9, 8, 6], [4, 0, 11]):
        out = lookup(Tensor(np.array(ids, np.int32)))
        lookup.embedding_table.asnumpy()[...] += 1.0  # "train" every cached row
        assert out.shape == (3, 2)
    # the fast cache wrote back 9 rows (6 distinct) into 4 host rows: the rest reached the
    # disk in batches sorted by row id; row 9 came back from the host level in batch 3
    assert written and all(np.all(np.diff(w) > 0) for w in written)
    assert (hc.id_of >= 0).sum() <= 4 and lookup.stats.host_hits >= 1
    lookup.flush()
    assert not hc.dirty.any() and all(np.all(np.diff(w) > 0) for w in written)
    table = np.array(lookup.full_table())
    seen = {9: 2, 5: 1, 7: 1, 1: 1, 2: 1, 3: 1, 8: 1, 6: 1, 4: 1, 0: 1, 11: 1}  # batches using it
    ids = np.arange(V)
    bump = np.array([[seen.get(j, 0)] for j in ids], np.float32)
    np.testing.assert_allclose(table, lookup._initial_rows(ids) + bump, rtol=0, atol=1e-6)


def test_host_level_checkpoint_flushes(tmp_path, level_reference):
    net, caches = train_levels(16, finish=False, storage="disk", path=str(tmp_path / "t"),
                               host_cache_size=20)  # fmt: skip
    assert caches[1].host_cache.dirty.any()  # rows the checkpoint must write to disk first
    cfg = ModelConfig(vocab_size=V, field_size=F, emb_dim=4, deep_layer_dims=[6],
                      vocab_cache_size=16)  # fmt: skip
    save(net, cfg, str(tmp_path / "m.ckpt"))
    assert not caches[1].host_cache.dirty.any()
    plain, _ = load(str(tmp_path / "m.ckpt"), vocab_cache_size=0)
    for p in plain.trainable_params():
        np.testing.assert_array_equal(p.asnumpy(), level_reference[p.name], err_msg=p.name)


def test_host_level_errors(tmp_path):
    with pytest.raises(ValueError, match="'host_cache_size' \\(8\\) needs storage='disk'"):
        CachedEmbeddingLookup(100, 2, vocab_cache_size=4, host_cache_size=8)
    with pytest.raises(ValueError, match="'host_cache_size' expected an int >= 0, got -1"):
        CachedEmbeddingLookup(100, 2, vocab_cache_size=4, storage="disk",
                              path=str(tmp_path), host_cache_size=-1)  # fmt: skip
