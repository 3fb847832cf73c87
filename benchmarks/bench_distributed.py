"""Data-parallel scaling on this machine: 1 vs 2 ranks, one thread each.

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


def launch(n: int, kind: str, out: str) -> dict:
    from sporeling.core.communication.launch import mpiexec_command

    env = {**os.environ, **{v: "1" for v in THREADS}}
    cmd = mpiexec_command(n, [__file__, "--worker", kind, out])
    subprocess.run(cmd, env=env, check=True, timeout=900)
    with open(out) as f:
        return json.load(f)


def main() -> None:
    import tempfile

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("mlp", "gpt-ish"):
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
        worker(sys.argv[2], sys.argv[3])
    else:
        main()
