"""SCOP on ResNet-20 / CIFAR-10: float pre-training, knockoff phase, masked fine-tune,
physical export; compared with the unpruned network trained with the same budget (from
the same pre-trained weights, the same weight-training epochs at the same learning
rates). One command:

    python examples/scop_resnet20_cifar10.py --data ../../shared/data/cifar-10/cifar-10-batches-bin

Scaled to a 2-core machine: --train samples of batches 1-3 (default 5000), validation on
--val samples of batch 4 (default all 10,000; the float and in-between phases on the first
--val-phases). The schedule (momentum SGD, batch 64): --epochs at --lr; the knockoff
phase, one pass over --kf-samples random training images (0: --kf-epochs epochs over all)
that trains only the kfscale factors (at --kf-scale-lr; --kf-weights trains the weights
too, at --kf-lr); masking and BN recalibration (--recalibrate-bn batches); then
--ft-epochs of masked fine-tuning at --ft-lr, the last of them at a tenth of it. The
control trains the same weight-training epochs. Prints params, FLOPs, accuracy after each
phase, pruned - control on the same images with its paired standard error, and batch-64
speed of the unpruned and the exported pruned network (measured in the same run); --out
appends the result line to a JSONL file.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time

import numpy as np

from sporeling.core import Model, Tensor, nn, set_seed
from sporeling.core.train import ArrayDataset
from sporeling.goldenstick import PrunerFtCompressAlgo, PrunerKfCompressAlgo
from sporeling.goldenstick.datasets import load_cifar10
from sporeling.goldenstick.export import export_network
from sporeling.goldenstick.fold_bn import fold_batchnorm
from sporeling.goldenstick.models import ResNet20
from sporeling.goldenstick.pruner import KfConv2d
from sporeling.goldenstick.workflow import (
    count_flops,
    measure_speed,
    param_count,
    recalibrate_bn,
    train,
)


def _train_knockoff(
    net, x, y, epochs: int, lr: float, scale_lr: float, seed: int, weights: bool
) -> None:
    """Momentum SGD as ``workflow.train``, with the ``kfscale`` factors in their own
    parameter group: at the weights' rate they barely leave 0.5 in a short run (their
    gradient is small), and the scores would rank noise. With ``weights=False`` only the
    factors are trained (the pre-trained weights, BN's gamma and beta included, stay as
    they are): trained on knockoff-mixed features, the weights no longer suit the real
    ones, and the network starts its fine-tune from far below its pre-trained accuracy."""
    if epochs <= 0:
        return
    scales = [p for p in net.trainable_params() if p.name.endswith("kfscale")]
    others = [p for p in net.trainable_params() if not p.name.endswith("kfscale")]
    if weights:
        groups = [{"params": others}, {"params": scales, "lr": scale_lr}]
        opt = nn.Momentum(groups, learning_rate=lr, momentum=0.9)
    else:
        opt = nn.Momentum(scales, learning_rate=scale_lr, momentum=0.9)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    data = ArrayDataset(x, y, batch_size=64, shuffle=True, seed=seed)
    Model(net, loss, opt).train(epochs, data, dataset_sink_mode=False)


def _schedule(args: argparse.Namespace) -> list[tuple[str, int, float]]:
    """(phase, epochs, lr) in order; the fine-tune's last epoch runs at a tenth of its lr."""
    ft_last = 1 if args.ft_epochs > 1 else 0
    return [
        ("float", args.epochs, args.lr),
        ("knockoff", args.kf_epochs, args.kf_lr),
        ("fine-tune", args.ft_epochs - ft_last, args.ft_lr),
        ("fine-tune", ft_last, args.ft_lr / 10),
    ]


def _control_schedule(args: argparse.Namespace) -> list[tuple[str, int, float]]:
    """The unpruned network's epochs after pre-training: the pruned network's
    weight-training ones (the knockoff phase only where it trains the weights)."""
    phases = _schedule(args)[1:]
    return phases if args.kf_weights else phases[1:]


