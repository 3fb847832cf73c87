"""`sporeling-data bench SPEC`: run a pipeline for N batches and report rows per second."""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence

from sporeling.data.cli import SUCCESS


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="sporeling-data bench",
        description="Build the pipeline a spec describes, run it for N batches (rows when it "
        "does not batch) after a warm-up, and report rows (images) per second.",
    )
    parser.add_argument("spec", metavar="SPEC", help="pipeline spec (.yaml, .yml or .json)")
    parser.add_argument("--batches", type=int, help="timed batches (default: spec or 20)")
    parser.add_argument("--warmup", type=int, help="untimed batches first (default: spec or 1)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    args = parser.parse_args(argv)

    from sporeling.data._cli.common import emit, epochs, is_batched, open_spec

    ds, spec = open_spec(args.spec)
    settings = spec.get("bench") or {}
    batches = args.batches if args.batches is not None else int(settings.get("batches", 20))
    warmup = args.warmup if args.warmup is not None else int(settings.get("warmup", 1))
    if batches < 1 or warmup < 0:
        parser.error("--batches must be >= 1 and --warmup >= 0")
    batched = is_batched(spec)
    stream = epochs(ds)
    t_start = time.perf_counter()
    for _ in range(warmup):
        next(stream)
    t0 = time.perf_counter()
    rows, first = 0, None
    for _ in range(batches):
        row = next(stream)
        first = row
        rows += int(row[0].shape[0]) if batched and row[0].ndim > 0 else 1
    elapsed = time.perf_counter() - t0
    stream.close()
    unit = "batches" if batched else "rows"
    names = list(ds.get_col_names())
    shapes = {n: [list(v.shape), str(v.dtype)] for n, v in zip(names, first or [])}
    load = [round(v, 2) for v in os.getloadavg()]
    data = {
        "spec": args.spec,
        unit: batches,
        "rows": rows,
        "seconds": elapsed,
        "rows_per_s": rows / elapsed if elapsed > 0 else float("inf"),
        "warmup": warmup,
        "warmup_seconds": t0 - t_start,
        "columns": shapes,
        "load_average": load,
    }
    cols = ", ".join(f"{n} {tuple(s)} {d}" for n, (s, d) in shapes.items())
    text = (
        f"{args.spec}: {batches} {unit} ({rows} rows) in {elapsed:.3f} s: "
        f"{data['rows_per_s']:.1f} rows/s ({elapsed / batches * 1e3:.1f} ms per "
        f"{unit[:-1] if unit == 'rows' else 'batch'})\n"
        f"warm-up: {warmup} {unit} in {data['warmup_seconds']:.3f} s (not timed)\n"
        f"last {unit[:-1] if unit == 'rows' else 'batch'}: {cols}\n"
        f"load average: {load[0]} {load[1]} {load[2]} ({os.cpu_count()} CPUs)\n"
    )
    emit(data, args.json, text)
    return SUCCESS
