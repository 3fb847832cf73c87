"""Running a row kernel on several threads: the rows are cut into one contiguous block per
thread, and each block runs a cached, GIL-releasing Numba kernel (``parallel=True`` kernels
cannot be cached, see ``_config``). Small inputs stay on the calling thread, where a thread
hand-off costs more than it saves.

The rows are cut into a few more chunks than threads, which the caller and the workers
claim one at a time from an atomic counter: a worker that starts late (woken onto the
caller's core, or slow after an idle spell on a VM) leaves its chunks to the caller instead
of making it wait (a GELU + layer-norm step took 21 or 47 ms, at random, with fixed halves).
Workers sleep on a semaphore between jobs and put themselves back in the idle list before
they report their last chunk finished: reported after it, a worker held up on its way back
(waiting for the GIL or its core) was missing when the next kernel began, which then ran on
one thread (11 of 133 hand-offs per GPT step; a batched attention product took 1.24 instead
of 1.0 ms). The caller spins on a flag (GIL released, :mod:`._spin`) for chunks still
running before it polls with short sleeps. Against a ThreadPoolExecutor (a future's lock)
this made an eager MLP training step 5.4 -> 3.4 ms: a caller asleep on a lock gave up its
core to OpenBLAS's spinning threads and took long to get it back. Workers that also spun
between jobs (tried inside graph runs) made the first steps after an idle spell 2-4x slower
on this project's VM, and were dropped. A forked child starts with no workers.

A bounded linger is there instead, off by default: ``SPORELING_WORKER_LINGER_US=N`` has a
worker spin on its posted flag (GIL released, ``pause`` between loads) for at most ``N``
microseconds after each job before it sleeps, so that back-to-back kernels (a ResNet-20
step hands off ~120 times) find it awake instead of paying a futex wake (20-50 us, more
after an idle spell), as OpenMP's threads stay awake between PyTorch's ops. The poster
releases the semaphore only for a worker whose sleeping flag is set, which a lingering
worker has not set: see :meth:`_Worker._loop` for why no post is lost. The spin is counted
in ``pause`` loads calibrated once against the clock; a preempted spin only ends later.
Why off: on the shared 2-core VM at load ~9.5, with 300 us of Python between jobs of
8 nogil chunks, a 2 ms linger made the worker start later, not sooner (median 17 -> 53 us
after the post; it ran chunks in 66% -> 13% of the jobs; 400 us: 27 us, 42%): the spin
costs the worker its share of a busy scheduler. A worker that sees its post still needs
the GIL, held by the caller until its first kernel, so it waits on the GIL's condition
variable instead, for microseconds. Whether that wins on an idle machine needs an A/B
there (``SPORELING_WORKER_LINGER_US``, benchmarks/README.md). Float32 kernels with a job
wrapper (ReLU, adds, ReLU's gradient, batch norm, the per-image convolutions) run on
:mod:`._jobs` instead, whose workers never take the GIL.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _spin

__all__ = ["PARALLEL_MIN", "max_blocks", "n_blocks", "run_blocks", "run_concurrently"]

#: inputs with fewer elements run on the calling thread only: handing a block to another
#: thread costs ~100 us on this project's VM (a fused softmax of 2**18 elements took as long
#: on two threads as on one; 2**19: 1.3x faster on two)
PARALLEL_MIN = 1 << 18
#: atomic loads a caller spins for the workers' chunks before it polls with short sleeps (a
#: spin with x86 `pause` takes ~25 ns on this project's Zen 4 VM: up to ~50 ms; chunks end sooner)
SPIN_TRIES = 2_000_000

#: the most ``SPORELING_WORKER_LINGER_US`` may ask for (a longer spin only burns a core)
LINGER_US_MAX = 100_000.0
_CPUS = os.cpu_count() or 1  # fixed for the process (os.cpu_count costs ~60 us a call here)
_POSTED, _SLEEPING = 0, 1  # a worker's flags
_NEXT, _FINISHED = 0, 1  # a job's counters: next chunk to claim, chunks finished


def linger_us(name: str, value: str | None, default: float) -> float:
    """Environment variable ``name``'s ``value`` as microseconds (unset or empty: ``default``)."""
    if value is None or not value.strip():
        return default
    try:
        us = float(value)
    except ValueError:
        us = float("nan")
    if not 0 <= us <= LINGER_US_MAX:  # also NaN
        raise ValueError(f"{name} expected microseconds from 0 to {LINGER_US_MAX:g}, got {value!r}")
    return us


