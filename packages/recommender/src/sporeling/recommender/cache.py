"""The embedding cache (MindSpore 1.8's ``EmbeddingLookup(..., vocab_cache_size=N)``).

Levels, fastest first:

1. the cache: ``vocab_cache_size`` rows in the layer's ``embedding_table`` Parameter, the only
   rows the model and its optimizer see (so the optimizer's moments are sized to the cache,
   as in MindSpore);
2. the full table and the full optimizer state (every per-row moment) in host memory, or
3. with ``storage="disk"``, the same as memory-mapped files on disk, for tables larger than
   RAM. The files are sparse and rows are initialised on first use (N(0, sigma^2) from a
   hash of the row id), so a 100M-row table costs disk and time only for the rows training
   touches. With ``host_cache_size=H`` a bounded host-memory level
   (:class:`~sporeling.recommender.host_cache.HostRowCache`: H rows and their optimizer
   state, least recently used replaced) sits between the cache and the disk table: rows
   written back by the cache stay there until evicted or flushed, and reach the disk in
   batches sorted by row id.

Before a batch, :meth:`CachedEmbeddingLookup.prepare` makes every id of the batch resident:
rows missing from the cache replace the least recently used rows that the batch does not
need, and those are written back (rows and moments) first. :meth:`prefetch` reads the next
batch's missing rows from the host level on a background thread while the current step
computes. :meth:`flush` writes every cached row back (at the end of each epoch and before a
checkpoint). Training gives the same parameters with any cache size, because a sparse
optimizer (LazyAdam, FTRL) only ever touches the rows of the batch, and those are cached.

Hit rate, prefetch stalls and write-backs are counted in :attr:`stats`.
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sporeling.core import Parameter, Tensor, nn
from sporeling.core.initializer import initializer

from .host_cache import HostRowCache

__all__ = [
    "CachedEmbeddingLookup",
    "CacheStats",
    "cached_lookups",
    "attach_optimizer",
    "initial_rows",
]


@dataclass
class CacheStats:
    """Counts since the last :meth:`CachedEmbeddingLookup.reset_stats`."""

    batches: int = 0
    lookups: int = 0  # distinct in-range ids per batch, summed
    hits: int = 0  # ... of which were already cached
    loaded: int = 0  # rows brought into the cache
    prefetched: int = 0  # ... of which a prefetch had already read
    write_backs: int = 0  # rows written back to the host level (evictions and flushes)
    host_lookups: int = 0  # rows read through the host-memory level (host_cache_size > 0)
    host_hits: int = 0  # ... of which it held
    disk_reads: int = 0  # ... of which came from the disk table
    disk_write_backs: int = 0  # rows the host-memory level wrote to the disk table
    disk_write_batches: int = 0  # ... in this many sorted batches
    stalls: int = 0  # batches that waited for their prefetch
    stall_seconds: float = 0.0

    @property
    def hit_rate(self) -> float:
        return self.hits / self.lookups if self.lookups else 0.0

    @property
    def host_hit_rate(self) -> float:
        """Of the rows the cache missed, the share the host-memory level held."""
        return self.host_hits / self.host_lookups if self.host_lookups else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "hit_rate": self.hit_rate, "host_hit_rate": self.host_hit_rate}


class CachedEmbeddingLookup(nn.EmbeddingLookup):
    """``CachedEmbeddingLookup(vocab_size, embedding_size, vocab_cache_size, param_init='normal',
    storage='memory', path=None, prefetch=True, host_cache_size=0)``: an
    :class:`~sporeling.core.nn.EmbeddingLookup` whose ``embedding_table`` Parameter holds
    ``vocab_cache_size`` rows in front of the full table (see the module doc).
    Ids outside ``[0, vocab_size)`` look up zero rows.

    The full table is :attr:`host_table` (``(vocab_size, embedding_size)`` float32); call
    :func:`attach_optimizer` after creating the optimizer so the cache also moves the
    optimizer's per-row state. ``host_cache_size > 0`` (with ``storage='disk'`` only) puts a
    host-memory level of that many rows between the cache and the disk table.
    """

    _remote = False  # True in subclasses whose host level lives elsewhere (parameter servers)

    def __init__(
        self,
        vocab_size: int,
        embedding_size: int,
        vocab_cache_size: int,
        param_init: Any = "normal",
        storage: str = "memory",
        path: str | None = None,
        prefetch: bool = True,
        host_cache_size: int = 0,
    ) -> None:
        cls = type(self).__name__
        if isinstance(host_cache_size, bool) or not isinstance(host_cache_size, int):
            raise TypeError(
                f"{cls}: argument 'host_cache_size' expected an int, got {host_cache_size!r}"
            )
        if host_cache_size < 0:
            raise ValueError(
                f"{cls}: argument 'host_cache_size' expected an int >= 0, got {host_cache_size}"
            )
        if host_cache_size and storage != "disk":
            raise ValueError(
                f"{cls}: argument 'host_cache_size' ({host_cache_size}) needs storage='disk' "
                f"(a host-memory level in front of the disk table), got storage={storage!r}"
            )
        if isinstance(vocab_cache_size, bool) or not isinstance(vocab_cache_size, int):
            raise TypeError(
                f"{cls}: argument 'vocab_cache_size' expected an int, got {vocab_cache_size!r}"
            )
        if vocab_cache_size < 1:
            raise ValueError(
                f"{cls}: argument 'vocab_cache_size' expected an int >= 1, got {vocab_cache_size}"
            )
        if storage not in ("memory", "disk") and not (storage == "remote" and self._remote):
            raise ValueError(
                f"{cls}: argument 'storage' expected 'memory' or 'disk', got {storage!r}"
            )
        if storage == "disk" and path is None:
            raise ValueError(
                f"{cls}: storage='disk' needs argument 'path' (a folder for the table)"
            )
        cache_rows = min(vocab_cache_size, vocab_size)
        super().__init__(cache_rows, embedding_size, param_init="zeros", target="CPU", sparse=True)
        self.vocab_size = vocab_size
        self.vocab_cache_size = cache_rows
        self.storage = storage
        self._dir = Path(path) if path is not None else None
        if storage == "remote":  # a subclass keeps the host level elsewhere
            self.host_table = np.zeros((0, embedding_size), np.float32)
            self._sigma = float(getattr(param_init, "sigma", 0.01))
        elif storage == "memory":
            self.host_table = initializer(param_init, (vocab_size, embedding_size)).asnumpy()
        else:
            assert self._dir is not None
            self._dir.mkdir(parents=True, exist_ok=True)
            self.host_table = self._disk_array("table", (vocab_size, embedding_size))
            sigma = 0.01 if param_init == "normal" else getattr(param_init, "sigma", param_init)
            if isinstance(sigma, bool) or not isinstance(sigma, (int, float)):
                raise ValueError(
                    f"{cls}: storage='disk' initialises rows as N(0, sigma^2); param_init must "
                    f"be 'normal' or an initializer with a sigma there, got {param_init!r}"
                )
            self._sigma = float(sigma)
            # rows never written are drawn on first use (a hash of the row id), so a table of
            # 100M rows costs no time or disk until its rows are touched (sparse files)
            self._table_fresh = np.ones(vocab_size, bool)
            self._state_fresh = np.ones(vocab_size, bool)
        self._state_init: dict[str, float] = {}
        self.host_state: dict[str, np.ndarray] = {}  # prefix -> (vocab, dim) rows
        self._state_params: dict[str, Parameter] = {}
        self.slot_of = np.full(vocab_size, -1, np.int32)  # 4 bytes a row: 400 MB for 100M
        self.id_of = np.full(cache_rows, -1, np.int64)
        self.last_used = np.full(cache_rows, -1, np.int64)
        self._clock = 0
        self._last_ids: np.ndarray | None = None
        self._pool = (
            ThreadPoolExecutor(1, thread_name_prefix="embedding-prefetch") if prefetch else None
        )
        self._staged: Future[Any] | None = None
        self.stats = CacheStats()
        self.host_cache: HostRowCache | None = None
        if host_cache_size:
            self.host_cache = HostRowCache(min(host_cache_size, vocab_size), vocab_size,
                                           embedding_size, self._read_disk, self._store_disk,
                                           lambda: self.stats)  # fmt: skip

    # ---- storage ------------------------------------------------------------------------

    def _disk_array(self, name: str, shape: tuple[int, int]) -> np.ndarray:
        """A new zero-filled memory-mapped ``.npy`` (a sparse file: no blocks until written)."""
        assert self._dir is not None
        return np.lib.format.open_memmap(self._dir / f"{name}.npy", mode="w+", dtype=np.float32,
                                         shape=shape)  # fmt: skip

    def _initial_rows(self, ids: np.ndarray) -> np.ndarray:
        return initial_rows(ids, self.embedding_size, self._sigma)

    def attach_state(self, prefix: str, state: Parameter) -> None:
        """Let the cache move the optimizer state ``state`` (shaped like the cache) with its
        rows; the host level gets a full-size copy, filled with the state's initial value."""
        data = state.asnumpy()
        if data.shape != tuple(self.embedding_table.shape):
            raise ValueError(
                f"{type(self).__name__}: optimizer state '{state.name}' has shape {data.shape}, "
                f"expected the cache's {tuple(self.embedding_table.shape)}"
            )
        init = float(data.reshape(-1)[0]) if data.size else 0.0
        if data.size and not np.all(data == init):
            raise ValueError(
                f"{type(self).__name__}: optimizer state '{state.name}' must be attached before "
                "the first step (its values are no longer all equal)"
            )
        shape = (self.vocab_size, self.embedding_size)
        if self.host_cache is not None:
            self.host_cache.add_state(prefix)
        if self.storage == "memory":
            host = np.full(shape, init, np.float32)
        else:  # rows whose state was never written read as `init`
            host = self._disk_array(f"state-{prefix}", shape)
        for slot in np.flatnonzero(self.id_of >= 0):  # rows cached before the attach
            host[self.id_of[slot]] = data[slot]
        self.host_state[prefix] = host
        self._state_init[prefix] = init
        self._state_params[prefix] = state

    # ---- the cache ----------------------------------------------------------------------

    def _read_host(self, ids: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Rows (and state rows) of distinct ``ids`` from the level below the cache."""
        if self.host_cache is not None:
            return self.host_cache.read(ids)
        return self._read_disk(ids)

    def _read_disk(self, ids: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        rows = self.host_table[ids]
        states = {k: v[ids] for k, v in self.host_state.items()}
        if self.storage == "disk" and ids.size:
            fresh = self._table_fresh[ids]
            if fresh.any():
                rows[fresh] = self._initial_rows(ids[fresh])
            fresh = self._state_fresh[ids]
            if fresh.any():
                for k in states:
                    states[k][fresh] = self._state_init[k]
        return rows, states

    def _write_back(self, slots: np.ndarray) -> None:
        if slots.size == 0:
            return
        ids = self.id_of[slots]
        rows = self.embedding_table.asnumpy()[slots]
        states = {k: p.asnumpy()[slots] for k, p in self._state_params.items()}
        self._store(ids, rows, states)
        self.stats.write_backs += int(slots.size)

    def _store(self, ids: np.ndarray, rows: np.ndarray, states: dict[str, np.ndarray]) -> None:
        """Write rows (and their optimizer state) to the level below the cache."""
        if self.host_cache is not None:
            self.host_cache.store(ids, rows, states)
        else:
            self._store_disk(ids, rows, states)

    def _store_disk(self, ids: np.ndarray, rows: np.ndarray, states: dict[str, np.ndarray]) -> None:
        self.host_table[ids] = rows
        for prefix, host in self.host_state.items():
            host[ids] = states[prefix]
        if self.storage == "disk":
            self._table_fresh[ids] = False
            if self.host_state:
                self._state_fresh[ids] = False

    def prefetch(self, ids: Any) -> None:
        """Start reading the rows of ``ids`` that are not cached now on the background
        thread (call it after :meth:`prepare` of the current batch)."""
        if self._pool is None:
            return
        flat = _as_ids(ids)
        uniq = np.unique(flat[(flat >= 0) & (flat < self.vocab_size)])
        missing = uniq[self.slot_of[uniq] < 0]
        self._staged = self._pool.submit(lambda: (missing, *self._read_host(missing)))

    def prepare(self, ids: Any) -> None:
        """Make every in-range id of the batch resident in the cache."""
        flat = _as_ids(ids)
        if self._last_ids is not None and np.array_equal(flat, self._last_ids):
            return
        self._clock += 1
        uniq = np.unique(flat[(flat >= 0) & (flat < self.vocab_size)])
        if uniq.size > self.vocab_cache_size:
            raise ValueError(
                f"{type(self).__name__}: a batch holds {uniq.size} distinct ids but "
                f"vocab_cache_size is {self.vocab_cache_size}; use a larger cache or smaller "
                "batches"
            )
        slots = self.slot_of[uniq]
        hit = slots >= 0
        self.last_used[slots[hit]] = self._clock
        missing = uniq[~hit]
        st = self.stats
        st.batches += 1
        st.lookups += int(uniq.size)
        st.hits += int(hit.sum())
        if missing.size:
            # a batch that loads nothing leaves a prefetch staged for the next one (a sharded
            # step prepares the same rows again for their update after it has prefetched)
            staged = self._take_staged()
            # free slots first, then the least recently used ones the batch does not need
            free = np.flatnonzero(self.id_of < 0)
            if free.size < missing.size:
                idle = np.flatnonzero((self.id_of >= 0) & (self.last_used < self._clock))
                lru = np.argsort(self.last_used[idle], kind="stable")
                victims = idle[lru[: missing.size - free.size]]
                self._write_back(victims)
                self.slot_of[self.id_of[victims]] = -1
                self.id_of[victims] = -1
                free = np.concatenate([free, victims])
            target = free[: missing.size]
            rows, states = self._rows_for(missing, staged)
            self.embedding_table.asnumpy()[target] = rows
            for prefix, param in self._state_params.items():
                param.asnumpy()[target] = states[prefix]
            self.slot_of[missing] = target
            self.id_of[target] = missing
            self.last_used[target] = self._clock
            st.loaded += int(missing.size)
        self._last_ids = flat.copy()

    def _take_staged(self) -> Any:
        fut, self._staged = self._staged, None
        if fut is None:
            return None
        if not fut.done():
            self.stats.stalls += 1
            t0 = time.perf_counter()
            result = fut.result()
            self.stats.stall_seconds += time.perf_counter() - t0
            return result
        return fut.result()

    def _rows_for(
        self, missing: np.ndarray, staged: Any
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Rows (and state rows) of ``missing`` ids: what the prefetch read where it has
        them (the host rows of uncached ids cannot change meanwhile), the host level for the
        others only (for parameter servers: no second pull of prefetched rows)."""
        if staged is None or staged[0].size == 0 or set(staged[2]) != set(self._state_params):
            return self._read_host(missing)
        s_ids, s_rows, s_states = staged
        pos = np.searchsorted(s_ids, missing)
        ok = pos < s_ids.size
        ok[ok] = s_ids[pos[ok]] == missing[ok]
        self.stats.prefetched += int(ok.sum())
        if ok.all():  # the usual case: the prefetch read every missing row
            return s_rows[pos], {k: v[pos] for k, v in s_states.items()}
        rest_rows, rest_states = self._read_host(missing[~ok])
        rows = np.empty((missing.size, self.embedding_size), np.float32)
        rows[~ok], rows[ok] = rest_rows, s_rows[pos[ok]]
        states = {}
        for k, rest in rest_states.items():
            states[k] = np.empty_like(rows)
            states[k][~ok], states[k][ok] = rest, s_states[k][pos[ok]]
        return rows, states

    def flush(self) -> None:
        """Write every cached row (and its optimizer state) back to the host level (and the
        host-memory level's dirty rows to the disk table)."""
        self._write_back(np.flatnonzero(self.id_of >= 0))
        if self.host_cache is not None:
            self.host_cache.flush()
        if isinstance(self.host_table, np.memmap):
            self.host_table.flush()
            for host in self.host_state.values():
                host.flush()  # type: ignore[attr-defined]

    def full_table(self, block: int = 1 << 20) -> np.ndarray:
        """The whole host table after :meth:`flush` (on disk: rows never touched are written
        with their initial values first, block by block)."""
        self.flush()
        if self.storage == "disk":
            for a in range(0, self.vocab_size, block):
                ids = np.arange(a, min(a + block, self.vocab_size))
                fresh = ids[self._table_fresh[ids]]
                if fresh.size:
                    self.host_table[fresh] = self._initial_rows(fresh)
            self._table_fresh[...] = False
        return self.host_table

    def load_table(self, table: Any) -> None:
        """Replace the full table (e.g. from a checkpoint); the cache starts empty again."""
        data = np.asarray(table.asnumpy() if hasattr(table, "asnumpy") else table, np.float32)
        if data.shape != self.host_table.shape:
            raise ValueError(
                f"{type(self).__name__}: load_table expected shape {self.host_table.shape}, got "
                f"{data.shape}"
            )
        if self.host_cache is not None:
            self.host_cache.drain()  # its rows would be stale (their state is kept on disk)
        self.host_table[...] = data
        if self.storage == "disk":
            self._table_fresh[...] = False
        self.slot_of[...] = -1
        self.id_of[...] = -1
        self.last_used[...] = -1
        self._last_ids = None

    def reset_stats(self) -> CacheStats:
        """Return the counts so far and start new ones."""
        old, self.stats = self.stats, CacheStats()
        return old

    # ---- the cell -----------------------------------------------------------------------

    def construct(self, indices: Tensor) -> Tensor:
        self.prepare(indices)
        flat = _as_ids(indices)
        inside = (flat >= 0) & (flat < self.vocab_size)
        slots = np.where(inside, self.slot_of[np.where(inside, flat, 0)], -1)  # -1: a zero row
        return super().construct(Tensor(slots.reshape(indices.shape).astype(np.int32)))

    def extend_repr(self) -> str:
        return (
            f"vocab_size={self.vocab_size}, embedding_size={self.embedding_size}, "
            f"vocab_cache_size={self.vocab_cache_size}, storage={self.storage}"
            + (f", host_cache_size={self.host_cache.capacity}" if self.host_cache else "")
        )


def _host_level_text(s: dict[str, Any]) -> str:
    """The host-memory level's part of a cache's statistics line ('' without that level)."""
    if not s.get("host_lookups"):
        return ""
    return (
        f"; host level: hit rate {s['host_hit_rate']:.3f} of {s['host_lookups']} reads, "
        f"disk reads {s['disk_reads']}, disk write-backs {s['disk_write_backs']} in "
        f"{s['disk_write_batches']} sorted batches"
    )


def _as_ids(ids: Any) -> np.ndarray:
    arr = ids.asnumpy() if hasattr(ids, "asnumpy") else np.asarray(ids)
    return arr.reshape(-1).astype(np.int64, copy=False)


def initial_rows(ids: np.ndarray, dim: int, sigma: float) -> np.ndarray:
    """N(0, sigma^2) rows for ``ids`` from a counter-based generator (Box-Muller on two
    hashes of each (row, column)): the same values whichever order rows are touched in."""
    cols = np.arange(dim, dtype=np.uint64)
    key = np.asarray(ids).astype(np.uint64)[:, None] * np.uint64(dim) + cols
    u1 = (_mix(key * np.uint64(2)) >> np.uint64(11)).astype(np.float64) + 0.5
    u2 = (_mix(key * np.uint64(2) + np.uint64(1)) >> np.uint64(11)).astype(np.float64)
    u1 /= float(1 << 53)
    u2 /= float(1 << 53)
    z = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)
    return (z * sigma).astype(np.float32)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser (wraps modulo 2^64)."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def cached_lookups(net: nn.Cell) -> list[CachedEmbeddingLookup]:
    """The cached lookups inside ``net``."""
    return [c for _, c in net.cells_and_names() if isinstance(c, CachedEmbeddingLookup)]


def attach_optimizer(net: nn.Cell, optimizer: nn.Cell) -> None:
    """Attach the per-row state of ``optimizer`` (moments, FTRL's accumulators...) to the
    cached lookups of ``net`` whose table it updates."""
    for lookup in cached_lookups(net):
        table = lookup.embedding_table
        for _, p in optimizer.parameters_and_names():
            if p is table or not p.name.endswith("." + table.name):
                continue
            prefix = p.name[: -len(table.name) - 1]
            if tuple(p.shape) == tuple(table.shape):
                lookup.attach_state(prefix, p)
