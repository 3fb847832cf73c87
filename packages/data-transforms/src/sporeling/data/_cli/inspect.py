"""`sporeling-data inspect PATH_OR_SPEC`: size, columns (shape, dtype) and a few samples."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

import numpy as np

from sporeling.data.cli import SUCCESS


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="sporeling-data inspect",
        description="Show a dataset's size, its columns (shape, dtype) and a few samples. "
        "PATH_OR_SPEC is a spec (.yaml/.json), an image folder (class subfolders), an MNIST "
        "or CIFAR folder, or a .csv/.txt/.npy/.npz file.",
    )
    parser.add_argument("target", metavar="PATH_OR_SPEC")
    parser.add_argument("--samples", type=int, default=3, help="samples to show (default 3)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    args = parser.parse_args(argv)
    if args.samples < 0:
        parser.error("--samples must be >= 0")

    from sporeling.data._cli.common import describe, emit, open_target

    ds, _, what = open_target(args.target)
    size = ds.get_dataset_size()
    names = list(ds.get_col_names())
    shapes: dict[str, set[tuple[int, ...]]] = {n: set() for n in names}
    dtypes: dict[str, set[str]] = {n: set() for n in names}
    samples: list[dict[str, str]] = []
    # Read a few rows to report shapes and dtypes (at least one, even with --samples 0).
    it = ds.create_tuple_iterator(output_numpy=True, num_epochs=1)
    for i, row in enumerate(it):
        row = [np.asarray(v) for v in row]
        for name, value in zip(names, row):
            shapes[name].add(tuple(value.shape))
            dtypes[name].add(str(value.dtype))
        if i < args.samples:
            samples.append({name: describe(v) for name, v in zip(names, row)})
        if i + 1 >= max(args.samples, 1):
            break
    columns: list[dict[str, Any]] = [
        {
            "name": n,
            "dtype": "/".join(sorted(dtypes[n])),
            "shape": [list(s) for s in sorted(shapes[n])],
        }
        for n in names
    ]
    lines = [f"{what}", f"size: {size} rows", "columns:"]
    width = max((len(n) for n in names), default=4)
    for col in columns:
        shape = " | ".join(str(tuple(s)) for s in col["shape"]) or "?"
        note = "  (varies among the rows read)" if len(col["shape"]) > 1 else ""
        lines.append(f"  {col['name']:<{width}}  {col['dtype']:<8} {shape}{note}")
    for i, sample in enumerate(samples):
        lines.append(f"sample {i}:")
        lines += [f"  {n:<{width}}  {v}" for n, v in sample.items()]
    data = {"source": what, "size": size, "columns": columns, "samples": samples}
    emit(data, args.json, "\n".join(lines) + "\n")
    return SUCCESS
