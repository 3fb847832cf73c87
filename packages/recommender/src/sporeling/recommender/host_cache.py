"""The embedding cache's host-memory level in front of its disk table.

:class:`HostRowCache` keeps up to ``capacity`` rows of a memory-mapped table, with their
optimizer state rows, in plain arrays: least recently used rows are replaced, and rows
written back from the fast cache are kept dirty until they are evicted or flushed. Dirty
rows reach the disk in batches sorted by row id (neighbouring rows share 4 KB pages, so a
batch dirties each page once instead of once a row), not one by one as the fast cache
evicts them. The cache is inclusive: a row can be in the fast cache and here at once; the
fast cache's copy is the newer one, and every read here is of a row the fast cache lacks.

One lock guards every operation: the fast cache's prefetch thread reads through this level
while the training thread may write back to it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["HostRowCache"]

Rows = tuple[np.ndarray, dict[str, np.ndarray]]


class HostRowCache:
    """``HostRowCache(capacity, vocab_size, dim, read_disk, write_disk, stats)``: rows of
    ``vocab_size`` in front of ``read_disk(ids) -> (rows, states)`` and
    ``write_disk(ids, rows, states)`` (ids sorted); ``stats()`` gives the
    :class:`~sporeling.recommender.cache.CacheStats` to count into."""

    def __init__(
        self,
        capacity: int,
        vocab_size: int,
        dim: int,
        read_disk: Callable[[np.ndarray], Rows],
        write_disk: Callable[[np.ndarray, np.ndarray, dict[str, np.ndarray]], None],
        stats: Callable[[], Any],
    ) -> None:
        self.capacity = capacity
        self.dim = dim
        self.rows = np.zeros((capacity, dim), np.float32)
        self.states: dict[str, np.ndarray] = {}
        self.id_of = np.full(capacity, -1, np.int64)
        self.slot_of = np.full(vocab_size, -1, np.int32)
        self.last_used = np.full(capacity, -1, np.int64)
        self.dirty = np.zeros(capacity, bool)
        self._clock = 0
        self._read_disk = read_disk
        self._write_disk = write_disk
        self._stats = stats
        self._lock = threading.Lock()

    def add_state(self, prefix: str) -> None:
        """Hold the optimizer state ``prefix`` too (the cache is emptied first, its dirty rows
        written to disk, so no resident row lacks the new state)."""
        with self._lock:
            self._drop(np.flatnonzero(self.id_of >= 0))
            self.states[prefix] = np.zeros((self.capacity, self.dim), np.float32)

    def read(self, ids: np.ndarray) -> Rows:
        """Rows and state rows of ``ids`` (distinct): resident ones from here, the others
        from disk, which then become resident (clean)."""
        with self._lock:
            self._clock += 1
            slots = self.slot_of[ids]
            hit = slots >= 0
            hs = slots[hit]
            self.last_used[hs] = self._clock
            rows = np.empty((ids.size, self.dim), np.float32)
            states = {k: np.empty_like(rows) for k in self.states}
            rows[hit] = self.rows[hs]
            for k, v in states.items():
                v[hit] = self.states[k][hs]
            miss = ids[~hit]
            if miss.size:
                m_rows, m_states = self._read_disk(miss)
                rows[~hit] = m_rows
                for k, v in states.items():
                    v[~hit] = m_states[k]
                order = np.argsort(miss, kind="stable")
                self._insert(miss[order], m_rows[order],
                             {k: m_states[k][order] for k in self.states}, dirty=False)  # fmt: skip
            st = self._stats()
            st.host_lookups += int(ids.size)
            st.host_hits += int(hit.sum())
            st.disk_reads += int(miss.size)
            return rows, states

    def store(self, ids: np.ndarray, rows: np.ndarray, states: dict[str, np.ndarray]) -> None:
        """Take rows written back by the fast cache (dirty until evicted or flushed)."""
        if ids.size == 0:
            return
        with self._lock:
            self._clock += 1
            order = np.argsort(ids, kind="stable")
            ids, rows = ids[order], rows[order]
            states = {k: states[k][order] for k in self.states}
            slots = self.slot_of[ids]
            hit = slots >= 0
            hs = slots[hit]
            self.rows[hs] = rows[hit]
            for k, v in states.items():
                self.states[k][hs] = v[hit]
            self.dirty[hs] = True
            self.last_used[hs] = self._clock
            miss = ~hit
            if miss.any():
                self._insert(ids[miss], rows[miss], {k: v[miss] for k, v in states.items()},
                             dirty=True)  # fmt: skip

    def flush(self) -> None:
        """Write every dirty row to disk (one batch sorted by id); rows stay resident."""
        with self._lock:
            self._write(np.flatnonzero(self.dirty))

    def drain(self) -> None:
        """Write every dirty row to disk and empty the cache."""
        with self._lock:
            self._drop(np.flatnonzero(self.id_of >= 0))

    # ---- under the lock -------------------------------------------------------------------

    def _insert(
        self, ids: np.ndarray, rows: np.ndarray, states: dict[str, np.ndarray], dirty: bool
    ) -> None:
        """Make ``ids`` (sorted, not resident) resident, replacing the least recently used
        rows the current operation did not touch; what does not fit goes to disk when dirty
        (and is dropped when clean: disk has it)."""
        free = np.flatnonzero(self.id_of < 0)
        if free.size < ids.size:
            idle = np.flatnonzero((self.id_of >= 0) & (self.last_used < self._clock))
            lru = np.argsort(self.last_used[idle], kind="stable")
            victims = idle[lru[: ids.size - free.size]]
            self._drop(victims)
            free = np.concatenate([free, victims])
        k = min(ids.size, free.size)
        target = free[:k]
        self.rows[target] = rows[:k]
        for p, v in states.items():
            self.states[p][target] = v[:k]
        self.id_of[target] = ids[:k]
        self.slot_of[ids[:k]] = target
        self.last_used[target] = self._clock
        self.dirty[target] = dirty
        if dirty and k < ids.size:
            self._write_disk(ids[k:], rows[k:], {p: v[k:] for p, v in states.items()})
            st = self._stats()
            st.disk_write_backs += int(ids.size - k)
            st.disk_write_batches += 1

    def _write(self, slots: np.ndarray) -> None:
        """Write the dirty rows among ``slots`` to disk, sorted by row id."""
        slots = slots[self.dirty[slots]]
        if slots.size == 0:
            return
        slots = slots[np.argsort(self.id_of[slots], kind="stable")]
        self._write_disk(self.id_of[slots], self.rows[slots],
                         {k: v[slots] for k, v in self.states.items()})  # fmt: skip
        self.dirty[slots] = False
        st = self._stats()
        st.disk_write_backs += int(slots.size)
        st.disk_write_batches += 1

    def _drop(self, slots: np.ndarray) -> None:
        """Evict ``slots`` (their dirty rows written to disk first)."""
        self._write(slots)
        self.slot_of[self.id_of[slots]] = -1
        self.id_of[slots] = -1
        self.last_used[slots] = -1
