"""A/B of ReLU's forward and the residual add on row blocks (kernels/cpu/relu_add.py) against
NumPy's one-thread ufuncs, interleaved in one process, min of repeats.

Three comparisons on a ResNet-20 activation (64x16x32x32 and 64x64x8x8 float32):
1. the kernels' work on one thread (the whole range on the caller) vs NumPy, CPU time:
   what a chunk costs, so 2 threads can only lose by waiting;
2. the eager ops at 1 thread, row elementwise on vs off (``relu_add.ENABLED``), CPU time:
   at one thread the plan is NumPy's either way, only the checks differ;
3. the eager ops at 2 threads, on vs off, wall and process CPU time, with how many calls
   ran on row blocks (wall is only meaningful on an idle machine).

``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONPATH=packages/core-runtime/src
python benchmarks/conv/elementwise_ab.py`` (add ``SPORELING_WORKER_LINGER_US=N`` to time
the 2-thread side with lingering workers).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import numba
import numpy as np


def _best(fns: dict[str, Callable[[], object]], repeats: int, clock: Callable[[], float]) -> dict:
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeats):
        for name, fn in fns.items():  # interleaved
            t0 = clock()
            fn()
            best[name] = min(best[name], clock() - t0)
    return best


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=30)
    args = p.parse_args()
    from sporeling.core.kernels.cpu import _rows

    print(f"load average {os.getloadavg()}, linger {_rows.LINGER_US:g} us")
    for shape in ((64, 16, 32, 32), (64, 64, 8, 8)):
        _one_shape(shape, args.repeats)


def _one_shape(shape: tuple[int, ...], repeats: int) -> None:
    from sporeling.core import Tensor, ops
    from sporeling.core.kernels.cpu import relu_add
    from sporeling.core.ops._elementwise import add_p
    from sporeling.core.ops.activation.elementwise import relu_p

    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape, dtype=np.float32)
    y = rng.standard_normal(shape, dtype=np.float32)
    xf, yf, of = x.reshape(-1), y.reshape(-1), np.empty(x.size, np.float32)
    zero, n = np.float32(0), x.size
    relu_add._relu_kernel(xf, of, zero, 0, n)
    relu_add._add_kernel(xf, yf, of, 0, n)
    b = _best(
        {
            "numpy maximum": lambda: np.maximum(x, zero),
            "kernel relu (1 thread)": lambda: relu_add._relu_kernel(xf, of, zero, 0, n),
            "numpy add": lambda: np.add(x, y),
            "kernel add (1 thread)": lambda: relu_add._add_kernel(xf, yf, of, 0, n),
        },
        repeats,
        time.thread_time,
    )
    print(f"{shape} work, CPU ms: " + ", ".join(f"{k} {v * 1e3:.3f}" for k, v in b.items()))

    tx, ty = Tensor(x), Tensor(y)
    calls = [0]
    real = relu_add.run_blocks

    def counted(*a: object, **k: object) -> None:
        calls[0] += 1
        real(*a, **k)

    relu_add.run_blocks = counted

    def toggled(on: bool, fn: Callable[[], object]) -> Callable[[], object]:
        def run() -> object:
            relu_add.ENABLED = on
            relu_p._eager_plans.clear()
            add_p._eager_plans.clear()
            fn()  # the plan's first call, untimed
            t0 = time.perf_counter()
            for _ in range(5):
                fn()
            return time.perf_counter() - t0

        return run

    for threads in (1, 2):
        numba.set_num_threads(threads)
        for name, fn in (("relu", lambda: ops.relu(tx)), ("add", lambda: tx + ty)):
            calls[0] = 0
            best = {}
            for label, clock in (("CPU", time.process_time), ("wall", time.perf_counter)):
                got = _best({"off": toggled(False, fn), "on": toggled(True, fn)}, repeats, clock)
                best[label] = got
            print(
                f"{shape} eager {name} at {threads} thread(s), 6 calls: CPU ms off"
                f" {best['CPU']['off'] * 1e3:.3f} on {best['CPU']['on'] * 1e3:.3f};"
                f" wall ms off {best['wall']['off'] * 1e3:.3f} on"
                f" {best['wall']['on'] * 1e3:.3f}; row-block calls {calls[0]}"
            )
    relu_add.run_blocks = real
    relu_add.ENABLED = True


if __name__ == "__main__":
    main()
