"""Data-parallel and optimizer-parallel training against one process on the global batch.

Usage: dp_train.py STEPS OPTIMIZER (sgd | momentum | adam | adamw). Every rank trains on its
shard (ArrayDataset num_shards/shard_id) of the same data; every rank also trains a
reference on the full global batch alone, and checks the parameters agree within 1e-6. The
same under GRAPH_MODE (the compiled step all-reduces each bucket as a graph op).
"""

import sys

import numpy as np

from sporeling.core import GRAPH_MODE, PYNATIVE_MODE, Model, Tensor, nn, set_context, set_seed
from sporeling.core import communication as comm
from sporeling.core.parallel import (
    ParallelMode,
    reset_auto_parallel_context,
    set_auto_parallel_context,
)
from sporeling.core.train.dataset import ArrayDataset

steps, opt_name = int(sys.argv[1]), sys.argv[2]
comm.init()
rank, n = comm.get_rank(), comm.get_group_size()
local_batch = 4
rng = np.random.default_rng(1)
x = rng.standard_normal((local_batch * n * steps, 12)).astype(np.float32)
y = rng.standard_normal((local_batch * n * steps, 3)).astype(np.float32)


def make():
    set_seed(7)
    net = nn.SequentialCell(
        nn.Dense(12, 32), nn.ReLU(), nn.Dense(32, 32), nn.Tanh(), nn.Dense(32, 3)
    )
    params = net.trainable_params()
    opt = {
        "sgd": lambda: nn.SGD(params, 0.05),
        "momentum": lambda: nn.Momentum(params, 0.05, 0.9),
        "adam": lambda: nn.Adam(params, 1e-2),
        "adamw": lambda: nn.AdamW(params, 1e-2),
    }[opt_name]()
    return net, opt


def params_of(net):
    return [p.asnumpy().copy() for p in net.trainable_params()]


# reference: one process, global batch
reset_auto_parallel_context()
ref_net, ref_opt = make()
ref_step = nn.TrainOneStepCell(nn.WithLossCell(ref_net, nn.MSELoss()), ref_opt)
for s in range(steps):
    rows = slice(s * local_batch * n, (s + 1) * local_batch * n)
    ref_step(Tensor(x[rows]), Tensor(y[rows]))
ref = params_of(ref_net)

# data parallel through Model and a sharded dataset
set_auto_parallel_context(
    parallel_mode=ParallelMode.DATA_PARALLEL,
    gradients_mean=True,
    comm_fusion={"allreduce": {"mode": "size", "config": 0.002}},  # several buckets
)
net, opt = make()
model = Model(net, nn.MSELoss(), opt)
ds = ArrayDataset(x, y, batch_size=local_batch, num_shards=n, shard_id=rank)
model.train(1, ds, dataset_sink_mode=False)
dp = params_of(net)
reducer = model.train_network.grad_reducer if n > 1 else None
for a, b in zip(dp, ref):
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)
if reducer is not None:
    st = reducer.stats
    assert st["buckets"] > 1, st
    assert st["overlapped_buckets"] >= 1, st  # started during backward

# GRAPH_MODE: the compiled step reduces the buckets as graph ops; same parameters
net_g, opt_g = make()
step_g = nn.TrainOneStepCell(nn.WithLossCell(net_g, nn.MSELoss()), opt_g)
set_context(mode=GRAPH_MODE)
try:
    for s in range(steps):
        rows = slice(s * local_batch * n, (s + 1) * local_batch * n)
        step_g(Tensor(x[rows][rank::n]), Tensor(y[rows][rank::n]))
finally:
    set_context(mode=PYNATIVE_MODE)
assert not getattr(step_g, "_graph_fallback", False)  # compiled, not run eagerly
for a, b in zip(params_of(net_g), dp):
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)

# optimizer parallel: the same training with sharded optimizer state
set_auto_parallel_context(
    enable_parallel_optimizer=True, parallel_optimizer_config={"parallel_optimizer_threshold": 0}
)
net2, opt2 = make()
assert opt2.use_parallel
step2 = nn.TrainOneStepCell(nn.WithLossCell(net2, nn.MSELoss()), opt2)
for s in range(steps):
    rows = slice(s * local_batch * n, (s + 1) * local_batch * n)
    lx, ly = x[rows][rank::n], y[rows][rank::n]
    step2(Tensor(lx), Tensor(ly))
for a, b in zip(params_of(net2), dp):
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)
if n > 1:
    state = [p for p in opt2.get_parameters() if getattr(p, "shard_layout", None) is not None]
    total = sum(int(np.prod(p.shard_layout[3])) for p in state)
    held = sum(p.size for p in state)
    assert held * n <= total + n * len(state), (held, total)  # only this rank's slice
reset_auto_parallel_context()
print(f"training OK rank {rank} of {n} ({opt_name}, {steps} steps)", flush=True)
