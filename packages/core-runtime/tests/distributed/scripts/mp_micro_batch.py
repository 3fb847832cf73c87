"""Run under ``mpiexec -n N``: ``nn.MicroBatchInterleaved`` over a tensor-parallel GPT block.

The block (pre-LayerNorm head-parallel attention + column/row-parallel MLP, every
collective a Megatron region) is trained on a fixed batch with a sum loss:

* the interleaved copies (2 and 4, taking turns on threads and one after the other) must
  give the full batch's loss, input gradient and parameter gradients;
* the event log must show the copies interleaving: in the forward and in the backward,
  copy 1 starts computing before copy 0's first collective has completed, and some turns
  start while another copy's collective is in flight -- and neither holds when the copies
  run one after the other (so the check can fail);
* both schedules start the same collectives.

Prints ``OK micro_batch size=N`` on every rank.
"""

from __future__ import annotations

import numpy as np

from sporeling.core import Tensor, nn, ops, set_seed
from sporeling.core.communication import get_group_size, get_rank, init
from sporeling.core.parallel.tensor_parallel import (
    ColumnParallelDense,
    ParallelMultiheadAttention,
    RowParallelDense,
)

RTOL, ATOL = 2e-5, 2e-5
PER_COPY = {"forward": 2, "backward": 4}  # collectives one micro-batch copy makes, per phase


class Block(nn.Cell):
    """``x + attn(ln1(x))``, then ``+ W2 gelu(W1 ln2(x))`` with every matmul sharded."""

    def __init__(self, h: int, heads: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm((h,))
        self.ln2 = nn.LayerNorm((h,))
        self.attn = ParallelMultiheadAttention.from_dense(
            nn.MultiheadAttention(h, heads, batch_first=True)
        )
        self.w1 = ColumnParallelDense.from_dense(nn.Dense(h, 4 * h), gather_output=False)
        self.act = nn.GELU()
        self.w2 = RowParallelDense.from_dense(nn.Dense(4 * h, h), input_is_parallel=True)

    def construct(self, x: Tensor) -> Tensor:
        a = self.ln1(x)
        x = x + self.attn(a, a, a, need_weights=False)[0]
        return x + self.w2(self.act(self.w1(self.ln2(x))))


class SumLoss(nn.Cell):
    """``sum(block(x) * r)``: a sum over the batch, so copies add up to the full batch."""

    def __init__(self, block: nn.Cell) -> None:
        super().__init__()
        self.block = block

    def construct(self, x: Tensor, r: Tensor) -> Tensor:
        return ops.reduce_sum(self.block(x) * r)


def first(events, phase: str, copy: int, kind: str) -> int:
    return next(
        i for i, e in enumerate(events) if e.phase == phase and e.copy == copy and e.kind == kind
    )


def check_events(log, threads: bool, n: int) -> None:
    ev = log.events
    for phase in ("forward", "backward"):
        recs = log.collectives(phase)
        # every copy runs the whole block and makes the same collectives as the block alone:
        # forward, the all-reduces after the two row-parallel matmuls (attention's output
        # projection, w2); backward, four (the same on 2 and 4 ranks, interleave 2 and 4)
        per_copy = {c: [r["name"] for r in recs if r["copy"] == c] for c in range(n)}
        want = ["allreduce"] * PER_COPY[phase]
        assert len(recs) == n * PER_COPY[phase], f"{phase}: collectives {recs}"
        assert per_copy == dict.fromkeys(range(n), want), f"{phase}: collectives {recs}"
        assert all("done" in r for r in recs), f"{phase}: a collective never completed"
        copy1_runs = first(ev, phase, 1, "run")
        copy0_done = first(ev, phase, 0, "done")
        runs = log.summary(phase)["runs_during_flight"]
        if threads:
            assert copy1_runs < copy0_done, (
                f"{phase}: copy 1 started computing (event {copy1_runs}) only after copy 0's "
                f"first collective completed (event {copy0_done})"
            )
            assert runs > 0, f"{phase}: no turn began while another copy's collective flew"
        else:
            assert copy0_done < copy1_runs and runs == 0, f"{phase}: sequential copies overlap?"


def main() -> None:
    init()
    rank, size = get_rank(), get_group_size()
    set_seed(7)
    h, heads = 16, 2 * size
    net = SumLoss(Block(h, heads))
    rng = np.random.default_rng(0)  # the same data on every rank (tensor parallelism)
    x = Tensor(rng.standard_normal((8, 5, h)).astype(np.float32))
    r = Tensor(rng.standard_normal((8, 5, h)).astype(np.float32))
    params = net.trainable_params()
    loss_full, (gx_full, g_full) = ops.value_and_grad(net, 0, params)(x, r)

    counts = {}
    for n in (2, 4):
        for threads in (True, False):
            inter = nn.MicroBatchInterleaved(net, n)
            inter.overlap = threads
            loss, (gx, g) = ops.value_and_grad(inter, 0, params)(x, r)
            what = f"interleave_num={n} threads={threads}"
            np.testing.assert_allclose(
                loss.asnumpy(), loss_full.asnumpy(), RTOL, 1e-4, err_msg=f"{what}: loss"
            )
            np.testing.assert_allclose(
                gx.asnumpy(), gx_full.asnumpy(), RTOL, ATOL, err_msg=f"{what}: input gradient"
            )
            assert len(g) == len(g_full) == len(params)
            for p, a, b in zip(params, g_full, g, strict=True):
                np.testing.assert_allclose(
                    b.asnumpy(), a.asnumpy(), RTOL, ATOL, err_msg=f"{what}: gradient of {p.name}"
                )
            check_events(inter.events, threads, n)
            counts[(n, threads)] = [
                (rec["phase"], rec["copy"], rec["name"]) for rec in inter.events.collectives()
            ]
        assert sorted(counts[(n, True)]) == sorted(counts[(n, False)]), counts
    # the default (overlap=None) takes turns on threads in a world of several processes
    auto = nn.MicroBatchInterleaved(net, 2)
    ops.value_and_grad(auto, 0, params)(x, r)
    assert auto.events.summary("forward")["runs_during_flight"] > 0
    print(f"OK micro_batch rank={rank} size={size}", flush=True)


if __name__ == "__main__":
    main()
