"""The ``sporeling-data`` command: look at a dataset, benchmark a pipeline, see its output.

    sporeling-data inspect PATH_OR_SPEC [--samples N] [--json]
    sporeling-data bench SPEC.yaml [--batches N] [--warmup N] [--json]
    sporeling-data grid SPEC.yaml --out grid.png [--rows R] [--cols C] [--column NAME]

A spec is a YAML (or JSON) file naming a source and the pipeline steps applied to it; see
`sporeling.data._cli.spec`. Subcommands sit in a lazy registry of (module, function,
summary), so ``--help`` imports nothing heavy; each takes its own argument list and returns
one of the exit codes below. Errors go to stderr as ``sporeling-data CMD: error: ...``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

#: Exit codes (as pip's status_codes).
SUCCESS = 0
ERROR = 1  # the command ran and failed (bad data, pipeline error)
USAGE_ERROR = 2  # bad command line
MISSING_EXTRA = 3  # an optional dependency is not installed (the message names the extra)
SPEC_ERROR = 4  # the spec file is unreadable or describes an invalid pipeline

#: name -> (module, function, one-line summary)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "inspect": (
        "sporeling.data._cli.inspect",
        "main",
        "show a dataset's size, columns (shape, dtype) and a few samples",
    ),
    "bench": (
        "sporeling.data._cli.bench",
        "main",
        "run a pipeline from a YAML spec for N batches and report rows (images) per second",
    ),
    "grid": (
        "sporeling.data._cli.grid",
        "main",
        "save a PNG grid of the images a pipeline from a YAML spec produces",
    ),
}


class CliError(Exception):
    """A user-facing failure with its exit code."""

    def __init__(self, message: str, code: int = ERROR) -> None:
        super().__init__(message)
        self.code = code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sporeling-data`` console script."""
    from sporeling.data._version import __version__

    parser = argparse.ArgumentParser(
        prog="sporeling-data",
        description="Sporeling data: inspect datasets, benchmark pipelines, preview augmentations.",
    )
    parser.add_argument(
        "--version", action="version", version=f"sporeling-data-transforms {__version__}"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, _, summary) in COMMANDS.items():
        sub.add_parser(name, help=summary, add_help=False)
    try:
        args, rest = parser.parse_known_args(argv)
    except SystemExit as exc:  # --help, --version, or an unknown command
        return int(exc.code or 0)
    if args.command is None:
        parser.print_help(sys.stderr)
        return USAGE_ERROR
    module, func, _ = COMMANDS[args.command]
    try:
        return int(getattr(importlib.import_module(module), func)(rest))
    except SystemExit as exc:  # argparse of the subcommand: --help or a usage error
        return int(exc.code or 0)
    except CliError as exc:
        print(f"sporeling-data {args.command}: error: {exc}", file=sys.stderr)
        return exc.code
    except (ValueError, TypeError, KeyError, OSError, RuntimeError) as exc:
        print(f"sporeling-data {args.command}: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return ERROR
