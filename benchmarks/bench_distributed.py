"""Data-parallel scaling on this machine: 1 vs 2 ranks, one thread each; multi-copy overlap.

``python benchmarks/bench_distributed.py`` launches itself under ``mpiexec`` (the ``[mpi]``
extra) with OMP/OPENBLAS/MKL/NUMBA threads = 1, for two models:

* ``mlp``: 4 x Dense(1024) + ReLU, 10 classes, softmax cross-entropy;
* ``gpt-ish``: no GPT model exists in the core yet, so a transformer-style MLP stack
  stands in: 6 pre-LayerNorm residual blocks ``x + W2 gelu(W1 LN(x))`` (hidden 384, 4x
  expansion) over ``batch x seq`` tokens -- the FFN half of a GPT block, no attention.

Strong scaling: the global batch is fixed, each of ``n`` ranks trains on ``1/n`` of it
with ``TrainOneStepCell`` + ``Momentum`` under ``DATA_PARALLEL`` (``gradients_mean``).
Reported per model: step time for 1 and 2 ranks, scaling efficiency ``t1 / (n * tn)``,
and the overlap of the bucketed all-reduce with backward, measured by running the same
steps twice on 2 ranks: ``overlap=False`` (every all-reduce after backward: its wait is
the whole communication time ``C``) and ``overlap=True`` (exposed time ``E`` = time in MPI
calls during backward + the final wait). Overlap = ``1 - E / C``.

``micro-batch`` (issue 5, multi-copy parallel): 2 ranks, model parallel over both, two
tensor-parallel GPT blocks (head-parallel attention + column/row-parallel MLP, hidden 256,
8 heads, sequence 64, batch 16) trained with ``TrainOneStepCell`` + ``Momentum`` around
``nn.MicroBatchInterleaved``: ``interleave_num`` 1, then 2 and 4 with the copies one after
the other (``overlap=False``) and taking turns on threads (``overlap=True``); the modes
alternate in rounds. Reported: median step time; ``blocked``, the time the copies spent
inside collective calls (starting them + waiting for them, forward and backward, from the
event log); overlap = ``1 - blocked(turns) / blocked(one after the other)`` for the same
collectives; ``handoff``, the time the turn spent between copies (waking the next copy's
thread).

Measured (2-core machine shared with other jobs, load average 4.6-5.8, 5 runs; step ms,
k=1: 330-350; k=2 one after another 356-376, turns 373-438; k=4 one after another
470-620, turns 425-688): taking turns cuts the time blocked in collectives by 12-60%
(k=2) and 57-78% (k=4), but on this machine that does not pay: the hand-offs cost
50-65 ms (k=2) and 105-170 ms (k=4) per step, ~2 ms each, because every wake-up of a
copy's thread waits for a core held by the other rank (busy-polling in MPI_Wait) or by
other jobs -- an in-process thread ping-pong measures ~13 us a round trip here. With
``mpiexec -bind-to core`` one run gave k=2 331 vs 366 ms and k=4 390 vs 484 ms (turns vs
one after another). Expect the gain where each rank has its own idle core.

``python benchmarks/bench_distributed.py [--only mlp,gpt-ish,micro-batch]``
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
STEPS, WARMUP = 12, 3


def _model(kind, nn, ops):
    if kind == "mlp":
        layers = []
        width = 784
        for _ in range(4):
            layers += [nn.Dense(width, 1024), nn.ReLU()]
            width = 1024
        layers.append(nn.Dense(width, 10))
        return nn.SequentialCell(layers), (256, 784), "ce"

    class Block(nn.Cell):
        def __init__(self, h):
            super().__init__()
            self.ln = nn.LayerNorm((h,))
            self.w1 = nn.Dense(h, 4 * h)
            self.act = nn.GELU()
            self.w2 = nn.Dense(4 * h, h)

        def construct(self, x):
            return x + self.w2(self.act(self.w1(self.ln(x))))

    h = 384
    return nn.SequentialCell([Block(h) for _ in range(6)]), (8 * 64, h), "mse"


def worker(kind: str, out_path: str) -> None:
    import numpy as np

    from sporeling.core import Tensor, nn, ops, set_seed
    from sporeling.core import communication as comm
    from sporeling.core.parallel import set_auto_parallel_context

    comm.init()
    rank, n = comm.get_rank(), comm.get_group_size()
    set_auto_parallel_context(
        parallel_mode="data_parallel" if n > 1 else "stand_alone",
        gradients_mean=True,
        comm_fusion={"allreduce": {"mode": "size", "config": 4}},  # 4 MB buckets
    )
    set_seed(0)
    net, (gb, feat), loss_kind = _model(kind, nn, ops)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean") if loss_kind == "ce" \
        else nn.MSELoss()  # fmt: skip
    step = nn.TrainOneStepCell(
        nn.WithLossCell(net, loss), nn.Momentum(net.trainable_params(), 0.01, 0.9)
    )
    rng = np.random.default_rng(rank)
    b = gb // n
    x = Tensor(rng.standard_normal((b, feat)).astype(np.float32))
    y = Tensor(rng.integers(0, 10, b).astype(np.int32)) if loss_kind == "ce" else Tensor(
        rng.standard_normal((b, feat)).astype(np.float32))  # fmt: skip
    reducer = step.grad_reducer if n > 1 else None
    results = {}
    for overlap in (True, False) if reducer is not None else (None,):
        if reducer is not None:
            reducer.overlap = overlap
        times, exposed, wait = [], [], []
        for i in range(WARMUP + STEPS):
            comm.barrier()
            t0 = time.perf_counter()
            step(x, y)
            dt = time.perf_counter() - t0
            if i >= WARMUP:
                times.append(dt)
                if reducer is not None:
                    exposed.append(reducer.stats["launch_s"] + reducer.stats["wait_s"])
                    wait.append(reducer.stats["wait_s"])
        results[str(overlap)] = {
            "step_s": statistics.median(times),
            "exposed_s": statistics.median(exposed) if exposed else 0.0,
            "wait_s": statistics.median(wait) if wait else 0.0,
            "buckets": reducer.stats["buckets"] if reducer is not None else 0,
            "bytes": reducer.stats["bytes"] if reducer is not None else 0,
        }
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump({"n": n, "global_batch": gb, "results": results}, f)


MB_MODES = ((1, None), (2, False), (2, True), (4, False), (4, True))
MB_ROUNDS, MB_STEPS = 4, 5


def micro_batch_worker(out_path: str) -> None:
    """Tensor-parallel GPT blocks with MicroBatchInterleaved (see the module docstring)."""
    import numpy as np

    from sporeling.core import Tensor, nn, ops, set_seed
    from sporeling.core import communication as comm
    from sporeling.core.parallel.tensor_parallel import (
        ColumnParallelDense,
        ParallelMultiheadAttention,
        RowParallelDense,
    )

    comm.init()
    rank = comm.get_rank()
    h, heads, batch, seq = 256, 8, 16, 64

    class Block(nn.Cell):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm((h,)), nn.LayerNorm((h,))
            self.attn = ParallelMultiheadAttention(h, heads, batch_first=True)
            self.w1 = ColumnParallelDense(h, 4 * h, gather_output=False)
            self.act = nn.GELU()
            self.w2 = RowParallelDense(4 * h, h, input_is_parallel=True)

        def construct(self, x):
            a = self.ln1(x)
            x = x + self.attn(a, a, a, need_weights=False)[0]
            return x + self.w2(self.act(self.w1(self.ln2(x))))

    class Loss(nn.Cell):
        def __init__(self):
            super().__init__()
            self.body = nn.SequentialCell([Block(), Block()])

        def construct(self, x, t):
            d = self.body(x) - t
            return ops.reduce_sum(d * d) * (1.0 / (batch * seq * h))

    set_seed(0)
    net = Loss()
    rng = np.random.default_rng(0)  # the same batch on both ranks (model parallel)
    x = Tensor(rng.standard_normal((batch, seq, h)).astype(np.float32))
    t = Tensor(rng.standard_normal((batch, seq, h)).astype(np.float32))
    steps = {}
    for k, overlap in MB_MODES:
        inter = nn.MicroBatchInterleaved(net, k)
        inter.overlap = overlap
        opt = nn.Momentum(net.trainable_params(), 1e-4, 0.9)
        steps[(k, overlap)] = (inter, nn.TrainOneStepCell(inter, opt))
    times = {m: [] for m in MB_MODES}
    blocked = {m: [] for m in MB_MODES}
    hidden = {m: [] for m in MB_MODES}
    handoff = {m: [] for m in MB_MODES}
    ncoll = {}
    for rnd in range(MB_ROUNDS + 1):  # round 0 warms up
        for mode in MB_MODES:
            inter, step = steps[mode]
            for _ in range(MB_STEPS):
                comm.barrier()
                t0 = time.perf_counter()
                step(x, t)
                dt = time.perf_counter() - t0
                if rnd:
                    times[mode].append(dt)
                    if mode[0] > 1:
                        s = inter.events.summary()
                        blocked[mode].append(s["blocked_s"])
                        hidden[mode].append(s["hidden_s"])
                        handoff[mode].append(s["handoff_s"])
                        ncoll[mode] = s["collectives"]
    rows = []
    for mode in MB_MODES:
        rows.append({
            "interleave_num": mode[0], "overlap": mode[1],
            "step_ms": 1e3 * statistics.median(times[mode]),
            "blocked_ms": 1e3 * statistics.median(blocked[mode]) if blocked[mode] else None,
            "hidden_ms": 1e3 * statistics.median(hidden[mode]) if hidden[mode] else None,
            "handoff_ms": 1e3 * statistics.median(handoff[mode]) if handoff[mode] else None,
            "collectives": ncoll.get(mode, 0),
        })  # fmt: skip
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump({"rows": rows, "load": os.getloadavg()}, f)


def micro_batch_table(result: dict) -> None:
    rows = result["rows"]
    base = rows[0]["step_ms"]
    seq = {r["interleave_num"]: r for r in rows if r["overlap"] is False}
    print(f"micro-batch (2 ranks, tensor parallel; load average at end {result['load'][0]:.2f})")
    head = ("interleave_num", "copies", "step ms", "vs 1", "collectives", "blocked ms",
            "hidden ms", "overlap", "handoff ms")  # fmt: skip
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        k = r["interleave_num"]
        copies = "-" if k == 1 else ("turns" if r["overlap"] else "one after another")
        overlap = "-"
        if r["overlap"] and seq.get(k, {}).get("blocked_ms"):
            overlap = f"{1 - r['blocked_ms'] / seq[k]['blocked_ms']:.0%}"
        blocked = "-" if r["blocked_ms"] is None else f"{r['blocked_ms']:.2f}"
        hidden = "-" if r["hidden_ms"] is None else f"{r['hidden_ms']:.2f}"
        hand = "-" if r["handoff_ms"] is None else f"{r['handoff_ms']:.2f}"
        print(f"| {k} | {copies} | {r['step_ms']:.1f} | {base / r['step_ms']:.2f} | "
              f"{r['collectives']} | {blocked} | {hidden} | {overlap} | {hand} |")  # fmt: skip
    print(json.dumps(rows))


def launch(n: int, kind: str, out: str) -> dict:
    from sporeling.core.communication.launch import mpiexec_command

    env = {**os.environ, **{v: "1" for v in THREADS}}
    cmd = mpiexec_command(n, [__file__, "--worker", kind, out])
    subprocess.run(cmd, env=env, check=True, timeout=900)
    with open(out) as f:
        return json.load(f)


def main(only: list[str]) -> None:
    import tempfile

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        if "micro-batch" in only:
            micro_batch_table(launch(2, "micro-batch", os.path.join(tmp, "mb.json")))
        for kind in [k for k in ("mlp", "gpt-ish") if k in only]:
            one = launch(1, kind, os.path.join(tmp, f"{kind}1.json"))["results"]["None"]
            two = launch(2, kind, os.path.join(tmp, f"{kind}2.json"))["results"]
            t1 = one["step_s"]
            on, off = two["True"], two["False"]
            comm_s = off["wait_s"]  # all-reduce after backward: the full communication time
            overlap = 1.0 - on["exposed_s"] / comm_s if comm_s > 0 else float("nan")
            rows.append({
                "model": kind, "t1_ms": 1e3 * t1, "t2_overlap_ms": 1e3 * on["step_s"],
                "t2_no_overlap_ms": 1e3 * off["step_s"],
                "efficiency": t1 / (2 * on["step_s"]),
                "efficiency_no_overlap": t1 / (2 * off["step_s"]),
                "comm_ms": 1e3 * comm_s, "exposed_ms": 1e3 * on["exposed_s"],
                "overlap": overlap, "buckets": on["buckets"], "mbytes": on["bytes"] / 2**20,
            })  # fmt: skip
    if not rows:
        return
    head = ("model", "1 rank ms", "2 ranks ms", "eff.", "2 ranks no-overlap ms", "eff.",
            "all-reduce ms", "exposed ms", "overlap", "buckets", "MB")  # fmt: skip
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print(
            f"| {r['model']} | {r['t1_ms']:.1f} | {r['t2_overlap_ms']:.1f} | "
            f"{r['efficiency']:.0%} | {r['t2_no_overlap_ms']:.1f} | "
            f"{r['efficiency_no_overlap']:.0%} | {r['comm_ms']:.2f} | {r['exposed_ms']:.2f} | "
            f"{r['overlap']:.0%} | {r['buckets']} | {r['mbytes']:.1f} |"
        )
    print(json.dumps(rows))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        if sys.argv[2] == "micro-batch":
            micro_batch_worker(sys.argv[3])
        else:
            worker(sys.argv[2], sys.argv[3])
    else:
        cases = ("mlp", "gpt-ish", "micro-batch")
        chosen = list(cases)
        if len(sys.argv) > 2 and sys.argv[1] == "--only":
            chosen = sys.argv[2].split(",")
        unknown = sorted(set(chosen) - set(cases))
        if unknown:
            sys.exit(f"bench_distributed: --only expected names from {list(cases)}, got {unknown}")
        main(chosen)
