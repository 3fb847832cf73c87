"""Numba kernels for row gathers and row scatters: the core of gather/embedding lookups,
their gradients, scatter_nd/tensor_scatter_* and the in-place Parameter scatters.

Every op of the family is brought to one of two shapes by the caller in ``ops/scatter/``:

* gather: ``src (O, N, I)``, row ids ``(K,)`` -> ``out (O, K, I)``
  (``out[o, k] = src[o, ids[k]]``); an embedding lookup is ``O = 1``.
* scatter: ``out (O, N, I)``, row ids ``(K,)``, updates ``(O, K, I)``; for ``k`` in order,
  ``out[o, ids[k]] = op(out[o, ids[k]], upd[o, k])``. Rows are visited in index order, so
  duplicates behave as a sequential loop (``update``: the last one wins; ``mul``: the
  product of all). Negative ids are skipped (segment ops drop them); all other ids were
  checked against ``N`` by the caller, so the kernels never index out of bounds.

Kernels are serial and cached (``JIT_SERIAL``). To keep compile time low they are
specialized only for C-contiguous float32/float64/int32/int64 data and int64 ids
(:func:`supports`); float16 is computed in float32; other dtypes use the generic path.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from ._config import JIT_SERIAL

__all__ = ["OPS", "supports", "gather_rows", "scatter_rows"]

#: scatter reductions, by their index in ``_SCATTER_KERNELS``
OPS = {"update": 0, "add": 1, "sub": 2, "mul": 3, "div": 4, "max": 5, "min": 6}
_KERNEL_DTYPES = (
    np.dtype(np.float32),
    np.dtype(np.float64),
    np.dtype(np.int32),
    np.dtype(np.int64),
)

# Division by zero must give inf/nan as in NumPy, not raise ZeroDivisionError.
_JIT = JIT_SERIAL


def supports(dtype: Any, op: str = "update") -> bool:
    """Whether the kernels handle ``dtype`` (integer division stays on the generic path)."""
    dt = np.dtype(dtype)
    if dt == np.float16:
        return True
    return dt in _KERNEL_DTYPES and not (op == "div" and dt.kind in "iu")


# ---- kernels (serial loops over rows) ----------------------------------------------------


@numba.jit(**_JIT)
def _gather_rows_kernel(src: Any, ids: Any, out: Any) -> None:  # pragma: no cover - jitted
    outer, _, inner = src.shape
    for o in range(outer):
        for k in range(ids.shape[0]):
            r = ids[k]
            for i in range(inner):
                out[o, k, i] = src[o, r, i]


# One kernel per reduction, compiled on first use: a single kernel switching on the op
# compiled all seven vectorised loops whenever any op ran (0.8 s with a cold Numba cache
# for an embedding gradient's "add", benchmarks/first_call.py); a kernel per op also keeps
# the inner loop free of a branch on it. max/min let a NaN update win (u != u) so NaN
# propagates as with np.maximum.at.


@numba.jit(**_JIT)
def _scatter_update(out: Any, ids: Any, upd: Any) -> None:  # pragma: no cover - jitted
    for o in range(out.shape[0]):
        for k in range(ids.shape[0]):
            r = ids[k]
            if r >= 0:
                for i in range(out.shape[2]):
                    out[o, r, i] = upd[o, k, i]


@numba.jit(**_JIT)
def _scatter_add(out: Any, ids: Any, upd: Any) -> None:  # pragma: no cover - jitted
    for o in range(out.shape[0]):
        for k in range(ids.shape[0]):
            r = ids[k]
            if r >= 0:
                for i in range(out.shape[2]):
                    out[o, r, i] += upd[o, k, i]


@numba.jit(**_JIT)
def _scatter_sub(out: Any, ids: Any, upd: Any) -> None:  # pragma: no cover - jitted
    for o in range(out.shape[0]):
        for k in range(ids.shape[0]):
            r = ids[k]
            if r >= 0:
                for i in range(out.shape[2]):
                    out[o, r, i] -= upd[o, k, i]


@numba.jit(**_JIT)
def _scatter_mul(out: Any, ids: Any, upd: Any) -> None:  # pragma: no cover - jitted
    for o in range(out.shape[0]):
        for k in range(ids.shape[0]):
            r = ids[k]
            if r >= 0:
                for i in range(out.shape[2]):
                    out[o, r, i] *= upd[o, k, i]


@numba.jit(**_JIT)
def _scatter_div(out: Any, ids: Any, upd: Any) -> None:  # pragma: no cover - jitted
    for o in range(out.shape[0]):
        for k in range(ids.shape[0]):
            r = ids[k]
            if r >= 0:
                for i in range(out.shape[2]):
                    out[o, r, i] /= upd[o, k, i]


@numba.jit(**_JIT)
def _scatter_max(out: Any, ids: Any, upd: Any) -> None:  # pragma: no cover - jitted
    for o in range(out.shape[0]):
        for k in range(ids.shape[0]):
            r = ids[k]
            if r >= 0:
                for i in range(out.shape[2]):
                    u = upd[o, k, i]
                    if u > out[o, r, i] or u != u:
                        out[o, r, i] = u


@numba.jit(**_JIT)
def _scatter_min(out: Any, ids: Any, upd: Any) -> None:  # pragma: no cover - jitted
    for o in range(out.shape[0]):
        for k in range(ids.shape[0]):
            r = ids[k]
            if r >= 0:
                for i in range(out.shape[2]):
                    u = upd[o, k, i]
                    if u < out[o, r, i] or u != u:
                        out[o, r, i] = u


#: the kernel of each reduction, in the order of :data:`OPS`
_SCATTER_KERNELS = (
    _scatter_update,
    _scatter_add,
    _scatter_sub,
    _scatter_mul,
    _scatter_div,
    _scatter_max,
    _scatter_min,
)


# ---- public wrappers (validate layout, allocate, upcast float16) ------------------------


def _ready(a: np.ndarray, dtype: Any = None) -> np.ndarray:
    """A C-contiguous, writeable array (one kernel specialization per dtype)."""
    if dtype is not None and a.dtype != dtype:
        return np.ascontiguousarray(a, dtype=dtype)
    if a.flags.c_contiguous and a.flags.writeable:
        return a
    return np.array(a, order="C", copy=True)


def _ids(ids: Any) -> np.ndarray:
    return _ready(np.asarray(ids).reshape(-1), np.int64)


def gather_rows(src: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """``out[o, k, i] = src[o, ids[k], i]`` for ``src (O, N, I)``; ids already in range."""
    work = np.float32 if src.dtype == np.float16 else src.dtype
    s = _ready(src, work)
    idx = _ids(ids)
    out = np.empty((s.shape[0], idx.shape[0], s.shape[2]), work)
    _gather_rows_kernel(s, idx, out)
    return out.astype(src.dtype, copy=False)


def scatter_rows(out: np.ndarray, ids: np.ndarray, upd: np.ndarray, op: str) -> None:
    """Apply ``op`` row by row into ``out (O, N, I)`` in place (see the module docstring)."""
    if ids.size == 0 or out.size == 0:
        return
    work = np.float32 if out.dtype == np.float16 else out.dtype
    direct = out.dtype == work and out.flags.c_contiguous and out.flags.writeable
    target = out if direct else np.array(out, dtype=work, order="C", copy=True)
    _SCATTER_KERNELS[OPS[op]](target, _ids(ids), _ready(upd, work))
    if not direct:
        out[...] = target
