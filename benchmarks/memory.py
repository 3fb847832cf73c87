"""Peak memory of each side of a benchmark's cases, one fresh process per side.

    python benchmarks/memory.py BENCH SIDE CASE [CASE...] [--calls K] [--quick] [--threads N]

The child builds the benchmark's cases (both sides' inputs and models, the same whichever
side it measures), so both libraries are imported in either child and their baselines are
alike. Then, case by case, it returns freed heap memory to the system (``malloc_trim``),
resets the kernel's peak-RSS counter (``/proc/self/clear_refs`` with ``5``, Linux >= 4.0),
runs SIDE's callable K times and reads ``VmHWM``. It prints one JSON line per case:
``peak_mib`` (the process's peak while the side ran) and ``step_mib`` (peak minus the RSS
just before the first call: what the side's own work needed). One library never runs in
the other's process, so its allocator caches and pools stay out of the other's number.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SIDES = ("sporeling", "torch")


def read_status_kib(field: str, text: str | None = None) -> int:
    """A ``Vm...`` field of /proc/self/status, in KiB."""
    if text is None:
        text = Path("/proc/self/status").read_text()
    m = re.search(rf"^{field}:\s+(\d+)\s+kB", text, re.M)
    if m is None:
        raise RuntimeError(f"/proc/self/status has no {field} line")
    return int(m.group(1))


def reset_peak() -> bool:
    """Reset VmHWM to the current RSS; False where the kernel does not allow it."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def trim_heap() -> None:
    """Give freed heap pages back to the system (glibc), so the next case's peak starts
    from what is really in use; a no-op where glibc is not there."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if name:
        fn = getattr(ctypes.CDLL(name), "malloc_trim", None)
        if fn is not None:
            fn(0)


def child(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description="peak RSS of one side of some cases")
    p.add_argument("bench")
    p.add_argument("side", choices=SIDES)
    p.add_argument("cases", nargs="+")
    p.add_argument("--calls", type=int, default=3)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--device", default="CPU")
    args = p.parse_args(argv)
    sys.path.insert(0, str(HERE))
    import importlib

    from run import make_context

    ctx, _ = make_context(args.device, args.quick, args.threads)
    mod = importlib.import_module(f"bench_{args.bench}")
    cases = {c.name: c for c in mod.cases(ctx)}
    import gc

    for name in args.cases:
        if name not in cases:
            print(json.dumps({"case": name, "error": f"no such case in {args.bench}"}))
            continue
        fn = getattr(cases[name], args.side)
        gc.collect()
        trim_heap()
        if not reset_peak():
            print(json.dumps({"case": name, "error": "cannot reset the peak RSS"}))
            continue
        before = read_status_kib("VmRSS")
        for _ in range(args.calls):
            fn()
        ctx.sync()
        peak = read_status_kib("VmHWM")
        out = {"case": name, "peak_mib": peak / 1024, "step_mib": (peak - before) / 1024}
        print(json.dumps(out), flush=True)
    return 0


def measure_side(
    bench: str, side: str, cases: list[str], extra: list[str], timeout_s: float = 900.0
) -> dict[str, dict[str, Any]]:
    """Run the child for one side of some cases: {case: its JSON result or {'error': ...}}."""
    cmd = [sys.executable, str(HERE / "memory.py"), bench, side, *cases, *extra]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {c: {"error": f"timed out after {timeout_s:g} s"} for c in cases}
    found = {}
    for ln in proc.stdout.splitlines():
        if ln.startswith("{"):
            d = json.loads(ln)
            found[d.pop("case")] = d
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return {c: found.get(c, {"error": f"exit {proc.returncode}: {tail}"}) for c in cases}


if __name__ == "__main__":
    sys.exit(child(sys.argv[1:]))
