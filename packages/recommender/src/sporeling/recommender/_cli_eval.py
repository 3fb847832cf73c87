"""``sporeling-rec eval``."""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", help="a folder written by `sporeling-rec preprocess`")
    p.add_argument("--ckpt", required=True, help="a checkpoint written by `sporeling-rec train`")
    p.add_argument("--batch-size", type=int, default=1000)
    p.add_argument("--split", default="test")


def run(a: argparse.Namespace) -> int:
    from .runner import evaluate, load

    net, _ = load(a.ckpt)
    res = evaluate(net, a.dataset, a.batch_size, a.split)
    print(f"{a.split}: AUC {res['auc']:.5f}, log loss {res['logloss']:.5f} over {res['rows']} rows")
    return 0
