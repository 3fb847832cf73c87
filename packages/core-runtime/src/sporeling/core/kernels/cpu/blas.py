"""Matrix products on Sporeling's own threads, with no BLAS thread left spinning.

OpenBLAS's (and MKL's) worker threads keep spinning for a while after each multi-threaded
call. Sporeling's row kernels run on their own threads (:mod:`._rows`), so a kernel that
follows a product shared the cores with spinning BLAS threads: on 2 cores a GELU-gradient
kernel took 7.1 ms after a GEMM instead of 3.3 ms, and a GPT training step spent ~45 ms
that way. Inside compiled graphs (:func:`split_products`, entered by the executor) large
products therefore run on Sporeling's threads only: 2-d products of an OpenBLAS that takes
a threads callback run as OpenBLAS's own parallel jobs on those threads
(:mod:`.openblas_threads`, installed for the call); other large products are cut into
blocks of rows, columns or the batch that run as single-threaded BLAS calls there (the
BLAS thread count is set to 1 for such a call and restored after: the first caller in
saves it, the last one out restores it, through threadpoolctl, which finds NumPy's BLAS:
OpenBLAS, MKL, BLIS). Eager products, smaller products (below :data:`SPLIT_MIN_WORK`),
integer/bool or 1-d operands, and a BLAS that cannot be controlled run NumPy's ``matmul``
as it is; those from :data:`.product_threads.MIN_WORK` multiply-adds (eager ones, and a
graph's below :data:`SPLIT_MIN_WORK`) run it on as many of OpenBLAS's threads as the other
processes' load leaves cores for, those below :data:`.product_threads.ONE_THREAD_BELOW` on
one (:mod:`.product_threads`).

A graph's large products split only while the other processes' load leaves a core for
every thread of the split (:func:`.product_threads.threads_free`, the reading the eager
choice uses); otherwise they take the eager way, on as many BLAS threads as there are free
cores. The split's parts wait for each other (OpenBLAS's level-3 jobs synchronise; the
blocks are one per thread), so with one core taken by another process each product waited
for the part whose thread had lost its core: a GPT training step (benchmarks/bench_graph.py)
with a spinning neighbour took 0.67-0.71x the wall time of the same step in eager mode, and
spent ~600 instead of ~300 ms of CPU (benchmarks/README.md, "Graph mode under a busy
neighbour").
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from . import product_threads
from ._rows import max_blocks, run_blocks
from .gemm_bias import gemm_bias
from .openblas_threads import openblas_on_sporeling_threads

__all__ = ["matmul", "single_threaded_blas", "split_products"]

#: products with fewer multiply-adds (below ~400x400x400) run as NumPy's own ``matmul``: a
#: hand-off to another thread costs ~60-100 us on a VM, more than a smaller product gains
SPLIT_MIN_WORK = 1 << 26

_SCOPE = threading.local()  # .depth: split_products() blocks entered on this thread
_LOCK = threading.Lock()
_STATE: dict[str, Any] = {"controllers": None, "depth": 0, "saved": []}


def _controllers() -> list[Any]:
    """threadpoolctl's controllers of the loaded BLAS libraries (found once)."""
    found = _STATE["controllers"]
    if found is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - a declared dependency
            found = []
        else:
            found = list(ThreadpoolController().select(user_api="blas").lib_controllers)
        _STATE["controllers"] = found
    return found


@contextmanager
def split_products() -> Iterator[None]:
    """Inside this block (on this thread) products from :data:`SPLIT_MIN_WORK` run on
    Sporeling's threads only: as OpenBLAS's own jobs (2-d products,
    :mod:`.openblas_threads`) or as blocks of single-threaded BLAS calls (the rest). The
    graph executor enters it: there row kernels follow products closely, and the
    BLAS's spinning threads would slow them. Outside (eager mode), products run as NumPy's
    ``matmul``: after an idle spell thread hand-offs are slow on a VM, and OpenBLAS's own
    threads hand off faster (a 512x512 product in the benchmark: 0.6x PyTorch split, 0.95x
    not)."""
    _SCOPE.depth = getattr(_SCOPE, "depth", 0) + 1
    try:
        yield
    finally:
        _SCOPE.depth -= 1


@contextmanager
def single_threaded_blas() -> Iterator[bool]:
    """Hold every loaded BLAS to one thread inside the block (nests, thread-safe); yields
    whether any BLAS could be controlled."""
    libs = _controllers()
    with _LOCK:
        if _STATE["depth"] == 0:
            _STATE["saved"] = [lib.get_num_threads() for lib in libs]
            for lib, n in zip(libs, _STATE["saved"], strict=True):
                if n != 1:
                    lib.set_num_threads(1)
        _STATE["depth"] += 1
    try:
        yield bool(libs)
    finally:
        with _LOCK:
            _STATE["depth"] -= 1
            if _STATE["depth"] == 0:
                for lib, n in zip(libs, _STATE["saved"], strict=True):
                    if n != 1:
                        lib.set_num_threads(n)


