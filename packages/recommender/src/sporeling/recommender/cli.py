"""``sporeling-rec``: preprocess Criteo lines, train and evaluate Wide&Deep, benchmark.

sporeling-rec preprocess FILE [FILE ...] --out DIR [--min-freq 2] [--workers 2]
sporeling-rec train DIR [--epochs 1] [--batch-size 1000] [--model wide_deep] [--ckpt F]
sporeling-rec eval DIR --ckpt F
sporeling-rec bench [--vocab 1000000] [--batch-size 1024] [--steps 20]

Subcommands import their modules only when run, so ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from ._version import __version__

OK, ERROR, USAGE_ERROR = 0, 1, 2

# name -> (module, summary); each module has add_arguments(parser) and run(args) -> int
COMMANDS = {
    "preprocess": ("._cli_preprocess", "raw Criteo lines -> records (two passes, parallel)"),
    "train": ("._cli_train", "train a model on preprocessed records, report AUC"),
    "eval": ("._cli_eval", "AUC and log loss of a checkpoint on the test split"),
    "bench": ("._cli_bench", "training throughput on synthetic Criteo-like data"),
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sporeling-rec", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, summary) in COMMANDS.items():
        sub.add_parser(name, help=summary, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    if not args or args[0] not in COMMANDS:
        parser.parse_args(args or ["--help"])
        return USAGE_ERROR
    module = importlib.import_module(COMMANDS[args[0]][0], __package__)
    sub = argparse.ArgumentParser(prog=f"sporeling-rec {args[0]}", description=COMMANDS[args[0]][1])
    module.add_arguments(sub)
    opts = sub.parse_args(args[1:])
    try:
        return int(module.run(opts))
    except (ValueError, FileNotFoundError, TypeError) as exc:
        print(f"sporeling-rec {args[0]}: error: {exc}", file=sys.stderr)
        return ERROR
