"""LeNet-5 steps in blocks of back-to-back steps (as the harness times them), alternating
settings block by block in one process: wall time per step and each thread's CPU time
(``/proc/self/task``), which shows a spinning thread taking the second core.

Modes: ``new`` (this tree, 2 threads), ``old`` (the products below
``product_threads.ONE_THREAD_BELOW`` on OpenBLAS's own threads and convolution jobs in 2
chunks a thread, as before session 7 on an idle machine), ``blas`` (only the first of
those), ``c2`` (only the second), ``1t`` (Numba and OpenBLAS held to one thread), ``t2``
(PyTorch, 2 threads). ``--graph`` times the compiled step (``jit`` of the
TrainOneStepCell) instead of the eager one. ``env -u OPENBLAS_CORETYPE -u
OPENBLAS_L2_SIZE PYTHONPATH=packages/core-runtime/src python
benchmarks/conv/lenet_blocks.py --modes new,old,1t,t2 --rounds 5`` (a venv with PyTorch;
on a loaded machine in its own session at the highest priority, see ``lenet_ab.py``).
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

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _thread_cpu() -> dict[int, float]:
    """CPU seconds (user + system) of each thread of this process."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[int(tid)] = (int(fields[11]) + int(fields[12])) / _TICK
    return out


def _steps(graph: bool) -> tuple[Any, Any]:
    from resnet20_step import training_steps

    sp, th = training_steps("bench_lenet", 2)
    if graph:
        import sporeling.core as core

        cells = [c.cell_contents for c in sp.__closure__ or ()]
        cell = next(c for c in cells if hasattr(c, "construct"))
        sx, sy = (c for c in cells if isinstance(c, core.Tensor))
        jitted = core.jit(cell)
        sp = lambda: jitted(sx, sy)  # noqa: E731
    return sp, th


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--modes", default="new,old,1t,t2")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=200, help="steps per block")
    p.add_argument("--graph", action="store_true", help="the compiled (jit) step")
    args = p.parse_args()

    import numba
    from threadpoolctl import threadpool_limits

    from sporeling.core.kernels.cpu import conv_images, product_threads

    sp, th = _steps(args.graph)

    def block(mode: str) -> tuple[float, float, list[float]]:
        product_threads.enabled = mode not in ("old", "blas")
        conv_images.CHUNKS_PER_THREAD = 2 if mode in ("old", "c2") else 8
        if mode == "1t":
            numba.set_num_threads(1)
            try:
                with threadpool_limits(limits=1, user_api="blas"):
                    return block("new")
            finally:
                numba.set_num_threads(2)
        fn = th if mode == "t2" else sp
        for _ in range(3):
            fn()
        a, t0 = _thread_cpu(), time.perf_counter()
        for _ in range(args.steps):
            fn()
        wall, b = time.perf_counter() - t0, _thread_cpu()
        d = {t: b[t] - a.get(t, 0.0) for t in b}
        main = d.pop(os.getpid())
        ms = 1e3 / args.steps
        others = sorted((v * ms for v in d.values()), reverse=True)[:2]
        return wall * ms, main * ms, others

    modes = args.modes.split(",")
    res: dict[str, list[float]] = {m: [] for m in modes}
    for r in range(args.rounds):
        for mode in modes if r % 2 == 0 else modes[::-1]:
            wall, main, others = block(mode)
            res[mode].append(wall)
            print(
                f"{mode}: {wall:.2f} ms/step; CPU ms/step: calling thread {main:.2f},"
                f" busiest others {[round(x, 2) for x in others]}"
            )
    product_threads.enabled, conv_images.CHUNKS_PER_THREAD = True, 8
    for mode, v in res.items():
        print(f"{mode}: wall per step, min {min(v):.2f} median {np.median(v):.2f} ms")
    if "t2" in res:
        t = res["t2"]
        for mode, v in res.items():
            if mode != "t2":
                lo, mid = min(t) / min(v), np.median(t) / np.median(v)
                print(f"torch/{mode}: min {lo:.2f} median {mid:.2f}")


if __name__ == "__main__":
    main()
