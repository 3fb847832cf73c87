"""Run nanoGPT's OWN ``train.py`` (a checkout of karpathy/nanoGPT, not in this repository) with
its README's CPU "baby GPT" command, for several seeds, and score each final model on the whole
validation split, the same windows as ``sporeling-transformer eval RUN --whole``.

For each seed this copies the checkout's ``train.py``, ``model.py``, ``configurator.py`` and
``config/`` into ``WORKDIR/seed-S`` (the checkout itself is not modified), runs the checkout's
``data/shakespeare_char/prepare.py`` on the given ``input.txt`` there (no download), and for a
seed other than 1337 replaces the one line ``torch.manual_seed(1337 + seed_offset)`` of the copy
with ``torch.manual_seed(S + seed_offset)`` (nanoGPT hard-codes its seed). Then it runs

    python train.py config/train_shakespeare_char.py --device=cpu --compile=False
        --eval_iters=20 --log_interval=1 --block_size=64 --batch_size=12 --n_layer=4
        --n_head=4 --n_embd=128 --max_iters=2000 --lr_decay_iters=2000 --dropout=0.0
        --dtype=float32 --always_save_checkpoint=True

with one thread (OMP/MKL/OpenBLAS variables) and optionally ``nice -n 19``, records the val loss
it prints at each evaluation (its protocol: the mean of 20 fresh random batches of 12 windows),
the wall time and the process's CPU time, loads the ``ckpt.pt`` it saved at its last evaluation
(after 2000 steps; ``--always_save_checkpoint`` so that it is the last model, not the best) and
scores it over the 1,742 windows of 65 characters that tile the validation split. One JSON line
per seed is appended to ``--out``. Needs torch (the interpreter running this, and ``--python``).

    python benchmarks/transformer/nanogpt_upstream.py --nanogpt-dir /path/to/nanoGPT \\
        --input ../shared/data/tinyshakespeare/input.txt --seeds 1337 1338 \\
        --workdir /tmp/nanogpt-runs --out benchmarks/transformer/results/nanogpt_upstream.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

SEED_LINE = "torch.manual_seed(1337 + seed_offset)"
README_CPU_ARGS = [
    "config/train_shakespeare_char.py",
    "--device=cpu",
    "--compile=False",
    "--eval_iters=20",
    "--log_interval=1",
    "--block_size=64",
    "--batch_size=12",
    "--n_layer=4",
    "--n_head=4",
    "--n_embd=128",
    "--max_iters=2000",
    "--lr_decay_iters=2000",
    "--dropout=0.0",
]
# float32: on a CPU the default dtype (float16) only asks for a CUDA GradScaler; keep the last
# model, not the best one, so that the scored weights are the ones its step-2000 line printed.
EXTRA_ARGS = ["--dtype=float32", "--always_save_checkpoint=True"]
STEP_RE = re.compile(r"^step (\d+): train loss ([0-9.]+), val loss ([0-9.]+)")
ONE_THREAD = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
}
# prepare.py imports requests for its download branch, which an existing input.txt skips
REQUESTS_STUB = "def get(*a, **k):\n    raise RuntimeError('no download: input.txt is given')\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nanogpt-dir", required=True, type=Path, help="a karpathy/nanoGPT checkout")
    ap.add_argument("--input", required=True, type=Path, help="Tiny Shakespeare input.txt")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1337])
    ap.add_argument("--workdir", type=Path, default=Path("nanogpt-upstream-runs"))
    ap.add_argument("--out", type=Path, default=None, help="JSON lines are appended here")
    ap.add_argument("--python", default=sys.executable, help="interpreter for train.py")
    ap.add_argument("--no-nice", action="store_true", help="do not run train.py under nice 19")
    a = ap.parse_args(argv)
    for name in ("train.py", "model.py", "configurator.py", "config/train_shakespeare_char.py",
                 "data/shakespeare_char/prepare.py"):  # fmt: skip
        if not (a.nanogpt_dir / name).is_file():
            ap.error(f"--nanogpt-dir {a.nanogpt_dir}: expected a nanoGPT checkout with {name}")
    if not a.input.is_file():
        ap.error(f"--input {a.input}: no such file")
    return a


def prepare_copy(a: argparse.Namespace, seed: int) -> Path:
    """A per-seed copy of the checkout's training files, its data prepared from ``--input``."""
    work = a.workdir / f"seed-{seed}"
    if work.exists():
        shutil.rmtree(work)
    (work / "data" / "shakespeare_char").mkdir(parents=True)
    for name in ("train.py", "model.py", "configurator.py"):
        shutil.copy(a.nanogpt_dir / name, work / name)
    shutil.copytree(a.nanogpt_dir / "config", work / "config")
    data = work / "data" / "shakespeare_char"
    shutil.copy(a.nanogpt_dir / "data/shakespeare_char/prepare.py", data / "prepare.py")
    shutil.copy(a.input, data / "input.txt")
    stub = work / "stub"
    stub.mkdir()
    (stub / "requests.py").write_text(REQUESTS_STUB)
    env = dict(os.environ, PYTHONPATH=str(stub))
    subprocess.run([a.python, "prepare.py"], cwd=data, env=env, check=True, capture_output=True)
    if seed != 1337:
        src = (work / "train.py").read_text()
        if src.count(SEED_LINE) != 1:
            raise SystemExit(f"train.py: expected the line {SEED_LINE!r} once, to patch the seed")
        (work / "train.py").write_text(
            src.replace(SEED_LINE, f"torch.manual_seed({seed} + seed_offset)")
        )
    return work


