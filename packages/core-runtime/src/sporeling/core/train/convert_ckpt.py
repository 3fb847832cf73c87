"""``sporeling convert-ckpt IN OUT [--to FORMAT] [--check]``: MindSpore .ckpt <-> safetensors.

The input's format is found from its bytes (either is read by :func:`load_checkpoint`, so a
corrupt file gets the same :class:`CheckpointError`); the output's from ``--to`` or else its
suffix (``.safetensors`` -> safetensors, anything else -> MindSpore's ``.ckpt``). ``--check``
reads the written file back and compares every entry: name, dtype, shape and bytes.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..tensor import Tensor
from .serialization import load_checkpoint, save_checkpoint

__all__ = ["convert_checkpoint", "compare_checkpoints", "main"]


def _output_format(out: str, to: str | None) -> str:
    if to is not None:
        return to
    return "safetensors" if out.endswith(".safetensors") else "ckpt"


def convert_checkpoint(src: str, dst: str, to: str | None = None) -> dict[str, Any]:
    """Convert ``src`` into ``dst`` in format ``to`` (default: from ``dst``'s suffix).

    Returns what was read. Raises ``ValueError`` when ``dst`` is ``src`` (the conversion
    would read and overwrite one file), does not end ``.ckpt``/``.safetensors``, or ``to``
    is not ``'ckpt'``/``'safetensors'``.
    """
    if not dst.endswith((".ckpt", ".safetensors")):
        raise ValueError(
            f"convert-ckpt: the output '{dst}' expected a name ending .ckpt or .safetensors"
        )
    fmt = _output_format(dst, to)
    if fmt not in ("ckpt", "safetensors"):
        raise ValueError(f"convert-ckpt: --to expected 'ckpt' or 'safetensors', got {fmt!r}")
    if os.path.exists(dst) and os.path.samefile(src, dst):
        raise ValueError(f"convert-ckpt: the output '{dst}' is the input file")
    params = load_checkpoint(src)
    save_checkpoint(params, dst, format=fmt)
    return params


def _entry(value: Any) -> tuple[str, Any]:
    if isinstance(value, Tensor):
        arr = value.asnumpy()
        return "tensor", (arr.dtype, arr.shape, np.ascontiguousarray(arr).tobytes())
    return "str", value


def compare_checkpoints(expected: dict[str, Any], path: str) -> list[str]:
    """What differs between ``expected`` (as load_checkpoint returns) and the file ``path``."""
    got = load_checkpoint(path)
    problems = [f"'{k}' is missing" for k in expected if k not in got]
    problems += [f"'{k}' was not in the input" for k in got if k not in expected]
    for name in expected:
        if name in got and _entry(expected[name]) != _entry(got[name]):
            problems.append(f"'{name}' differs (dtype, shape or bytes)")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="sporeling convert-ckpt",
        description="Convert a checkpoint between MindSpore's .ckpt and safetensors.",
    )
    parser.add_argument("input", help="a MindSpore .ckpt or a safetensors checkpoint")
    parser.add_argument("output", help="the file to write (.safetensors or .ckpt)")
    parser.add_argument(
        "--to", choices=("ckpt", "safetensors"), help="output format (default: from OUTPUT)"
    )
    parser.add_argument(
        "--check", action="store_true", help="read OUTPUT back and compare every entry"
    )
    args = parser.parse_args(argv)
    params = convert_checkpoint(args.input, args.output, args.to)
    fmt = _output_format(args.output, args.to)
    print(f"wrote {len(params)} entries to {args.output} ({fmt})")
    if args.check:
        problems = compare_checkpoints(params, args.output)
        if problems:
            for line in problems:
                print(f"check failed: {line}", file=sys.stderr)
            return 1
        print(f"check: {len(params)} entries equal (names, dtypes, shapes, bytes)")
    return 0
