"""Hand-offs to Sporeling's row workers during ResNet-20 steps: per call site of
``_rows.run_blocks`` and of ``_jobs.run`` (GIL-free jobs, sites prefixed ``jobs:``), the
calls per step, their wall time and the work of their chunks, how often the worker ran no
chunk, its start latency and the caller's wait at the end. For the 2-thread account on an
idle machine (under load every latency here is the scheduler's).

``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONPATH=packages/core-runtime/src
python benchmarks/conv/handoffs.py --steps 10`` (bench venv: PyTorch is needed for the
benchmark's model definitions and weights).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _instrument(stats: dict[Any, list[tuple[float, ...]]]) -> None:
    import sporeling.core.kernels.cpu as kernels
    from sporeling.core.kernels.cpu import _rows

    real = _rows.run_blocks

    def run_blocks(fn: Any, rows: int, blocks: int, chunks: int | None = None) -> None:
        if blocks <= 1:
            real(fn, rows, blocks, chunks)
            return
        site = (getattr(fn, "__module__", "?").rsplit(".", 1)[-1], fn.__qualname__)
        main, rec = threading.get_ident(), []

        def timed(k: int, lo: int, hi: int) -> None:
            t0 = time.perf_counter()
            fn(k, lo, hi)
            rec.append((threading.get_ident() == main, t0, time.perf_counter()))

        t0 = time.perf_counter()
        real(timed, rows, blocks, chunks)
        t1 = time.perf_counter()
        other = [r for r in rec if not r[0]]
        mine_end = max((r[2] for r in rec if r[0]), default=t0)
        latency = min(r[1] for r in other) - t0 if other else float("nan")
        work = sum(r[2] - r[1] for r in rec)
        stats[site].append((t1 - t0, work, len(other), latency, t1 - mine_end))

    for info in pkgutil.iter_modules(kernels.__path__):
        mod = importlib.import_module(f"{kernels.__name__}.{info.name}")
        if getattr(mod, "run_blocks", None) is real:
            mod.run_blocks = run_blocks
    _instrument_jobs(stats)


def _instrument_jobs(stats: dict[Any, list[tuple[float, ...]]]) -> None:
    """The same per call site for the GIL-free jobs (``_jobs.run``): the chunks' work is not
    visible there, so "work" is the wall time and the worker's start latency unknown; "no
    worker" counts calls in which the worker ran no chunk (from ``_jobs.stats``)."""
    import sys

    from sporeling.core.kernels.cpu import _jobs

    real = _jobs.run

    def run(fn: Any, args: Any, rows: int, blocks: int, chunks: int | None = None) -> None:
        caller = sys._getframe(1)
        if caller.f_code.co_name == "_run":  # conv_images' helper: name its caller
            caller = caller.f_back or caller
        site = ("jobs:" + caller.f_globals.get("__name__", "?").rsplit(".", 1)[-1],
                caller.f_code.co_name)  # fmt: skip
        s0 = _jobs.stats()
        t0 = time.perf_counter()
        real(fn, args, rows, blocks, chunks)
        t1 = time.perf_counter()
        ran = _jobs.stats()[1] - s0[1]
        stats[site].append((t1 - t0, t1 - t0, int(ran > 0), float("nan"), 0.0))

    _jobs.run = run


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=10)
    args = p.parse_args()

    from resnet20_step import resnet20_steps

    sp, _ = resnet20_steps(args.threads)
    stats: dict[Any, list[tuple[float, ...]]] = defaultdict(list)
    _instrument(stats)
    for _ in range(3):
        sp()
    stats.clear()
    for _ in range(args.steps):
        time.sleep(0.05)
        sp()
    n = args.steps
    print("site | calls/step | wall ms/step | chunk work ms/step | no-worker calls |")
    print("  worker start latency median/min us | caller wait at the end median us")
    for (mod, site), v in sorted(stats.items(), key=lambda kv: -sum(r[0] for r in kv[1])):
        a = np.array(v)
        lat = a[:, 3][~np.isnan(a[:, 3])]
        lat_s = f"{np.median(lat) * 1e6:.0f}/{lat.min() * 1e6:.0f}" if lat.size else "-"
        name = site.split(".")[0][:28]
        print(
            f"{mod:11s} {name:28s} {len(v) // n:3d} {a[:, 0].sum() / n * 1e3:7.2f}"
            f" {a[:, 1].sum() / n * 1e3:7.2f} {int((a[:, 2] == 0).sum())}/{len(v)}"
            f" {lat_s} {np.median(a[:, 4]) * 1e6:.0f}"
        )


if __name__ == "__main__":
    main()
