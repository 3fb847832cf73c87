"""ResNet-20 training steps (the benchmark's model, batch 64) with ReLU forwards and adds on
row blocks (``relu_add.ENABLED``) on and off, alternating step by step in one process: the
steps' CPU time and wall (min of the steps), and the row-block calls per step of the new
path (0 at one thread, where the eager plans are NumPy's as before).

``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONPATH=packages/core-runtime/src
python benchmarks/conv/step_elementwise_ab.py --threads 1`` (bench venv: PyTorch is needed
for the model definitions and weights; add ``SPORELING_WORKER_LINGER_US=N`` for a linger).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--steps", type=int, default=9)
    args = p.parse_args()

    from resnet20_step import resnet20_steps

    sp, _ = resnet20_steps(args.threads)

    from sporeling.core.kernels.cpu import _rows, relu_add
    from sporeling.core.ops._elementwise import add_p
    from sporeling.core.ops.activation.elementwise import relu_p

    calls = [0]
    real = relu_add.run_blocks

    def counted(*a: Any, **k: Any) -> None:
        calls[0] += 1
        real(*a, **k)

    relu_add.run_blocks = counted
    best: dict[bool, list[float]] = {False: [9e9, 9e9], True: [9e9, 9e9]}
    per_step: dict[bool, int] = {}
    for i in range(2 + args.steps):
        for on in (False, True) if i % 2 else (True, False):  # neither always goes first
            relu_add.ENABLED = on
            relu_p._eager_plans.clear()
            add_p._eager_plans.clear()
            calls[0] = 0
            c0, w0 = time.process_time(), time.perf_counter()
            sp()
            c1, w1 = time.process_time(), time.perf_counter()
            per_step[on] = calls[0]
            if i >= 2:  # the first two: compilation and warm-up
                best[on] = [min(best[on][0], c1 - c0), min(best[on][1], w1 - w0)]
    print(
        f"threads {args.threads}, linger {_rows.LINGER_US:g} us, load {os.getloadavg()}: "
        f"min of {args.steps} steps each, alternating"
    )
    for on in (False, True):
        print(
            f"  row elementwise {'on ' if on else 'off'}: CPU {best[on][0] * 1e3:.1f} ms, "
            f"wall {best[on][1] * 1e3:.1f} ms, row-block calls/step {per_step[on]}"
        )


if __name__ == "__main__":
    main()
