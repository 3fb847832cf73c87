"""OpenBLAS's parallel jobs on Sporeling's threads, through OpenBLAS's threads callback.

OpenBLAS (0.3.27 and later) lets a program run its parallel jobs instead of its own thread
pool (``openblas_set_threads_callback_function``). For the large 2-d products of compiled
graphs (:mod:`.blas`) Sporeling installs a callback that runs them on its row-block workers
(:mod:`._rows`), so no OpenBLAS thread is left spinning next to the row kernels that
follow, and OpenBLAS's thread count stays as it is (the alternative, products cut into
single-threaded blocks, sets it to 1 and back around each product). Product by product
(cold caches) both take the same time; over a GPT training step the callback ran 3-8%
faster, in interleaved runs. Small products keep OpenBLAS's own threads: a hand-off to a
sleeping worker costs ~50 us, and with the callback over a whole graph an MLP step
(128-row products) ran 1.6x slower; so did eager 512x512 products (2-3x).

The callback is process-wide: it is installed while any thread runs such a product
(nesting counted) and removed after; products of other threads in that time run on these
workers as well, one call at a time (the jobs of one call share OpenBLAS's scratch
buffers). A BLAS other than OpenBLAS, an older OpenBLAS or an OpenMP build leaves it
uninstalled.
"""

from __future__ import annotations

import ctypes
import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ._rows import run_concurrently

__all__ = ["openblas_libraries", "openblas_on_sporeling_threads"]

# typedef void (*openblas_dojob_callback)(int thread_num, void *jobdata, int dojob_data);
# typedef void (*openblas_threads_callback)(int sync, openblas_dojob_callback dojob,
#     int numjobs, size_t jobdata_elsize, void *jobdata, int dojob_data);
_DOJOB = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p, ctypes.c_int)
_THREADS_CALLBACK = ctypes.CFUNCTYPE(
    None, ctypes.c_int, _DOJOB, ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_int
)
_SETTER = "openblas_set_threads_callback_function"
_AFFIXES = list(itertools.product(("", "scipy_"), ("", "64_", "_64")))  # as threadpoolctl

_CALL_LOCK = threading.Lock()  # one OpenBLAS call's jobs at a time
_STATE_LOCK = threading.Lock()
_STATE: dict[str, Any] = {"libraries": None, "depth": 0}


def _run_jobs(sync: int, dojob: Any, numjobs: int, size: int, jobdata: int, data: int) -> None:
    """OpenBLAS's callback: job ``k`` is ``dojob(k, jobdata + k * size, data)``; every job
    must run at the same time (level-3 jobs wait on each other) and be done on return."""
    started: list[int] = []

    def job(k: int) -> None:
        started.append(k)
        dojob(k, jobdata + k * size, data)

    with _CALL_LOCK:
        try:
            run_concurrently(job, numjobs)
        except BaseException:
            if started:  # jobs never raise: the pool failed midway, nothing safe to redo
                raise
            # the pool failed before any job ran (no thread could start): plain threads,
            # so that OpenBLAS never returns with jobs unrun
            threads = [threading.Thread(target=job, args=(k,)) for k in range(1, numjobs)]
            for t in threads:
                t.start()
            job(0)
            for t in threads:
                t.join()


_CALLBACK = _THREADS_CALLBACK(_run_jobs)  # kept alive for as long as OpenBLAS may call it
_NO_CALLBACK = _THREADS_CALLBACK()  # a NULL function pointer: OpenBLAS's own threads again


def openblas_libraries() -> list[tuple[Any, str, str]]:
    """``(library, symbol prefix, symbol suffix)`` of each loaded pthreads OpenBLAS with a
    threads callback (found once; threadpoolctl finds them)."""
    found = _STATE["libraries"]
    if found is None:
        found = []
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - a declared dependency
            controllers = []
        else:
            controllers = ThreadpoolController().select(internal_api="openblas").lib_controllers
        for lib in controllers:
            if getattr(lib, "threading_layer", None) != "pthreads":
                continue  # an OpenMP build runs its jobs on OpenMP, not through the callback
            dll = ctypes.CDLL(lib.filepath)
            for prefix, suffix in _AFFIXES:
                setter = getattr(dll, f"{prefix}{_SETTER}{suffix}", None)
                if setter is not None:
                    setter.argtypes = [_THREADS_CALLBACK]
                    setter.restype = None
                    found.append((dll, prefix, suffix))
                    break
        _STATE["libraries"] = found
    return found


def _find_setters() -> list[Any]:
    """The callback setters of :func:`openblas_libraries`."""
    return [getattr(dll, f"{p}{_SETTER}{s}") for dll, p, s in openblas_libraries()]


@contextmanager
def openblas_on_sporeling_threads() -> Iterator[bool]:
    """Inside the block (process-wide, nests, thread-safe) OpenBLAS's parallel jobs run on
    Sporeling's threads; yields whether an OpenBLAS could be switched."""
    with _STATE_LOCK:
        setters = _find_setters()
        if _STATE["depth"] == 0:
            for setter in setters:
                setter(_CALLBACK)
        _STATE["depth"] += 1
    try:
        yield bool(setters)
    finally:
        with _STATE_LOCK:
            _STATE["depth"] -= 1
            if _STATE["depth"] == 0:
                for setter in setters:
                    setter(_NO_CALLBACK)
