"""Sporeling's data pipeline against torchvision (v2 + DataLoader), plain PIL and
MindSpore's dataset engine, in one run on one machine; then Numba vs Pillow per transform.

    python benchmarks/data/run.py [--quick] [--workers 1,2] [--only NAME,...] [--repeats R]
                                  [--images N] [--no-table] [--out DIR]

The pipeline: decode -> RandomResizedCrop(224) -> RandomHorizontalFlip -> Normalize ->
HWC2CHW -> batch 32, over N real JPEGs (`images.py` makes them once into
benchmarks/data/.cache/). Each measurement runs in a fresh process (`pipelines.py`): one
epoch, the first 3 batches untimed (worker start, JIT compilation), images/s over the rest.
Measurements alternate pipelines within each repeat; the median over repeats is reported,
with ratios against torchvision (decode_jpeg) and MindSpore at the same worker count.
Writes `<out>/latest.json` and `<out>/latest.md` (default benchmarks/data/results).
`nox -s bench_data` runs it in a venv with torch 2.14.1 + torchvision 0.29.1 (CPU use).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from images import ensure_images  # noqa: E402
from pipelines import NAMES  # noqa: E402

# issue 6: >= 1.2x torchvision, >= MindSpore; issue 24 raised the torchvision goal to 1.6x
GOALS = {"torchvision": 1.6, "mindspore": 1.0}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="12 timed batches, 1 repeat, quick table")
    p.add_argument("--workers", default="1,2", help="worker counts (default 1,2)")
    p.add_argument("--only", default="", help=f"comma-separated subset of {NAMES}")
    p.add_argument("--repeats", type=int, help="measurements per pipeline (default 2; quick 1)")
    p.add_argument("--images", type=int, default=2000, help="JPEGs in the set (default 2000)")
    p.add_argument("--no-table", action="store_true", help="skip the per-transform table")
    p.add_argument("--out", default=str(HERE / "results"), help="folder for latest.json/.md")
    return p.parse_args(argv)


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {}
    for dist in (
        "sporeling-data-transforms",
        "numpy",
        "numba",
        "Pillow",
        "torch",
        "torchvision",
        "mindspore",
    ):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def measure(name: str, folder: Path, workers: int, max_batches: int) -> dict[str, Any]:
    cmd = [
        sys.executable,
        str(HERE / "pipelines.py"),
        name,
        "--folder",
        str(folder),
        "--workers",
        str(workers),
        "--max-batches",
        str(max_batches),
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {"pipeline": name, "workers": workers, "failed": " | ".join(tail)}
    return json.loads(lines[-1])


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()] or NAMES
    unknown = sorted(set(names) - set(NAMES))
    if unknown:
        print(f"run.py: unknown pipeline(s) {unknown}; choose from {NAMES}", file=sys.stderr)
        return 2
    workers = [int(w) for w in args.workers.split(",")]
    repeats = args.repeats or (1 if args.quick else 2)
    max_batches = 12 if args.quick else 10**9
    folder, source = ensure_images(args.images)
    env = {
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "machine": f"{cpu_name()} ({os.cpu_count()} logical CPUs), {platform.platform()}",
        "python": platform.python_version(),
        "versions": versions(),
        "images": args.images,
        "image_source": source,
        "load_average_at_start": [round(v, 2) for v in os.getloadavg()],
        "quick": args.quick,
        "repeats": repeats,
    }
    print(
        f"{env['machine']}\nimages: {args.images} JPEGs from {source} ({folder})\n"
        f"load average at start: {env['load_average_at_start']}\n",
        flush=True,
    )
    if env["load_average_at_start"][0] > 0.5 * (os.cpu_count() or 1):
        print(
            "note: the machine is busy (load average above half the CPUs): timings are "
            "noisy and the ratios only indicative\n",
            flush=True,
        )
    runs: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in range(repeats):
        for w in workers:
            order = names if r % 2 == 0 else list(reversed(names))
            for name in order:
                res = measure(name, folder, w, max_batches)
                runs.setdefault((name, w), []).append(res)
                shown = (
                    f"{res['images_per_s']:.1f} images/s"
                    if "images_per_s" in res
                    else res.get("skipped") or f"FAILED: {res.get('failed')}"
                )
                print(f"[repeat {r + 1}/{repeats}] {name:<16} workers={w}: {shown}", flush=True)
    rows = summarize(runs, names, workers)
    print("\n" + render_pipelines(rows))
    table: list[dict[str, Any]] = []
    if not args.no_table:
        from transforms_table import render, run

        jpeg = sorted(folder.glob("*/*.jpg"))[0]
        print("\nNumba vs Pillow per transform (one photo, warm):", flush=True)
        table = run(jpeg, quick=args.quick)
        print(render(table))
    env["load_average_at_end"] = [round(v, 2) for v in os.getloadavg()]
    write_reports(Path(args.out), env, rows, runs, table)
    failed = any("failed" in x for v in runs.values() for x in v)
    return 1 if failed else 0


def _positive(measurement: dict[str, Any]) -> bool:
    """A CPU figure that can be right (a worker process gone before the last reading of
    /proc would leave a negative one)."""
    return (measurement.get("cpu_ms_per_image") or 0.0) > 0.0


def summarize(runs: dict, names: list[str], workers: list[int]) -> list[dict[str, Any]]:
    rows = []
    for w in workers:
        med = {}
        for name in names:
            ok = [x["images_per_s"] for x in runs[(name, w)] if "images_per_s" in x]
            med[name] = statistics.median(ok) if ok else None
        cpu = {}
        for name in names:
            ok = [x["cpu_ms_per_image"] for x in runs[(name, w)] if _positive(x)]
            cpu[name] = statistics.median(ok) if ok else None
        for name in names:
            notes = [x.get("skipped") or x.get("failed") for x in runs[(name, w)]]
            row = {
                "pipeline": name,
                "workers": w,
                "images_per_s": med[name],
                "repeats": [
                    round(x["images_per_s"], 1) for x in runs[(name, w)] if "images_per_s" in x
                ],
                "note": next((n for n in notes if n), ""),
                "cpu_ms_per_image": cpu[name],
            }
            if cpu[name] and cpu.get("torchvision"):
                row["cpu_vs_torchvision"] = cpu["torchvision"] / cpu[name]
            for peer in ("torchvision", "mindspore"):
                if med[name] and med.get(peer):
                    row[f"vs_{peer}"] = med[name] / med[peer]
            rows.append(row)
    return rows


def render_pipelines(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| pipeline | workers | images/s (median) | repeats | vs torchvision | vs MindSpore "
        "| CPU ms/image | CPU vs torchvision |",
        "|---|---:|---:|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        ips = f"{r['images_per_s']:.1f}" if r["images_per_s"] else r["note"] or "-"
        vt = f"{r['vs_torchvision']:.2f}" if "vs_torchvision" in r else "-"
        vm = f"{r['vs_mindspore']:.2f}" if "vs_mindspore" in r else "-"
        reps = ", ".join(f"{x:.1f}" for x in r["repeats"])
        cpu = f"{r['cpu_ms_per_image']:.2f}" if r.get("cpu_ms_per_image") else "-"
        cvt = f"{r['cpu_vs_torchvision']:.2f}" if "cpu_vs_torchvision" in r else "-"
        lines.append(
            f"| {r['pipeline']} | {r['workers']} | {ips} | {reps} | {vt} | {vm} | {cpu} | {cvt} |"
        )
    return "\n".join(lines)


def write_reports(out: Path, env: dict, rows: list, runs: dict, table: list) -> None:
    from transforms_table import render

    out.mkdir(parents=True, exist_ok=True)
    data = {
        "environment": env,
        "goals": GOALS,
        "pipelines": rows,
        "runs": {f"{k[0]}@{k[1]}": v for k, v in runs.items()},
        "transforms": table,
    }
    (out / "latest.json").write_text(json.dumps(data, indent=2) + "\n")
    v = env["versions"]
    lines = [
        "# Data pipeline: Sporeling vs torchvision, PIL and MindSpore (latest run)",
        "",
        f"- date: {env['date']}",
        f"- machine: {env['machine']}",
        f"- Python {env['python']}; " + ", ".join(f"{k} {val}" for k, val in v.items()),
        f"- images: {env['images']} JPEGs from {env['image_source']}",
        f"- load average at start {env['load_average_at_start']}, at end "
        f"{env['load_average_at_end']} (1, 5, 15 min)",
        f"- {'quick' if env['quick'] else 'full'} run, {env['repeats']} repeat(s) per pipeline, "
        "each a fresh process; first 3 batches untimed",
        "- pipeline: decode -> RandomResizedCrop(224) -> RandomHorizontalFlip -> Normalize -> "
        "HWC2CHW -> batch 32 (float32 NCHW)",
        f"- goals (issues 6, 24): >= {GOALS['torchvision']}x torchvision, >= MindSpore",
        "- CPU ms/image: user + system CPU of the measuring process and its worker processes "
        "over the timed batches, per image; CPU vs torchvision = torchvision's / the row's",
        "",
        render_pipelines(rows),
        "",
    ]
    if table:
        lines += [
            "## Numba vs Pillow per transform (one photo, warm; median time per call)",
            "",
            render(table),
            "",
        ]
    (out / "latest.md").write_text("\n".join(lines))
    print(f"\nwrote {out / 'latest.json'} and {out / 'latest.md'}")


if __name__ == "__main__":
    sys.exit(main())
