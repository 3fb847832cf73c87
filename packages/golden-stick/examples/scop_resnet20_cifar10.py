"""SCOP on ResNet-20 / CIFAR-10: float baseline, knockoff phase, masked fine-tune, physical
export; compared with the float network trained for the same total budget. One command:

    python examples/scop_resnet20_cifar10.py --data ../../shared/data/cifar-10/cifar-10-batches-bin

Scaled to a 2-core machine: --train samples of batch 1 (default 10000), validation on
--val samples of batch 4. Prints params, FLOPs, accuracy and batch-64 speed of the
unpruned and the exported pruned network (measured in the same run).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import tempfile

from sporeling.core import set_seed
from sporeling.goldenstick import PrunerFtCompressAlgo, PrunerKfCompressAlgo
from sporeling.goldenstick.datasets import load_cifar10
from sporeling.goldenstick.export import export_network
from sporeling.goldenstick.models import ResNet20
from sporeling.goldenstick.workflow import count_flops, evaluate, measure_speed, param_count, train


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--train", type=int, default=10000)
    p.add_argument("--val", type=int, default=2000)
    p.add_argument("--epochs", type=int, default=2, help="float pre-training epochs")
    p.add_argument("--kf-epochs", type=int, default=1)
    p.add_argument("--ft-epochs", type=int, default=1)
    p.add_argument("--rate", type=float, default=0.45)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    set_seed(args.seed)
    xt, yt = load_cifar10(args.data, (1,), args.train)
    xv, yv = load_cifar10(args.data, (4,), args.val)
    net = ResNet20()
    train(net, xt, yt, args.epochs, 64, 0.05, seed=args.seed)
    # the unpruned network with the same total budget
    budget = ResNet20()
    kf = PrunerKfCompressAlgo({}).apply(net)
    train(kf, xt, yt, args.kf_epochs, 64, 0.02, seed=args.seed + 1)
    ft = PrunerFtCompressAlgo({"prune_rate": args.rate})
    masked = ft.apply(kf)
    train(masked, xt, yt, args.ft_epochs, 64, 0.02, seed=args.seed + 2)
    small = ft.convert(masked)
    paths = export_network(small, tempfile.mkdtemp(), "resnet20_pruned")
    train(budget, xt, yt, args.epochs + args.kf_epochs + args.ft_epochs, 64, 0.05, seed=args.seed)
    shape = (3, 32, 32)
    # the exported network, reloaded from its description and checkpoint, is what is timed
    spec = importlib.util.spec_from_file_location("resnet20_pruned", paths["description"])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    exported = module.load()
    load = os.getloadavg()
    print(
        json.dumps(
            {
                "unpruned_same_budget_accuracy": evaluate(budget, xv, yv),
                "pruned_accuracy": evaluate(small, xv, yv),
                "params": [param_count(budget), param_count(small)],
                "flops": [count_flops(budget, shape), count_flops(small, shape)],
                "exported_accuracy": evaluate(exported, xv, yv),
                "ms_batch64": [
                    round(measure_speed(budget, xv[:64]), 1),
                    round(measure_speed(exported, xv[:64]), 1),
                ],
                "cpu_ms_batch64": [
                    round(measure_speed(budget, xv[:64], clock="cpu"), 1),
                    round(measure_speed(exported, xv[:64], clock="cpu"), 1),
                ],
                "load_average": [round(v, 2) for v in load + os.getloadavg()],
                "export": paths,
                "train_samples": len(xt),
                "epochs": [args.epochs, args.kf_epochs, args.ft_epochs],
            }
        )
    )


if __name__ == "__main__":
    main()
