"""Generated CPU kernels as GIL-free jobs (:mod:`.cpu._jobs`).

A generated kernel launched over several threads ran its chunks on :mod:`.cpu._rows`'s
Python workers: each chunk a Python call that takes the GIL, and a worker's start waits for
its wake and then for the GIL, held by the caller until its own first chunk. The fused
``ln(gelu(x*w+b))`` forward + backward (8192x1024, one row kernel) had its two threads
start up to 6 ms apart, and its 2-thread step spread 12.8-26.2 ms in one idle run
(benchmarks/README.md "ln(gelu) chain, session 9"). Here the kernel runs as a job: a
``cfunc`` that unpacks its arguments and calls the kernel (inlined into it, so it is
compiled once, in the job), on workers that never take the GIL.

The job is specific to the arrays' dtypes and dimensions (the kernel's source is not), so
it is built at its first launch, in a module of its own (kernel source, job wrapper, and
the digests of :mod:`.cpu.vecmath` and :mod:`.cpu._jobs`, whose inlined code Numba's cache
does not follow), cached on disk like the kernels. A launch that cannot run as a job
(jobs unavailable, one block, an array of another dtype, over 5 dimensions, not
C-contiguous) runs the kernel as before.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["job_address", "job_source", "JOB_DTYPES"]

#: dtypes a job's arrays may have (the views it unpacks are typed by them)
JOB_DTYPES = frozenset(("float32", "float64", "int32", "int64"))
#: compiled jobs' addresses by (kernel key, arrays' dtypes and dimensions), None where the
#: job could not be built
_JOBS: dict[Any, int | None] = {}
_LOCK = threading.Lock()
_DIGEST: list[str] = []


def _jobs_digest() -> str:
    if not _DIGEST:
        from .cpu import _jobs

        _DIGEST.append(hashlib.sha256(Path(_jobs.__file__).read_bytes()).hexdigest()[:16])
    return _DIGEST[0]


def job_source(n_ints: int, arrays: list[tuple[str, int]], n_cols: int) -> str:
    """Source of ``job(args, k, lo, hi)``: unpacks ``n_ints`` integers (the loop sizes),
    ``arrays`` (dtype name, dimensions) and ``n_cols`` float64 column partials of shape
    (threads, n), and calls ``kernel(lo, hi, ...)`` with row ``k`` of each partial."""
    args = [f"_jb.integer(p, {j})" for j in range(n_ints)]
    j = n_ints
    for dtype, ndim in arrays:
        args.append(f"_jb.view{ndim}(p, {j}, np.{dtype})")
        j += 1
    for _ in range(n_cols):
        args.append(f"_jb.view2(p, {j}, np.float64)[k]")
        j += 1
    call = ",\n        ".join(args)
    return (
        "def job(args, k, lo, hi):\n"
        "    p = _jb.block(args)\n"
        f"    kernel(\n        lo,\n        hi,\n        {call},\n    )\n"
    )


def job_address(
    key: Any,
    source: Callable[[], str],
    cpu_helpers: str,
    n_ints: int,
    arrays: list[Any],
    n_cols: int,
) -> int | None:
    """The address of the job running kernel ``key`` (its source from ``source``, with
    ``cpu_helpers`` before it) on ``arrays``, compiled at the first call for their dtypes
    and dimensions; None where a job does not apply (then run the kernel itself)."""
    from .cpu import _jobs

    if not _jobs.available():
        return None
    sig = []
    for a in arrays:
        if type(a) is not np.ndarray or a.dtype.name not in JOB_DTYPES:
            return None
        if not 1 <= a.ndim <= _jobs.SLOT - 1 or not a.flags.c_contiguous:
            return None
        sig.append((a.dtype.name, a.ndim))
    full = (key, tuple(sig), n_ints, n_cols)
    if full in _JOBS:
        return _JOBS[full]
    with _LOCK:
        if full not in _JOBS:
            _JOBS[full] = _build(source, cpu_helpers, n_ints, sig, n_cols)
    return _JOBS[full]


def _build(
    source: Callable[[], str],
    cpu_helpers: str,
    n_ints: int,
    sig: list[tuple[str, int]],
    n_cols: int,
) -> int | None:
    from . import codegen
    from .cpu import _jobs

    src = (
        codegen.CPU_PRELUDE
        + f"from sporeling.core.kernels.cpu import _jobs as _jb  # {_jobs_digest()}\n"
        + cpu_helpers
        # inlined into the job as Numba IR: one compile, in the cfunc, with these flags
        + "\n\n@njit(cache=True, nogil=True, error_model='numpy', inline='always')\n"
        + source()
        + "\n\n@_jb.options(error_model='numpy')\n"
        + job_source(n_ints, sig, n_cols)
    )
    namespace = codegen._load_module(src)
    if "__file__" not in namespace:  # compiled in memory (read-only cache): no cfunc cache
        return None
    return _jobs.job(namespace["job"])
