"""SEMI_AUTO_PARALLEL / AUTO_PARALLEL without shard strategies train data parallel.

Usage: semi_auto_train.py MODE (semi | auto) STEPS. Each rank feeds its own slice of the
global batch to a hand-written MindSpore-style train step (GradOperation-like ``grad`` with
weights, no gradient reducer) and to ``nn.TrainOneStepCell``; the weights must stay equal on
every rank and equal a one-process run on the global batch (they drifted apart before).
Also: GRAPH_MODE, full_batch=True (no reduction: identical data) and the refused search_mode.
"""

import sys
import warnings

import numpy as np

from sporeling.core import GRAPH_MODE, PYNATIVE_MODE, Tensor, nn, ops, set_context, set_seed
from sporeling.core import communication as comm
from sporeling.core.parallel import (
    ParallelMode,
    reset_auto_parallel_context,
    set_auto_parallel_context,
)

mode_name, steps = sys.argv[1], int(sys.argv[2])
comm.init()
rank, n = comm.get_rank(), comm.get_group_size()
local = 4
rng = np.random.default_rng(1)
x = rng.standard_normal((local * n * steps, 6)).astype(np.float32)
y = rng.standard_normal((local * n * steps, 2)).astype(np.float32)


def make():
    set_seed(3)
    return nn.SequentialCell(nn.Dense(6, 16), nn.Tanh(), nn.Dense(16, 2))


class HandWrittenStep(nn.Cell):
    """MindSpore model-zoo style: forward, grad by weights, optimizer; no reducer."""

    def __init__(self, net, opt):
        super().__init__(auto_prefix=False)
        self.net = nn.WithLossCell(net, nn.MSELoss())
        self.opt = opt
        self.weights = opt.parameters
        self.grad = ops.value_and_grad(self.net, None, self.weights)

    def construct(self, a, b):
        loss, grads = self.grad(a, b)
        self.opt(grads)
        return loss


def weights(net):
    return [p.asnumpy().copy() for p in net.trainable_params()]


def train(step_cls, rows_of, graph=False):
    net = make()
    opt = nn.SGD(net.trainable_params(), 0.1)
    step = (
        step_cls(net, opt)
        if step_cls is HandWrittenStep
        else step_cls(nn.WithLossCell(net, nn.MSELoss()), opt)
    )
    if graph:
        set_context(mode=GRAPH_MODE)
    try:
        for s in range(steps):
            r = rows_of(s)
            step(Tensor(x[r]), Tensor(y[r]))
    finally:
        set_context(mode=PYNATIVE_MODE)
    return weights(net)


def global_rows(s):
    return slice(s * local * n, (s + 1) * local * n)


def my_rows(s):
    start = s * local * n + rank * local
    return slice(start, start + local)


def agree(ws, ref, what):
    for a, b in zip(ws, ref, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=2e-6, err_msg=what)


reset_auto_parallel_context()
ref = train(nn.TrainOneStepCell, global_rows)

mode = ParallelMode.SEMI_AUTO_PARALLEL if mode_name == "semi" else ParallelMode.AUTO_PARALLEL
set_auto_parallel_context(parallel_mode=mode)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    agree(train(HandWrittenStep, my_rows), ref, "hand-written step")
    agree(train(nn.TrainOneStepCell, my_rows), ref, "TrainOneStepCell")
    agree(train(HandWrittenStep, my_rows, graph=True), ref, "hand-written step, GRAPH_MODE")
    # the parallel optimizer (sharded update) on top: still the global-batch result
    set_auto_parallel_context(
        enable_parallel_optimizer=True,
        parallel_optimizer_config={"parallel_optimizer_threshold": 0},
    )
    agree(train(HandWrittenStep, my_rows), ref, "hand-written step, parallel optimizer")
    set_auto_parallel_context(enable_parallel_optimizer=False)
auto_warned = any("no strategy search" in str(w.message) for w in caught)
assert auto_warned == (mode_name == "auto" and n > 1), [str(w.message) for w in caught]

# a shard strategy on per-rank batches would mix them silently: refused
if n > 1:
    from sporeling.core.parallel import shard as S

    try:
        S.MatMul().shard(((n, 1), (1, 1)))(Tensor(x[:4]), Tensor(np.ones((6, 2), np.float32)))
        raise AssertionError("a sharded op ran on per-rank batches")
    except ValueError as exc:
        assert "full_batch=True" in str(exc), exc

# full_batch: every rank holds the global batch; nothing to reduce, same result
set_auto_parallel_context(full_batch=True)
agree(train(HandWrittenStep, global_rows), ref, "full_batch")

try:
    set_auto_parallel_context(search_mode="sharding_propagation")
    raise AssertionError("search_mode was accepted")
except ValueError as exc:
    assert "no strategy search" in str(exc), exc
print(f"semi-auto OK rank {rank} of {n}", flush=True)
