"""Running a row kernel on several threads: the rows are cut into one contiguous block per
thread, and each block runs a cached, GIL-releasing Numba kernel (``parallel=True`` kernels
cannot be cached, see ``_config``). Small inputs stay on the calling thread, where a thread
hand-off costs more than it saves.

The extra threads are workers that sleep on a semaphore between blocks, and the caller
spins on a flag (GIL released, :mod:`._spin`) for their results. Inside :func:`spinning`
(the graph executor's runs) an idle worker first spins about a millisecond for its next
block: a graph step launches a block every few hundred microseconds, and on this project's
VM a thread woken from the OS took 20-50 us to run (a ThreadPoolExecutor hand-off 60-100
us), for tens of milliseconds after an idle spell longer still. Outside, workers go to
sleep at once: eager code runs NumPy's multi-threaded BLAS between kernels, whose own
threads need the cores (spinning workers there slowed an eager MLP step 3.3 -> 5.3 ms).
When the last :func:`spinning` block ends, spinning workers are sent to sleep. A caller
takes idle workers from a shared list (several threads may launch at once; blocks without
a free worker run on the caller), and a forked child starts with none.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from . import _spin

__all__ = ["PARALLEL_MIN", "max_blocks", "n_blocks", "run_blocks", "spinning"]

#: inputs with fewer elements run on the calling thread only: handing a block to another
#: thread costs ~100 us on this project's VM (a fused softmax of 2**18 elements took as long
#: on two threads as on one; 2**19: 1.3x faster on two)
PARALLEL_MIN = 1 << 18
#: atomic loads a waiting thread spins before it sleeps (about 1 ms): a caller waiting for
#: a worker's block, and inside :func:`spinning` an idle worker waiting for its next block
SPIN_TRIES = 2_000_000

_CPUS = os.cpu_count() or 1  # fixed for the process (os.cpu_count costs ~60 us a call here)
_POSTED, _DONE, _SLEEPING, _PARK = 0, 1, 2, 3
_SPINNING = [0]  # spinning() blocks open, all threads together


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
    """A daemon thread running one posted block at a time."""

    def __init__(self) -> None:
        # posted job number, finished job number, asleep, asked to stop spinning
        self.flags = np.zeros(4, np.int64)
        self.wake = threading.Semaphore(0)
        self.job: tuple[Callable[..., object], tuple[Any, ...]] | None = None
        self.error: BaseException | None = None
        self.seq = 0
        threading.Thread(target=self._loop, name="sporeling-rows", daemon=True).start()

    def _loop(self) -> None:
        flags, seq = self.flags, 0
        while True:
            seq += 1
            tries = SPIN_TRIES if _SPINNING[0] else 1  # at least one look at the flag
            while not _spin.spin_until_or(flags, _POSTED, seq, _PARK, tries):
                _spin.store(flags, _SLEEPING, 1)
                if _spin.load(flags, _POSTED) != seq:  # re-check after announcing the sleep
                    self.wake.acquire()
                _spin.store(flags, _SLEEPING, 0)
            assert self.job is not None
            fn, args = self.job
            try:
                fn(*args)
            except BaseException as exc:  # handed to the caller
                self.error = exc
            _spin.store(flags, _DONE, seq)

    def post(self, fn: Callable[..., object], *args: Any) -> None:
        self.seq += 1
        self.job, self.error = (fn, args), None
        _spin.store(self.flags, _PARK, 0)
        _spin.store(self.flags, _POSTED, self.seq)
        if _spin.load(self.flags, _SLEEPING):
            self.wake.release()

    def wait(self) -> None:
        flags, seq = self.flags, self.seq
        if not _spin.spin_until(flags, _DONE, seq, SPIN_TRIES):
            while _spin.load(flags, _DONE) != seq:
                if _spin.load(flags, _SLEEPING):  # a lost wake-up cannot hang the caller
                    self.wake.release()
                time.sleep(20e-6)
        if self.error is not None:
            error, self.error = self.error, None
            raise error


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


@contextmanager
def spinning() -> Iterator[None]:
    """Inside this block (any thread's) idle workers spin for their next block before they
    sleep; when the last such block ends, the spinning ones are sent to sleep."""
    with _LOCK:
        _SPINNING[0] += 1
    try:
        yield
    finally:
        with _LOCK:
            _SPINNING[0] -= 1
            if not _SPINNING[0]:
                for w in _ALL:
                    _spin.store(w.flags, _PARK, 1)


def _forget_workers() -> None:  # a forked child has none of the parent's threads
    global _LOCK
    _LOCK = threading.Lock()  # possibly held by a parent thread at the fork
    _IDLE.clear()
    _ALL.clear()
    _SPINNING[0] = 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_workers)


def run_blocks(fn: Callable[[int, int, int], object], rows: int, blocks: int) -> None:
    """Call ``fn(k, lo, hi)`` for the ``blocks`` contiguous row ranges ``lo:hi`` of ``rows``,
    block 0 on this thread and the others on idle workers; errors are re-raised here."""
    if blocks <= 1:
        fn(0, 0, rows)
        return
    bounds = [rows * k // blocks for k in range(blocks + 1)]
    workers = _take(blocks - 1)
    try:
        for k, w in enumerate(workers, start=1):
            w.post(fn, k, bounds[k], bounds[k + 1])
        fn(0, bounds[0], bounds[1])
        for k in range(len(workers) + 1, blocks):  # no free worker: run them here
            fn(k, bounds[k], bounds[k + 1])
    finally:
        errors = []
        for w in workers:
            try:
                w.wait()
            except BaseException as exc:
                errors.append(exc)
        with _LOCK:
            _IDLE.extend(workers)
    if errors:
        raise errors[0]
