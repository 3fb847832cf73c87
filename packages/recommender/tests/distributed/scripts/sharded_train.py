"""Sharded Wide&Deep over the ranks against one process on the global batch.

Usage: sharded_train.py STEPS MODE[:MODEL][@CACHE[+p]] [...] (MODEL: wide_deep (default),
deepfm, dcn_v2; CACHE: rows of an embedding cache in front of each rank's part of a table;
+p: the caches prefetch each next batch; +h: each part on disk behind a 60-row host-memory
level of 8 rows; +ph: both).
For each mode, every rank trains its slice of
each global batch with the tables sharded by MODE; every rank also trains the same model
alone on the whole global batch (TrainStepWrap) and checks that all parameters agree.
"""

import sys

import numpy as np

from sporeling.core import Tensor, set_seed
from sporeling.core import communication as comm
from sporeling.recommender.models import DCNv2Model, DeepFMModel, WideDeepModel
from sporeling.recommender.sharding import ShardedTrainer
from sporeling.recommender.synthetic import SyntheticCriteo
from sporeling.recommender.train import NetWithLossClass, TrainStepWrap

steps, modes = int(sys.argv[1]), sys.argv[2:]
comm.init()
rank, n = comm.get_rank(), comm.get_group_size()
gen = SyntheticCriteo(13 + 26 * 30, alpha=1.1)
local = 8
batches = [gen.rows(local * n, seed=s) for s in range(steps)]
for ids, _, _ in batches:
    ids[0, -1] = gen.vocab_size + 5  # an out-of-range id: a zero row, no gradient
# a batch whose ids all lie in the first rows: the other ranks' row shards get no gradient
ids = batches[1][0]
ids[:, 13:] = 13 + (ids[:, 13:] - 13) % 300


MODELS = {"wide_deep": WideDeepModel, "deepfm": DeepFMModel, "dcn_v2": DCNv2Model}


def make(model):
    set_seed(11)
    return MODELS[model](gen.vocab_size, 39, 4, (8,), init_sigma=0.2)


for spec in modes:
    spec_model, _, cache = spec.partition("@")
    cache, _, flag = cache.partition("+")  # "+p": the caches prefetch the next batch
    prefetch = "p" in flag
    levels = {}  # "+h": the part on disk behind a host-memory level of 8 rows
    if "h" in flag:
        import tempfile

        levels = {"storage": "disk", "path": tempfile.mkdtemp(), "host_cache_size": 8}
    mode, _, model = spec_model.partition(":")
    model = model or "wide_deep"
    shapes = None
    if mode == "field_slice":  # rank 0: the dense ids and the first 13 fields, rank 1 the rest
        cut = 13 + gen.per_field * 13
        shapes = (cut, gen.vocab_size - cut) if n == 2 else None
    trainer = ShardedTrainer(make(model), mode, manual_shapes=shapes, adam_lr=1e-2,
                             vocab_cache_size=int(cache or 0), prefetch=prefetch,
                             **levels)  # fmt: skip
    if mode in ("table_row_slice", "field_slice"):
        assert trainer.deep.param.shape[0] < gen.vocab_size  # really sharded
    if mode == "table_column_slice":
        assert trainer.deep.param.shape[1] < 4
    ref = make(model)
    ref_step = TrainStepWrap(NetWithLossClass(ref), adam_lr=1e-2)
    for k, (ids, vals, y) in enumerate(batches):
        sl = slice(rank * local, (rank + 1) * local)
        nxt = batches[k + 1][0][sl] if prefetch and k + 1 < len(batches) else None
        loss = trainer.step(ids[sl], vals[sl], y[sl], next_ids=nxt)
        ref_loss, _ = ref_step(Tensor(ids), Tensor(vals), Tensor(y))
        assert abs(loss - float(ref_loss.asnumpy())) < 1e-6, (loss, float(ref_loss.asnumpy()))
    if cache:  # rows were evicted (written back) during training, not only at the end
        stats = trainer.deep.cache.stats
        assert trainer.deep.param.shape[0] == int(cache) and stats.write_backs > 0, stats
        assert 0 < stats.hits < stats.lookups, stats
        assert (stats.prefetched > 0) == prefetch, stats
        if levels:  # the cache's misses were read through the host level
            assert stats.host_lookups >= stats.loaded - stats.prefetched > 0, stats
            assert stats.disk_reads > 0, stats
    got = trainer.full_parameters()
    if levels:  # the host level wrote rows to disk (evictions and the flush)
        assert trainer.deep.cache.stats.disk_write_backs > 0, trainer.deep.cache.stats
    # Adam scales float32 summation-order differences in a near-zero gradient up to whole
    # update steps: on an AMD Zen 5 one of DCN v2's 24,336 cross weights ended 2.5e-5
    # relative off (1.9e-6 absolute). A sharding error moves weights by ~lr (1e-2).
    for p in ref.trainable_params():
        np.testing.assert_allclose(got[p.name], p.asnumpy(), rtol=1e-4, atol=1e-5, err_msg=p.name)
    print(f"rank {rank}: sharded {spec} OK", flush=True)