def _linger_from_env(value: str | None) -> float:
    """``SPORELING_WORKER_LINGER_US`` as microseconds (unset or empty: 0)."""
    return linger_us("SPORELING_WORKER_LINGER_US", value, 0.0)


#: microseconds a worker spins for its next job before it sleeps (0, the default: at once)
LINGER_US = _linger_from_env(os.environ.get("SPORELING_WORKER_LINGER_US"))
_tries_per_us: list[float] = []  # the spin's calibration, made once


def _linger_tries() -> int:
    """``LINGER_US`` as a number of ``_spin.spin_until`` tries (0: no linger)."""
    us = LINGER_US
    if us <= 0:
        return 0
    if not _tries_per_us:
        never = np.zeros(1, np.int64)
        n, best = 20_000, float("inf")
        _spin.spin_until(never, 0, -1, 100)  # compiled or loaded before the clock runs
        for _ in range(5):  # the fastest of five: a preempted try only lowers the rate
            t0 = time.perf_counter()
            _spin.spin_until(never, 0, -1, n)
            best = min(best, time.perf_counter() - t0)
        _tries_per_us.append(n / max(best * 1e6, 1e-3))
    return max(1, int(us * _tries_per_us[0]))


def _threads() -> int:
    import numba

    return max(1, int(numba.get_num_threads()))


def max_blocks() -> int:
    """How many threads a large input is split over (Numba's thread count, at most the CPUs)."""
    return max(1, min(_threads(), _CPUS))


def n_blocks(rows: int, elements: int) -> int:
    """How many row blocks (threads) an input of ``rows`` rows and ``elements`` elements uses."""
    if elements < PARALLEL_MIN:
        return 1
    return max(1, min(max_blocks(), rows))


class _Worker:
    """A daemon thread running one posted job at a time, back in the idle list after it."""

    def __init__(self) -> None:
        self.flags = np.zeros(2, np.int64)  # posted job number, asleep
        self.wake = threading.Semaphore(0)
        self.job: tuple[Callable[..., object], tuple[Any, ...]] | None = None
        self.seq = 0
        self.released = False  # back in the idle list before its job returned
        threading.Thread(target=self._loop, name="sporeling-rows", daemon=True).start()

    def _loop(self) -> None:
        """Run jobs ``seq = 1, 2, ...`` as they are posted; between two, linger, then sleep.

        No post is lost, linger or not: the worker blocks on the semaphore only after storing
        ``_SLEEPING = 1`` and then loading ``_POSTED != seq``; the poster stores ``_POSTED``
        and then loads ``_SLEEPING``. All four are sequentially consistent, so if the
        worker's load missed the post, its store of 1 came before the poster's load, which
        sees 1 (the worker writes ``_SLEEPING`` again only after the semaphore let it go)
        and releases. A spin that sees the post skips the semaphore; a post seen by the
        re-check leaves a spare permit, which a later wait takes and then re-checks the
        flag in this loop (a spurious wake, never a missed one)."""
        flags, seq = self.flags, 0
        while True:
            seq += 1
            tries = _linger_tries()
            if tries:  # awake for a while: a post now costs the poster no semaphore release
                _spin.spin_until(flags, _POSTED, seq, tries)
            while _spin.load(flags, _POSTED) != seq:
                _spin.store(flags, _SLEEPING, 1)
                if _spin.load(flags, _POSTED) != seq:  # re-check after announcing the sleep
                    self.wake.acquire()
                _spin.store(flags, _SLEEPING, 0)
            assert self.job is not None
            fn, args = self.job
            self.job = None
            try:
                fn(*args)  # a job records its own errors (see run_blocks)
            finally:
                self.release()  # unless the job did
                self.released = False
                # asleep until the next job, the loop must not keep this one's arrays alive
                # (a graph output the caller dropped is written into again only once nothing
                # refers to it, compiler/executor.py)
                fn = args = None

    def release(self) -> None:
        """Back in the idle list (once per job), called on this worker's own thread while its
        job ends: a job posted from now on waits in ``flags`` until the loop comes round to it."""
        if not self.released:
            self.released = True
            with _LOCK:
                _IDLE.append(self)

    def post(self, fn: Callable[..., object], *args: Any) -> None:
        self.seq += 1
        self.job = (fn, args)
        _spin.store(self.flags, _POSTED, self.seq)
        if _spin.load(self.flags, _SLEEPING):
            self.wake.release()


