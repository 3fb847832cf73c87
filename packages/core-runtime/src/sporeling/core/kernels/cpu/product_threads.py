"""How many BLAS threads an eager matrix product gets, chosen by measuring both.

On a machine whose other cores are busy (a shared laptop, a CI runner, a second process),
OpenBLAS's worker threads wait for a core at every call: each product then costs a
scheduler time slice instead of its work. On 2 cores with the other one busy (load average
4-10), a 20-layer MLP step (64x256x256 products, ~55 us each on one core) took a median of
51-395 ms with OpenBLAS's 2 threads and 16-25 ms with this choice (PyTorch's 2 threads,
same runs: 60-280 ms). On an idle machine the second thread may help instead. Neither
can be told from the outside cheaply (load averages lag by a minute), so each call is
timed: per size class (the product's multiply-adds, in powers of two) a running average
of the time per multiply-add with the BLAS's own threads and with one thread; calls take
the faster, and now and then one call takes the other (a *probe*, spaced so that probes
cost at most :data:`PROBE_SHARE` of the time), so a change of load is noticed within a
fraction of a second. Products below :data:`MIN_WORK` are left alone (OpenBLAS runs them
on one thread anyway, or they are too short for a thread switch to pay); with a BLAS
already held to one thread (``--threads 1``, threadpoolctl limits) both ways are the
same.

**Off by default** (``SPORELING_PRODUCT_THREADS=measure`` turns it on). On a nearly idle
machine (load ~1.5, 0.2 s pauses between blocks of steps, as the benchmark harness makes)
it made the MLP 784-512-256-10 step slower, 2.7 -> 3.4 ms: the 128x784x512 products
measured 0.9-1.1 ms on OpenBLAS's two threads and 0.6-0.8 ms on one, so they moved to one
thread, yet always on two they take less. A probe on the BLAS's threads after a run of
one-thread calls finds its threads asleep, so the measurement favours one thread; timing
only a second probe in a row would be the next thing to try.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = [
    "MIN_WORK",
    "PROBE_SHARE",
    "SWITCH",
    "SWITCH_TO_ONE",
    "enabled",
    "run",
    "reset",
    "Policy",
]

#: on only with ``SPORELING_PRODUCT_THREADS=measure`` (see the module docstring: off by
#: default until the measurement of OpenBLAS's threads is fixed for a quiet machine)
enabled = os.environ.get("SPORELING_PRODUCT_THREADS", "blas") == "measure"

#: products from this many multiply-adds are timed (2M: ~15 us on one core)
MIN_WORK = 1 << 21
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


_POLICY = Policy()


def reset() -> None:
    """Forget every measurement (tests; a program that knows its load changed)."""
    _POLICY.stats.clear()


def run(product: Callable[[], Any], work: int, controllers: Callable[[], list[Any]]) -> Any:
    """``product()``, timed, on the BLAS's threads or on one thread, whichever this size
    class measured faster; ``controllers()`` lists threadpoolctl's controllers of the
    loaded BLAS libraries (none: nothing to choose, the BLAS's threads)."""
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