def run_train(a: argparse.Namespace, work: Path) -> dict:
    """train.py's own run; wall time and the child's CPU time (``os.wait4``)."""
    cmd = [a.python, "train.py", *README_CPU_ARGS, *EXTRA_ARGS]
    if not a.no_nice:
        cmd = ["nice", "-n", "19", *cmd]
    env = dict(os.environ, **ONE_THREAD)
    log = work / "train.log"
    t0 = time.perf_counter()
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=f, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"train.py failed ({status}); see {log}")
    history = []
    for line in log.read_text().splitlines():
        m = STEP_RE.match(line)
        if m:
            history.append({"step": int(m[1]), "train_20_random": float(m[2]),
                            "val_20_random": float(m[3])})  # fmt: skip
    return {
        "command": " ".join(cmd[cmd.index("train.py") :]),
        "wall_s": wall,
        "process_cpu_s": usage.ru_utime + usage.ru_stime,
        "history": history,
    }


def whole_split_loss(work: Path, block: int = 64, batch: int = 12) -> tuple[float, int]:
    """The saved model's token-weighted mean loss over the windows that tile val.bin (starts 0,
    block, 2 block, ...; batches of ``batch``): ``eval --whole``'s windows."""
    import numpy as np
    import torch

    sys.path.insert(0, str(work))
    try:
        from model import GPT, GPTConfig  # nanoGPT's own model.py, from the copy
    finally:
        sys.path.pop(0)
    ckpt = torch.load(work / "out-shakespeare-char" / "ckpt.pt", map_location="cpu")
    model = GPT(GPTConfig(**ckpt["model_args"]))
    model.load_state_dict(ckpt["model"])
    model.eval()
    val = np.fromfile(work / "data/shakespeare_char/val.bin", dtype=np.uint16).astype(np.int64)
    data = torch.from_numpy(val)
    starts = range(0, len(data) - block, block)
    total = rows = 0.0
    with torch.no_grad():
        for i in range(0, len(starts), batch):
            ix = starts[i : i + batch]
            x = torch.stack([data[j : j + block] for j in ix])
            y = torch.stack([data[j + 1 : j + 1 + block] for j in ix])
            total += model(x, y)[1].item() * len(ix)
            rows += len(ix)
    sys.modules.pop("model", None)
    return total / rows, int(ckpt["iter_num"])


def main(argv: list[str] | None = None) -> None:
    a = parse_args(argv)
    import torch

    torch.set_num_threads(1)
    a.workdir.mkdir(parents=True, exist_ok=True)
    for seed in a.seeds:
        start = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
        load0 = os.getloadavg()
        work = prepare_copy(a, seed)
        res = run_train(a, work)
        whole, iters = whole_split_loss(work)
        rec = {
            "side": "nanoGPT's own train.py",
            "seed": seed,
            "seed_patched": seed != 1337,
            "torch": torch.__version__,
            "threads": 1,
            "nice": 0 if a.no_nice else 19,
            "val_loss_20_random_batches": res["history"][-1]["val_20_random"],
            "val_loss_whole_split": whole,
            "checkpoint_iter": iters,
            "start_utc": start,
            "end_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
            "load_average_start": [round(x, 2) for x in load0],
            "load_average_end": [round(x, 2) for x in os.getloadavg()],
            **res,
        }
        print(json.dumps({k: v for k, v in rec.items() if k != "history"}), flush=True)
        if a.out:
            with open(a.out, "a") as f:
                f.write(json.dumps(rec) + "\n")


if __name__ == "__main__":
    main()
