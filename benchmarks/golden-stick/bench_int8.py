"""int8 (SimQAT's deploy form) against float32 inference at batch 64: LeNet-5 and ResNet-20,
whole network and the quantized layers alone (forward hooks), best of --repeats.

    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \\
        .nox/tests-package-golden-stick/bin/python benchmarks/golden-stick/bench_int8.py

Prints a JSON object (wall and CPU times, and the load average before and after). Random
weights, a calibration pass on random inputs; wall times are noisy on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from sporeling.core import Tensor, nn, set_seed
from sporeling.goldenstick import SimulatedQuantizationAwareTraining
from sporeling.goldenstick.deploy_runtime import Int8Linear
from sporeling.goldenstick.models import LeNet5, ResNet20


def _layer_time(net: nn.Cell, kinds: tuple[type, ...], x: Tensor) -> float:
    """Seconds spent inside layers of ``kinds`` during one forward."""
    spent = [0.0]
    starts: list[float] = []
    handles = []
    for _, cell in net.cells_and_names():
        if isinstance(cell, kinds):
            handles.append(
                cell.register_forward_pre_hook(lambda c, i: starts.append(time.perf_counter()))
            )
            handles.append(
                cell.register_forward_hook(
                    lambda c, i, o: spent.__setitem__(
                        0, spent[0] + time.perf_counter() - starts.pop()
                    )
                )
            )
    net(x)
    for h in handles:
        h.remove()
    return spent[0]


def _best(net: nn.Cell, x: Tensor, repeats: int) -> tuple[float, float]:
    """Best wall time and best CPU time (of this process: all its threads) of a forward.
    On a shared machine the CPU time is the steadier number of the two."""
    net(x)
    wall = cpu = float("inf")
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        net(x)
        wall = min(wall, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
    return wall, cpu


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--models", default="lenet5,resnet20")
    args = p.parse_args()
    rng = np.random.default_rng(0)
    load = os.getloadavg()
    out: dict = {}
    for name, make, shape in (("lenet5", LeNet5, (1, 32, 32)), ("resnet20", ResNet20, (3, 32, 32))):
        if name not in args.models.split(","):
            continue
        set_seed(0)
        net = make()
        x = Tensor(rng.standard_normal((64, *shape)).astype(np.float32))
        algo = SimulatedQuantizationAwareTraining({"enable_fusion": True})
        qnet = algo.apply(net)
        qnet.set_train(True)
        qnet(x)  # calibration
        net.set_train(False)
        fp32_ms, fp32_cpu = (v * 1e3 for v in _best(net, x, args.repeats))
        fp32_layers = min(_layer_time(net, (nn.Conv2d, nn.Dense), x) for _ in range(args.repeats))
        int8 = algo.convert(qnet)
        int8_ms, int8_cpu = (v * 1e3 for v in _best(int8, x, args.repeats))
        int8_layers = min(_layer_time(int8, (Int8Linear,), x) for _ in range(args.repeats))
        out[name] = {
            "fp32_ms": round(fp32_ms, 2),
            "int8_ms": round(int8_ms, 2),
            "speedup": round(fp32_ms / int8_ms, 2),
            "fp32_cpu_ms": round(fp32_cpu, 2),
            "int8_cpu_ms": round(int8_cpu, 2),
            "cpu_speedup": round(fp32_cpu / int8_cpu, 2),
            "fp32_conv_dense_ms": round(fp32_layers * 1e3, 2),
            "int8_layers_ms": round(int8_layers * 1e3, 2),
        }
        print(json.dumps({name: out[name]}), flush=True)
    out["load_average"] = [round(v, 2) for v in load] + [round(v, 2) for v in os.getloadavg()]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
