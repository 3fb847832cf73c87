"""Training steps with the GIL-free job workers (``kernels/cpu/_jobs.py``) on and off,
alternating step by step in one process, PyTorch's step in the same loop: wall and CPU time
(min and median), the hand-offs per step and how many the worker joined. For the 2-thread
account: under load the wall times are the scheduler's, so compare medians of many rounds.

``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONPATH=packages/core-runtime/src
python benchmarks/conv/native_jobs_ab.py --threads 2 --rounds 15`` (bench venv: PyTorch
builds the models and their weights).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _conv_steps(threads: int) -> tuple[Any, Any]:
    """The conv2d benchmark's N32 32->64 16x16 forward+backward pair."""
    import torch
    from quiet import limit_threads

    limit_threads(threads, torch)
    import bench_conv2d
    from common import Context

    cases = bench_conv2d.cases(Context("CPU", quick=False))
    case = next(c for c in cases if "32->64" in c.name)
    return case.sporeling, case.torch


def _set_linger(jobs: Any, us: float) -> None:
    """Every job worker's spin after a job, in microseconds (read by the worker per job)."""
    jobs.LINGER_US = us
    for w in jobs._ALL:
        w.ctl[jobs._LINGER] = jobs._linger_tries()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--cases", default="resnet20,conv2d,lenet")
    p.add_argument("--sleep", type=float, default=0.02, help="seconds between steps")
    p.add_argument(
        "--lingers",
        default="",
        help="worker spins in us to alternate, comma-separated (default: the env setting)",
    )
    p.add_argument("--no-torch", action="store_true", help="skip PyTorch's step (slow under load)")
    args = p.parse_args()

    from resnet20_step import training_steps

    from sporeling.core.kernels.cpu import _jobs, _rows

    makers = {
        "resnet20": lambda: training_steps("bench_resnet20", args.threads),
        "lenet": lambda: training_steps("bench_lenet", args.threads),
        "conv2d": lambda: _conv_steps(args.threads),
    }
    real_run_blocks = _rows.run_blocks
    calls = [0]

    def counted(fn: Any, rows: int, blocks: int, chunks: int | None = None) -> None:
        calls[0] += blocks > 1
        real_run_blocks(fn, rows, blocks, chunks)

    import importlib
    import pkgutil

    import sporeling.core.kernels.cpu as kernels

    for info in pkgutil.iter_modules(kernels.__path__):
        mod = importlib.import_module(f"{kernels.__name__}.{info.name}")
        if getattr(mod, "run_blocks", None) is real_run_blocks:
            mod.run_blocks = counted
    real_jobs_run = _jobs.run
    jobs = [0]

    def jobs_run(*a: Any, **k: Any) -> None:
        jobs[0] += 1
        real_jobs_run(*a, **k)

    _jobs.run = jobs_run
    print(
        f"threads {args.threads}, native linger {_jobs.LINGER_US:g} us, "
        f"load at start {os.getloadavg()[0]:.2f}"
    )
    for name in args.cases.split(","):
        sp, th = makers[name]()
        lingers = [float(v) for v in args.lingers.split(",") if v] or [_jobs.LINGER_US]
        on_modes = [f"on{v:g}" for v in lingers]
        modes = ["off", *on_modes] + ([] if args.no_torch else ["torch"])
        walls: dict[str, list[float]] = {m: [] for m in modes}
        cpus: dict[str, list[float]] = {m: [] for m in modes}
        counts: dict[str, tuple[int, int, int, int]] = {}
        for i in range(2 + args.rounds):
            order = modes if i % 2 else modes[::-1]
            for mode in order:
                _jobs.ENABLED = mode.startswith("on")
                if _jobs.ENABLED:
                    _set_linger(_jobs, lingers[on_modes.index(mode)])
                time.sleep(args.sleep)
                calls[0] = jobs[0] = 0
                s0 = _jobs.stats()
                c0, w0 = time.process_time(), time.perf_counter()
                (th if mode == "torch" else sp)()
                c1, w1 = time.process_time(), time.perf_counter()
                s1 = _jobs.stats()
                if i >= 2:
                    walls[mode].append(w1 - w0)
                    cpus[mode].append(c1 - c0)
                    counts[mode] = (calls[0], jobs[0], s1[0] - s0[0], s1[1] - s0[1])
        _jobs.ENABLED = True
        print(f"{name} (load {os.getloadavg()[0]:.2f}), {args.rounds} rounds:")
        for mode in modes:
            w, c = np.array(walls[mode]) * 1e3, np.array(cpus[mode]) * 1e3
            r, j, st, ch = counts[mode]
            print(
                f"  {mode:5s} wall min {w.min():7.1f} med {np.median(w):7.1f} ms"
                f"  CPU min {c.min():7.1f} med {np.median(c):7.1f} ms"
                f"  | row-block calls {r}, native jobs {j} (worker joined {st}, chunks {ch})"
            )
        if args.no_torch:
            continue
        t = np.array(walls["torch"])
        for mode in modes[:-1]:
            s = np.array(walls[mode])
            print(
                f"  ratio torch/{mode}: min {t.min() / s.min():.2f}"
                f" med {np.median(t) / np.median(s):.2f}"
            )


if __name__ == "__main__":
    main()
