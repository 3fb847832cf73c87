"""Graph mode against eager mode in one process, with and without a busy neighbour.

bench_graph's "graph vs Sporeling eager" cases (GPT step, LeNet-5 and MLP training steps)
built the same way (same weights, same batch), timed in alternating blocks: every round
runs each variant for ``--steps`` steps (after one untimed step), in a rotated order, and
records the block's wall time and this process's CPU time (every thread). ``--neighbour
off,on`` alternates blocks without and with a separate process spinning on one core
(started 0.25 s before its blocks, so that the products' load reading sees it, and stopped
after), so idle-ish and busy numbers come from the same process and the same minutes.
A variant is ``graph`` or ``eager`` with modifiers (``graph+split``): see ``MODIFIERS``
(``split``: a graph's large products split whatever the load, as before session 8).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONPATH=packages/core-runtime/src \
        python benchmarks/graph_busy_ab.py --case gpt --rounds 8 --variants graph+split,graph,eager
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _steps(case: str, threads: int) -> dict[str, Any]:
    """``{"graph": step, "eager": step}`` for ``case`` (gpt, lenet, mlp)."""
    import torch
    from quiet import limit_threads

    limit_threads(threads, torch)
    import numpy as np
    from common import Context

    ctx = Context("CPU", quick=False)
    if case == "gpt":
        import bench_graph

        rng = ctx.rng(5)
        tokens = rng.integers(0, bench_graph.VOCAB, (bench_graph.BATCH, bench_graph.SEQ + 1))
        sx = ctx.sp(tokens[:, :-1].astype(np.int32))
        sy = ctx.sp(tokens[:, 1:].reshape(-1).astype(np.int32))
        graph, _, _ = bench_graph._gpt_pair(ctx, graph=True)
        eager, _, _ = bench_graph._gpt_pair(ctx, graph=False)
        return {"graph": lambda: graph(sx, sy), "eager": lambda: eager(sx, sy)}
    import importlib

    import bench_graph
    import train_step

    mod = importlib.import_module({"lenet": "bench_lenet", "mlp": "bench_mlp_train"}[case])
    got: dict[str, Any] = {}

    def grab(ctx: Any, name: str, make_sp: Any, make_th: Any, x: Any, y: Any, **kw: Any) -> None:
        got["args"] = (make_sp, make_th, x, y, kw["lr"])

    mod.training_case = grab
    mod.cases(ctx)
    make_sp, make_th, x, y, lr = got["args"]
    eager, _, _, _ = train_step.step_pair(ctx, make_sp, make_th, x, y, lr, seed=0)
    src, _, _, _ = train_step.step_pair(ctx, make_sp, make_th, x, y, lr, seed=0)
    graph = bench_graph._jit_step(ctx, src.__closure__)
    return {"graph": graph, "eager": eager}


class _Neighbour:
    def __init__(self) -> None:
        self.proc: Any = None

    def start(self) -> None:
        import subprocess

        if self.proc is None:
            self.proc = subprocess.Popen([sys.executable, "-c", "while True:\n    pass\n"])
            time.sleep(0.25)  # running, and seen by the products' load reading

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
            time.sleep(0.25)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--case", default="gpt", choices=("gpt", "lenet", "mlp"))
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--steps", type=int, default=3, help="steps per timed block")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--variants", default="graph,eager")
    p.add_argument("--neighbour", default="off,on", help="off, on, or off,on (alternated)")
    args = p.parse_args()
    steps = _steps(args.case, args.threads)
    variants = args.variants.split(",")
    modes = args.neighbour.split(",")
    for v in variants:  # compile and warm every variant
        _run(steps, v, 2)
    nb = _Neighbour()
    times: dict[tuple[str, str], list[tuple[float, float]]] = {}
    try:
        for r in range(args.rounds):
            for mode in modes if r % 2 == 0 else modes[::-1]:
                if mode == "on":
                    nb.start()
                else:
                    nb.stop()
                order = variants[r % len(variants) :] + variants[: r % len(variants)]
                for v in order:
                    _run(steps, v, 1)  # untimed: settles threads after the switch
                    c0, t0 = time.process_time(), time.perf_counter()
                    _run(steps, v, args.steps)
                    wall = (time.perf_counter() - t0) / args.steps
                    cpu = (time.process_time() - c0) / args.steps
                    times.setdefault((mode, v), []).append((wall, cpu))
    finally:
        nb.stop()
    print(f"case {args.case}, {args.rounds} rounds x {args.steps} steps, load {os.getloadavg()}")
    print("neighbour variant   wall ms min / median     CPU ms min / median")
    for (mode, v), ts in sorted(times.items()):
        w = [t[0] * 1e3 for t in ts]
        c = [t[1] * 1e3 for t in ts]
        print(
            f"{mode:9} {v:9} {min(w):8.2f} / {statistics.median(w):8.2f}   "
            f"{min(c):8.2f} / {statistics.median(c):8.2f}"
        )
    for mode in modes:
        base = times.get((mode, variants[-1]))
        for v in variants[:-1]:
            got = times.get((mode, v))
            if base and got:
                mw = statistics.median(t[0] for t in base) / statistics.median(t[0] for t in got)
                mn = min(t[0] for t in base) / min(t[0] for t in got)
                print(f"{mode}: {variants[-1]} / {v} wall, min {mn:.2f}, median {mw:.2f}")


def _nosplit() -> Any:
    """A graph's products as eager ones: on OpenBLAS's threads, as many as the load leaves."""
    from sporeling.core.kernels.cpu import blas

    keep = blas.SPLIT_MIN_WORK
    blas.SPLIT_MIN_WORK = 1 << 62
    return lambda: setattr(blas, "SPLIT_MIN_WORK", keep)


def _numba1() -> Any:
    """Numba's thread count 1: every row kernel, job and split product on the caller."""
    import numba

    numba.set_num_threads(1)
    return lambda: numba.set_num_threads(2)