_IDLE: list[_Worker] = []
_ALL: list[_Worker] = []
_LOCK = threading.Lock()


def _take(n: int) -> list[_Worker]:
    """Up to ``n`` idle workers (new ones while fewer than the CPUs exist)."""
    with _LOCK:
        taken = [_IDLE.pop() for _ in range(min(n, len(_IDLE)))]
        while len(taken) < n and len(_ALL) < max(1, _CPUS - 1):
            _ALL.append(_Worker())
            taken.append(_ALL[-1])
    return taken


def _forget_workers() -> None:  # a forked child has none of the parent's threads
    global _LOCK
    _LOCK = threading.Lock()  # possibly held by a parent thread at the fork
    _IDLE.clear()
    _ALL.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_workers)


def run_blocks(
    fn: Callable[[int, int, int], object], rows: int, blocks: int, chunks: int | None = None
) -> None:
    """Call ``fn(k, lo, hi)`` for contiguous row ranges ``lo:hi`` covering ``rows`` (``chunks``
    of them, default twice ``blocks``), on this thread and up to ``blocks - 1`` idle workers;
    ``k < blocks`` says which thread runs the call (ranges one thread runs may share state,
    such as a partial column sum). Returns once every range ran; errors are re-raised here."""
    if blocks <= 1:
        fn(0, 0, rows)
        return
    n = max(1, min(rows, chunks if chunks is not None else 2 * blocks))
    bounds = [rows * c // n for c in range(n + 1)]
    state = np.zeros(2, np.int64)
    errors: list[BaseException] = []

    def participate(k: int, worker: _Worker | None = None) -> None:
        c = _spin.fetch_add(state, _NEXT, 1)
        while c < n:
            try:
                fn(k, bounds[c], bounds[c + 1])
            except BaseException as exc:  # re-raised by the caller
                errors.append(exc)
            finally:
                c_next = _spin.fetch_add(state, _NEXT, 1)  # claimed before this one is reported
                if c_next >= n and worker is not None:
                    worker.release()  # idle before the caller can go on
                _spin.fetch_add(state, _FINISHED, 1)
            c = c_next
        if worker is not None:
            worker.release()  # it ran no chunk

    for k, w in enumerate(_take(blocks - 1), start=1):
        w.post(participate, k, w)
    participate(0)
    _wait(state, n)
    if errors:
        raise errors[0]


def _wait(state: np.ndarray, n: int) -> None:
    """Until ``n`` parts of a job finished: spin (GIL released), then poll with short sleeps."""
    if not _spin.spin_until(state, _FINISHED, n, SPIN_TRIES):
        while _spin.load(state, _FINISHED) != n:
            time.sleep(20e-6)


def run_concurrently(fn: Callable[[int], object], n: int) -> None:
    """Call ``fn(k)`` for ``k < n``, each on its own thread and all at the same time (the
    caller runs ``k = 0``). For parts that wait on each other, such as OpenBLAS's level-3
    jobs, which :func:`run_blocks` would deadlock: there a thread may take a second chunk
    while a first one waits for it. A worker still on its way back to the idle list is
    waited for (~1 ms at most); parts beyond the idle workers (the pool busy with another
    thread's job) get threads of their own. Errors are re-raised here."""
    if n <= 1:
        fn(0)
        return
    workers = _take(n - 1)
    deadline = time.perf_counter() + 1e-3
    while len(workers) < n - 1 and time.perf_counter() < deadline:
        time.sleep(0)
        workers += _take(n - 1 - len(workers))
    state = np.zeros(2, np.int64)
    errors: list[BaseException] = []

    def part(k: int, worker: _Worker | None = None) -> None:
        try:
            fn(k)
        except BaseException as exc:  # re-raised by the caller
            errors.append(exc)
        finally:
            if worker is not None:
                worker.release()  # idle before the caller can go on
            _spin.fetch_add(state, _FINISHED, 1)

    for k, w in enumerate(workers, start=1):
        w.post(part, k, w)
    extra = [threading.Thread(target=part, args=(k,)) for k in range(len(workers) + 1, n)]
    for t in extra:
        t.start()
    part(0)
    _wait(state, n)
    for t in extra:
        t.join()
    if errors:
        raise errors[0]
