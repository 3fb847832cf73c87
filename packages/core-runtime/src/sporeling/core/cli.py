"""The ``sporeling`` command: ``sporeling demo``, ``sporeling --version``.

Subcommands live in a lazy registry of (module, function, summary) so ``--help`` stays fast;
each takes its own argument list and returns an exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

SUCCESS = 0
ERROR = 1
USAGE_ERROR = 2

#: name -> (module, function, one-line summary)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "demo": ("sporeling.core.demo", "main", "train LeNet-5 on the embedded MNIST sample"),
    "launch": (
        "sporeling.core.communication.launch",
        "main",
        "run a script on N processes with mpiexec (the [mpi] extra)",
    ),
    "plan": ("sporeling.core.parallel.cost_model", "plan_main", "plan parallel layouts"),
    "reshard": ("sporeling.core.parallel.checkpoint", "reshard_main", "reshard a checkpoint"),
    "convert-ckpt": (
        "sporeling.core.train.convert_ckpt",
        "main",
        "convert a checkpoint between MindSpore .ckpt and safetensors",
    ),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sporeling`` console script."""
    from ._version import __version__

    parser = argparse.ArgumentParser(
        prog="sporeling",
        description="Sporeling core runtime: MindSpore's feature set on NumPy + Numba / CuPy.",
    )
    parser.add_argument(
        "--version", action="version", version=f"sporeling-core-runtime {__version__}"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, _, summary) in COMMANDS.items():
        sub.add_parser(name, help=summary, add_help=False)
    args, rest = parser.parse_known_args(argv)
    if args.command is None:
        parser.print_help()
        return USAGE_ERROR
    module, func, _ = COMMANDS[args.command]
    try:
        return int(getattr(importlib.import_module(module), func)(rest))
    except (ValueError, TypeError, OSError, RuntimeError) as exc:
        print(f"sporeling {args.command}: error: {exc}", file=sys.stderr)
        return ERROR
