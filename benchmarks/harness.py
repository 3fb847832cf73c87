"""Timing, correctness checks and reporting shared by every benchmark in this folder.

A benchmark module defines ``NAME``, ``TITLE`` and ``cases(ctx) -> list[Case]``. Each
:class:`Case` holds one Sporeling callable and its PyTorch twin. Before timing, the
harness runs both once and compares their results (so the two really compute the same
thing); that first call is timed too (it includes compilation: Numba kernels, graph
tracing, torch's lazy setup). Then it times them in alternating repeats (Sporeling,
PyTorch, Sporeling, ...), with warm-up calls excluded and the garbage collector paused
inside a timed block, as ``timeit`` does. Before each timed block it waits for a quiet
machine and afterwards checks the CPU other processes used during the block
(``quiet.py``); a disturbed block is redone a bounded number of times and kept marked
disturbed if the machine never gets quiet. The reported time is the median over repeats
of the time per iteration, with the min and max beside it and a warning when they differ
by more than :data:`SPREAD_WARN` of the min.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from quiet import BlockRun, LoadMeter, QuietPolicy, run_quiet_block

SPREAD_WARN = 0.20  # (max - min) / min of the repeats above which a result is flagged


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
    # Quiet-machine policy: None times blindly (no waiting, no load reading).
    quiet: QuietPolicy | None = None
    meter: LoadMeter | None = None


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
    # the first call of each side (the check call): compilation, tracing, lazy setup
    sporeling_first_s: float | None = None
    torch_first_s: float | None = None
    # per repeat: foreign cores during the kept block, whether it stayed disturbed, tries
    sporeling_foreign: list[float | None] = field(default_factory=list)
    torch_foreign: list[float | None] = field(default_factory=list)
    disturbed_blocks: int = 0  # kept blocks still disturbed after every retry
    retried_blocks: int = 0  # blocks redone because they were disturbed
    # peak RSS in MiB, each side in a fresh process (memory.py); None when not measured
    sporeling_peak_mib: float | None = None
    torch_peak_mib: float | None = None
    sporeling_step_mib: float | None = None  # peak minus the RSS before the first call
    torch_step_mib: float | None = None
    memory_note: str = ""

    @property
    def disturbed(self) -> bool:
        return self.disturbed_blocks > 0

    def spreads(self) -> dict[str, float]:
        """(max - min) / min of each side's repeats."""
        out = {}
        for side, times in (
            ("sporeling", self.sporeling_repeats_s),
            ("torch", self.torch_repeats_s),
        ):
            if times:
                out[side] = spread(times)
        return out

    def spread_warning(self) -> str:
        """Which sides' repeats differ by more than SPREAD_WARN ('' when none)."""
        wide = [f"{k} {v:.0%}" for k, v in self.spreads().items() if v > SPREAD_WARN]
        return f"spread {', '.join(wide)}" if wide else ""

    def to_json(self) -> dict[str, Any]:
        d = dict(vars(self))
        d["spread"] = self.spreads()
        d["spread_warning"] = self.spread_warning()
        d["disturbed"] = self.disturbed
        return d


def spread(times: list[float]) -> float:
    """(max - min) / min: how far apart the repeats are."""
    lo = min(times)
    return (max(times) - lo) / lo if lo > 0 else float("inf")


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


def _timed_block(fn: Callable[[], Any], number: int, settings: Settings) -> BlockRun:
    """One repeat: blindly after the cooldown, or under the quiet-machine policy."""
    if settings.quiet is None or settings.meter is None:
        elapsed = _time_block(fn, number, settings.sync, settings.cooldown_s)
        return BlockRun(elapsed, None, False, 1, settings.cooldown_s)
    # the quiet wait idles at least one window, which serves as the cooldown
    return run_quiet_block(
        lambda: _time_block(fn, number, settings.sync), settings.meter, settings.quiet
    )


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
        t0 = time.perf_counter()
        sp_out = (case.check_sporeling or case.sporeling)()
        settings.sync()
        t1 = time.perf_counter()
        th_out = (case.check_torch or case.torch)()
        settings.sync()
        res.sporeling_first_s, res.torch_first_s = t1 - t0, time.perf_counter() - t1
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
    foreign: dict[str, list[float | None]] = {"sporeling": [], "torch": []}
    for _ in range(settings.repeats):
        for key, fn in fns.items():  # alternate, so slow drifts hit both sides alike
            gc.collect()
            run = _timed_block(fn, numbers[key], settings)
            times[key].append(run.elapsed / numbers[key] / case.ops_per_call)
            foreign[key].append(run.foreign_cores)
            res.disturbed_blocks += run.disturbed
            res.retried_blocks += run.tries - 1
    res.sporeling_repeats_s = times["sporeling"]
    res.torch_repeats_s = times["torch"]
    res.sporeling_foreign, res.torch_foreign = foreign["sporeling"], foreign["torch"]
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


def _span(r: Result, side: str) -> str:
    """median (min-max) of one side's repeats."""
    med = getattr(r, f"{side}_s")
    times = getattr(r, f"{side}_repeats_s")
    if med is None or not times:
        return fmt_time(med)
    return f"{fmt_time(med)} ({fmt_time(min(times))}-{fmt_time(max(times))})"


def _pair(a: float | None, b: float | None, fmt: Callable[[float | None], str]) -> str:
    if a is None and b is None:
        return "-"
    return f"{fmt(a)} / {fmt(b)}"


def _mib(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f}"


def flags(r: Result) -> str:
    """Warnings a reader must see beside the numbers: disturbed blocks, wide spreads."""
    out = []
    if r.disturbed:
        out.append(f"DISTURBED {r.disturbed_blocks} block(s)")
    if r.retried_blocks:
        out.append(f"{r.retried_blocks} block(s) redone")
    if r.spread_warning():
        out.append(r.spread_warning())
    if r.memory_note:
        out.append(r.memory_note)
    return "; ".join(out)


TABLE_HEADER = [
    "benchmark", "case", "per", "sporeling median (min-max)", "torch median (min-max)",
    "speed ratio", "status", "first call S / T", "peak RSS MiB S / T", "step MiB S / T",
    "warnings",
]  # fmt: skip


def table(results: list[Result]) -> list[list[str]]:
    """Rows for the report: header first."""
    rows = [list(TABLE_HEADER)]
    for r in results:
        ratio = "-" if r.ratio is None else f"{r.ratio:.2f}"
        rows.append(
            [
                r.bench,
                r.case,
                r.per,
                _span(r, "sporeling"),
                _span(r, "torch"),
                ratio,
                status(r),
                _pair(r.sporeling_first_s, r.torch_first_s, fmt_time),
                _pair(r.sporeling_peak_mib, r.torch_peak_mib, _mib),
                _pair(r.sporeling_step_mib, r.torch_step_mib, _mib),
                flags(r),
            ]
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
