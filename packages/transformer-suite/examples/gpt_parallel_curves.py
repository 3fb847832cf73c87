"""The same GPT run on one process and under ``sporeling launch -n 2`` in four layouts (dp=2,
mp=2, pipeline_stage=2 with micro-batches, dp=2 + optimizer_shard): every run's per-step
training loss (``results.json``'s ``step_losses``), and the largest difference of each
layout's curve from the single-process one.

Every layout sees the same batches in the same order (under data parallelism each rank keeps
its share of the batch one process draws), the same initial weights (same seed) and the same
global-norm clipping, so the curves may differ only by float round-off (reduction order).

Usage (from the package folder, the whole 2000-step baby GPT)::

    python examples/gpt_parallel_curves.py --data ../../../shared/data/tinyshakespeare/input.txt \\
        --steps 2000 --out out-parallel-curves --json parallel_curves_2000.json

After each layout the script rewrites ``--json`` (default ``OUT/curves.json``) with every
finished layout's curve, its validation loss on the windows that tile the whole validation
split, wall and CPU seconds and the load average seen while it ran, so a run that is cut
keeps its finished layouts; ``--resume`` skips the layouts already in that file (same steps).

``--config gpt_tiny --data builtin:tiny.txt --steps 20`` is a seconds-long smoke run.
``--four`` runs the 4-process layouts instead (pipeline_stage=2 x data_parallel=2 +
optimizer_shard, pipeline_stage=2 x model_parallel=2, dp=2 x mp=2 + optimizer_shard).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

LAYOUTS = {
    "single process": (1, []),
    "dp=2": (2, ["parallel_config.data_parallel=2"]),
    "mp=2": (2, ["parallel_config.model_parallel=2"]),
    "pipeline_stage=2, 4 micro-batches": (
        2,
        ["parallel_config.pipeline_stage=2", "parallel_config.micro_batch_num=4"],
    ),
    "dp=2 + optimizer_shard": (
        2,
        ["parallel_config.data_parallel=2", "parallel_config.optimizer_shard=true"],
    ),
}


FOUR = {
    "pp=2 x dp=2 + optimizer_shard": (
        4,
        [
            "parallel_config.pipeline_stage=2",
            "parallel_config.data_parallel=2",
            "parallel_config.micro_batch_num=2",
            "parallel_config.optimizer_shard=true",
        ],
    ),
    "pp=2 x mp=2": (
        4,
        [
            "parallel_config.pipeline_stage=2",
            "parallel_config.model_parallel=2",
            "parallel_config.micro_batch_num=4",
        ],
    ),
    "dp=2 x mp=2 + optimizer_shard": (
        4,
        [
            "parallel_config.data_parallel=2",
            "parallel_config.model_parallel=2",
            "parallel_config.optimizer_shard=true",
        ],
    ),
}

THREADS = {"OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}

# the saved (final: one evaluation, at the end) model over the windows that tile the whole
# validation split, printed exactly (the CLI's ``eval --whole`` rounds to 4 digits)
_WHOLE_VAL = (
    "import sys; from sporeling.transformer.runner import evaluate; "
    "print(repr(evaluate(sys.argv[1], whole=True)))"
)


def _cli() -> str:
    """The ``sporeling-transformer`` console script (a Python file ``sporeling launch`` can
    hand to every rank): on PATH, or next to this interpreter."""
    here = os.path.dirname(sys.executable)
    cli = shutil.which("sporeling-transformer") or shutil.which("sporeling-transformer", path=here)
    if cli is None:
        sys.exit("sporeling-transformer is not on PATH (pip install sporeling-transformer-suite)")
    return cli


class LoadSampler:
    """The 1-minute load average every ``every`` seconds while a layout runs (the machine is
    shared, so wall times mean little without it)."""

    def __init__(self, every: float = 15.0) -> None:
        self.every, self.samples = every, [os.getloadavg()[0]]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.samples.append(os.getloadavg()[0])

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self.samples.append(os.getloadavg()[0])

    def summary(self) -> dict[str, float]:
        s = self.samples
        return {"min": min(s), "mean": sum(s) / len(s), "max": max(s)}


def run(name: str, n: int, extra: list[str], args: argparse.Namespace) -> dict:
    tag = "".join(c for c in name.split(",")[0] if c.isalnum() or c == "_")
    out = Path(args.out) / tag
    cli = _cli()
    cmd = [
        cli,
        "train",
        args.config,
        f"data.path={args.data}",
        f"output_dir={out}",
        f"train.max_iters={args.steps}",
        f"train.eval_interval={args.eval_interval or args.steps}",
        "train.progress_bar=false",
        *extra,
        *args.overrides,
    ]
    cmd = (
        [sys.executable, "-m", "sporeling.core", "launch", "-n", str(n), *cmd]
        if n > 1
        else [
            sys.executable,
            *cmd,
        ]
    )
    env = dict(os.environ, **THREADS)
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with LoadSampler() as load:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        sys.exit(f"{name} failed ({' '.join(cmd)}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    res = json.loads((out / "results.json").read_text())
    ev = subprocess.run(
        [sys.executable, "-c", _WHOLE_VAL, str(out)], env=env, capture_output=True, text=True
    )
    if ev.returncode:
        sys.exit(f"{name}: the whole-split evaluation failed:\n{ev.stderr[-4000:]}")
    return {
        "processes": n,
        "overrides": extra,
        "step_losses": res["step_losses"],
        "final_train_loss": res["step_losses"][-1],
        "val_loss_eval_iters": res["best_val_loss"],
        "val_loss_whole_split": float(ev.stdout.strip().splitlines()[-1]),
        "train_wall_s": res["wall_s"],
        "launcher_wall_s": wall,
        # every process of the job (mpiexec waits for its ranks, so their time is counted)
        "cpu_s": (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime),
        "load_average_1min": load.summary(),
    }


def max_diff(cur: list[float], ref: list[float]) -> float:
    """The largest |difference| of two equally long curves (NaN when the lengths differ)."""
    if len(cur) != len(ref):
        return float("nan")
    return max((abs(a - b) for a, b in zip(cur, ref)), default=0.0)


def table(results: dict[str, dict], steps: int) -> str:
    ref = results.get("single process", {}).get("step_losses", [])
    rows = [
        f"| Layout ({steps} steps) | max abs diff of the {steps} per-step losses | "
        f"train loss at step {steps} | val loss (whole split) | val loss (eval_iters batches) | "
        "wall s | CPU s | load average (min-max) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        ld = r["load_average_1min"]
        rows.append(
            f"| {name} | {max_diff(r['step_losses'], ref):.2e} | {r['final_train_loss']:.6f} | "
            f"{r['val_loss_whole_split']:.6f} | {r['val_loss_eval_iters']:.6f} | "
            f"{r['launcher_wall_s']:.0f} | {r['cpu_s']:.0f} | {ld['min']:.1f}-{ld['max']:.1f} |"
        )
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="gpt_shakespeare_char")
    ap.add_argument("--data", default="../shared/data/tinyshakespeare/input.txt")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--eval-interval", type=int, default=0, help="0: once, at the end")
    ap.add_argument("--out", default="out-parallel-curves")
    ap.add_argument("--json", help="where the curves and numbers go (default OUT/curves.json)")
    ap.add_argument("--resume", action="store_true", help="skip the layouts already in --json")
    ap.add_argument("--only", nargs="*", help="run only these layouts (names as printed)")
    ap.add_argument("--four", action="store_true", help="the 4-process layouts instead")
    ap.add_argument("overrides", nargs="*", help="more section.key=value overrides")
    args = ap.parse_args()
    if args.steps < 1:
        ap.error(f"argument --steps expected a positive number of steps, got {args.steps}")
    path = Path(args.json) if args.json else Path(args.out) / "curves.json"
    meta = {"config": args.config, "steps": args.steps, "overrides": args.overrides}
    results: dict[str, dict] = {}
    if args.resume and path.exists():
        old = json.loads(path.read_text())
        if {k: old.get(k) for k in meta} != meta:
            sys.exit(f"--resume: {path} holds another run ({ {k: old.get(k) for k in meta} })")
        results = old["layouts"]
    layouts = {"single process": LAYOUTS["single process"], **FOUR} if args.four else LAYOUTS
    for name, (n, extra) in layouts.items():
        if args.only and name not in args.only and name != "single process":
            continue
        if name in results:
            print(f"{name}: already in {path}, skipped", flush=True)
            continue
        results[name] = r = run(name, n, extra, args)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**meta, "layouts": results}, indent=1))
        ref = results.get("single process", {}).get("step_losses", [])
        print(
            f"{name}: {len(r['step_losses'])} steps, first/last loss {r['step_losses'][0]:.4f}"
            f" / {r['final_train_loss']:.4f}, max abs diff {max_diff(r['step_losses'], ref):.2e},"
            f" val loss {r['val_loss_whole_split']:.4f} (whole split), "
            f"{r['launcher_wall_s']:.0f} s wall, {r['cpu_s']:.0f} s CPU",
            flush=True,
        )
    print()
    print(table(results, args.steps))


if __name__ == "__main__":
    main()
