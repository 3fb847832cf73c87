"""Where a ResNet-20 training step's time goes, by primitive and input shape, beside
torch.profiler's account of PyTorch's step (same weights, batch and thread count).

Run with the bench venv (PyTorch) and the core of this tree, under ``nice -n 19``:
``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONPATH=packages/core-runtime/src
python benchmarks/conv/profile_resnet20.py --threads 2``. Wall clock per primitive call
(every impl wrapped; the eager fast path's specialised kernels are turned off so each call
reaches its impl), summed over ``--steps`` steps after warm-up, divided per step.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _wrap_impls(table: dict[Any, list[float]], clock: Any) -> None:
    from sporeling.core._primitive import REGISTRY

    for prim in REGISTRY.values():
        prim.eager_specialize = None
        prim._impl_by_device.clear()
        prim._eager_plans.clear()
        for kind, fn in list(prim.impls.items()):

            def timed(xp: Any, *arrays: Any, _fn: Any = fn, _name: str = prim.name, **kw: Any):
                t0 = clock()
                out = _fn(xp, *arrays, **kw)
                dt = clock() - t0
                shapes = tuple(tuple(getattr(a, "shape", ())) for a in arrays[:2])
                extra = kw.get("stride", "")
                table[(_name, shapes, str(extra))].append(dt)
                return out

            prim.impls[kind] = timed


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--bench", default="bench_resnet20", help="bench_lenet for LeNet-5's step")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--top", type=int, default=40)
    p.add_argument(
        "--clock",
        choices=("wall", "thread"),
        default="wall",
        help="thread: the calling thread's CPU time (1 thread only; steadier under load)",
    )
    args = p.parse_args()

    from resnet20_step import training_steps

    clock = time.thread_time if args.clock == "thread" else time.perf_counter
    sp, th = training_steps(args.bench, args.threads)
    import torch

    for _ in range(3):
        sp()
        th()
    # whole steps, interleaved, min of repeats
    ts, tt = [], []
    for _ in range(args.steps):
        time.sleep(0.05)
        t0 = clock()
        sp()
        ts.append(clock() - t0)
        time.sleep(0.05)
        t0 = clock()
        th()
        tt.append(clock() - t0)
    ts.sort()
    tt.sort()
    print(
        f"threads {args.threads}, clock {args.clock}: step S min {ts[0] * 1e3:.1f}"
        f" med {ts[len(ts) // 2] * 1e3:.1f} ms,"
        f" T min {tt[0] * 1e3:.1f} med {tt[len(tt) // 2] * 1e3:.1f} ms,"
        f" ratio(min) {tt[0] / ts[0]:.2f}"
    )

    table: dict[Any, list[float]] = defaultdict(list)
    _wrap_impls(table, clock)
    sp()
    table.clear()
    t0 = clock()
    for _ in range(args.steps):
        sp()
    total = (clock() - t0) / args.steps
    rows = sorted(table.items(), key=lambda kv: -sum(kv[1]))
    acc = 0.0
    print(f"\nSporeling by primitive (ms per step; step {total * 1e3:.1f} ms with wrappers)")
    by_name: dict[str, float] = defaultdict(float)
    for (name, _shapes, _extra), ts_ in rows:
        by_name[name] += sum(ts_) / args.steps
    for name, t in sorted(by_name.items(), key=lambda kv: -kv[1]):
        acc += t
        print(f"  {name:32s} {t * 1e3:8.2f}")
    print(f"  {'(sum of primitives)':32s} {acc * 1e3:8.2f}")
    print("\nby primitive and shapes:")
    for (name, shapes, extra), ts_ in rows[: args.top]:
        print(
            f"  {name:24s} {str(shapes):44s} {extra:8s} {sum(ts_) / args.steps * 1e3:7.2f} ms"
            f"  ({len(ts_) // args.steps}/step, min {min(ts_) * 1e3:.2f})"
        )

    _torch_account(torch, th, args.steps, clock)


def _torch_account(torch: Any, th: Any, steps: int, clock: Any) -> None:
    """PyTorch's step by aten op and input shapes, timed with ``clock`` around each op (a
    TorchDispatchMode sees the forward's and the backward's ops alike; at 1 thread the
    backward runs on the calling thread, so ``thread_time`` covers it)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    table: dict[Any, list[float]] = defaultdict(list)

    class Timed(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None):
            t0 = clock()
            out = func(*args, **(kwargs or {}))
            dt = clock() - t0
            shapes = tuple(tuple(a.shape) for a in args[:2] if hasattr(a, "shape"))
            table[(str(func.overloadpacket.__name__), shapes)].append(dt)
            return out

    th()
    with Timed():
        th()
        table.clear()
        t0 = clock()
        for _ in range(steps):
            th()
        total = (clock() - t0) / steps
    by_name: dict[str, float] = defaultdict(float)
    for (name, _shapes), ts_ in table.items():
        by_name[name] += sum(ts_) / steps
    print(f"\nPyTorch by aten op (ms per step; step {total * 1e3:.1f} ms with the mode on)")
    acc = 0.0
    for name, t in sorted(by_name.items(), key=lambda kv: -kv[1])[:20]:
        acc += t
        print(f"  {name:32s} {t * 1e3:8.2f}")
    print(f"  {'(sum of these)':32s} {acc * 1e3:8.2f}")
    print("\nPyTorch convolutions by shape:")
    for (name, shapes), ts_ in sorted(table.items(), key=lambda kv: -sum(kv[1])):
        if "conv" in name:
            print(
                f"  {name:28s} {str(shapes):44s} {sum(ts_) / steps * 1e3:7.2f} ms"
                f"  ({len(ts_) // steps}/step, min {min(ts_) * 1e3:.2f})"
            )


if __name__ == "__main__":
    main()
