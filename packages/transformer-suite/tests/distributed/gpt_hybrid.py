"""Under ``mpiexec -n 4``: dp=2 x mp=2 (two tensor-parallel pairs, gradients averaged across
them) gives the single-process run's parameters (global batch 8, 3 AdamW steps, float64); so
does dp=2 x mp=2 + optimizer_shard (AdamW moments sliced over the dp group), without and with
global-norm clipping (engaged); and runner.train of gpt_tiny in that layout logs one process's
per-step losses (same batches in the same order)."""

from pathlib import Path

import numpy as np

from sporeling.core import Tensor, nn, set_seed
from sporeling.core.parallel import reset_auto_parallel_context, set_auto_parallel_context
from sporeling.transformer.models.gpt import GPT, GPTConfig, GPTWithLoss
from sporeling.transformer.parallel import (
    ParallelInfo,
    apply_parallel,
    data_parallel_reducer,
    full_state,
    shard_model,
    train_step,
)

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


def run(rows, info=None, clip=None):
    """``clip`` None: the plain step (+ the dp reducer); a number: the runner's train_step."""
    set_seed(5)
    net = GPT(GPTConfig(**CFG))
    if info is not None:
        shard_model(net, info.mp_group)
    opt = nn.AdamW(net.trainable_params(), learning_rate=1e-2, weight_decay=0.1)
    if clip is not None:
        step = train_step(GPTWithLoss(net), opt, clip, info or ParallelInfo(1, 1))
    else:
        step = nn.TrainOneStepCell(GPTWithLoss(net), opt)
        if info is not None:
            data_parallel_reducer(step, info)
    for s in range(STEPS):
        step(Tensor(data[s][rows]))
    return net, opt


CLIP = 0.05  # engaged at every step here
ref = {n: p.asnumpy().copy() for n, p in run(slice(None))[0].parameters_and_names()}
ref_clip = {n: p.asnumpy().copy() for n, p in run(slice(None), clip=CLIP)[0].parameters_and_names()}
info = apply_parallel({"parallel_config": {"data_parallel": 2, "model_parallel": 2}})
half = slice(info.dp_rank * BATCH // 2, (info.dp_rank + 1) * BATCH // 2)
net, _ = run(half, info)
state = full_state(net)
for n, full in ref.items():
    # 1.8's loss adds 1e-5 to each half's token count (see gpt_parallel.py)
    np.testing.assert_allclose(state[n], full, rtol=0, atol=1e-7, err_msg=f"dp x mp: {n}")
print(f"rank {info.rank} dpxmp: parameters equal the single-process run")

reset_auto_parallel_context()
info = apply_parallel(
    {"parallel_config": {"data_parallel": 2, "model_parallel": 2, "optimizer_shard": True}}
)
set_auto_parallel_context(parallel_optimizer_config={"parallel_optimizer_threshold": 0})
for clip, want, name in (
    (0.0, ref, "dpxmp optimizer_shard"),
    (CLIP, ref_clip, "dpxmp optimizer_shard clip"),
):
    net, opt = run(half, info, clip=clip)
    sliced = [q for q in opt.get_parameters() if getattr(q, "shard_layout", None)]
    assert sliced, f"{name}: the optimizer state is not sliced"
    state = full_state(net)
    for n, full in want.items():
        np.testing.assert_allclose(state[n], full, rtol=0, atol=1e-7, err_msg=f"{name}: {n}")
    print(f"rank {info.rank} {name}: parameters equal the single-process run")

# runner.train end to end: every rank of dp=2 x mp=2 + optimizer_shard trains on its share
# of the batches one process draws, so the per-step losses (float32, clipping at 1.0) follow
# the single-process run's
import tempfile  # noqa: E402

from sporeling.core import communication as comm  # noqa: E402
from sporeling.transformer.runner import train as run_train  # noqa: E402
from sporeling.transformer.settings import load_config  # noqa: E402

tmp = Path(tempfile.mkdtemp())


def tiny(tag, *extra):
    reset_auto_parallel_context()
    over = [f"output_dir={tmp / tag}", "train.max_iters=4", "train.eval_interval=2",
            "train.batch_size=8", *extra]  # fmt: skip
    return run_train(load_config("gpt_tiny", over), log=lambda *_: None)["step_losses"]


one = tiny(f"single{info.rank}")
par = tiny(
    "dpxmp",
    "parallel_config.data_parallel=2",
    "parallel_config.model_parallel=2",
    "parallel_config.optimizer_shard=true",
)
comm.barrier()
assert len(one) == len(par) == 4, (one, par)
np.testing.assert_allclose(par, one, rtol=0, atol=2e-6, err_msg="runner dp x mp losses")
print(f"rank {info.rank} dpxmp runner: step losses {par} equal one process's {one}")
