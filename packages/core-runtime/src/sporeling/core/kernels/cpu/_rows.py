"""Running a row kernel on several threads: the rows are cut into one contiguous block per
thread, and each block runs a cached, GIL-releasing Numba kernel (``parallel=True`` kernels
cannot be cached, see ``_config``). Small inputs stay on the calling thread, where a thread
hand-off costs more than it saves.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

__all__ = ["PARALLEL_MIN", "max_blocks", "n_blocks", "run_blocks"]

#: inputs with fewer elements run on the calling thread only: handing a block to another
#: thread costs ~100 us on this project's VM (a fused softmax of 2**18 elements took as long
#: on two threads as on one; 2**19: 1.3x faster on two)
PARALLEL_MIN = 1 << 18

_POOL: ThreadPoolExecutor | None = None
_CPUS = os.cpu_count() or 1  # fixed for the process (os.cpu_count costs ~60 us a call here)


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


def run_blocks(fn: Callable[[int, int, int], object], rows: int, blocks: int) -> None:
    """Call ``fn(k, lo, hi)`` for the ``blocks`` contiguous row ranges ``lo:hi`` of ``rows``,
    block 0 on this thread and the others on the shared pool; errors are re-raised here."""
    global _POOL
    if blocks <= 1:
        fn(0, 0, rows)
        return
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=_threads(), thread_name_prefix="sporeling-rows")
    bounds = [rows * k // blocks for k in range(blocks + 1)]
    futures = [_POOL.submit(fn, k, bounds[k], bounds[k + 1]) for k in range(1, blocks)]
    fn(0, bounds[0], bounds[1])
    for f in futures:
        f.result()
