"""Timing, correctness checks and reporting shared by every benchmark in this folder.

A benchmark module defines ``NAME``, ``TITLE`` and ``cases(ctx) -> list[Case]``. Each
:class:`Case` holds one Sporeling callable and its PyTorch twin. Before timing, the
harness runs both once and compares their results (so the two really compute the same
thing); then it times them in alternating repeats (Sporeling, PyTorch, Sporeling, ...),
with warm-up calls excluded and the garbage collector paused inside a timed block, as
``timeit`` does. The reported time is the median over repeats of the time per iteration.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Case:
    """One measured pair: ``sporeling()`` and ``torch()`` do the same work once."""

    name: str
    sporeling: Callable[[], Any]
    torch: Callable[[], Any]
    goal: float | None = None  # minimum speed ratio (Sporeling speed / torch speed)
    per: str = "iter"  # what one timed unit is: "iter" or "op"
    ops_per_call: int = 1  # the callables repeat the unit this many times
    # The check: both callables' results are flattened to arrays and compared as
    # max|a - b| <= tol * max(max|b|, 1e-30), element arrays one by one.
    tol: float = 1e-5
    check_sporeling: Callable[[], Any] | None = None  # defaults to ``sporeling``
    check_torch: Callable[[], Any] | None = None  # defaults to ``torch``
    note: str = ""
    timed: bool = True  # False: a check only (no times, no ratio)


@dataclass
class Settings:
    repeats: int
    warmup: int
    target_s: float  # wall time one repeat aims for (sets the iterations per repeat)
    # Idle time before each timed block, so the other library's worker threads (OpenBLAS,
    # OpenMP) stop spin-waiting and go to sleep: on a 2-core machine their spinning
    # otherwise steals the cores from whichever library runs next.
    cooldown_s: float = 0.0
    sync: Callable[[], None] = field(default=lambda: None)


@dataclass
class Result:
    bench: str
    case: str
    per: str
    sporeling_s: float | None = None
    torch_s: float | None = None
    ratio: float | None = None
    goal: float | None = None
    meets_goal: bool | None = None
    check: str = ""
    max_rel_err: float | None = None
    sporeling_repeats_s: list[float] = field(default_factory=list)
    torch_repeats_s: list[float] = field(default_factory=list)
    note: str = ""


def to_arrays(value: Any) -> list[np.ndarray]:
    """Flatten a result (tensors of either framework, tuples, lists, floats) to arrays."""
    if value is None:
        return []
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in to_arrays(v)]
    if hasattr(value, "detach"):  # torch.Tensor
        return [value.detach().cpu().numpy()]
    if hasattr(value, "asnumpy"):  # sporeling Tensor
        return [np.asarray(value.asnumpy())]
    return [np.asarray(value)]


def compare(sp: Any, th: Any, tol: float) -> float:
    """Largest relative error over the results; raises AssertionError past ``tol``."""
    a_list, b_list = to_arrays(sp), to_arrays(th)
    if len(a_list) != len(b_list):
        raise AssertionError(f"{len(a_list)} Sporeling results vs {len(b_list)} PyTorch results")
    worst = 0.0
    for i, (a, b) in enumerate(zip(a_list, b_list)):
        if a.shape != b.shape:
            raise AssertionError(f"result {i}: shape {a.shape} vs PyTorch {b.shape}")
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        if not (np.isfinite(a64).all() and np.isfinite(b64).all()):
            raise AssertionError(f"result {i}: non-finite values")
        scale = max(float(np.abs(b64).max(initial=0.0)), 1e-30)
        err = float(np.abs(a64 - b64).max(initial=0.0)) / scale
        worst = max(worst, err)
        if err > tol:
            raise AssertionError(f"result {i}: relative error {err:.3g} > tolerance {tol:g}")
    return worst


def _time_block(
    fn: Callable[[], Any], number: int, sync: Callable[[], None], cooldown_s: float = 0.0
) -> float:
    if cooldown_s:
        time.sleep(cooldown_s)
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        sync()
        return time.perf_counter() - t0
    finally:
        if gc_was_on:
            gc.enable()


def _calibrate(fn: Callable[[], Any], settings: Settings) -> int:
    """Iterations per repeat so that one repeat takes about ``target_s``."""
    target_s = settings.target_s
    number = 1
    cooldown_s = settings.cooldown_s  # once, before the first block
    while True:
        elapsed = _time_block(fn, number, settings.sync, cooldown_s)
        cooldown_s = 0.0
        if elapsed >= target_s / 4 or number >= 1 << 20:
            return max(1, int(number * target_s / max(elapsed, 1e-9)))
        number *= 4


def measure(bench: str, case: Case, settings: Settings) -> Result:
    """Check the case's two results agree, then time both; a failed check skips timing."""
    res = Result(bench, case.name, case.per, goal=case.goal, note=case.note)
    try:
        sp_out = (case.check_sporeling or case.sporeling)()
        th_out = (case.check_torch or case.torch)()
        settings.sync()
        res.max_rel_err = compare(sp_out, th_out, case.tol)
        res.check = "ok"
    except Exception as exc:  # report and go on with the other cases
        res.check = f"FAILED: {type(exc).__name__}: {exc}"
        return res
    if not case.timed:
        return res
    fns = {"sporeling": case.sporeling, "torch": case.torch}
    numbers = {}
    for key, fn in fns.items():
        for _ in range(settings.warmup):
            fn()
        settings.sync()
        numbers[key] = _calibrate(fn, settings)
    times: dict[str, list[float]] = {"sporeling": [], "torch": []}
    for _ in range(settings.repeats):
        for key, fn in fns.items():  # alternate, so slow drifts hit both sides alike
            gc.collect()
            elapsed = _time_block(fn, numbers[key], settings.sync, settings.cooldown_s)
            times[key].append(elapsed / numbers[key] / case.ops_per_call)
    res.sporeling_repeats_s = times["sporeling"]
    res.torch_repeats_s = times["torch"]
    res.sporeling_s = statistics.median(times["sporeling"])
    res.torch_s = statistics.median(times["torch"])
    res.ratio = res.torch_s / res.sporeling_s
    if case.goal is not None:
        res.meets_goal = res.ratio >= case.goal
    return res


def fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def status(res: Result) -> str:
    if res.check != "ok":
        return "check failed"
    if res.ratio is None:
        return "check ok (not timed)"
    if res.goal is None:
        return "no goal"
    return f"{'ok' if res.meets_goal else 'BELOW'} (goal >= {res.goal:g})"


def table(results: list[Result]) -> list[list[str]]:
    """Rows for the report: header first."""
    rows = [["benchmark", "case", "per", "sporeling", "torch", "speed ratio", "status"]]
    for r in results:
        ratio = "-" if r.ratio is None else f"{r.ratio:.2f}"
        rows.append(
            [r.bench, r.case, r.per, fmt_time(r.sporeling_s), fmt_time(r.torch_s), ratio, status(r)]
        )
    return rows


def render_text(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for k, row in enumerate(rows):
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def render_markdown(rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(row) + " |" for row in rows[1:]]
    return "\n".join(lines)
