"""Parameter-server mode (MindSpore 1.8's ``set_ps_context(enable_ps=True)``) on MPI ranks.

The first ``server_num`` ranks are servers (role ``MS_PSERVER``): they hold the embedding
tables (split by rows among them) with the tables' optimizer state, and apply the sparse
FTRL/LazyAdam updates. The other ranks are workers (``MS_WORKER``): each pulls the rows of its
batch from the servers, computes, and pushes the row gradients back; the dense part is data
parallel among the workers. Steps are synchronous, so W workers with local batch b equal one
process with batch W * b. MindSpore's scheduler role (``MS_SCHED``) has no counterpart: MPI
starts and connects the ranks. ``MS_SERVER_NUM`` in the environment sets ``server_num``.

    set_ps_context(enable_ps=True, server_num=1)
    trainer = ParameterServerTrainer(WideDeepModel(vocab, sparse=True))
    if trainer.role == "MS_PSERVER":
        trainer.serve()            # until every worker calls finish()
    else:
        for ids, vals, label in my_batches: trainer.step(ids, vals, label)
        trainer.finish()

``ParameterServerTrainer(model, vocab_cache_size=N)`` is 1.8's PS cache with several workers:
the servers hold the whole tables (:class:`~sporeling.recommender.ps_cache.EmbeddingServer`,
rows initialised N(0, sigma^2) from a hash of the row id; ``sigma=`` 0.01 by default), each
worker owns an equal range of every table's rows (``TABLE_ROW_SLICE`` among the workers, as
1.8 requires there) behind an N-row cache with the optimizer moments, pulls missing rows from
the servers and pushes evicted ones back; workers exchange ids and rows among themselves and
apply the sparse updates in their caches. A server answers each worker on a thread of its
own, so MPI must provide ``MPI_THREAD_MULTIPLE`` there (mpi4py's default): checked on every
rank with ``communication.get_thread_level()``, with an error that says what to change.
Workers call :meth:`full_parameters` (if wanted) before :meth:`finish`, which writes the
caches back and stops the servers. With ``prefetch=True``, ``step(..., next_ids=...)`` sends
each worker's next ids to their owning workers during the step, and each owner pulls the
missing rows from the servers on a background thread while the step computes.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from sporeling.core import Tensor
from sporeling.core import communication as comm

from .sharding import ShardedTrainer

__all__ = ["set_ps_context", "get_ps_context", "ps_role", "ParameterServerTrainer"]

_CONTEXT: dict[str, Any] = {"enable_ps": False, "server_num": None}


def set_ps_context(**kwargs: Any) -> None:
    """``enable_ps`` (bool) and ``server_num`` (int >= 1; default ``MS_SERVER_NUM`` or 1)."""
    for key, value in kwargs.items():
        if key not in _CONTEXT:
            raise ValueError(
                f"set_ps_context: unknown key {key!r}; expected one of {sorted(_CONTEXT)}"
            )
        if key == "enable_ps" and not isinstance(value, bool):
            raise TypeError(f"set_ps_context: 'enable_ps' expected a bool, got {value!r}")
        if key == "server_num" and (isinstance(value, bool) or not isinstance(value, int)
                                    or value < 1):  # fmt: skip
            raise ValueError(f"set_ps_context: 'server_num' expected an int >= 1, got {value!r}")
        _CONTEXT[key] = value


def get_ps_context(key: str) -> Any:
    if key not in _CONTEXT:
        raise ValueError(f"get_ps_context: unknown key {key!r}; expected one of {sorted(_CONTEXT)}")
    return _CONTEXT[key]


def _server_num() -> int:
    n = _CONTEXT["server_num"]
    return int(n if n is not None else os.environ.get("MS_SERVER_NUM", 1))


def ps_role() -> str:
    """``MS_PSERVER`` for the first ``server_num`` ranks, ``MS_WORKER`` for the others."""
    return "MS_PSERVER" if comm.get_rank() < _server_num() else "MS_WORKER"


class ParameterServerTrainer(ShardedTrainer):
    """A CTR model (Wide&Deep, DeepFM, DCN-v2) in parameter-server mode (see the module doc);
    needs ``comm.init()`` and ``set_ps_context(enable_ps=True)``."""

    def __init__(self, model: Any, vocab_cache_size: int = 0, **kwargs: Any) -> None:
        if not _CONTEXT["enable_ps"]:
            raise RuntimeError(
                "ParameterServerTrainer: call set_ps_context(enable_ps=True) first (MindSpore "
                "needs parameter-server mode switched on the same way)"
            )
        size, servers = comm.get_group_size(), _server_num()
        if servers >= size:
            raise ValueError(
                f"ParameterServerTrainer: server_num {servers} leaves no worker among {size} ranks"
            )
        self.role = ps_role()
        self.workers = size - servers
        self.data_ranks = self.workers
        self.server = None
        if vocab_cache_size and self.workers > 1:  # checked on every rank: all fail alike
            from .ps_cache import require_thread_multiple

            why = f"vocab_cache_size with {self.workers} workers (answered on threads)"
            instead = "train with one worker or vocab_cache_size=0 (no threads there)"
            require_thread_multiple("ParameterServerTrainer", why, instead)
        if vocab_cache_size:
            self._cached_setup(model, vocab_cache_size, servers, size, kwargs)
            return
        vocab = model.vocab_size
        per = -(-vocab // servers)
        shapes = [max(0, min(per, vocab - k * per)) for k in range(servers)]
        shapes += [0] * (size - servers)  # workers hold no rows
        super().__init__(model, "field_slice", manual_shapes=tuple(shapes), **kwargs)

    def _cached_setup(
        self, model: Any, cache: int, servers: int, size: int, kwargs: dict[str, Any]
    ) -> None:
        from .ps_cache import EmbeddingServer, server_tables

        server_ranks, worker_ranks = list(range(servers)), list(range(servers, size))
        sigma = float(kwargs.pop("sigma", 0.01))
        if self.role == "MS_PSERVER":
            self.server = EmbeddingServer(server_tables(model), server_ranks, worker_ranks, sigma)
            return
        comm.create_group("ps_workers", worker_ranks)
        super().__init__(model, "table_row_slice", vocab_cache_size=cache, group="ps_workers",
                         servers=(server_ranks, sigma), **kwargs)  # fmt: skip
        self.data_ranks = None  # every rank of the workers' group holds data
        self._servers = server_ranks

    def _more(self, flag: int) -> bool:
        got = comm.all_reduce(Tensor(np.array([flag], np.int64)), comm.ReduceOp.MAX)
        return bool(got.asnumpy()[0])

    def step(self, ids: Any, vals: Any = None, label: Any = None, next_ids: Any = None) -> float:
        """One synchronous step of this worker's batch; with ``prefetch=True`` (and
        ``vocab_cache_size``), ``next_ids`` are pulled from the servers while it computes."""
        if self.role != "MS_WORKER":
            raise RuntimeError("ParameterServerTrainer.step: this rank is a server; call serve()")
        if self.server is None and getattr(self, "_servers", None) is None:
            self._more(1)
        return super().step(ids, vals, label, next_ids)

    def finish(self) -> None:
        """A worker's last call: the servers stop once every worker has finished."""
        if getattr(self, "_servers", None) is not None:  # the cached form
            from .ps_cache import stop_servers

            for t in self.tables:
                if t.cache is not None:
                    t.cache.flush()
            stop_servers(self._servers)
            comm.destroy_group("ps_workers")  # a later trainer makes its own
            return
        while self._more(0):  # other workers still train: take part in their steps
            super().step(None)

    def serve(self) -> int:
        """Serve rows and apply updates until every worker has finished; returns the steps."""
        if self.role != "MS_PSERVER":
            raise RuntimeError("ParameterServerTrainer.serve: this rank is a worker")
        if self.server is not None:  # the cached form: requests served, until every worker stops
            return self.server.serve()
        steps = 0
        while self._more(0):
            super().step(None)
            steps += 1
        return steps
