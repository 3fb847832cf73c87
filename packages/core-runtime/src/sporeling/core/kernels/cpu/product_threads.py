"""How many BLAS threads an eager matrix product gets: fewer when other processes keep the
cores busy.

On a machine whose other cores are busy (a shared laptop, a CI runner, a second process),
OpenBLAS's worker threads wait for a core at every call: each product then costs a
scheduler time slice instead of its work. On 2 cores with the other one busy (load average
4-10), a 20-layer MLP step (64x256x256 products, ~55 us each on one core) took a median of
51-395 ms with OpenBLAS's 2 threads and 16-25 ms on one thread (PyTorch's 2 threads, same
runs: 60-280 ms). On an idle machine the second thread helps instead (1.7x on the MLP's
128x784x512 product).

**The default, ``load``**: at most every :data:`LOAD_INTERVAL` seconds the product reads the
machine's CPU counters (``/proc/stat``, ~20 us) and this process's CPU time
(``os.times``); the difference over the interval is the CPU that *other* processes used, in
cores. Products from :data:`MIN_WORK` multiply-adds then run on at most ``cpus - foreign``
BLAS threads (rounded, with a margin each way so that the choice does not flap: on 2 CPUs
one thread from 0.5 foreign cores, both again below 0.25), never fewer than one. Threads of
this process (Numba's, PyTorch's in a benchmark, OpenBLAS's own spinning ones) count as its
own, so the choice is not fooled by them, nor by OpenBLAS's threads having gone to sleep (what
misled the measuring policy below). Without ``/proc/stat`` (not Linux) products keep the
BLAS's threads.

``SPORELING_PRODUCT_THREADS=blas`` leaves every product on the BLAS's own threads;
``=measure`` selects the earlier policy, which times each call: per size class (the product's
multiply-adds, in powers of two) a running average of the time per multiply-add with the
BLAS's own threads and with one thread; calls take the faster, and now and then one call
takes the other (a *probe*, spaced so that probes cost at most :data:`PROBE_SHARE` of the
time). On a nearly idle machine (load ~1.5, 0.2 s pauses between blocks of steps, as the
benchmark harness makes) it made the MLP 784-512-256-10 step slower, 2.7 -> 3.4 ms: a probe
on the BLAS's threads after a run of one-thread calls finds its threads asleep, so the
measurement favours one thread. Products below :data:`MIN_WORK` are left alone either way
(OpenBLAS runs them on one thread anyway, or they are too short for a thread switch to pay);
with a BLAS already held to one thread (``--threads 1``, threadpoolctl limits) every way is
the same.

**Small products on one thread, any load** (both modes): products from :data:`MIN_WORK`
but below :data:`ONE_THREAD_BELOW` multiply-adds always run with the BLAS held to one
thread. OpenBLAS splits them over its threads from 2**18 multiply-adds on (its
``GEMM_MULTITHREAD_THRESHOLD``), where the second thread gains little (64x400x120, a
LeNet-5 Dense layer: 0.081 ms median on 1 thread and on 2; 64x512x128 0.094 vs 0.081), and
its worker then spins for tens of milliseconds after the call, on the core that Sporeling's
job workers (:mod:`._jobs`) and the calling thread need for the kernels that follow: a
LeNet-5 step at 2 threads used 7.1 ms of CPU with the small products on OpenBLAS's threads
against 4.5 ms without (min of 60 steps each, interleaved in one process, load ~7;
``benchmarks/conv/lenet_ab.py``).
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = [
    "LOAD_INTERVAL",
    "MIN_WORK",
    "ONE_THREAD_BELOW",
    "MODE",
    "ForeignLoad",
    "PROBE_SHARE",
    "SWITCH",
    "SWITCH_TO_ONE",
    "enabled",
    "run",
    "threads_free",
    "reset",
    "Policy",
]

#: ``SPORELING_PRODUCT_THREADS``: "load" (the default), "measure" or "blas" (see above)
MODE = os.environ.get("SPORELING_PRODUCT_THREADS", "load").strip().lower()
if MODE not in ("load", "measure", "blas"):
    raise ValueError(
        f"SPORELING_PRODUCT_THREADS expected 'load', 'measure' or 'blas', got {MODE!r}"
    )
#: whether eager products from MIN_WORK go through :func:`run` (blas.matmul reads it)
enabled = MODE != "blas"
#: seconds between two readings of the CPU counters (``load`` mode): 10 clock ticks per CPU
LOAD_INTERVAL = 0.1

#: products from this many multiply-adds go through :func:`run` (OpenBLAS runs smaller ones
#: on one thread by itself: 65536 x its ``GEMM_MULTITHREAD_THRESHOLD`` of 4)
MIN_WORK = 1 << 18
#: products below this many multiply-adds (4M: ~35 us on one core) always run on one BLAS
#: thread; from it on, the mode's choice (``measure`` times only these)
ONE_THREAD_BELOW = 1 << 22
#: a call of the way not preferred (a probe) costs at most this share of the time: after a
#: probe that took t, the next comes t / PROBE_SHARE later (a 2-thread product that waited
#: 8 ms for a busy core is tried again after 0.4 s; one of 100 us on an idle machine, 5 ms)
PROBE_SHARE = 0.02
#: and at least this long after the last (seconds)
PROBE_MIN_GAP = 0.005
#: one thread takes over only when it is faster by this factor: a product on OpenBLAS's
#: threads right after an idle spell (threads asleep) or after another library's threads
#: ran can be slow once without the machine being busy; a busy core costs 10-100x
SWITCH_TO_ONE = 1.5
#: the BLAS's threads take over again when faster by this factor (noise margin)
SWITCH = 1.15
#: weight of a new time in the running averages
ALPHA = 0.3

_clock = time.perf_counter


class Policy:
    """The running averages of one process (thread-safe enough: a lost update only delays
    a switch)."""

    def __init__(self) -> None:
        #: size class -> [seconds per multiply-add with the BLAS's threads, with one,
        #: whether one thread is preferred, when the next probe may run]
        self.stats: dict[int, list[Any]] = {}
        self.lock = threading.Lock()

    def choose(self, work: int, now: float) -> tuple[list[Any], bool, bool]:
        """The stats of ``work``'s size class, whether this call runs on one thread and
        whether it is a probe (the way not preferred)."""
        key = work.bit_length()
        st = self.stats.get(key)
        if st is None:
            with self.lock:
                st = self.stats.setdefault(key, [math.nan, math.nan, False, 0.0])
        if st[0] != st[0]:  # nan: not timed yet
            return st, False, False
        if st[1] != st[1]:
            return st, True, False
        if now >= st[3]:
            return st, not st[2], True
        return st, st[2], False

    @staticmethod
    def record(
        st: list[Any], one: bool, probe: bool, seconds: float, work: int, now: float
    ) -> None:
        """Fold one call's time into its class's averages, update the preference, and
        after a probe set when the next may run."""
        per = seconds / work
        i = 1 if one else 0
        old = st[i]
        st[i] = per if old != old else old + ALPHA * (per - old)
        multi, single = st[0], st[1]
        if multi == multi and single == single:
            if st[2] and multi * SWITCH < single:
                st[2] = False
            elif not st[2] and single * SWITCH_TO_ONE < multi:
                st[2] = True
        if probe or st[3] == 0.0:
            st[3] = now + max(seconds / PROBE_SHARE, PROBE_MIN_GAP)


def _read_proc_stat() -> tuple[int, int] | None:
    """(busy, total) clock ticks of all CPUs since boot from ``/proc/stat``, or None."""
    try:
        with open("/proc/stat", "rb") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if len(fields) < 5 or fields[0] != b"cpu":
        return None
    ticks = [int(v) for v in fields[1:9]]  # user nice system idle iowait irq softirq steal
    total = sum(ticks)
    idle = ticks[3] + ticks[4]  # waiting for I/O leaves the core free
    return total - idle, total


def _own_seconds() -> float:
    """CPU seconds this process has used (every thread: its own BLAS and Numba threads)."""
    t = os.times()
    return t.user + t.system


class ForeignLoad:
    """How many BLAS threads the other processes leave room for, from the CPU counters read
    at most every :data:`LOAD_INTERVAL` seconds (``read``/``own`` are replaceable for tests)."""

    def __init__(
        self,
        read: Callable[[], tuple[int, int] | None] = _read_proc_stat,
        own: Callable[[], float] = _own_seconds,
        cpus: int | None = None,
        tick: float | None = None,
    ) -> None:
        self.read, self.own = read, own
        self.cpus = cpus or os.cpu_count() or 1
        if tick is None:
            try:
                tick = 1.0 / os.sysconf("SC_CLK_TCK")
            except (AttributeError, ValueError, OSError):  # pragma: no cover - not POSIX
                tick = 0.01
        self.tick = tick
        self.next = 0.0  # when the counters may be read again
        self.last: tuple[int, int, float] | None = None  # busy, total, own seconds
        self.foreign = 0.0  # cores other processes used over the last interval
        self.allowed = self.cpus  # the current limit on the BLAS's threads
        self.available = True  # False once the counters could not be read

    def limit(self, now: float) -> int:
        """The most threads a product should use now (``cpus`` when nobody else is busy)."""
        if now >= self.next:
            self.next = now + LOAD_INTERVAL
            self.sample()
        return self.allowed

    def sample(self) -> None:
        got = self.read()
        if got is None:
            self.available, self.allowed = False, self.cpus
            return
        busy, total = got
        own = self.own()
        last = self.last
        self.last = (busy, total, own)
        if last is None:
            return
        span = (total - last[1]) / self.cpus  # elapsed ticks per CPU
        if span < 5:  # too few ticks to tell (the counters move every 10 ms)
            return
        own_ticks = (own - last[2]) / self.tick
        self.foreign = max(0.0, (busy - last[0] - own_ticks) / span)
        free = self.cpus - self.foreign
        # a margin each way: fewer threads from half a foreign core, more again only once
        # three quarters of a core came free
        down = max(1, min(self.cpus, math.floor(free + 0.5)))
        up = max(1, min(self.cpus, math.floor(free + 0.25)))
        if self.allowed > down:
            self.allowed = down
        elif self.allowed < up:
            self.allowed = up


_LOAD = ForeignLoad()
_POLICY = Policy()


def reset() -> None:
    """Forget every measurement (tests; a program that knows its load changed)."""
    global _LOAD
    _POLICY.stats.clear()
    _LOAD = ForeignLoad()


def threads_free() -> int:
    """How many threads the other processes' load leaves this process now (``load`` mode,
    the reading shared with the products' choice); the CPUs in the other modes, which do
    not read the load. A compiled graph's large products split over Sporeling's threads
    only while this covers them (:func:`.blas.matmul`)."""
    if MODE != "load":
        return _LOAD.cpus
    return _LOAD.limit(_clock())


def run(product: Callable[[], Any], work: int, controllers: Callable[[], list[Any]]) -> Any:
    """``product()`` on as many of the BLAS's threads as :data:`MODE` allows now;
    ``controllers()`` lists threadpoolctl's controllers of the loaded BLAS libraries (none:
    nothing to choose, the BLAS's threads)."""
    if work < ONE_THREAD_BELOW:
        n = 1
    elif MODE == "measure":
        return _run_measured(product, work, controllers)
    else:
        n = _LOAD.limit(_clock())
    if n >= _LOAD.cpus:  # nobody else busy: the BLAS's threads as they are
        return product()
    # held without blas.single_threaded_blas's lock (~3 us a call): a product of another
    # thread that starts meanwhile may run on n threads or on the saved count, never on a
    # wrong result
    libs = controllers()
    saved = [lib.get_num_threads() for lib in libs]
    for lib, was in zip(libs, saved, strict=True):
        if was > n:
            lib.set_num_threads(n)
    try:
        return product()
    finally:
        for lib, was in zip(libs, saved, strict=True):
            if was > n:
                lib.set_num_threads(was)


def _run_measured(
    product: Callable[[], Any], work: int, controllers: Callable[[], list[Any]]
) -> Any:
    """``product()``, timed, on the BLAS's threads or on one thread, whichever this size
    class measured faster (``SPORELING_PRODUCT_THREADS=measure``)."""
    t0 = _clock()
    st, one, probe = _POLICY.choose(work, t0)
    if one:
        libs = controllers()
        if not libs:
            st[1] = math.inf
            return product()
        # held here without blas.single_threaded_blas's lock (~3 us a call): a product of
        # another thread that starts meanwhile may run on one thread or on the saved count,
        # never on a wrong result
        saved = [lib.get_num_threads() for lib in libs]
        for lib, n in zip(libs, saved, strict=True):
            if n != 1:
                lib.set_num_threads(1)
        try:
            out = product()
        finally:
            for lib, n in zip(libs, saved, strict=True):
                if n != 1:
                    lib.set_num_threads(n)
    else:
        out = product()
    t1 = _clock()
    _POLICY.record(st, one, probe, t1 - t0, work, t1)
    return out