# the embedding cache in front of a parameter server: rank 0 serves, rank 1 trains
if n == 2:
    import tempfile

    from sporeling.recommender.cache import cached_lookups
    from sporeling.recommender.ps_cache import (
        EmbeddingServer,
        server_tables,
        stop_servers,
        use_parameter_servers,
    )

    def cached(path):
        set_seed(11)
        return WideDeepModel(gen.vocab_size, 39, 4, (8,), init_sigma=0.2, vocab_cache_size=200,
                             storage="disk", path=path)  # fmt: skip

    tmp = tempfile.mkdtemp()
    net = cached(f"{tmp}/ps{rank}")
    if rank == 0:
        served = EmbeddingServer(server_tables(net), [0], worker=1, sigma=0.2).serve()
        assert served > 0
    else:
        use_parameter_servers(net, [0], vocab_cache_size=200, prefetch=False)
        step = TrainStepWrap(NetWithLossClass(net), adam_lr=1e-2)
        ref = cached(f"{tmp}/ref")  # the same cache over a local disk level
        ref_step = TrainStepWrap(NetWithLossClass(ref), adam_lr=1e-2)
        for ids, vals, y in batches:
            sl = slice(0, local)  # small batches: the 200-row cache must hold one
            step(Tensor(ids[sl]), Tensor(vals[sl]), Tensor(y[sl]))
            ref_step(Tensor(ids[sl]), Tensor(vals[sl]), Tensor(y[sl]))
        got = {id(c.embedding_table): c.full_table() for c in cached_lookups(net)}
        want = {id(c.embedding_table): c.full_table() for c in cached_lookups(ref)}
        stats = cached_lookups(net)[1].stats
        assert stats.write_backs > 0 and stats.hits > 0
        stop_servers([0])
        for (a, p), (b, q) in zip(
            ((got.get(id(p)), p) for p in net.trainable_params()),
            ((want.get(id(q)), q) for q in ref.trainable_params()),
        ):
            np.testing.assert_array_equal(
                a if a is not None else p.asnumpy(), b if b is not None else q.asnumpy(), p.name
            )
    print(f"rank {rank}: parameter-server cache OK", flush=True)

    # the same with the prefetch thread: each batch's rows pulled while the previous step
    # computes give the same parameters as pulling them on the training thread
    pre = cached(f"{tmp}/pre{rank}")
    if rank == 0:
        assert EmbeddingServer(server_tables(pre), [0], worker=1, sigma=0.2).serve() > 0
    else:
        use_parameter_servers(pre, [0], vocab_cache_size=200, prefetch=True)
        step = TrainStepWrap(NetWithLossClass(pre), adam_lr=1e-2)
        small = [(ids[:local], vals[:local], y[:local]) for ids, vals, y in batches]
        for k, (ids, vals, y) in enumerate(small):
            for c in cached_lookups(pre):
                c.prepare(ids)
                if k + 1 < len(small):
                    c.prefetch(small[k + 1][0])
            step(Tensor(ids), Tensor(vals), Tensor(y))
        stats = cached_lookups(pre)[1].stats
        assert stats.prefetched > 0 and stats.write_backs > 0, stats
        tables = {id(c.embedding_table): c.full_table() for c in cached_lookups(pre)}
        stop_servers([0])
        for p, q in zip(pre.trainable_params(), net.trainable_params(), strict=True):
            a = tables.get(id(p), p.asnumpy())
            b = got.get(id(q), q.asnumpy())
            np.testing.assert_array_equal(a, b, p.name)
    print(f"rank {rank}: parameter-server cache prefetch OK", flush=True)
