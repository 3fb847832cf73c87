"""Under ``mpiexec -n 4``: dp=2 x mp=2 (two tensor-parallel pairs, gradients averaged across
them) gives the single-process run's parameters (global batch 8, 3 AdamW steps, float64)."""

import numpy as np

from sporeling.core import Tensor, nn, set_seed
from sporeling.transformer.models.gpt import GPT, GPTConfig, GPTWithLoss
from sporeling.transformer.parallel import (
    apply_parallel,
    data_parallel_reducer,
    full_state,
    shard_model,
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


def run(rows, info=None):
    set_seed(5)
    net = GPT(GPTConfig(**CFG))
    if info is not None:
        shard_model(net, info.mp_group)
    opt = nn.AdamW(net.trainable_params(), learning_rate=1e-2, weight_decay=0.1)
    step = nn.TrainOneStepCell(GPTWithLoss(net), opt)
    if info is not None:
        data_parallel_reducer(step, info)
    for s in range(STEPS):
        step(Tensor(data[s][rows]))
    return net


ref = {n: p.asnumpy().copy() for n, p in run(slice(None)).parameters_and_names()}
info = apply_parallel({"parallel_config": {"data_parallel": 2, "model_parallel": 2}})
half = slice(info.dp_rank * BATCH // 2, (info.dp_rank + 1) * BATCH // 2)
net = run(half, info)
state = full_state(net)
for n, full in ref.items():
    # 1.8's loss adds 1e-5 to each half's token count (see gpt_parallel.py)
    np.testing.assert_allclose(state[n], full, rtol=0, atol=1e-7, err_msg=f"dp x mp: {n}")
print(f"rank {info.rank} dpxmp: parameters equal the single-process run")
