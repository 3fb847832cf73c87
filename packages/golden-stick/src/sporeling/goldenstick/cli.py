"""``sporeling-gs``: compress, evaluate and compare the example models.

  sporeling-gs quantize --model lenet5 --algo simqat --data mnist:DIR --out OUT
  sporeling-gs prune    --model resnet20 --rate 0.45 [--round-to 8] --data cifar10:DIR --out OUT
  sporeling-gs eval     --model lenet5 --ckpt FILE --data mnist:DIR   (or --compressed OUT)
  sporeling-gs report   --model lenet5 --ckpt FILE --compressed OUT --data mnist:DIR

``--data`` is ``mnist:DIR``, ``cifar10:DIR[@1,2,3]`` or ``synthetic:COUNT``; ``--limit``
keeps the first N samples, ``--val`` the last N of them for evaluation.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import numpy as np

from sporeling.core import load_checkpoint, load_param_into_net, save_checkpoint, set_seed

from . import __version__
from .artifacts import load_compressed, save_quantized, weights_file, write_meta
from .datasets import load_data
from .export import export_network
from .models import MODELS, build_model
from .pruner import PrunerFtCompressAlgo, PrunerKfCompressAlgo
from .quantization import QuantDtype, SimulatedQuantizationAwareTraining, SlbQuantAwareTraining
from .workflow import count_flops, evaluate, measure_speed, param_count, train

__all__ = ["main"]


def _data(args: argparse.Namespace) -> tuple[Any, Any, Any, Any]:
    shape = MODELS[args.model][1]
    x, y = load_data(args.data, shape, args.limit)
    n_val = min(args.val, len(x) // 2)
    return x[:-n_val], y[:-n_val], x[-n_val:], y[-n_val:]


def _model(args: argparse.Namespace) -> Any:
    net = build_model(args.model)
    if getattr(args, "ckpt", None):
        missing, _ = load_param_into_net(net, load_checkpoint(args.ckpt))
        if missing:
            raise SystemExit(f"sporeling-gs: {args.ckpt} lacks parameters {missing[:5]}")
    return net


def cmd_train(args: argparse.Namespace) -> dict[str, Any]:
    xt, yt, xv, yv = _data(args)
    net = train(_model(args), xt, yt, args.epochs, args.batch, args.lr, seed=args.seed)
    os.makedirs(os.path.dirname(os.path.abspath(args.save)), exist_ok=True)
    save_checkpoint(net, args.save)
    return {"model": args.model, "accuracy": evaluate(net, xv, yv), "checkpoint": args.save}


def cmd_quantize(args: argparse.Namespace) -> dict[str, Any]:
    xt, yt, xv, yv = _data(args)
    net = _model(args)
    base = evaluate(net, xv, yv)
    if args.algo == "simqat":
        config: dict[str, Any] = {"enable_fusion": args.fusion, "bn_fold": args.bn_fold}
        algo: Any = SimulatedQuantizationAwareTraining(config)
        qnet = algo.apply(net)
        if args.epochs > 0:
            train(qnet, xt, yt, args.epochs, args.batch, args.lr, seed=args.seed)
        else:  # calibration only: observe the activation ranges on a few batches
            qnet.set_train(True)
            for i in range(0, min(len(xt), 8 * args.batch), args.batch):
                from sporeling.core import Tensor

                qnet(Tensor(xt[i : i + args.batch]))
        fake = evaluate(qnet, xv, yv)
        out = algo.convert(qnet)
    else:
        dtype = {1: QuantDtype.INT1, 2: QuantDtype.INT2, 4: QuantDtype.INT4}[args.bits]
        config = {"quant_dtype": dtype, "epoch_size": max(args.epochs, 1)}
        algo = SlbQuantAwareTraining(config)
        qnet = algo.apply(net)
        train(qnet, xt, yt, args.epochs, args.batch, args.lr, algo.callbacks(), args.seed)
        fake = evaluate(qnet, xv, yv)
        out = algo.convert(qnet)
    path = save_quantized(out, args.out, args.algo, args.model, config)
    return {
        "float_accuracy": base,
        "fake_quant_accuracy": fake,
        "deployed_accuracy": evaluate(out, xv, yv),
        "file": path,
        "file_bytes": os.path.getsize(path),
    }


def cmd_prune(args: argparse.Namespace) -> dict[str, Any]:
    xt, yt, xv, yv = _data(args)
    net = _model(args)
    base = evaluate(net, xv, yv)
    kf_algo = PrunerKfCompressAlgo({})
    kf = kf_algo.apply(net)
    train(kf, xt, yt, args.kf_epochs, args.batch, args.lr, seed=args.seed)
    ft_algo = PrunerFtCompressAlgo({"prune_rate": args.rate, "round_to": args.round_to})
    masked = ft_algo.apply(kf)
    train(masked, xt, yt, args.ft_epochs, args.batch, args.lr, seed=args.seed + 1)
    small = ft_algo.convert(masked)
    # an inference export: each Conv2d + BatchNorm2d folded into one conv with a bias
    paths = export_network(small, args.out, "pruned", fold_bn=True)
    meta = {"prune_rate": args.rate, "round_to": args.round_to, "fold_bn": True}
    write_meta(args.out, "scop", args.model, meta)
    return {
        "float_accuracy": base,
        "masked_accuracy": evaluate(masked, xv, yv),
        "pruned_accuracy": evaluate(small, xv, yv),
        "params": [param_count(net), param_count(small)],
        **paths,
    }


def cmd_eval(args: argparse.Namespace) -> dict[str, Any]:
    _, _, xv, yv = _data(args)
    net = load_compressed(args.compressed)[0] if args.compressed else _model(args)
    return {"accuracy": evaluate(net, xv, yv), "samples": len(xv)}


def cmd_report(args: argparse.Namespace) -> dict[str, Any]:
    _, _, xv, yv = _data(args)
    shape = MODELS[args.model][1]
    original = _model(args)
    compressed, meta = load_compressed(args.compressed)
    batch = xv[:64] if len(xv) >= 64 else np.resize(xv, (64, *shape))
    rows = {}
    for name, net, file in (
        ("original", original, args.ckpt),
        ("compressed", compressed, weights_file(args.compressed)),
    ):
        rows[name] = {
            "params": param_count(net),
            "flops": count_flops(net, shape),
            "file_bytes": os.path.getsize(file) if file else None,
            "ms_per_batch64": round(measure_speed(net, batch), 2),
            "cpu_ms_per_batch64": round(measure_speed(net, batch, clock="cpu"), 2),
            "accuracy": evaluate(net, xv, yv),
        }
    rows["kind"] = meta["kind"]
    return rows


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sporeling-gs", description=__doc__.split("\n")[0])
    p.add_argument("--version", action="version", version=f"sporeling-gs {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp: argparse.ArgumentParser, ckpt: bool = True) -> None:
        sp.add_argument("--model", required=True, choices=sorted(MODELS))
        if ckpt:
            sp.add_argument("--ckpt", help="float checkpoint (safetensors) of the model")
        sp.add_argument("--data", required=True, help="mnist:DIR, cifar10:DIR[@1,2] or synthetic:N")
        sp.add_argument("--limit", type=int, default=None, help="use the first N samples")
        sp.add_argument("--val", type=int, default=1000, help="hold out the last N for eval")
        sp.add_argument("--seed", type=int, default=0)
        sp.add_argument("--batch", type=int, default=64)
        sp.add_argument("--lr", type=float, default=0.01)

    t = sub.add_parser("train", help="train a float model (the baseline)")
    common(t, ckpt=False)
    t.add_argument("--epochs", type=int, default=1)
    t.add_argument("--save", required=True)
    t.set_defaults(fn=cmd_train)
    q = sub.add_parser("quantize", help="SimQAT (int8) or SLB (1/2/4-bit) and export")
    common(q)
    q.add_argument("--algo", choices=("simqat", "slb"), default="simqat")
    q.add_argument("--bits", type=int, choices=(1, 2, 4), default=4, help="SLB weight bits")
    q.add_argument("--fusion", action="store_true", help="SimQAT enable_fusion")
    q.add_argument("--bn-fold", action="store_true", help="SimQAT bn_fold")
    q.add_argument("--epochs", type=int, default=1, help="QAT epochs (0: calibrate only)")
    q.add_argument("--out", required=True)
    q.set_defaults(fn=cmd_quantize)
    r = sub.add_parser("prune", help="SCOP: knockoff phase, masked fine-tune, physical export")
    common(r)
    r.add_argument("--rate", type=float, default=0.45)
    r.add_argument(
        "--round-to", type=int, default=1, help="kept channels per group to a multiple (1: off)"
    )
    r.add_argument("--kf-epochs", type=int, default=1)
    r.add_argument("--ft-epochs", type=int, default=1)
    r.add_argument("--out", required=True)
    r.set_defaults(fn=cmd_prune)
    e = sub.add_parser("eval", help="accuracy of a checkpoint or a compressed folder")
    common(e)
    e.add_argument("--compressed", help="a folder written by quantize/prune")
    e.set_defaults(fn=cmd_eval)
    rp = sub.add_parser("report", help="params, FLOPs, file size, speed, accuracy: before/after")
    common(rp)
    rp.add_argument("--compressed", required=True)
    rp.set_defaults(fn=cmd_report)
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    set_seed(args.seed)
    result = args.fn(args)
    json.dump(result, sys.stdout, indent=1, default=str)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
