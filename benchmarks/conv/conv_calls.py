"""Per-call time of the per-image convolution kernels (forward, input gradient, weight
gradient) for LeNet-5's two layers and the conv2d benchmark's layers, beside PyTorch's
``conv2d`` / ``convolution_backward`` on the same arrays, at 1 and 2 threads in one process.

Wall (``perf_counter``) and process CPU (``process_time``) per call, min and median over
``--calls`` calls, thread counts alternated round by round. ``env -u OPENBLAS_CORETYPE -u
OPENBLAS_L2_SIZE PYTHONPATH=packages/core-runtime/src python benchmarks/conv/conv_calls.py``
(a venv with PyTorch and threadpoolctl).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np

LAYERS = {  # name: (N, C_in, C_out, H=W, kernel, pad)
    "lenet1": (64, 1, 6, 32, 5, 0),
    "lenet2": (64, 6, 16, 14, 5, 0),
    "c3_32": (32, 3, 32, 32, 3, 1),
    "c32_64": (32, 32, 64, 16, 3, 1),
}


def _calls(name: str, torch: Any) -> dict[str, Any]:
    from sporeling.core.kernels.cpu import conv_images as ci

    n, cin, cout, hw, k, pad = LAYERS[name]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, cin, hw, hw), dtype=np.float32)
    w = rng.standard_normal((cout, cin, k, k), dtype=np.float32)
    o = hw + 2 * pad - k + 1
    gy = rng.standard_normal((n, cout, o, o), dtype=np.float32)
    geo = (1, 1, pad, pad, 1, 1)
    tx, tw, tg = (torch.from_numpy(a) for a in (x, w, gy))
    mask = [name != "lenet1", True, False]
    return {
        "fwd": lambda: ci.conv2d_images(x, w, geo, 1, (o, o)),
        "dgrad": lambda: ci.conv2d_data_grad_images(gy, w, geo, 1, x.shape),
        "wgrad": lambda: ci.conv2d_weight_grad_images(x, gy, geo, 1, (k, k)),
        "t_fwd": lambda: torch.nn.functional.conv2d(tx, tw, padding=pad),
        "t_bwd": lambda: torch.ops.aten.convolution_backward(
            tg, tx, tw, None, [1, 1], [pad, pad], [1, 1], False, [0, 0], 1, mask
        ),
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--layers", default="lenet1,lenet2,c32_64")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--calls", type=int, default=40)
    args = p.parse_args()

    import numba
    import torch
    from threadpoolctl import threadpool_limits

    layers = args.layers.split(",")
    threads = [int(t) for t in args.threads.split(",")]
    calls = {name: _calls(name, torch) for name in layers}
    wall: dict[Any, list[float]] = {}
    cpu: dict[Any, list[float]] = {}
    for _ in range(args.rounds):
        for t in threads:
            numba.set_num_threads(t)
            torch.set_num_threads(t)
            with threadpool_limits(t):
                for name in layers:
                    for kind, fn in calls[name].items():
                        fn()
                        for _ in range(args.calls):
                            w0, c0 = time.perf_counter(), time.process_time()
                            fn()
                            w1, c1 = time.perf_counter(), time.process_time()
                            wall.setdefault((name, kind, t), []).append(w1 - w0)
                            cpu.setdefault((name, kind, t), []).append(c1 - c0)
    print(f"{'layer':8} {'call':6} thr  wall min / med ms   cpu med ms")
    for (name, kind, t), v in wall.items():
        c = cpu[(name, kind, t)]
        print(
            f"{name:8} {kind:6} {t:3}  {min(v) * 1e3:7.3f} / {statistics.median(v) * 1e3:7.3f}"
            f"   {statistics.median(c) * 1e3:7.3f}"
        )


if __name__ == "__main__":
    main()