def _correct(net, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per-image top-1 hits in eval mode, at batch 64 (on this machine's caches 2.4x less
    time per image than 256)."""
    net.set_train(False)
    hits = [
        net(Tensor(x[i : i + 64])).asnumpy().argmax(-1) == y[i : i + 64]
        for i in range(0, len(x), 64)
    ]
    return np.concatenate(hits)


def _alternated(nets: dict, x: np.ndarray, rounds: int) -> dict:
    """Best CPU and wall ms of one batch forward of each net (eval), the nets taken in turn
    each round so that load swings hit all alike, and the medians of the rounds' ratios
    unpruned / exported and unpruned_folded / exported."""
    t = Tensor(x)
    for net in nets.values():
        net.set_train(False)
        net(t)
    cpu: dict = {k: [] for k in nets}
    wall: dict = {k: [] for k in nets}
    for _ in range(rounds):
        for k, net in nets.items():
            w0, c0 = time.perf_counter(), time.process_time()
            net(t)
            cpu[k].append((time.process_time() - c0) * 1e3)
            wall[k].append((time.perf_counter() - w0) * 1e3)

    def ratio(times: dict, a: str) -> float:
        return round(float(np.median(np.array(times[a]) / np.array(times["exported"]))), 2)

    return {
        "rounds": rounds,
        "best_cpu_ms": {k: round(min(v), 1) for k, v in cpu.items()},
        "best_wall_ms": {k: round(min(v), 1) for k, v in wall.items()},
        "cpu_ratio_median": ratio(cpu, "unpruned"),
        "wall_ratio_median": ratio(wall, "unpruned"),
        "cpu_ratio_median_vs_folded": ratio(cpu, "unpruned_folded"),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--train", type=int, default=5000)
    p.add_argument("--val", type=int, default=10000, help="validation images (batch 4)")
    p.add_argument(
        "--val-phases",
        type=int,
        default=2000,
        help="validation images for the float and in-between phases (knockoff, masked)",
    )
    p.add_argument("--epochs", type=int, default=2, help="float pre-training epochs")
    p.add_argument("--kf-epochs", type=int, default=1)
    p.add_argument(
        "--kf-samples",
        type=int,
        default=2048,
        help="the knockoff phase is one pass over this many training images (a random "
        "subset; 0: --kf-epochs epochs over all of them)",
    )
    p.add_argument("--ft-epochs", type=int, default=5)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--kf-lr", type=float, default=0.02)
    p.add_argument("--kf-scale-lr", type=float, default=1.0, help="lr of the kfscale factors")
    p.add_argument(
        "--kf-weights",
        action="store_true",
        help="train the weights in the knockoff phase too (the earlier recipe); by default "
        "only the kfscale factors learn there",
    )
    p.add_argument("--ft-lr", type=float, default=0.02)
    p.add_argument("--rate", type=float, default=0.45)
    p.add_argument(
        "--keep-residual",
        action="store_true",
        help="leave the residual channel groups whole (prune_residual=False): only the "
        "channels inside each block are pruned",
    )
    p.add_argument(
        "--round-to",
        type=int,
        default=1,
        help="kept channels per group rounded to the nearest multiple (round_to; 8 keeps "
        "8/16/32 of ResNet-20's 16/32/64 at rate 0.45, 1: off)",
    )
    p.add_argument("--seed", type=int, default=1)
    p.add_argument(
        "--speed-rounds", type=int, default=15, help="alternated batch-64 forwards timed"
    )
    p.add_argument(
        "--recalibrate-bn",
        type=int,
        default=32,
        metavar="BATCHES",
        help="after masking, re-estimate the BatchNorm statistics on this many training "
        "batches of 64 (0: off); the knockoff epoch left them estimated on mixed batches",
    )
    p.add_argument("--out", default="", help="append the result line to this JSONL file")
    args = p.parse_args()
    start, cpu0 = time.perf_counter(), time.process_time()
    loads = [os.getloadavg()[0]]

    def log(**kv: object) -> None:  # progress on stderr, so a cut-short run still says something
        loads.append(os.getloadavg()[0])
        kv["wall_s"] = round(time.perf_counter() - start)
        kv["cpu_s"] = round(time.process_time() - cpu0)
        print(json.dumps(kv), file=sys.stderr, flush=True)

    set_seed(args.seed)
    batches = tuple(range(1, min(3, -(-args.train // 10000)) + 1))
    xt, yt = load_cifar10(args.data, batches, args.train)
    xv, yv = load_cifar10(args.data, (4,), args.val)
    xp, yp = xv[: args.val_phases], yv[: args.val_phases]
    (_, e1, lr1), (_, e2, lr2), (_, e3, lr3), (_, e4, lr4) = _schedule(args)
    net = ResNet20()
    train(net, xt, yt, e1, 64, lr1, seed=args.seed)
    acc = {"float": float(_correct(net, xp, yp).mean())}
    log(phase="float", accuracy=acc["float"])
    # the unpruned control starts from the same pre-trained weights (SCOP's phases share
    # the parameters of ``net``, so it gets a copy)
    budget = ResNet20()
    pairs = zip(budget.parameters_and_names(), net.parameters_and_names(), strict=True)
    for (name, mine), (same, theirs) in pairs:
        assert name == same, (name, same)
        mine.set_data(Tensor(theirs.asnumpy().copy()))
    kf = PrunerKfCompressAlgo({}).apply(net)
    if args.kf_samples > 0:
        chosen = np.random.default_rng(args.seed).permutation(len(xt))[: args.kf_samples]
        xk, yk, e2 = xt[chosen], yt[chosen], 1
    else:
        xk, yk = xt, yt
    _train_knockoff(
        kf, xk, yk, e2, lr2, args.kf_scale_lr, seed=args.seed + 1, weights=args.kf_weights
    )
    k = np.concatenate(
        [c.kfscale.asnumpy().ravel() for _, c in kf.cells_and_names() if isinstance(c, KfConv2d)]
    )
    kfscale = {"min": float(k.min()), "max": float(k.max()), "std": float(k.std())}
    acc["knockoff"] = float(_correct(kf, xp, yp).mean())
    log(phase="knockoff", accuracy=acc["knockoff"], kfscale=kfscale)
    ft = PrunerFtCompressAlgo(
        {
            "prune_rate": args.rate,
            "prune_residual": not args.keep_residual,
            "round_to": args.round_to,
        }
    )
    masked = ft.apply(kf)
    acc["masked_before_fine_tune"] = float(_correct(masked, xp, yp).mean())
    if args.recalibrate_bn > 0:
        recalibrate_bn(masked, xt, 64, args.recalibrate_bn)
        acc["masked_recalibrated"] = float(_correct(masked, xp, yp).mean())
    log(phase="masked", **{k: v for k, v in acc.items() if k.startswith("masked")})
    train(masked, xt, yt, e3, 64, lr3, seed=args.seed + 2)
    train(masked, xt, yt, e4, 64, lr4, seed=args.seed + 3)
    small = ft.convert(masked)
    hits_pruned = _correct(small, xv, yv)
    acc["pruned"] = float(hits_pruned.mean())
    # the masked network equals the pruned one (checked on the phase subset)
    acc["masked_agrees"] = bool(
        np.array_equal(_correct(masked, xp, yp), hits_pruned[: args.val_phases])
    )
    log(phase="fine-tune", accuracy=acc["pruned"], masked_agrees=acc["masked_agrees"])
    # the inference export: BN folded into the convs (acc["exported"] checks it)
    paths = export_network(small, tempfile.mkdtemp(), "resnet20_pruned", fold_bn=True)
    # the unpruned network with the same budget: after the same pre-training, the same
    # weight-training epochs at the same rates (the knockoff phase counts where it trains
    # the weights)
    for i, (_, epochs, lr) in enumerate(_control_schedule(args), 1):
        train(budget, xt, yt, epochs, 64, lr, seed=args.seed + i)
    hits_control = _correct(budget, xv, yv)
    acc["unpruned_same_budget"] = float(hits_control.mean())
    # pruned - control on the same images, and the standard error of that difference
    # from the images alone (the paired evaluation noise, not the training noise)
    diff = hits_pruned.astype(np.float64) - hits_control
    acc["pruned_minus_unpruned"] = float(diff.mean())
    acc["paired_standard_error"] = float(diff.std(ddof=1) / np.sqrt(len(diff)))
    log(phase="unpruned", accuracy=acc["unpruned_same_budget"])
    shape = (3, 32, 32)
    # the exported network, reloaded from its description and checkpoint, is what is timed
    spec = importlib.util.spec_from_file_location("resnet20_pruned", paths["description"])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    exported = module.load()
    acc["exported"] = float(_correct(exported, xv, yv).mean())
    loads.append(os.getloadavg()[0])
    result = {
        "accuracy": acc,
        "params": [param_count(budget), param_count(small)],
        "flops": [count_flops(budget, shape), count_flops(small, shape)],
        "ms_batch64": [
            round(measure_speed(budget, xv[:64]), 1),
            round(measure_speed(exported, xv[:64]), 1),
        ],
        "cpu_ms_batch64": [
            round(measure_speed(budget, xv[:64], clock="cpu"), 1),
            round(measure_speed(exported, xv[:64], clock="cpu"), 1),
        ],
        # the unpruned network, the export and the unpruned network with its BN folded the
        # same way (the pruning's own share), alternated round by round
        "batch64_alternated": _alternated(
            {"unpruned": budget, "exported": exported, "unpruned_folded": fold_batchnorm(budget)},
            xv[:64],
            args.speed_rounds,
        ),
        "kfscale_after_knockoff": kfscale,
        "load_average_1min": [round(min(loads), 2), round(max(loads), 2)],
        "wall_s": round(time.perf_counter() - start),
        "cpu_s": round(time.process_time() - cpu0),
        "export": paths,
        "train_samples": len(xt),
        "val_samples": len(xv),
        "seed": args.seed,
        "knockoff_trains_weights": args.kf_weights,
        "prune_residual": not args.keep_residual,
        "round_to": args.round_to,
        "recalibrate_bn_batches": args.recalibrate_bn,
        "schedule": _schedule(args),
        "knockoff_samples": len(xk) * e2,
        "control_schedule": _control_schedule(args),
        "threads": os.environ.get("NUMBA_NUM_THREADS", "default"),
    }
    print(json.dumps(result))
    if args.out:
        with open(args.out, "a") as fh:
            fh.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
