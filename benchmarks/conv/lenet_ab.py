"""LeNet-5 (or conv2d 32->64) steps under several thread settings, alternating step by step
in one process with PyTorch's 2-thread step: wall and process CPU time, min and median.

Variants: ``s2`` Sporeling on 2 threads (Numba, OpenBLAS, the job workers); ``s1`` the
same process held to one thread for the step (``numba.set_num_threads(1)`` and
threadpoolctl on OpenBLAS); ``s2b1`` Numba's and the job workers' 2 threads with OpenBLAS
held to one; ``s2blas`` every product on OpenBLAS's own threads (``product_threads.enabled``
off: what the products below ``ONE_THREAD_BELOW`` did before session 7 on an idle
machine); ``s2c2`` convolution jobs in 2 chunks a thread
(``conv_images.CHUNKS_PER_THREAD``, 8 since session 7); ``s2old`` both (the step before
session 7); ``t2`` PyTorch on 2 threads. The CPU time counts every thread of the process
(PyTorch's spinning OpenMP threads too, after a ``t2`` block). On a loaded machine run it
in its own session at the highest priority (``setsid``, ``/proc/self/autogroup`` -20,
``nice -n -20``) so that the load takes a small share of the cores: ``env -u
OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONPATH=packages/core-runtime/src python
benchmarks/conv/lenet_ab.py``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=40)
    p.add_argument("--steps", type=int, default=5, help="steps per timed block")
    p.add_argument("--case", default="lenet", choices=("lenet", "conv2d"))
    p.add_argument("--variants", default="s2,s1,t2")
    args = p.parse_args()

    from resnet20_step import training_steps

    if args.case == "lenet":
        sp, th = training_steps("bench_lenet", 2)
    else:
        from native_jobs_ab import _conv_steps

        sp, th = _conv_steps(2)
    import numba
    from threadpoolctl import threadpool_limits

    def s1() -> Any:
        numba.set_num_threads(1)
        with threadpool_limits(limits=1, user_api="blas"):
            for _ in range(args.steps):
                sp()
        numba.set_num_threads(2)

    def s2() -> Any:
        for _ in range(args.steps):
            sp()

    def s2b1() -> Any:
        with threadpool_limits(limits=1, user_api="blas"):
            for _ in range(args.steps):
                sp()

    from sporeling.core.kernels.cpu import product_threads

    def s2blas() -> Any:  # before session 7 on an idle machine: products on OpenBLAS's threads
        product_threads.enabled = False
        try:
            for _ in range(args.steps):
                sp()
        finally:
            product_threads.enabled = True

    from sporeling.core.kernels.cpu import conv_images

    def s2c2() -> Any:  # before session 7: a convolution job cut into 2 chunks a thread
        keep = conv_images.CHUNKS_PER_THREAD
        conv_images.CHUNKS_PER_THREAD = 2
        try:
            for _ in range(args.steps):
                sp()
        finally:
            conv_images.CHUNKS_PER_THREAD = keep

    def s2old() -> Any:  # both of the above: the step as before session 7, idle machine
        keep = conv_images.CHUNKS_PER_THREAD
        conv_images.CHUNKS_PER_THREAD, product_threads.enabled = 2, False
        try:
            for _ in range(args.steps):
                sp()
        finally:
            conv_images.CHUNKS_PER_THREAD, product_threads.enabled = keep, True

    def t2() -> Any:
        for _ in range(args.steps):
            th()

    fns = {
        "s1": s1,
        "s2": s2,
        "s2b1": s2b1,
        "s2blas": s2blas,
        "s2c2": s2c2,
        "s2old": s2old,
        "t2": t2,
    }
    names = args.variants.split(",")
    for n in names:
        for _ in range(3):
            fns[n]()
    wall: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    for r in range(args.rounds):
        order = names if r % 2 == 0 else names[::-1]
        for n in order:
            time.sleep(0.01)
            c0, w0 = time.process_time(), time.perf_counter()
            fns[n]()
            wall[n].append((time.perf_counter() - w0) / args.steps)
            cpu[n].append((time.process_time() - c0) / args.steps)
    for n in names:
        w, c = np.array(wall[n]) * 1e3, np.array(cpu[n]) * 1e3
        print(
            f"{n}: wall min {w.min():.2f} med {np.median(w):.2f} ms;"
            f" cpu min {c.min():.2f} med {np.median(c):.2f} ms"
        )
    if "t2" in names:
        tw = np.array(wall["t2"])
        for n in names:
            if n != "t2":
                w = np.array(wall[n])
                print(
                    f"torch/{n} wall: min {tw.min() / w.min():.2f}"
                    f" median {np.median(tw) / np.median(w):.2f}"
                )


if __name__ == "__main__":
    main()
