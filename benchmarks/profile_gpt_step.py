"""Where a GPT graph step's time goes: per compiled equation, beside PyTorch's per-op times.

The model is ``bench_graph.py``'s GPT decoder step (the same weights and batch on both
sides). Both run on ``--threads`` threads (NumPy's BLAS, Numba, PyTorch; default 1) and are
timed with the calling thread's CPU clock, so that other processes on a shared machine
inflate the numbers less than wall time would (memory bandwidth they still share). With more
than one thread the clock is wall time (``perf_counter``): only meaningful on an idle machine.

    python benchmarks/profile_gpt_step.py [--steps 3] [--threads 1] [--torch]

Prints, per step: each (primitive, output shape) group of the compiled step with its CPU
time and call count, the time per primitive family, the step's total; with ``--torch`` also
``torch.profiler``'s per-op table for PyTorch's step (its self times are wall times, with
the profiler's overhead: use its proportions). Unset OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE
for the run, as ``nox -s bench`` does.
"""

from __future__ import annotations

import argparse
import collections
import time
from typing import Any

import numpy as np


def _timed_executable(records: dict[Any, list[float]], clock: Any) -> None:
    """Make every graph compiled from now on time its equations into ``records``."""
    from sporeling.core.compiler import executor

    original = executor.Executable.__init__

    def init(self: Any, graph: Any) -> None:
        original(self, graph)
        steps = []
        for step, eqn in zip(self.steps, graph.eqns, strict=True):
            name = eqn.prim.name
            if name == "fused":
                name = f"fused[{','.join(e.prim.name for e in eqn.params.get('eqns') or ())}]"
            key = (name, tuple(eqn.outputs[0].shape) if eqn.outputs else ())

            def timed(*args: Any, _impl: Any = step[0], _key: Any = key, **kw: Any) -> Any:
                t0 = clock()
                out = _impl(*args, **kw)
                records[_key].append(clock() - t0)
                return out

            steps.append((timed, *step[1:]))
        self.steps = steps

    executor.Executable.__init__ = init  # type: ignore[method-assign]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--torch", action="store_true", help="also profile PyTorch's step")
    args = ap.parse_args()

    import bench_graph as bg
    import numba
    from common import Context
    from threadpoolctl import threadpool_limits

    ctx = Context("CPU", quick=True)
    torch = ctx.torch
    torch.set_num_threads(args.threads)
    threadpool_limits(args.threads)
    numba.set_num_threads(args.threads)
    clock = time.thread_time if args.threads == 1 else time.perf_counter
    records: dict[Any, list[float]] = collections.defaultdict(list)
    _timed_executable(records, clock)

    rng = ctx.rng(5)
    tokens = rng.integers(0, bg.VOCAB, (bg.BATCH, bg.SEQ + 1))
    x, y = tokens[:, :-1], tokens[:, 1:].reshape(-1)
    sx, sy = ctx.sp(x.astype(np.int32)), ctx.sp(y.astype(np.int32))
    step, th_net, th_opt = bg._gpt_pair(ctx, graph=True)
    step(sx, sy)
    step(sx, sy)
    records.clear()
    t0 = clock()
    for _ in range(args.steps):
        step(sx, sy)
    total = (clock() - t0) / args.steps
    n = args.steps
    families: dict[str, float] = collections.defaultdict(float)
    for (name, shape), times in sorted(records.items(), key=lambda kv: -sum(kv[1])):
        print(f"{sum(times) / n * 1e3:8.2f} ms  x{len(times) // n:3d}  {name} {shape}")
        families["products" if name in ("matmul", "dense_bias") else name] += sum(times) / n
    print("per family (ms):", {k: round(v * 1e3, 1) for k, v in families.items() if v > 5e-4})
    print(f"Sporeling step {total * 1e3:.1f} ms (equations {sum(families.values()) * 1e3:.1f})")

    if args.torch:
        from torch.profiler import ProfilerActivity, profile

        tx, ty = ctx.th(x.astype(np.int64)), ctx.th(y.astype(np.int64))

        def th_step() -> None:
            loss = torch.nn.functional.cross_entropy(th_net(tx), ty)
            th_opt.zero_grad(set_to_none=True)
            loss.backward()
            th_opt.step()

        th_step()
        t0 = clock()
        for _ in range(n):
            th_step()
        print(f"PyTorch step {(clock() - t0) / n * 1e3:.1f} ms")
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(n):
                th_step()
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=30))


if __name__ == "__main__":
    main()
