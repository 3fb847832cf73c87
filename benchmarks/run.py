"""Sporeling against PyTorch (CPU), side by side in one process on one machine.

    python benchmarks/run.py [--quick] [--only NAME[,NAME...]] [--threads 1]
                             [--busy-neighbour] [--busy-ok] [--no-memory] [--out DIR]

Prints a table and writes ``<out>/<mode>.json`` and ``<out>/<mode>.md`` (mode: ``latest``,
``latest-1thread``, ``latest-busy``, ... ; default out: ``benchmarks/results``). Times
are medians over repeats of the time per iteration (or per op), warm-up excluded, with
the min and max of the repeats. The speed ratio is ``torch time / sporeling time``: above
1 means Sporeling is faster. Every case first checks that both frameworks compute the
same values. PyTorch gets as many intra-op threads as NumPy's BLAS uses (``--threads N``
limits both sides, and Numba, to N). Each timed block waits for a quiet machine and is
redone when other processes used more than 0.3 cores during it (``quiet.py``);
``--busy-ok`` runs anyway on a busy machine with such blocks marked DISTURBED. Exit
status 1 when a check fails (the timings would compare different work), 0 otherwise,
goals met or not. `nox -s bench -- --quick` runs it in a venv with torch==2.13.0 (CPU).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib
import json
import os
import platform
import subprocess
import sys
import time
import traceback
from contextlib import ExitStack
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import Context, blas_kernels, cpu_name, numpy_blas_threads  # noqa: E402
from harness import Result, Settings, measure, render_markdown, render_text, table  # noqa: E402
from memory import measure_side  # noqa: E402
from quiet import BusyNeighbour, LoadMeter, QuietPolicy, limit_threads  # noqa: E402

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
        "--threads",
        type=int,
        default=0,
        help="limit NumPy's BLAS, Numba and PyTorch to this many threads (0: BLAS default)",
    )
    p.add_argument(
        "--busy-neighbour",
        action="store_true",
        help="a separate process keeps one core busy during the whole run",
    )
    p.add_argument(
        "--busy-ok",
        action="store_true",
        help="do not wait for a quiet machine: time at once, mark disturbed blocks (dev runs)",
    )
    p.add_argument(
        "--quiet-threshold",
        type=float,
        default=0.3,
        help="foreign cores above which a timed block is disturbed (default 0.3)",
    )
    p.add_argument(
        "--quiet-wait", type=float, default=30.0, help="seconds to wait for a quiet machine"
    )
    p.add_argument("--retries", type=int, default=3, help="redos of a disturbed block")
    p.add_argument(
        "--wait-budget",
        type=float,
        default=900.0,
        help="seconds the whole run may spend waiting and redoing; then it times at once "
        "and marks (default 900)",
    )
    p.add_argument("--no-memory", action="store_true", help="skip the peak-RSS subprocesses")
    p.add_argument(
        "--cooldown",
        type=float,
        default=0.2,
        help="seconds idle before each timed block (lets the other library's threads sleep)",
    )
    p.add_argument("--out", default=str(HERE / "results"), help="folder for the reports")
    return p.parse_args(argv)


def make_context(device: str, quick: bool, threads: int) -> tuple[Context, dict[str, Any]]:
    """The device context with every thread pool set: BLAS's own count, or ``threads``."""
    import torch

    if threads > 0:
        limits = limit_threads(threads, torch)
        info = {"threads": threads, "from": f"--threads {threads}", "limits": str(limits)}
    else:
        n, source = numpy_blas_threads()
        torch.set_num_threads(n)
        info = {"threads": n, "from": source}
    return Context(device, quick), info


