"""How much CPU other processes use: waiting for a quiet machine, and a busy neighbour.

On a small shared machine a timed block is only meaningful if nothing else ran during it:
on 2 cores the same MLP step measured 0.53x PyTorch in one run and 1.45x in another,
because PyTorch's threads collapse when another process takes a core. So the harness
reads the CPU time the whole machine spent (``/proc/stat``) and subtracts what this
process (all its threads) and any process it started on purpose (the busy neighbour)
spent; the rest, divided by the wall time, is the *foreign load* in cores.

``/proc/stat`` counts in clock ticks (10 ms), so a short block's reading is coarse: the
threshold gets a slack of :data:`TICK_SLACK_S` CPU seconds, and a block is only called
disturbed when the foreign CPU time exceeds ``threshold * wall + slack``.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
# two ticks on either reading of /proc/stat: the rounding of a tick counter read twice
TICK_SLACK_S = 2.0 / TICKS_PER_S
DEFAULT_THRESHOLD = 0.3  # foreign cores above which a block is disturbed (issue 24)


def machine_busy_s(stat_text: str | None = None) -> float | None:
    """CPU seconds the whole machine has spent busy since boot (None without /proc).

    Busy = user + nice + system + irq + softirq; idle and iowait are not busy, steal is
    time the hypervisor gave to another machine (not ours to count), and guest time is
    already inside user.
    """
    if stat_text is None:
        try:
            with open("/proc/stat") as f:
                stat_text = f.readline()
        except OSError:
            return None
    fields = stat_text.split()
    if not fields or fields[0] != "cpu":
        return None
    user, nice, system, _idle, _iowait, irq, softirq = (int(v) for v in fields[1:8])
    return (user + nice + system + irq + softirq) / TICKS_PER_S


def process_cpu_s(pid: int) -> float:
    """CPU seconds a process (all its threads, not its children) has used; 0 once gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return 0.0
    # the command name (field 2) may hold spaces: fields after the last ')' are fixed
    rest = text.rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) / TICKS_PER_S  # utime, stime


@dataclass
class CpuSample:
    wall: float
    machine: float | None
    own: float
    excluded: float


@dataclass
class LoadMeter:
    """Foreign CPU between two samples: machine busy time minus our own and excluded pids'.

    ``own`` is this process (every thread: the library pools under test are ours);
    ``exclude`` holds pids whose load is intended (the busy neighbour). Every reader is
    injectable so tests can feed numbers without timing anything.
    """

    exclude: list[int] = field(default_factory=list)
    machine_reader: Callable[[], float | None] = machine_busy_s
    own_reader: Callable[[], float] = time.process_time
    pid_reader: Callable[[int], float] = process_cpu_s
    clock: Callable[[], float] = time.perf_counter

    def available(self) -> bool:
        return self.machine_reader() is not None

    def slack_s(self) -> float:
        """Rounding of the tick counters read: the machine's, and each excluded pid's."""
        return TICK_SLACK_S * (1 + len(self.exclude))

    def sample(self) -> CpuSample:
        return CpuSample(
            wall=self.clock(),
            machine=self.machine_reader(),
            own=self.own_reader(),
            excluded=sum(self.pid_reader(p) for p in self.exclude),
        )

    @staticmethod
    def foreign_s(a: CpuSample, b: CpuSample) -> float | None:
        """Foreign CPU seconds between samples ``a`` and ``b`` (None if unknown)."""
        if a.machine is None or b.machine is None:
            return None
        used = (b.machine - a.machine) - (b.own - a.own) - (b.excluded - a.excluded)
        return max(used, 0.0)


def foreign_cores(foreign_s: float | None, wall_s: float) -> float | None:
    """Foreign CPU seconds as a number of cores busy on average."""
    if foreign_s is None or wall_s <= 0:
        return None
    return foreign_s / wall_s


def is_disturbed(
    foreign_s: float | None, wall_s: float, threshold: float, slack_s: float = TICK_SLACK_S
) -> bool:
    """More than ``threshold`` foreign cores, beyond the tick counters' rounding."""
    if foreign_s is None:
        return False  # unknown (no /proc): the report says the load was not measured
    return foreign_s > threshold * wall_s + slack_s


