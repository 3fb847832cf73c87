"""A/B of the per-call convolution kernels between two source trees (e.g. main and a
branch), alternating child processes round by round (kernels compiled into each tree's own
Numba cache, so the two cannot share one process): each child times every call of
:mod:`conv_calls`' layers at each thread count and prints JSON; the parent keeps the
per-round minima and medians and prints B / A of their medians over the rounds.

``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/conv/trees_ab.py --a
/work/main --b . --rounds 6`` (a venv with PyTorch and threadpoolctl; the parent sets each
child's PYTHONPATH to its tree's ``packages/core-runtime/src`` and NUMBA_CACHE_DIR to
``--cache``/a or /b). ``--clock cpu`` times the calling thread's CPU (1 thread).
``--step bench_lenet`` (or ``bench_resnet20``) times that benchmark's whole training step
instead, in blocks of ``--calls`` back-to-back steps (as the harness does; per-step time
of each block), and PyTorch's step in the same child (``torch`` rows, both sides' children).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def child_step(module: str, threads: list[int], calls: int, clock: str) -> None:
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(HERE.parent))
    from resnet20_step import training_steps

    tick = time.thread_time if clock == "cpu" else time.perf_counter
    out: dict[str, list[float]] = {}
    for t in threads:
        sp, th = training_steps(module, t)
        for name, fn in (("step", sp), ("torch", th)):
            for _ in range(5):
                fn()
            blocks = []
            for _ in range(5):
                t0 = tick()
                for _ in range(calls):
                    fn()
                blocks.append((tick() - t0) / calls)
            out[f"{module} {name} {t}"] = [min(blocks), statistics.median(blocks)]
    print(json.dumps(out))


def child(layers: list[str], threads: list[int], calls: int, clock: str) -> None:
    import numba
    import torch
    from threadpoolctl import threadpool_limits

    sys.path.insert(0, str(HERE))
    from conv_calls import _calls

    tick = time.thread_time if clock == "cpu" else time.perf_counter
    out: dict[str, list[float]] = {}
    fns = {name: _calls(name, torch) for name in layers}
    for t in threads:
        numba.set_num_threads(t)
        torch.set_num_threads(t)
        with threadpool_limits(t):
            for name in layers:
                for kind, fn in fns[name].items():
                    if kind.startswith("t_"):
                        continue
                    for _ in range(3):
                        fn()
                    times = []
                    for _ in range(calls):
                        t0 = tick()
                        fn()
                        times.append(tick() - t0)
                    out[f"{name} {kind} {t}"] = [min(times), statistics.median(times)]
    print(json.dumps(out))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--a", required=True)
    p.add_argument("--b", required=True)
    p.add_argument("--layers", default="lenet1,lenet2,c32_64")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--calls", type=int, default=30)
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    p.add_argument("--cache", default="/tmp/numba-trees-ab")
    p.add_argument("--step", default="", help="bench_lenet: whole training steps")
    p.add_argument("--child", action="store_true")
    args = p.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    if args.child and args.step:
        child_step(args.step, threads, args.calls, args.clock)
        return
    if args.child:
        child(args.layers.split(","), threads, args.calls, args.clock)
        return
    res: dict[str, dict[str, list[list[float]]]] = {"a": {}, "b": {}}
    for r in range(args.rounds):
        for side in ("a", "b") if r % 2 == 0 else ("b", "a"):
            tree = Path(getattr(args, side)).resolve()
            env = dict(os.environ)
            env["PYTHONPATH"] = str(tree / "packages/core-runtime/src")
            env["NUMBA_CACHE_DIR"] = f"{args.cache}/{side}"
            cmd = [sys.executable, __file__, "--child", "--a", "-", "--b", "-"]
            cmd += ["--layers", args.layers, "--threads", args.threads]
            cmd += ["--calls", str(args.calls), "--clock", args.clock, "--step", args.step]
            line = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
            for key, v in json.loads(line.stdout.strip().splitlines()[-1]).items():
                res[side].setdefault(key, []).append(v)
    print(f"{args.rounds} rounds, clock {args.clock}; ms: min of mins, median of medians")
    print(f"{'call':22} {'A min':>7} {'A med':>7} {'B min':>7} {'B med':>7}  B/A med")
    for key in res["a"]:
        a, b = res["a"][key], res["b"][key]
        am, bm = min(x[0] for x in a), min(x[0] for x in b)
        ad, bd = statistics.median(x[1] for x in a), statistics.median(x[1] for x in b)
        cols = f"{am * 1e3:7.3f} {ad * 1e3:7.3f} {bm * 1e3:7.3f} {bd * 1e3:7.3f}"
        print(f"{key:22} {cols}  {bd / ad:.3f}")


if __name__ == "__main__":
    main()
