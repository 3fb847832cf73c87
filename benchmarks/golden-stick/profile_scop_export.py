"""Where a SCOP export's forward spends its time: the unpruned ResNet-20 against the export
of ``PrunerFtCompressAlgo({"prune_rate": 0.45, "prune_residual": False, "round_to": 8})``,
reloaded from its folder with BN kept and with BN folded (``export_network(fold_bn=True)``:
Conv2d + BN, and Conv2d + BN + ReLU as one ``Conv2dBnAct``).
Batch 64, eval mode, eager (as ``bench_compression.py`` and the examples time it); each
Conv2d / BatchNorm2d / ReLU / Dense ``construct`` timed by process CPU time, the three
forwards alternated per round. Random weights (the structure is what is timed).

    NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python profile_scop_export.py --rounds 20
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import os
import tempfile
import time

import numpy as np

from sporeling.core import Tensor, nn, set_seed
from sporeling.goldenstick import PrunerFtCompressAlgo, PrunerKfCompressAlgo
from sporeling.goldenstick.export import export_network
from sporeling.goldenstick.models import ResNet20
from sporeling.goldenstick.pruner import KfConv2d

_TIMED = (nn.Conv2d, nn.Conv2dBnAct, nn.BatchNorm2d, nn.ReLU, nn.Dense)


def _reloaded(net: nn.Cell, fold_bn: bool, name: str) -> nn.Cell:
    paths = export_network(net, tempfile.mkdtemp(), name, fold_bn=fold_bn)
    spec = importlib.util.spec_from_file_location(name, paths["description"])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.load()


def _time_layers(net: nn.Cell, tag: str, acc: dict) -> None:
    """Wrap each timed layer's ``construct`` to add its CPU time to ``acc[(tag, type, name)]``."""
    for name, cell in net.cells_and_names():
        if isinstance(cell, _TIMED):
            inner, key = cell.construct, (tag, type(cell).__name__, name)

            def timed(*args, _inner=inner, _key=key):
                start = time.process_time()
                out = _inner(*args)
                acc[_key] += time.process_time() - start
                return out

            cell.construct = timed


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=10)
    args = p.parse_args()
    set_seed(0)
    rng = np.random.default_rng(0)
    x = Tensor(rng.standard_normal((64, 3, 32, 32)).astype(np.float32))
    res = ResNet20()
    kf = PrunerKfCompressAlgo({}).apply(res)
    for _, cell in kf.cells_and_names():
        if isinstance(cell, KfConv2d):
            scale = rng.uniform(0, 1, cell.kfscale.shape).astype(np.float32)
            cell.kfscale.set_data(Tensor(scale))
    ft = PrunerFtCompressAlgo({"prune_rate": 0.45, "round_to": 8, "prune_residual": False})
    small = ft.convert(ft.apply(kf))
    nets = {
        "unpruned": res,
        "export": _reloaded(small, False, "export"),
        "export_folded": _reloaded(small, True, "export_folded"),
    }
    acc: dict = collections.defaultdict(float)
    for tag, net in nets.items():
        net.set_train(False)
        _time_layers(net, tag, acc)
        net(x)
        net(x)
    acc.clear()
    totals: dict = {k: [] for k in nets}
    for _ in range(args.rounds):
        for tag, net in nets.items():
            start = time.process_time()
            net(x)
            totals[tag].append((time.process_time() - start) * 1e3)
    per = {key: v / args.rounds * 1e3 for key, v in acc.items()}  # ms per forward
    for tag in nets:
        by_type: dict = collections.defaultdict(float)
        for (t, kind, _), ms in per.items():
            if t == tag:
                by_type[kind] += ms
        total = float(np.mean(totals[tag]))
        rest = total - sum(by_type.values())
        layers = ", ".join(f"{k} {v:.2f}" for k, v in by_type.items())
        print(f"{tag}: total {total:.1f} ms (median {np.median(totals[tag]):.1f}); {layers}; ")
        print(f"    residual adds, mean and glue {rest:.2f} ms")
    print("conv (ms): unpruned / export / export folded")
    for (tag, kind, name), ms in sorted(per.items()):
        if tag == "unpruned" and kind == "Conv2d":
            pruned = per.get(("export", "Conv2d", name), 0.0)
            # folded: "conv1" -> "conv1_bn" or, with its ReLU, the Conv2dBnAct
            # "conv1_bn_relu"; a SequentialCell's "down.0" -> "down.conv2d_bn"
            fname = name + "_bn" if not name.endswith(".0") else name[:-2] + ".conv2d_bn"
            folded = per.get(("export_folded", "Conv2d", fname), 0.0) or per.get(
                ("export_folded", "Conv2dBnAct", name + "_bn_relu"), 0.0
            )
            print(f"  {name:18s} {ms:6.3f} {pruned:6.3f} {folded:6.3f}")
    print("load average", [round(v, 2) for v in os.getloadavg()])


if __name__ == "__main__":
    main()
