"""Top-k selection along the last axis (Numba).

Each row keeps a size-``k`` min-heap of the best entries seen so far, so selection costs
O(n log k) instead of a full sort. "Better" means a larger value, ties broken by the lower
index (MindSpore/TensorFlow order), with NaN ranked above every number so the kernel agrees
with the sort-based reference in ``ops.array`` (``tests/ops/test_array.py::test_top_k_kernel``).

Layers: :func:`top_k_indices` validates and allocates, ``_top_k_kernel`` loops over rows,
``_select_row`` is the plain per-row loop.
"""

from __future__ import annotations

import numba
import numpy as np

from ._config import JIT_SERIAL

__all__ = ["top_k_indices"]


@numba.jit(**JIT_SERIAL)
def _better(a, ia, b, ib):
    """Whether entry (a, ia) ranks before (b, ib)."""
    a_nan = a != a
    b_nan = b != b
    if a_nan or b_nan:
        if a_nan and b_nan:
            return ia < ib
        return a_nan
    if a > b:
        return True
    if a < b:
        return False
    return ia < ib


@numba.jit(**JIT_SERIAL)
def _sift_down(hv, hi, start, size):
    """Restore the heap below ``start``: the worst entry sits at the root."""
    pos = start
    while True:
        child = 2 * pos + 1
        if child >= size:
            return
        right = child + 1
        if right < size and _better(hv[child], hi[child], hv[right], hi[right]):
            child = right  # the worse child
        if _better(hv[pos], hi[pos], hv[child], hi[child]):
            hv[pos], hv[child] = hv[child], hv[pos]
            hi[pos], hi[child] = hi[child], hi[pos]
            pos = child
        else:
            return


@numba.jit(**JIT_SERIAL)
def _select_row(row, k, sort, hv, hi, out_i):
    n = row.shape[0]
    for j in range(k):
        hv[j] = row[j]
        hi[j] = j
    for j in range(k // 2 - 1, -1, -1):
        _sift_down(hv, hi, j, k)
    for j in range(k, n):
        v = row[j]
        if _better(v, j, hv[0], hi[0]):
            hv[0] = v
            hi[0] = j
            _sift_down(hv, hi, 0, k)
    if sort:
        # pop the worst entry into the last free slot: best first when done
        size = k
        while size > 0:
            out_i[size - 1] = hi[0]
            size -= 1
            hv[0] = hv[size]
            hi[0] = hi[size]
            _sift_down(hv, hi, 0, size)
    else:
        # unsorted output keeps the input order (deterministic on every device)
        out_i[:] = np.sort(hi)


@numba.jit(**JIT_SERIAL)
def _top_k_kernel(x, k, sort, out_i):
    hv = np.empty(k, x.dtype)
    hi = np.empty(k, np.int64)
    for r in range(x.shape[0]):
        _select_row(x[r], k, sort, hv, hi, out_i[r])


def top_k_indices(x: np.ndarray, k: int, sort: bool = True) -> np.ndarray:
    """Indices (int64) of the ``k`` largest entries of each row of the last axis of ``x``."""
    n = x.shape[-1] if x.ndim else 1
    if not 0 <= k <= n:
        raise ValueError(f"top_k: argument 'k' expected an int in [0, {n}], got {k}")
    lead = x.shape[:-1]
    out = np.empty(lead + (k,), np.int64)
    if k == 0 or out.size == 0:
        return out
    # Few specializations keep compile time low: floats run as float64 or float32 (exact
    # order), other integers as int64; uint64 keeps its own type (int64 would wrap).
    if x.dtype.kind == "f":
        work = x if x.dtype in (np.float32, np.float64) else x.astype(np.float32)
    elif x.dtype == np.uint64:
        work = x
    else:
        work = x.astype(np.int64)
    work = np.ascontiguousarray(work.reshape(-1, n))
    _top_k_kernel(work, k, bool(sort), out.reshape(-1, k))
    return out
