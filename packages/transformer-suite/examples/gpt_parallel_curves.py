"""The same GPT run on one process and under ``sporeling launch -n 2`` in four layouts (dp=2,
mp=2, pipeline_stage=2 with micro-batches, dp=2 + optimizer_shard): every run's per-step
training loss (``results.json``'s ``step_losses``), and the largest difference of each
layout's curve from the single-process one.

Every layout sees the same batches in the same order (under data parallelism each rank keeps
its share of the batch one process draws), the same initial weights (same seed) and the same
global-norm clipping, so the curves may differ only by float round-off (reduction order).

Usage (from the package folder, the baby GPT shortened to 300 steps)::

    python examples/gpt_parallel_curves.py --data ../../../shared/data/tinyshakespeare/input.txt \\
        --steps 300 --out out-parallel-curves

``--config gpt_tiny --data builtin:tiny.txt --steps 20`` is a seconds-long smoke run.
``--four`` runs the 4-process layouts instead (pipeline_stage=2 x data_parallel=2 +
optimizer_shard, pipeline_stage=2 x model_parallel=2, dp=2 x mp=2 + optimizer_shard).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
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


def run(name: str, n: int, extra: list[str], args: argparse.Namespace) -> dict:
    tag = "".join(c for c in name.split(",")[0] if c.isalnum() or c == "_")
    out = Path(args.out) / tag
    cli = shutil.which("sporeling-transformer")
    if cli is None:
        sys.exit("sporeling-transformer is not on PATH (pip install sporeling-transformer-suite)")
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
    if n > 1:
        cmd = [sys.executable, "-m", "sporeling.core", "launch", "-n", str(n), *cmd]
    env = dict(os.environ, OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode:
        sys.exit(f"{name} failed ({' '.join(cmd)}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    res = json.loads((out / "results.json").read_text())
    res["launcher_wall_s"] = wall
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="gpt_shakespeare_char")
    ap.add_argument("--data", default="../shared/data/tinyshakespeare/input.txt")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--eval-interval", type=int, default=0, help="0: once, at the end")
    ap.add_argument("--out", default="out-parallel-curves")
    ap.add_argument("--only", nargs="*", help="run only these layouts (names as printed)")
    ap.add_argument("--four", action="store_true", help="the 4-process layouts instead")
    ap.add_argument("overrides", nargs="*", help="more section.key=value overrides")
    args = ap.parse_args()
    results = {}
    layouts = {"single process": LAYOUTS["single process"], **FOUR} if args.four else LAYOUTS
    for name, (n, extra) in layouts.items():
        if args.only and name not in args.only and name != "single process":
            continue
        results[name] = run(name, n, extra, args)
        r = results[name]
        print(
            f"{name}: {len(r['step_losses'])} steps, first/last loss {r['step_losses'][0]:.4f}"
            f" / {r['step_losses'][-1]:.4f}, val loss {r['best_val_loss']:.4f}, "
            f"{r['launcher_wall_s']:.0f} s wall",
            flush=True,
        )
    ref = results["single process"]["step_losses"]
    print("\n| Layout | max abs diff of the loss curve | last-step loss | val loss | wall s |")
    print("|---|---|---|---|---|")
    for name, r in results.items():
        cur = r["step_losses"]
        diff = max(abs(a - b) for a, b in zip(cur, ref)) if len(cur) == len(ref) else float("nan")
        print(
            f"| {name} | {diff:.2e} | {cur[-1]:.6f} | {r['best_val_loss']:.6f} | "
            f"{r['launcher_wall_s']:.0f} |"
        )
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "curves.json").write_text(
        json.dumps({k: v["step_losses"] for k, v in results.items()})
    )


if __name__ == "__main__":
    main()
