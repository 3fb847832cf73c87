"""Under ``mpiexec -n 2``: the tiny GPT trained with dp=2, dp=2 + optimizer_shard and mp=2
gives the single-process run's losses and parameters (global batch 8, 3 AdamW steps), and so
do mp=2 and dp=2 + optimizer_shard (its state sliced) with global-norm clipping engaged."""

import numpy as np
from _shards import expected_shard

from sporeling.core import Tensor, nn, set_seed
from sporeling.core import communication as comm
from sporeling.core.parallel import reset_auto_parallel_context, set_auto_parallel_context
from sporeling.transformer.models.gpt import GPT, GPTConfig, GPTWithLoss
from sporeling.transformer.parallel import ParallelInfo, apply_parallel, shard_model, train_step

STEPS, BATCH = 3, 8
CFG = dict(
    seq_length=8,
    vocab_size=20,
    embedding_size=16,
    num_layers=2,
    num_heads=4,
    dropout_rate=0.0,
    compute_dtype="float64",
    layernorm_dtype="float64",
    softmax_dtype="float64",
    param_init_type="float64",
)
data = np.random.default_rng(0).integers(0, 20, (STEPS, BATCH, 9)).astype(np.int32)


def run(rows=slice(None), mp=False, clip=0.0, info=None):
    set_seed(5)
    net = GPT(GPTConfig(**CFG))
    if mp:
        shard_model(net)
    opt = nn.AdamW(net.trainable_params(), learning_rate=1e-2, weight_decay=0.1)
    if clip:  # the runner's step: clips by the whole model's global norm in every layout
        step = train_step(GPTWithLoss(net), opt, clip, info or ParallelInfo(1, 1))
    else:
        step = nn.TrainOneStepCell(GPTWithLoss(net), opt)
    losses = [float(step(Tensor(data[s][rows])).asnumpy()) for s in range(STEPS)]
    return losses, {n: p.asnumpy().copy() for n, p in net.parameters_and_names()}, net, opt


CLIP = 0.05  # below every step's gradient norm here: the clip is engaged at each step
ref_losses, ref_params, _, _ = run()
clip_losses, clip_params, _, _ = run(clip=CLIP)
assert not np.allclose(clip_losses, ref_losses, rtol=1e-4)


def same_params(params, ref, rank, what, atol):
    for n, p in params.items():
        full = expected_shard(ref[n], p.shape, rank)  # a tensor-parallel shard: its slice
        np.testing.assert_allclose(p, full, rtol=0, atol=atol, err_msg=f"{what}: {n}")


for name, pc in [
    ("dp", {"data_parallel": 2}),
    ("dp+optimizer_shard", {"data_parallel": 2, "optimizer_shard": True}),
]:
    reset_auto_parallel_context()
    info = apply_parallel({"parallel_config": pc})
    rank = info.rank
    half = slice(rank * BATCH // 2, (rank + 1) * BATCH // 2)
    losses, params, _, _ = run(half)
    # each rank's loss is its half's; their mean is the global-batch loss
    both = comm.all_gather(Tensor(np.array(losses))).asnumpy().reshape(2, -1)
    # 1.8's loss divides by (token count + 1e-5): halves of 32 tokens differ from the 64-token
    # mean by ~1.6e-7 relative, hence rtol 1e-6 rather than float64 round-off
    np.testing.assert_allclose(both.mean(0), ref_losses, rtol=1e-6, err_msg=name)
    for n, p in params.items():
        np.testing.assert_allclose(p, ref_params[n], rtol=0, atol=1e-7, err_msg=f"{name}: {n}")
    print(f"rank {rank} {name}: parameters equal the single-process run")

reset_auto_parallel_context()
info = apply_parallel({"parallel_config": {"data_parallel": 2, "optimizer_shard": True}})
set_auto_parallel_context(parallel_optimizer_config={"parallel_optimizer_threshold": 0})
half = slice(info.rank * BATCH // 2, (info.rank + 1) * BATCH // 2)
losses, params, _, opt = run(half, clip=CLIP, info=info)
sliced = [n for n, p in opt.parameters_and_names() if getattr(p, "shard_layout", None)]
assert sliced, "the optimizer state is not sliced"
both = comm.all_gather(Tensor(np.array(losses))).asnumpy().reshape(2, -1)
np.testing.assert_allclose(both.mean(0), clip_losses, rtol=1e-6)
same_params(params, clip_params, info.rank, "dp+optimizer_shard+clip", 1e-7)
print(f"rank {info.rank} dp+optimizer_shard+clip: parameters equal the single-process run")

reset_auto_parallel_context()
info = apply_parallel({"parallel_config": {"model_parallel": 2}})
losses, params, _, _ = run(mp=True, clip=CLIP, info=info)
np.testing.assert_allclose(losses, clip_losses, rtol=1e-10)
same_params(params, clip_params, info.rank, "mp+clip", 1e-9)
print(f"rank {info.rank} mp+clip: losses {losses} equal the single-process run")

losses, params, net, _ = run(mp=True)
np.testing.assert_allclose(losses, ref_losses, rtol=1e-10)
same_params(params, ref_params, info.rank, "mp", 1e-9)
print(f"rank {info.rank} mp: losses {losses} equal the single-process run {ref_losses}")

# resharding: the gathered (unsharded) state is the single-process model; loaded into a fresh
# mp=2 model it gives back this rank's shards, and into an unsharded model the full parameters
from sporeling.transformer.parallel import full_state, load_full_state  # noqa: E402

state = full_state(net)
for n, full in ref_params.items():
    np.testing.assert_allclose(state[n], full, rtol=0, atol=1e-9, err_msg=f"full_state: {n}")
set_seed(99)
fresh = shard_model(GPT(GPTConfig(**CFG)))
load_full_state(fresh, state)
for (n, a), (_, b) in zip(fresh.parameters_and_names(), net.parameters_and_names()):
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy(), err_msg=f"load_full_state: {n}")
print(f"rank {info.rank} reshard: gathered state equals the single-process parameters")
