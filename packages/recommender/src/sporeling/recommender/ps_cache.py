"""The embedding cache in front of parameter servers (MindSpore 1.8's PS cache).

The worker's :class:`RemoteCachedEmbeddingLookup` keeps ``vocab_cache_size`` rows and their
optimizer moments, as :class:`~sporeling.recommender.cache.CachedEmbeddingLookup` does, but its
host level is the servers: rows missing from the cache are pulled from the server that owns
them (servers split each table by equal row ranges), evicted rows and their moments are
pushed back, and :meth:`full_table` reads the whole table back. Servers run
:class:`EmbeddingServer`.serve() until the worker calls :func:`stop_servers`. Rows never
written start as N(0, sigma^2) from a hash of the row id, so the result equals a local cache
over a disk level (same initial rows). Messages are point-to-point ``send``/``recv``.
With ``prefetch=True`` (:func:`use_parameter_servers`' default), :meth:`prefetch` pulls the
next batch's missing rows on a background thread while the step computes, as the local
cache does; every request and its answer hold one lock of the process (the lookups of all
tables and their prefetch threads talk to the same servers), and MPI must provide
``MPI_THREAD_MULTIPLE`` (mpi4py's default; checked, with an error naming ``prefetch=False``).

Several workers (as in 1.8, where more than one worker needs ``TABLE_ROW_SLICE``): each worker
caches only its own range of rows (``offset``: its part starts at that global row), so no
row is cached twice, and a server answers each worker on a thread of its own
(``EmbeddingServer(..., worker=[ranks])``; MPI's ``MPI_THREAD_MULTIPLE``, mpi4py's default).
:class:`~sporeling.recommender.ps.ParameterServerTrainer` with ``vocab_cache_size`` sets
this up.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy as np

from sporeling.core import Parameter, Tensor
from sporeling.core import communication as comm

from .cache import CachedEmbeddingLookup, initial_rows

__all__ = [
    "RemoteCachedEmbeddingLookup",
    "EmbeddingServer",
    "stop_servers",
    "use_parameter_servers",
    "server_tables",
]

_STOP, _PULL, _PUSH, _CONFIG = 0, 1, 2, 3

# One request and its answer at a time from this process: the lookups of every table and
# their prefetch threads send to the same servers, whose replies must not interleave.
_LINK = threading.Lock()
_LOOKUPS: weakref.WeakSet[RemoteCachedEmbeddingLookup] = weakref.WeakSet()


def require_thread_multiple(func: str, why: str, instead: str) -> None:
    """Raise unless MPI provides ``MPI_THREAD_MULTIPLE`` (a world of one needs nothing)."""
    level = comm.get_thread_level()
    if level is None or level == "multiple" or comm.get_group_size() == 1:
        return
    raise RuntimeError(
        f"{func}: {why} needs MPI thread support MPI_THREAD_MULTIPLE (MPI calls from several "
        f"threads at once), but MPI was started with MPI_THREAD_{level.upper()}; leave "
        f"mpi4py.rc.thread_level at 'multiple' (mpi4py's default) before comm.init(), or "
        f"{instead}"
    )


def _send(a: np.ndarray, dst: int) -> None:
    comm.send(Tensor(np.ascontiguousarray(a)), dst)


def _recv(shape: tuple[int, ...], dtype: Any, src: int) -> np.ndarray:
    return comm.recv(Tensor(np.zeros(shape, dtype)), src).asnumpy()


def _ranges(vocab: int, servers: int) -> np.ndarray:
    per = -(-vocab // servers)
    return np.minimum(np.arange(servers + 1) * per, vocab)


class RemoteCachedEmbeddingLookup(CachedEmbeddingLookup):
    """``RemoteCachedEmbeddingLookup(vocab_size, embedding_size, vocab_cache_size, table_id,
    servers, sigma=0.01, offset=0, total_vocab=None, prefetch=False)``: a cached lookup whose
    full table lives on the ranks ``servers``. With ``offset``, its ``vocab_size`` rows are the
    rows ``offset ...`` of a table of ``total_vocab`` rows (a worker's part). ``prefetch``:
    :meth:`prefetch` pulls rows on a background thread (needs ``MPI_THREAD_MULTIPLE``)."""

    _remote = True

    def __init__(
        self,
        vocab_size: int,
        embedding_size: int,
        vocab_cache_size: int,
        table_id: int,
        servers: list[int],
        sigma: float = 0.01,
        offset: int = 0,
        total_vocab: int | None = None,
        prefetch: bool = False,
    ) -> None:
        from sporeling.core.initializer import Normal

        if prefetch:
            require_thread_multiple(type(self).__name__, "prefetch=True (pulls on a thread)",
                                    "pass prefetch=False")  # fmt: skip
        super().__init__(vocab_size, embedding_size, vocab_cache_size, Normal(sigma),
                         storage="remote", prefetch=prefetch)  # fmt: skip
        self.table_id = int(table_id)
        self.servers = list(servers)
        self.offset = int(offset)
        self.bounds = _ranges(vocab_size if total_vocab is None else total_vocab, len(servers))
        self._prefixes: list[str] = []
        _LOOKUPS.add(self)

    def _by_server(self, ids: np.ndarray) -> list[np.ndarray]:
        owner = np.searchsorted(self.bounds, ids + self.offset, side="right") - 1
        return [np.flatnonzero(owner == s) for s in range(len(self.servers))]

    def attach_state(self, prefix: str, state: Parameter) -> None:
        data = state.asnumpy()
        init = float(data.reshape(-1)[0]) if data.size else 0.0
        if data.size and not np.all(data == init):
            raise ValueError(f"{type(self).__name__}: attach '{state.name}' before the first step")
        self._state_params[prefix] = state
        self._prefixes.append(prefix)
        for srv in self.servers:  # the state's index: every worker names the same ones
            with _LINK:
                _send(np.array([_CONFIG, self.table_id, len(self._prefixes) - 1], np.int64), srv)
                _send(np.array([init], np.float64), srv)

    def _read_host(self, ids: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        k, dim = len(self._prefixes), self.embedding_size
        rows = np.zeros((ids.size, dim), np.float32)
        states = np.zeros((k, ids.size, dim), np.float32)
        for srv, pos in zip(self.servers, self._by_server(ids)):
            if pos.size == 0:
                continue
            with _LINK:
                _send(np.array([_PULL, self.table_id, pos.size], np.int64), srv)
                _send(ids[pos].astype(np.int64) + self.offset, srv)
                rows[pos] = _recv((pos.size, dim), np.float32, srv)
                if k:
                    states[:, pos] = _recv((k, pos.size, dim), np.float32, srv)
        return rows, {p: states[i] for i, p in enumerate(self._prefixes)}

    def _store(self, ids: np.ndarray, rows: np.ndarray, states: dict[str, np.ndarray]) -> None:
        for srv, pos in zip(self.servers, self._by_server(ids)):
            if pos.size == 0:
                continue
            with _LINK:
                _send(np.array([_PUSH, self.table_id, pos.size], np.int64), srv)
                _send(ids[pos].astype(np.int64) + self.offset, srv)
                _send(rows[pos].astype(np.float32), srv)
                if self._prefixes:
                    got = np.stack([states[p][pos] for p in self._prefixes])
                    _send(got.astype(np.float32), srv)

    def wait_prefetch(self) -> None:
        """Let a running prefetch finish (its rows stay staged for the next batch)."""
        if self._staged is not None:
            self._staged.result()

    def flush(self) -> None:
        self.wait_prefetch()
        self._write_back(np.flatnonzero(self.id_of >= 0))

    def full_table(self, block: int = 1 << 20) -> np.ndarray:
        """The whole table, pulled from the servers after a flush."""
        self.flush()
        out = np.empty((self.vocab_size, self.embedding_size), np.float32)
        for a in range(0, self.vocab_size, block):
            ids = np.arange(a, min(a + block, self.vocab_size))
            out[ids] = self._read_host(ids)[0]
        return out

    def load_table(self, table: Any) -> None:
        raise NotImplementedError(
            "RemoteCachedEmbeddingLookup: the servers hold the table; load it on the servers"
        )


class EmbeddingServer:
    """One server's rows of each table (``tables``: table id -> (vocab_size, dim)) and their
    optimizer state, served to the worker rank ``worker`` (or to several: a list of ranks,
    each answered on its own thread; their rows must not overlap, as with row slicing)."""

    def __init__(
        self, tables: dict[int, tuple[int, int]], servers: list[int], worker: int | list[int],
        sigma: float = 0.01,
    ) -> None:  # fmt: skip
        me = servers.index(comm.get_rank())
        self.workers = [worker] if isinstance(worker, int) else list(worker)
        if len(self.workers) > 1:
            require_thread_multiple("EmbeddingServer", "answering several workers on threads",
                                    "use one worker")  # fmt: skip
        self.sigma = sigma
        self._lock = threading.Lock()
        self.tables: dict[int, dict[str, Any]] = {}
        for tid, (vocab, dim) in tables.items():
            bounds = _ranges(vocab, len(servers))
            lo, hi = int(bounds[me]), int(bounds[me + 1])
            self.tables[tid] = {
                "lo": lo, "dim": dim, "rows": np.zeros((hi - lo, dim), np.float32),
                "fresh": np.ones(hi - lo, bool), "states": [],
            }  # fmt: skip

    def serve(self) -> int:
        """Answer the workers until each has stopped the servers; returns the requests."""
        if len(self.workers) == 1:
            return self._serve(self.workers[0])
        counts = [0] * len(self.workers)

        def run(k: int) -> None:
            counts[k] = self._serve(self.workers[k])

        threads = [threading.Thread(target=run, args=(k,)) for k in range(len(self.workers))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return sum(counts)

    def _serve(self, worker: int) -> int:
        served = 0
        while True:
            op, tid, n = (int(x) for x in _recv((3,), np.int64, worker))
            if op == _STOP:
                return served
            served += 1
            t = self.tables[tid]
            if op == _CONFIG:  # n: the state's index (each worker sends it once)
                init = float(_recv((1,), np.float64, worker)[0])
                with self._lock:
                    if n == len(t["states"]):
                        t["states"].append(np.full(t["rows"].shape, init, np.float32))
                continue
            local = _recv((n,), np.int64, worker) - t["lo"]
            if op == _PULL:
                fresh = local[t["fresh"][local]]
                if fresh.size:  # first use: draw the initial rows
                    t["rows"][fresh] = initial_rows(fresh + t["lo"], t["dim"], self.sigma)
                    t["fresh"][fresh] = False
                _send(t["rows"][local], worker)
                if t["states"]:
                    _send(np.stack([s[local] for s in t["states"]]), worker)
            elif op == _PUSH:
                t["rows"][local] = _recv((n, t["dim"]), np.float32, worker)
                t["fresh"][local] = False
                if t["states"]:
                    got = _recv((len(t["states"]), n, t["dim"]), np.float32, worker)
                    for s, g in zip(t["states"], got):
                        s[local] = g


def stop_servers(servers: list[int]) -> None:
    """The worker's last call: every server's serve() returns (after the prefetches still
    running, which the servers must answer)."""
    for lookup in list(_LOOKUPS):
        lookup.wait_prefetch()
    for srv in servers:
        with _LINK:
            _send(np.array([_STOP, 0, 0], np.int64), srv)


def use_parameter_servers(
    model: Any, servers: list[int], vocab_cache_size: int, prefetch: bool = True
) -> None:
    """Replace the table lookups of ``model`` (``model.table_names``) by caches of
    ``vocab_cache_size`` rows in front of the servers (table ids in that order); create the
    optimizers (``TrainStepWrap``) afterwards, so the caches carry their moments.
    ``prefetch``: the caches' :meth:`~RemoteCachedEmbeddingLookup.prefetch` pulls the next
    batch's rows on a background thread (needs ``MPI_THREAD_MULTIPLE``)."""
    for tid, name in enumerate(model.table_names):
        old = getattr(model, name)
        sigma = float(getattr(old, "_sigma", 0.01))
        remote = RemoteCachedEmbeddingLookup(old.vocab_size, old.embedding_size,
                                             vocab_cache_size, tid, servers, sigma,
                                             prefetch=prefetch)  # fmt: skip
        setattr(model, name, remote)


def server_tables(model: Any) -> dict[int, tuple[int, int]]:
    """What an :class:`EmbeddingServer` holds for ``model``: table id -> (vocab, dim)."""
    return {
        tid: (getattr(model, name).vocab_size, getattr(model, name).embedding_size)
        for tid, name in enumerate(model.table_names)
    }
