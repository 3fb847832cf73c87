"""Numba kernels for embedding lookups and their row-sparse gradients.

* :func:`lookup_rows`: ``out[k] = table[ids[k]]``, a zero row for an id outside the table
  (MindSpore's lookup): ``np.take`` when every id is inside, else one pass without the
  boolean masks and ``where`` copies.
* :func:`unique_row_sums`: the unique in-range ids, sorted, and the sum of the rows of each
  (a lookup's gradient as a ``RowTensor``). The ids are grouped through an open-addressing
  hash table sized to the batch (no argsort of the whole batch, no gather of its rows in
  sorted order, no table-sized scratch; each thread keeps its table, emptied after use):
  only the distinct ids are sorted, then every row is added into its id's slot. Rows
  are added in batch order, so each sum is the sequential float sum ``np.add.at`` gives
  (bit-identical; ``np.add.reduceat`` may differ in the last bits).

Serial and cached (no fastmath: the order of the additions is part of the result). Only
float32/float64 rows; the callers keep a NumPy path for other dtypes (:func:`supports`).
"""

from __future__ import annotations

import threading
from typing import Any

import numba
import numpy as np

__all__ = ["supports", "lookup_rows", "group_ids", "unique_row_sums"]

_JIT: dict[str, Any] = {"cache": True, "error_model": "numpy"}
_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: the high bits of id * 2^64/phi


def supports(dtype: Any) -> bool:
    return np.dtype(dtype) in _DTYPES


@numba.jit(**_JIT)
def _lookup_kernel(table: Any, ids: Any, out: Any) -> None:  # pragma: no cover - jitted
    vocab, width = table.shape
    for k in range(ids.shape[0]):
        r = ids[k]
        if 0 <= r < vocab:
            for i in range(width):
                out[k, i] = table[r, i]
        else:
            for i in range(width):
                out[k, i] = 0


@numba.jit(**_JIT)
def _group_kernel(ids: Any, vocab: int, shift: Any, table: Any, uniq: Any,
                  inv: Any) -> int:  # fmt: skip  # pragma: no cover - jitted
    """``uniq[:n]``: the distinct in-range ids in order of first use; ``inv[k]``: the
    position in ``uniq`` of ``ids[k]`` (-1 when out of range). Returns n. ``table``
    ``(2^bits, 2)``: (id, position) pairs, -1 for a free slot; one cache line a probe."""
    mask = table.shape[0] - 1
    n = 0
    for k in range(ids.shape[0]):
        v = ids[k]
        if v < 0 or v >= vocab:
            inv[k] = -1
            continue
        h = np.int64((np.uint64(v) * _GOLDEN) >> shift)
        while True:
            key = table[h, 0]
            if key == v:
                inv[k] = table[h, 1]
                break
            if key == -1:
                table[h, 0] = v
                table[h, 1] = n
                uniq[n] = v
                inv[k] = n
                n += 1
                break
            h = (h + 1) & mask
    return n


@numba.jit(**_JIT)
def _rank_kernel(ordered: Any, shift: Any, table: Any, inv: Any) -> None:  # pragma: no cover
    """``inv[k]`` becomes the position in ``ordered`` (the distinct ids sorted) of the k-th
    id; then the hash table is emptied for the next call."""
    mask = table.shape[0] - 1
    n = ordered.shape[0]
    rank = np.empty(n, np.int64)
    for r in range(n):
        v = ordered[r]
        h = np.int64((np.uint64(v) * _GOLDEN) >> shift)
        while table[h, 0] != v:
            h = (h + 1) & mask
        rank[table[h, 1]] = r
    for r in range(n):  # every probe is done: clearing cannot cut a chain now
        v = ordered[r]
        h = np.int64((np.uint64(v) * _GOLDEN) >> shift)
        while table[h, 0] != v:
            h = (h + 1) & mask
        table[h, 0] = -1
    for k in range(inv.shape[0]):
        if inv[k] >= 0:
            inv[k] = rank[inv[k]]


@numba.jit(**_JIT)
def _sum_kernel(rows: Any, pos: Any, out: Any) -> None:  # pragma: no cover - jitted
    width = rows.shape[1]
    for k in range(rows.shape[0]):
        r = pos[k]
        if r < 0:
            continue
        for i in range(width):
            out[r, i] += rows[k, i]


_scratch = threading.local()  # each thread's hash table (kept empty) and last grouping


def _hash_table(n: int) -> tuple[np.ndarray, int]:
    """An empty table of at least ``2 n`` slots (at most half full) and its bit count."""
    bits = max(4, int(2 * n - 1).bit_length())
    table = getattr(_scratch, "table", None)
    if table is None or table.shape[0] < (1 << bits):
        table = _scratch.table = np.full((1 << bits, 2), -1, np.int64)
    return table, int(table.shape[0]).bit_length() - 1


def group_ids(ids: np.ndarray, vocab: int) -> tuple[np.ndarray, np.ndarray]:
    """``(ordered, pos)``: the sorted distinct ids of ``ids`` inside ``[0, vocab)`` and, for
    each id, its position in ``ordered`` (-1 outside). The last grouping of this thread is
    reused when the same ids come again (compared by value: a lookup's wide and deep tables
    share the batch's ids, so the second gradient skips the hashing)."""
    idx = np.ascontiguousarray(ids.reshape(-1), np.int64)
    last = getattr(_scratch, "last", None)
    if last is not None and last[0] == vocab and np.array_equal(last[1], idx):
        return last[2], last[3]
    n = idx.shape[0]
    table, bits = _hash_table(n)
    shift = np.uint64(64 - bits)
    uniq = np.empty(n, np.int64)
    pos = np.empty(n, np.int64)
    count = _group_kernel(idx, vocab, shift, table, uniq, pos)
    ordered = np.sort(uniq[:count])
    _rank_kernel(ordered, shift, table, pos)
    ordered.flags.writeable = False  # shared by the calls that reuse this grouping
    pos.flags.writeable = False
    _scratch.last = (vocab, idx.copy(), ordered, pos)
    return ordered, pos


def lookup_rows(table: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """``(ids.size, width)`` rows of the C-contiguous 2-d ``table``; zero rows for ids
    outside ``[0, len(table))``."""
    idx = ids.reshape(-1)
    if idx.size and int(idx.min()) >= 0 and int(idx.max()) < table.shape[0]:
        return np.take(table, idx, axis=0)  # all inside: NumPy's gather is the fastest
    idx = np.ascontiguousarray(idx, np.int64)
    out = np.empty((idx.shape[0], table.shape[1]), table.dtype)
    _lookup_kernel(np.ascontiguousarray(table), idx, out)
    return out


def unique_row_sums(rows: np.ndarray, ids: np.ndarray, vocab: int) -> tuple[np.ndarray, Any]:
    """``(uniq, sums)``: the sorted unique ids of ``ids (n,)`` inside ``[0, vocab)`` (int64)
    and, for each, the sum of its rows of ``rows (n, width)``."""
    ordered, pos = group_ids(ids, vocab)
    sums = np.zeros((ordered.shape[0], rows.shape[1]), rows.dtype)
    _sum_kernel(np.ascontiguousarray(rows), pos, sums)
    return ordered.copy(), sums