def git_commit() -> str:
    """HEAD of the repository, with '+dirty' when the tree has uncommitted changes."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short=10", "HEAD"],
            cwd=HERE, capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=HERE, capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def mode_name(args: argparse.Namespace) -> str:
    """The report's file stem: one per mode, so the modes' results sit side by side."""
    name = "latest"
    if args.threads:
        name += f"-{args.threads}thread"
    if args.busy_neighbour:
        name += "-busy"
    return name


def environment(ctx: Context, threads: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    import numba
    import numpy as np

    torch = ctx.torch
    return {
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "machine": f"{cpu_name()} ({os.cpu_count()} logical CPUs), {platform.platform()}",
        "python": platform.python_version(),
        "sporeling_core": ctx.core.__version__,
        "sporeling_core_from": str(Path(ctx.core.__file__).resolve().parent),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "torch": torch.__version__,
        "device": ctx.device,
        "torch_device": str(ctx.torch_device),
        "blas": blas_kernels(torch),
        "numpy_blas_threads": threads["threads"],
        "numpy_blas_threads_from": threads["from"],
        "numba_threads": numba.get_num_threads(),
        # the row workers' spin after a job (kernels/cpu/_rows.py; unset: 0, sleep at once)
        "sporeling_worker_linger_us": os.environ.get("SPORELING_WORKER_LINGER_US", "0"),
        # the GIL-free job workers (kernels/cpu/_jobs.py): on unless "0"; spin after a job
        "sporeling_native_jobs": os.environ.get("SPORELING_NATIVE_JOBS", "1"),
        "sporeling_native_linger_us": os.environ.get("SPORELING_NATIVE_LINGER_US", "1000"),
        "torch_threads": torch.get_num_threads(),
        "torch_interop_threads": torch.get_num_interop_threads(),
        "quick": ctx.quick,
        "mode": mode_name(args),
        "busy_neighbour": args.busy_neighbour,
        "quiet_policy": "off (--busy-ok: timed at once, disturbed blocks marked)"
        if args.busy_ok
        else f"wait <= {args.quiet_wait:g} s for <= {args.quiet_threshold:g} foreign cores, "
        f"<= {args.retries} redos of a disturbed block, <= {args.wait_budget:g} s of waiting "
        "and redoing in all",
        "load_average_at_start": [round(v, 2) for v in os.getloadavg()],
    }


def add_memory(results: list[Result], args: argparse.Namespace) -> None:
    """Peak RSS of each side of each timed case: one fresh process per benchmark and side."""
    extra = ["--device", args.device, "--threads", str(args.threads)]
    extra += ["--quick"] if args.quick else []
    by_bench: dict[str, list[Result]] = {}
    for r in results:
        if r.ratio is not None:
            by_bench.setdefault(r.bench, []).append(r)
    for bench, rs in by_bench.items():
        for side in ("sporeling", "torch"):
            found = measure_side(bench, side, [r.case for r in rs], extra)
            for r in rs:
                m = found[r.case]
                if "error" in m:
                    r.memory_note += f"{'; ' if r.memory_note else ''}{side} memory: {m['error']}"
                    continue
                setattr(r, f"{side}_peak_mib", m["peak_mib"])
                setattr(r, f"{side}_step_mib", m["step_mib"])
        print(f"  [{bench}] peak RSS measured for {len(rs)} case(s)", flush=True)


def run_benchmarks(
    names: list[str], ctx: Context, settings: Settings
) -> tuple[list[Result], list[dict[str, str]], bool]:
    results: list[Result] = []
    skipped: list[dict[str, str]] = []
    failed = False
    for name in names:
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
                warn = "; ".join(w for w in (res.spread_warning(),) if w)
                dist = f", DISTURBED {res.disturbed_blocks}" if res.disturbed else ""
                print(
                    f"  {case.name}: ratio {res.ratio:.2f} (max rel err {res.max_rel_err:.1e}"
                    f"{dist}{'; ' + warn if warn else ''})",
                    flush=True,
                )
    return results, skipped, failed


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    only = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = sorted(set(only) - set(BENCHMARKS))
    if unknown:
        print(f"run.py: unknown benchmark(s) {unknown}; choose from {BENCHMARKS}", file=sys.stderr)
        return 2
    ctx, threads = make_context(args.device, args.quick, args.threads)
    env = environment(ctx, threads, args)
    with ExitStack() as stack:
        meter = LoadMeter()
        if args.busy_neighbour:
            meter.exclude.append(stack.enter_context(BusyNeighbour()).pid)
        policy = QuietPolicy(
            threshold=args.quiet_threshold,
            wait_s=0.0 if args.busy_ok else args.quiet_wait,
            window_s=max(args.cooldown, 0.05),
            retries=0 if args.busy_ok else args.retries,
            budget_s=args.wait_budget,
        )
        if not meter.available():
            print("note: /proc/stat unreadable: the load during blocks is not measured")
        reps = (3, 1, 0.03) if args.quick else (7, 3, 0.25)
        settings = Settings(
            *reps, cooldown_s=args.cooldown, sync=ctx.sync, quiet=policy, meter=meter
        )
        print(
            f"Sporeling {env['sporeling_core']} on {env['device']} vs PyTorch {env['torch']} "
            f"on {env['torch_device']}, commit {env['commit']}\n{env['machine']}\n"
            f"BLAS: {env['blas']}\nthreads: "
            f"NumPy BLAS {threads['threads']} (from {threads['from']}), PyTorch set to "
            f"{env['torch_threads']}, Numba {env['numba_threads']}"
            f"{', busy neighbour on one core' if args.busy_neighbour else ''}\n"
            f"{'quick' if args.quick else 'full'} run: median of {settings.repeats} repeats of "
            f"~{settings.target_s:g} s, {settings.warmup} warm-up call(s) excluded; quiet "
            f"policy: {env['quiet_policy']}; load average {env['load_average_at_start']}\n"
            "speed ratio = torch time / sporeling time (> 1: Sporeling faster)\n",
            flush=True,
        )
        if not Path(env["sporeling_core_from"]).is_relative_to(HERE.parent):
            print(
                f"WARNING: sporeling.core comes from {env['sporeling_core_from']}, not from this "
                "repository's tree: a copy installed when the venv was made (`nox -R` skips "
                "installs), so the commit above may not be what runs\n",
                flush=True,
            )
        results, skipped, failed = run_benchmarks(only or BENCHMARKS, ctx, settings)
        timing_s = time.perf_counter() - started
        if not args.no_memory:
            print("\npeak memory, each side in a fresh process:", flush=True)
            add_memory(results, args)
    env["load_average_at_end"] = [round(v, 2) for v in os.getloadavg()]
    env["quiet_wait_spent_s"] = round(policy.spent_s, 1)
    env["duration_s"] = {
        "timing": round(timing_s, 1),
        "total": round(time.perf_counter() - started, 1),
    }
    rows = table(results)
    print("\n" + render_text(rows))
    for s in skipped:
        print(f"skipped {s['bench']}: {s['reason']}")
    disturbed = [r.case for r in results if r.disturbed]
    if disturbed:
        print(f"\nDISTURBED (other processes used > {args.quiet_threshold:g} cores): {disturbed}")
    write_reports(Path(args.out), env, results, skipped, rows)
    print(f"run took {env['duration_s']['total']:.0f} s (timing {timing_s:.0f} s)")
    return 1 if failed else 0


def write_reports(
    out: Path,
    env: dict[str, Any],
    results: list[Result],
    skipped: list[dict[str, str]],
    rows: list[list[str]],
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    stem = env["mode"]
    data = {
        "environment": env,
        "ratio": "torch time / sporeling time (sporeling speed / torch speed; > 1: faster)",
        "results": [r.to_json() for r in results],
        "skipped": skipped,
    }
    (out / f"{stem}.json").write_text(json.dumps(data, indent=2) + "\n")
    n_dist = sum(r.disturbed for r in results)
    lines = [
        f"# Sporeling vs PyTorch: {stem}",
        "",
        f"- date: {env['date']}, commit {env['commit']}",
        f"- machine: {env['machine']}",
        f"- BLAS: {env.get('blas', 'not recorded')}",
        f"- Sporeling core {env['sporeling_core']} on {env['device']}, PyTorch {env['torch']} "
        f"on {env['torch_device']}, NumPy {env['numpy']}, Numba {env['numba']}, "
        f"Python {env['python']}",
        f"- threads: NumPy BLAS {env['numpy_blas_threads']}, PyTorch "
        f"{env['torch_threads']}, Numba {env['numba_threads']}"
        f"{'; a busy neighbour process kept one core busy' if env['busy_neighbour'] else ''}",
        f"- load average at start {env['load_average_at_start']}, at end "
        f"{env['load_average_at_end']} (1, 5, 15 min); quiet policy: {env['quiet_policy']}; "
        f"{n_dist} of {len(results)} cases with disturbed blocks",
        f"- {'quick' if env['quick'] else 'full'} run of {env['duration_s']['total']:.0f} s; "
        "times are medians per iteration (per op for dispatch) with (min-max) of the repeats, "
        "warm-up excluded; first call = the check call, compilation included; peak RSS = "
        "each side in a fresh process, step = peak minus the RSS before its first call",
        "- speed ratio = torch time / sporeling time: above 1 means Sporeling is faster",
        "",
        render_markdown(rows),
        "",
    ]
    lines += [f"Skipped {s['bench']}: {s['reason']}" for s in skipped]
    (out / f"{stem}.md").write_text("\n".join(lines).rstrip() + "\n")
    print(f"\nwrote {out / (stem + '.json')} and {out / (stem + '.md')}")


if __name__ == "__main__":
    sys.exit(main())
