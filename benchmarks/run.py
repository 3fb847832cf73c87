"""Sporeling against PyTorch (CPU), side by side in one process on one machine.

    python benchmarks/run.py [--quick] [--only NAME[,NAME...]] [--device CPU|GPU] [--out DIR]

Prints a table and writes ``<out>/latest.json`` and ``<out>/latest.md`` (default out:
``benchmarks/results``). Times are medians over repeats of the time per iteration (or per
op), warm-up excluded. The speed ratio is ``torch time / sporeling time``: above 1 means
Sporeling is faster. Every case first checks that both frameworks compute the same values.
PyTorch gets as many intra-op threads as NumPy's BLAS uses. Exit status 1 when a check
fails (the timings would compare different work), 0 otherwise, goals met or not.
`nox -s bench -- --quick` runs it in a venv with torch==2.13.0 (CPU).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib
import json
import os
import platform
import sys
import traceback
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import Context, cpu_name, numpy_blas_threads  # noqa: E402
from harness import Result, Settings, measure, render_markdown, render_text, table  # noqa: E402

# module bench_<name>.py
BENCHMARKS = [
    "dispatch", "matmul", "conv2d", "chain", "mlp", "mlp_train", "lenet", "resnet20", "graph",
]  # fmt: skip


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer repeats and sizes (smoke runs)")
    p.add_argument("--only", default="", help=f"comma-separated subset of {BENCHMARKS}")
    p.add_argument("--device", default="CPU", choices=["CPU", "GPU", "cpu", "gpu"])
    p.add_argument(
        "--cooldown",
        type=float,
        default=0.2,
        help="seconds idle before each timed block (lets the other library's threads sleep)",
    )
    p.add_argument("--out", default=str(HERE / "results"), help="folder for latest.json/.md")
    return p.parse_args(argv)


def environment(ctx: Context, threads: int, source: str) -> dict[str, Any]:
    import numba
    import numpy as np

    torch = ctx.torch
    return {
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "machine": f"{cpu_name()} ({os.cpu_count()} logical CPUs), {platform.platform()}",
        "python": platform.python_version(),
        "sporeling_core": ctx.core.__version__,
        "numpy": np.__version__,
        "numba": numba.__version__,
        "torch": torch.__version__,
        "device": ctx.device,
        "torch_device": str(ctx.torch_device),
        "numpy_blas_threads": threads,
        "numpy_blas_threads_from": source,
        "numba_threads": numba.get_num_threads(),
        "torch_threads": torch.get_num_threads(),
        "torch_interop_threads": torch.get_num_interop_threads(),
        "quick": ctx.quick,
        "load_average_at_start": [round(v, 2) for v in os.getloadavg()],
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    only = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = sorted(set(only) - set(BENCHMARKS))
    if unknown:
        print(f"run.py: unknown benchmark(s) {unknown}; choose from {BENCHMARKS}", file=sys.stderr)
        return 2
    threads, source = numpy_blas_threads()
    import torch

    torch.set_num_threads(threads)
    ctx = Context(args.device, args.quick)
    env = environment(ctx, threads, source)
    settings = (
        Settings(3, 1, 0.03, cooldown_s=args.cooldown, sync=ctx.sync)
        if args.quick
        else Settings(7, 3, 0.25, cooldown_s=args.cooldown, sync=ctx.sync)
    )
    print(
        f"Sporeling {env['sporeling_core']} on {env['device']} vs PyTorch {env['torch']} on "
        f"{env['torch_device']}\n{env['machine']}\nthreads: NumPy BLAS {threads} "
        f"(from {source}), PyTorch set to {env['torch_threads']}, Numba "
        f"{env['numba_threads']}\n{'quick' if args.quick else 'full'} run: median of "
        f"{settings.repeats} repeats of ~{settings.target_s:g} s, {settings.warmup} warm-up "
        "call(s) excluded; speed ratio = torch time / sporeling time (> 1: Sporeling faster)\n",
        flush=True,
    )
    if env["load_average_at_start"][0] > 0.5:
        print(
            f"note: load average {env['load_average_at_start'][0]} at start: other processes "
            "are using the CPUs, so these timings are noisier than on an idle machine\n"
        )
    results: list[Result] = []
    skipped: list[dict[str, str]] = []
    failed = False
    for name in only or BENCHMARKS:
        mod = importlib.import_module(f"bench_{name}")
        why = getattr(mod, "missing", lambda ctx: None)(ctx)
        if why:
            print(f"[{name}] skipped: {why}", flush=True)
            skipped.append({"bench": name, "reason": why})
            continue
        print(f"[{name}] {mod.TITLE}", flush=True)
        try:
            cases = mod.cases(ctx)
        except Exception as exc:
            traceback.print_exc()
            print(f"[{name}] FAILED to set up: {type(exc).__name__}: {exc}", flush=True)
            skipped.append({"bench": name, "reason": f"setup failed: {exc}"})
            failed = True
            continue
        for case in cases:
            res = measure(name, case, settings)
            results.append(res)
            if res.check != "ok":
                failed = True
                print(f"  {case.name}: check {res.check}", flush=True)
            elif res.ratio is None:
                print(f"  {case.name}: check ok", flush=True)
            else:
                print(
                    f"  {case.name}: ratio {res.ratio:.2f} (max rel err {res.max_rel_err:.1e})",
                    flush=True,
                )
    rows = table(results)
    print("\n" + render_text(rows))
    for s in skipped:
        print(f"skipped {s['bench']}: {s['reason']}")
    write_reports(Path(args.out), env, results, skipped, rows)
    return 1 if failed else 0


def write_reports(
    out: Path,
    env: dict[str, Any],
    results: list[Result],
    skipped: list[dict[str, str]],
    rows: list[list[str]],
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    data = {
        "environment": env,
        "ratio": "torch time / sporeling time (sporeling speed / torch speed; > 1: faster)",
        "results": [vars(r) for r in results],
        "skipped": skipped,
    }
    (out / "latest.json").write_text(json.dumps(data, indent=2) + "\n")
    lines = [
        "# Sporeling vs PyTorch: latest run",
        "",
        f"- date: {env['date']}",
        f"- machine: {env['machine']}",
        f"- Sporeling core {env['sporeling_core']} on {env['device']}, PyTorch {env['torch']} "
        f"on {env['torch_device']}, NumPy {env['numpy']}, Numba {env['numba']}, "
        f"Python {env['python']}",
        f"- threads: NumPy BLAS {env['numpy_blas_threads']}, PyTorch set to the same "
        f"({env['torch_threads']}), Numba {env['numba_threads']}",
        f"- load average at start: {env['load_average_at_start']} (1, 5, 15 min)",
        f"- {'quick' if env['quick'] else 'full'} run; times are medians per iteration "
        "(per op for dispatch), warm-up excluded",
        "- speed ratio = torch time / sporeling time: above 1 means Sporeling is faster",
        "",
        render_markdown(rows),
        "",
    ]
    lines += [f"Skipped {s['bench']}: {s['reason']}" for s in skipped]
    (out / "latest.md").write_text("\n".join(lines).rstrip() + "\n")
    print(f"\nwrote {out / 'latest.json'} and {out / 'latest.md'}")


if __name__ == "__main__":
    sys.exit(main())