@dataclass
class QuietPolicy:
    """When to time: wait up to ``wait_s`` for a quiet window, redo a disturbed block up
    to ``retries`` times, and keep the last one marked disturbed if it never gets quiet."""

    threshold: float = DEFAULT_THRESHOLD
    wait_s: float = 30.0
    window_s: float = 0.25
    retries: int = 3
    # Seconds the whole run may spend waiting and redoing: once spent, blocks are timed
    # at once and only marked (a machine that stays busy must not make a run endless).
    budget_s: float = float("inf")
    spent_s: float = 0.0  # waited and redone so far, over every block

    def budget_left(self) -> float:
        return max(self.budget_s - self.spent_s, 0.0)


def wait_quiet(
    meter: LoadMeter,
    policy: QuietPolicy,
    sleep: Callable[[float], None] | None = None,
) -> tuple[bool, float]:
    """Idle in windows until one has at most ``policy.threshold`` foreign cores.

    Returns (quiet, seconds waited). With ``wait_s == 0`` it checks one window only.
    Our own process idles meanwhile, which also lets the libraries' spinning worker
    threads go to sleep before the next block.
    """
    sleep = sleep or time.sleep
    wait_s = min(policy.wait_s, policy.budget_left())
    start = meter.clock()
    while True:
        a = meter.sample()
        sleep(policy.window_s)
        b = meter.sample()
        fs = LoadMeter.foreign_s(a, b)
        if not is_disturbed(fs, b.wall - a.wall, policy.threshold, meter.slack_s()):
            return True, b.wall - start
        if b.wall - start >= wait_s:
            return False, b.wall - start


@dataclass
class BlockRun:
    """One timed block as finally kept: its time, the foreign load, how many tries."""

    elapsed: float
    foreign_cores: float | None
    disturbed: bool
    tries: int
    waited_s: float


def run_quiet_block(
    block: Callable[[], float],
    meter: LoadMeter,
    policy: QuietPolicy,
    sleep: Callable[[float], None] | None = None,
) -> BlockRun:
    """Wait for quiet, run ``block`` (it returns its own timed seconds), check the load
    during it, and redo it while disturbed, at most ``policy.retries`` more times."""
    waited = 0.0
    tries = 0
    while True:
        _, w = wait_quiet(meter, policy, sleep)
        waited += w
        policy.spent_s += max(w - policy.window_s, 0.0)  # one window is the cooldown
        a = meter.sample()
        elapsed = block()
        b = meter.sample()
        tries += 1
        fs = LoadMeter.foreign_s(a, b)
        wall = b.wall - a.wall
        disturbed = is_disturbed(fs, wall, policy.threshold, meter.slack_s())
        if not disturbed or tries > policy.retries or policy.budget_left() <= 0.0:
            return BlockRun(elapsed, foreign_cores(fs, wall), disturbed, tries, waited)
        policy.spent_s += wall  # this try is thrown away


class BusyNeighbour:
    """A separate process that keeps one core busy (a shared laptop or CI runner).

    Used as a context manager; its pid goes into :attr:`LoadMeter.exclude` so its load is
    not counted as foreign.
    """

    CODE = "while True:\n    pass\n"

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise RuntimeError("BusyNeighbour: not started (use it as a context manager)")
        return self.proc.pid

    def __enter__(self) -> BusyNeighbour:
        self.proc = subprocess.Popen([sys.executable, "-c", self.CODE])
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def limit_threads(n: int, torch_module: object | None = None) -> dict[str, object]:
    """Limit every thread pool of this process to ``n``: BLAS/OpenMP through threadpoolctl,
    Numba's parallel kernels, PyTorch's intra- and inter-op pools. Returns what was set.

    The environment variables are set too, for any process started afterwards.
    """
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ[var] = str(n)
    done: dict[str, object] = {}
    try:
        from threadpoolctl import threadpool_limits
    except ImportError as exc:
        raise RuntimeError(
            "the 1-thread mode needs threadpoolctl to limit NumPy's BLAS "
            "(pip install threadpoolctl; `nox -s bench` installs it)"
        ) from exc
    done["threadpoolctl"] = threadpool_limits(limits=n)
    import numba

    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    done["numba"] = numba.get_num_threads()
    if torch_module is not None:
        torch_module.set_num_threads(n)  # type: ignore[attr-defined]
        # the inter-op pool is only settable before the first parallel work
        with contextlib.suppress(RuntimeError):
            torch_module.set_num_interop_threads(n)  # type: ignore[attr-defined]
        done["torch"] = torch_module.get_num_threads()  # type: ignore[attr-defined]
    return done


def summarize_foreign(values: Iterable[float | None]) -> float | None:
    """The largest foreign load over blocks (None when none was measured)."""
    known = [v for v in values if v is not None]
    return max(known) if known else None