#: 2-d products with fewer result elements than this run as ``ndarray.dot`` (see matmul)
SMALL_DOT = 4096


def matmul(
    x: np.ndarray, y: np.ndarray, out: np.ndarray | None = None, bias: np.ndarray | None = None
) -> np.ndarray:
    """``np.matmul(x, y)`` (``+ bias``, a vector along the last axis) for arrays of one float
    or complex dtype, on Sporeling's threads: 2-d products as OpenBLAS's own parallel jobs
    (the bias through ``beta = 1``, :mod:`.gemm_bias`), the others as single-threaded BLAS
    calls on blocks of the batch, of rows or of columns, each block adding its bias while
    still in cache; ``out`` (optional) must have the result's shape and dtype. Only inside
    :func:`split_products`; elsewhere NumPy's ``matmul`` (and bias add) as it is."""
    xs, ys = x.shape, y.shape
    if len(xs) < 2 or len(ys) < 2:
        return _plain(x, y, out, bias)
    if (
        len(xs) == 2
        and len(ys) == 2
        and out is None
        and bias is None
        and xs[0] * ys[1] < SMALL_DOT
        and xs[0] * xs[1] * ys[1] < product_threads.MIN_WORK
    ):
        # small matrices: ndarray.dot runs the same GEMM without the matmul ufunc's
        # dispatch (0.3 vs 0.65 us for 4x4, benchmarks/bench_dispatch.py); a small result
        # of a long product (large K) goes on, to the thread choice below
        return x.dot(y)
    # an upper bound of the multiply-adds, from Python ints (tiny products stay ~1 us)
    work = xs[-2] * xs[-1] * ys[-1]
    if len(xs) > 2 or len(ys) > 2:
        work *= max(math.prod(xs[:-2]), math.prod(ys[:-2]))
    if (
        work < SPLIT_MIN_WORK
        or not getattr(_SCOPE, "depth", 0)  # eager
        or x.dtype != y.dtype
        or x.dtype.kind not in "fc"
        or product_threads.threads_free() < max_blocks()  # a core taken: see the module doc
    ):
        if (
            work >= product_threads.MIN_WORK
            and product_threads.enabled
            and x.dtype == y.dtype
            and x.dtype.kind in "fc"
        ):
            # fewer BLAS threads while other processes keep the cores busy (eager products
            # and a graph's products below SPLIT_MIN_WORK: on OpenBLAS's threads both)
            return product_threads.run(lambda: _plain(x, y, out, bias), work, _controllers)
        return _plain(x, y, out, bias)
    if len(xs) == 2 and len(ys) == 2:
        with openblas_on_sporeling_threads() as switched:
            if switched:  # OpenBLAS's parallel jobs, on Sporeling's threads
                done = None if bias is None else gemm_bias(x, y, bias, out)
                return _plain(x, y, out, bias) if done is None else done
    return _split(x, y, out, bias)


def _plain(x: np.ndarray, y: np.ndarray, out: np.ndarray | None, bias: Any) -> np.ndarray:
    """One NumPy product (and bias) on the calling thread."""
    out = np.matmul(x, y) if out is None else np.matmul(x, y, out=out)
    if bias is not None:
        out += bias
    return out


def _split(x: np.ndarray, y: np.ndarray, out: np.ndarray | None, bias: Any) -> np.ndarray:
    """The product on blocks across threads, the BLAS held to one thread (one block per
    thread: smaller GEMMs run slower; a late thread's block still goes to the caller)."""
    threads = max_blocks()
    if threads <= 1:
        return _plain(x, y, out, bias)
    batch = np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    shape = (*batch, x.shape[-2], y.shape[-1])
    if out is None:
        out = np.empty(shape, x.dtype)
    with single_threaded_blas() as controlled:
        if not controlled:
            return _plain(x, y, out, bias)
        if batch and shape[0] >= threads:  # blocks of the (broadcast) leading batch axis
            xb = np.broadcast_to(x, (*batch, *x.shape[-2:]))
            yb = np.broadcast_to(y, (*batch, *y.shape[-2:]))

            def block(_k: int, lo: int, hi: int) -> None:
                _plain(xb[lo:hi], yb[lo:hi], out[lo:hi], bias)

            run_blocks(block, shape[0], threads, chunks=threads)
        elif shape[-2] >= shape[-1]:  # blocks of rows of x (of every matrix in the batch)

            def block(_k: int, lo: int, hi: int) -> None:
                _plain(x[..., lo:hi, :], y, out[..., lo:hi, :], bias)

            run_blocks(block, shape[-2], min(threads, shape[-2]), chunks=threads)
        else:  # blocks of columns of y (a wide product: few rows, many columns)

            def block(_k: int, lo: int, hi: int) -> None:
                _plain(x, y[..., lo:hi], out[..., lo:hi], None if bias is None else bias[lo:hi])

            run_blocks(block, shape[-1], min(threads, shape[-1]), chunks=threads)
    return out
