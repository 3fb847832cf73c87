"""``sporeling convert-ckpt IN OUT [--to FORMAT] [--check] [--dec-key-file K] [--enc-key-file K]``.

Converts MindSpore's .ckpt <-> safetensors.

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


def convert_checkpoint(
    src: str,
    dst: str,
    to: str | None = None,
    dec_key: bytes | None = None,
    dec_mode: str = "AES-GCM",
    enc_key: bytes | None = None,
    enc_mode: str = "AES-GCM",
) -> dict[str, Any]:
    """Convert ``src`` into ``dst`` in format ``to`` (default: from ``dst``'s suffix).

    Returns what was read. Raises ``ValueError`` when ``dst`` is ``src`` (the conversion
    would read and overwrite one file), does not end ``.ckpt``/``.safetensors``, or ``to``
    is not ``'ckpt'``/``'safetensors'``. ``dec_key`` opens an encrypted MindSpore input;
    ``enc_key`` encrypts a ``.ckpt`` output (MindSpore's AES-GCM/AES-CBC).
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
    params = load_checkpoint(src, dec_key=dec_key, dec_mode=dec_mode)
    save_checkpoint(params, dst, format=fmt, enc_key=enc_key, enc_mode=enc_mode)
    return params


def _entry(value: Any) -> tuple[str, Any]:
    if isinstance(value, Tensor):
        arr = value.asnumpy()
        return "tensor", (arr.dtype, arr.shape, np.ascontiguousarray(arr).tobytes())
    return "str", value


def compare_checkpoints(
    expected: dict[str, Any], path: str, dec_key: bytes | None = None, dec_mode: str = "AES-GCM"
) -> list[str]:
    """What differs between ``expected`` (as load_checkpoint returns) and the file ``path``."""
    got = load_checkpoint(path, dec_key=dec_key, dec_mode=dec_mode)
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
    for side, what in (("dec", "INPUT is encrypted"), ("enc", "encrypt a .ckpt OUTPUT")):
        parser.add_argument(
            f"--{side}-key-file", metavar="PATH", help=f"a file holding the AES key: {what}"
        )
        parser.add_argument(
            f"--{side}-mode", default="AES-GCM", choices=("AES-GCM", "AES-CBC"), help="cipher mode"
        )
    args = parser.parse_args(argv)
    keys = {}
    for side in ("dec", "enc"):
        key_file = getattr(args, f"{side}_key_file")
        if key_file is not None:
            with open(key_file, "rb") as f:
                keys[side] = f.read()
    params = convert_checkpoint(
        args.input,
        args.output,
        args.to,
        keys.get("dec"),
        args.dec_mode,
        keys.get("enc"),
        args.enc_mode,
    )
    fmt = _output_format(args.output, args.to)
    print(f"wrote {len(params)} entries to {args.output} ({fmt})")
    if args.check:
        problems = compare_checkpoints(params, args.output, keys.get("enc"), args.enc_mode)
        if problems:
            for line in problems:
                print(f"check failed: {line}", file=sys.stderr)
            return 1
        print(f"check: {len(params)} entries equal (names, dtypes, shapes, bytes)")
    return 0
