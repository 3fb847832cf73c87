"""Parameter-server Wide&Deep (rank 0 a server, the others workers) against one process.

Usage: ps_train.py STEPS. Each worker trains its slice of every global batch; the server
holds the tables. Every rank also trains the model alone on the global batch and checks
that the parameters (tables gathered from the server) agree.
"""

import sys

import numpy as np

from sporeling.core import Tensor, set_seed
from sporeling.core import communication as comm
from sporeling.recommender.models import WideDeepModel
from sporeling.recommender.ps import ParameterServerTrainer, set_ps_context
from sporeling.recommender.synthetic import SyntheticCriteo
from sporeling.recommender.train import NetWithLossClass, TrainStepWrap

steps = int(sys.argv[1])
comm.init()
rank, n = comm.get_rank(), comm.get_group_size()
set_ps_context(enable_ps=True, server_num=1)
gen = SyntheticCriteo(13 + 26 * 30, alpha=1.1)
local, workers = 8, n - 1
batches = [gen.rows(local * workers, seed=s) for s in range(steps)]


def make():
    set_seed(11)
    return WideDeepModel(gen.vocab_size, 39, 4, (8,), init_sigma=0.2)


trainer = ParameterServerTrainer(make(), adam_lr=1e-2)
if trainer.role == "MS_PSERVER":
    assert trainer.deep.param.shape[0] == gen.vocab_size  # the server holds the whole table
    served = trainer.serve()
    assert served == steps, served
else:
    assert trainer.deep.param.shape[0] == 0  # workers hold no rows
    w = rank - 1
    for ids, vals, y in batches:
        sl = slice(w * local, (w + 1) * local)
        trainer.step(ids[sl], vals[sl], y[sl])
    trainer.finish()
ref = make()
ref_step = TrainStepWrap(NetWithLossClass(ref), adam_lr=1e-2)
for ids, vals, y in batches:
    ref_step(Tensor(ids), Tensor(vals), Tensor(y))
got = trainer.full_parameters()
# Adam scales float32 summation-order differences in a near-zero gradient up to whole
# update steps (seen: 2.1e-6 absolute on an AMD Zen 5); a wrong update moves ~lr (1e-2)
for p in ref.trainable_params():
    np.testing.assert_allclose(got[p.name], p.asnumpy(), rtol=1e-4, atol=1e-5, err_msg=p.name)
print(f"rank {rank} ({trainer.role}): parameter server OK", flush=True)

# the PS cache with several workers: each worker caches 240 of its ~397 rows
from sporeling.recommender.cache import initial_rows  # noqa: E402

trainer = ParameterServerTrainer(make(), vocab_cache_size=240, sigma=0.2, adam_lr=1e-2)
if trainer.role == "MS_PSERVER":
    assert trainer.serve() > 0
else:
    assert trainer.deep.param.shape[0] == 240  # the cache, not the table
    w = rank - 1
    for ids, vals, y in batches:
        sl = slice(w * local, (w + 1) * local)
        loss = trainer.step(ids[sl], vals[sl], y[sl])
    stats = trainer.deep.cache.stats
    assert stats.write_backs > 0 and 0 < stats.hits < stats.lookups, stats
    got = trainer.full_parameters()
    trainer.finish()
    ref = make()
    for name in ref.table_names:  # the servers' initial rows
        table = getattr(ref, name).embedding_table
        table.set_data(Tensor(initial_rows(np.arange(gen.vocab_size), table.shape[1], 0.2)))
    ref_step = TrainStepWrap(NetWithLossClass(ref), adam_lr=1e-2)
    for ids, vals, y in batches:
        ref_loss, _ = ref_step(Tensor(ids), Tensor(vals), Tensor(y))
    assert abs(loss - float(ref_loss.asnumpy())) < 1e-6, (loss, float(ref_loss.asnumpy()))
    for p in ref.trainable_params():
        np.testing.assert_allclose(got[p.name], p.asnumpy(), rtol=1e-4, atol=1e-5, err_msg=p.name)
print(f"rank {rank} ({trainer.role}): parameter-server cache, {workers} workers OK", flush=True)

# the same with prefetch threads: each worker's next rows pulled from the server while the
# step computes give bit-identical parameters
trainer = ParameterServerTrainer(make(), vocab_cache_size=240, sigma=0.2, adam_lr=1e-2,
                                 prefetch=True)  # fmt: skip
if trainer.role == "MS_PSERVER":
    assert trainer.serve() > 0
else:
    w = rank - 1
    sl = slice(w * local, (w + 1) * local)
    for k, (ids, vals, y) in enumerate(batches):
        nxt = batches[k + 1][0][sl] if k + 1 < len(batches) else None
        trainer.step(ids[sl], vals[sl], y[sl], next_ids=nxt)
    stats = trainer.deep.cache.stats
    assert stats.prefetched > 0 and stats.write_backs > 0, stats
    pre = trainer.full_parameters()
    trainer.finish()
    for name, value in got.items():
        np.testing.assert_array_equal(pre[name], value, err_msg=name)
print(f"rank {rank} ({trainer.role}): parameter-server cache prefetch, {workers} workers OK",
      flush=True)  # fmt: skip