def _rows1() -> Any:
    """Row kernels and jobs on the calling thread only (``_rows.n_blocks`` gives 1)."""
    from sporeling.core.kernels.cpu import _rows

    keep = _rows.PARALLEL_MIN
    _rows.PARALLEL_MIN = 1 << 62
    return lambda: setattr(_rows, "PARALLEL_MIN", keep)


def _split() -> Any:
    """Before session 8: a graph's large products split over Sporeling's threads whatever
    the load (``product_threads.threads_free`` reads every CPU free)."""
    from sporeling.core.kernels.cpu import product_threads

    keep = product_threads.threads_free
    product_threads.threads_free = lambda: product_threads._LOAD.cpus
    return lambda: setattr(product_threads, "threads_free", keep)


def _linger0() -> Any:
    """The job workers sleep at once after each job (``SPORELING_NATIVE_LINGER_US=0``)."""
    from sporeling.core.kernels.cpu import _jobs

    keep = [(w, int(w.ctl[_jobs._LINGER])) for w in _jobs._ALL]
    for w, _ in keep:
        w.ctl[_jobs._LINGER] = 0

    def undo() -> None:
        for w, n in keep:
            w.ctl[_jobs._LINGER] = n

    return undo


#: variant modifiers: ``graph+nosplit`` runs the graph step with ``_nosplit`` in force
MODIFIERS = {
    "nosplit": _nosplit,
    "numba1": _numba1,
    "rows1": _rows1,
    "split": _split,
    "linger0": _linger0,
}


def _run(steps: dict[str, Any], variant: str, n: int) -> None:
    base, *mods = variant.split("+")
    fn = steps[base]
    undo = [MODIFIERS[m]() for m in mods]
    try:
        for _ in range(n):
            fn()
    finally:
        for u in undo[::-1]:
            u()


if __name__ == "__main__":
    main()
