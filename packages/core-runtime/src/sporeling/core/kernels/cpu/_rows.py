"""Running a row kernel on several threads: the rows are cut into one contiguous block per
thread, and each block runs a cached, GIL-releasing Numba kernel (``parallel=True`` kernels
cannot be cached, see ``_config``). Small inputs stay on the calling thread, where a thread
hand-off costs more than it saves.

The extra threads are workers that sleep on a semaphore between blocks; the caller spins on
a flag (GIL released, :mod:`._spin`) for their results before it polls with short sleeps.
Against a ThreadPoolExecutor (a future's lock) this made an eager MLP training step 5.4 ->
3.4 ms and its graph step 5.2 -> 3.4 ms: a caller asleep on a lock gave up its core to
OpenBLAS's spinning threads and took long to get it back. Workers that also spin between
blocks (tried inside graph runs only) made steady graph steps faster still but the first
steps after an idle spell 2-4x slower on this project's VM, and were dropped. A caller takes
idle workers from a shared list (several threads may launch at once; blocks without a free
worker run on the caller), and a forked child starts with none.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _spin

__all__ = ["PARALLEL_MIN", "max_blocks", "n_blocks", "run_blocks"]

#: inputs with fewer elements run on the calling thread only: handing a block to another
#: thread costs ~100 us on this project's VM (a fused softmax of 2**18 elements took as long
#: on two threads as on one; 2**19: 1.3x faster on two)
PARALLEL_MIN = 1 << 18
#: atomic loads a caller spins for a worker's result before it polls with short sleeps (~1 ms)
SPIN_TRIES = 2_000_000

_CPUS = os.cpu_count() or 1  # fixed for the process (os.cpu_count costs ~60 us a call here)
_POSTED, _DONE, _SLEEPING = 0, 1, 2


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
        self.flags = np.zeros(3, np.int64)  # posted job number, finished job number, asleep
        self.wake = threading.Semaphore(0)
        self.job: tuple[Callable[..., object], tuple[Any, ...]] | None = None
        self.error: BaseException | None = None
        self.seq = 0
        threading.Thread(target=self._loop, name="sporeling-rows", daemon=True).start()

    def _loop(self) -> None:
        flags, seq = self.flags, 0
        while True:
            seq += 1
            while _spin.load(flags, _POSTED) != seq:
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


def _forget_workers() -> None:  # a forked child has none of the parent's threads
    global _LOCK
    _LOCK = threading.Lock()  # possibly held by a parent thread at the fork
    _IDLE.clear()
    _ALL.clear()


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

