"""Embedding tables sharded over MPI ranks (MindSpore 1.8's ``slice_mode``), TorchRec-style:
a table description (:class:`ShardedTable`: which rows or columns this rank owns), and the
kernels that execute it (all-to-all exchanges of ids, rows and row gradients).

Every rank trains on its own slice of the global batch (the dense part is data parallel:
gradients averaged over ranks), so ``n`` ranks with local batch ``b`` equal one process with
batch ``n * b``. Modes:

* ``batch_slice``: every rank holds the whole table; row gradients are gathered from all
  ranks and every rank applies the same sparse update;
* ``table_row_slice``: rank ``r`` owns an equal contiguous range of rows; ids go to their
  owner, rows come back, row gradients go to the owner;
* ``field_slice``: as row slicing, with the ranges given by ``manual_shapes`` (one part of
  whole fields per rank, as the preprocessor lays fields out contiguously);
* ``table_column_slice``: rank ``r`` owns a range of columns of every row; every rank looks
  up its columns for every rank's ids, and the gradient's columns go back to their owner.

Ids outside ``[0, vocab_size)`` look up zero rows and get no gradient, as everywhere.

With ``vocab_cache_size=N`` each rank's part of a table sits behind the embedding cache of
:mod:`.cache`: the Parameter the optimizers update holds N rows of the part (and the
optimizers' moments N rows), the whole part and its moments live in host memory (or on
disk), and the rows a step looks up or updates are made resident first. Training gives the
parameters of the uncached run.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sporeling.core import Parameter, RowTensor, Tensor, value_and_grad
from sporeling.core import communication as comm
from sporeling.core.nn.optim import FTRL, LazyAdam

from .cache import CachedEmbeddingLookup

__all__ = ["SLICE_MODES", "Exchange", "ShardedTable", "ShardedTrainer", "ShardedWideDeepTrainer"]

SLICE_MODES = ("batch_slice", "table_row_slice", "table_column_slice", "field_slice")


class Exchange:
    """Variable-sized all-to-all over the world group, built from the core's fixed-size
    ``all_to_all`` (counts first, then blocks padded to the largest)."""

    def __init__(self, group: str | None = None) -> None:
        self.group = group or comm.GlobalComm.WORLD_COMM_GROUP
        self.rank = comm.get_rank(self.group)
        self.size = comm.get_group_size(self.group)

    def alltoallv(self, blocks: list[np.ndarray]) -> list[np.ndarray]:
        """``blocks[d]`` goes to rank ``d``; returns what each rank sent here, by source."""
        n = self.size
        counts = np.array([len(b) for b in blocks], np.int64)
        got_counts = comm.all_to_all(Tensor(counts), 0, 0, self.group).asnumpy()
        width = int(comm.all_reduce(Tensor(np.array([counts.max()], np.int64)),
                                    comm.ReduceOp.MAX, self.group).asnumpy()[0])  # fmt: skip
        row = blocks[0].shape[1:]
        dtype = blocks[0].dtype
        if width == 0:
            return [np.zeros((0, *row), dtype) for _ in range(n)]
        buf = np.zeros((n, width, *row), dtype)
        for d, b in enumerate(blocks):
            buf[d, : len(b)] = b
        out = comm.all_to_all(Tensor(buf), 0, 0, self.group).asnumpy().reshape(n, width, *row)
        return [out[s, : got_counts[s]] for s in range(n)]

    def all_gather_v(self, block: np.ndarray) -> list[np.ndarray]:
        """Every rank's ``block`` (of any length), by rank."""
        return self.alltoallv([block] * self.size)


def _segment_sum(ids: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    uniq, inv = np.unique(ids, return_inverse=True)
    out = np.zeros((len(uniq), *rows.shape[1:]), rows.dtype)
    np.add.at(out, inv.reshape(-1), rows)
    return uniq, out


class ShardedTable:
    """This rank's part of a ``(vocab_size, dim)`` table: the Parameter ``param`` (named
    ``name``) holds the owned rows or columns, cut from ``full`` (every rank passes the same
    initial table, so the result equals one process's)."""

    def __init__(
        self,
        name: str,
        full: np.ndarray,
        slice_mode: str,
        exchange: Exchange,
        manual_shapes: tuple[int, ...] | None = None,
        vocab_cache_size: int = 0,
        storage: str = "memory",
        path: str | None = None,
        remote: tuple[int, list[int], float] | None = None,
        prefetch: bool = False,
        host_cache_size: int = 0,
    ) -> None:
        if slice_mode not in SLICE_MODES:
            raise ValueError(
                f"ShardedTable: argument 'slice_mode' expected one of {list(SLICE_MODES)}, got "
                f"{slice_mode!r}"
            )
        self.mode, self.x = slice_mode, exchange
        self.vocab, self.dim = full.shape
        n, r = exchange.size, exchange.rank
        self.lo, self.hi, self.c0, self.c1 = 0, self.vocab, 0, self.dim
        if slice_mode in ("table_row_slice", "field_slice"):
            if slice_mode == "field_slice":
                if manual_shapes is None or len(manual_shapes) != n:
                    raise ValueError(
                        f"ShardedTable: field_slice needs manual_shapes with one row count per "
                        f"rank ({n}), got {manual_shapes!r}"
                    )
                if sum(manual_shapes) != self.vocab:
                    raise ValueError(
                        f"ShardedTable: manual_shapes {manual_shapes} must add up to vocab_size "
                        f"{self.vocab}"
                    )
                sizes = np.asarray(manual_shapes, np.int64)
            else:
                per = -(-self.vocab // n)
                sizes = np.array([max(0, min(per, self.vocab - k * per)) for k in range(n)])
            self.bounds = np.concatenate([[0], np.cumsum(sizes)])
            self.lo, self.hi = int(self.bounds[r]), int(self.bounds[r + 1])
        elif slice_mode == "table_column_slice":
            if self.dim < n:
                raise ValueError(
                    f"ShardedTable: table_column_slice of '{name}' needs at least one column "
                    f"per rank ({n}), the table has {self.dim}"
                )
            cuts = np.linspace(0, self.dim, n + 1).round().astype(np.int64)
            self.cols = cuts
            self.c0, self.c1 = int(cuts[r]), int(cuts[r + 1])
        part = np.ascontiguousarray(full[self.lo : self.hi, self.c0 : self.c1], np.float32)
        self.cache: CachedEmbeddingLookup | None = None
        self.prefetching = bool(prefetch and vocab_cache_size)  # the same on every rank
        if remote is not None and part.shape[0] > 0:
            # the part behind a cache whose host level is parameter servers (their own
            # initial rows: N(0, sigma^2) from a hash of the row id)
            from .ps_cache import RemoteCachedEmbeddingLookup

            table_id, servers, sigma = remote
            self.cache = RemoteCachedEmbeddingLookup(
                part.shape[0], part.shape[1], vocab_cache_size, table_id, servers, sigma,
                offset=self.lo, total_vocab=self.vocab, prefetch=prefetch,
            )  # fmt: skip
            self.param = self.cache.embedding_table
            self.param.name = name
        elif vocab_cache_size and part.shape[0] > 0:
            # the part behind a cache: host (or disk) level = the whole part, Parameter = N rows
            self.cache = CachedEmbeddingLookup(
                part.shape[0], part.shape[1], vocab_cache_size,
                "normal" if storage == "disk" else "zeros",  # a disk level draws no RNG
                storage,
                None if path is None else f"{path}/{name}-rank{r}", prefetch=prefetch,
                host_cache_size=host_cache_size,
            )  # fmt: skip
            self.cache.load_table(part)
            self.param = self.cache.embedding_table
            self.param.name = name
        else:
            self.param = Parameter(part, name=name)

    def prefetch(self, ids: np.ndarray | None) -> None:
        """Start reading, on the cache's background thread, the rows this rank will look up
        or update for the next batch (``ids``: this rank's next local batch, None when it has
        none). Collective over the ranks, as :meth:`lookup`: every rank calls it."""
        if not self.prefetching:
            return
        flat = np.zeros(0, np.int64) if ids is None else ids.reshape(-1).astype(np.int64)
        uniq = np.unique(flat[self._valid(flat)])
        if self.mode == "batch_slice":  # every rank's rows get updated everywhere
            local = np.unique(np.concatenate(self.x.all_gather_v(uniq)))
        elif self.mode == "table_column_slice":
            local = np.concatenate(self.x.all_gather_v(uniq))
        else:
            owner = self._owner(uniq)
            local = np.concatenate(self.x.alltoallv([uniq[owner == d] for d in range(self.x.size)]))
            local = local - self.lo
        if self.cache is not None:
            self.cache.prefetch(local)

    def _resident(self, local: np.ndarray) -> np.ndarray:
        """Where rows ``local`` (of this rank's part) are in ``param``: made resident first
        when the part is cached."""
        if self.cache is None:
            return local
        self.cache.prepare(local)
        return self.cache.slot_of[local]

    def _slot(self, local: np.ndarray) -> np.ndarray:
        """Where rows ``local``, already resident, are in ``param``."""
        return local if self.cache is None else self.cache.slot_of[local]

    def attach_optimizer(self, optimizer: Any) -> None:
        """Let the cache move ``optimizer``'s per-row state of ``param`` with its rows."""
        if self.cache is None or optimizer is None:
            return
        for _, q in optimizer.parameters_and_names():
            mine = q is not self.param and q.name.endswith("." + self.param.name)
            if mine and tuple(q.shape) == tuple(self.param.shape):
                self.cache.attach_state(q.name[: -len(self.param.name) - 1], q)

    # ---- forward ------------------------------------------------------------------------

    def _valid(self, ids: np.ndarray) -> np.ndarray:
        return (ids >= 0) & (ids < self.vocab)

    def _owner(self, ids: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.bounds, ids, side="right") - 1

    def lookup(self, ids: np.ndarray) -> np.ndarray:
        """Rows ``(*ids.shape, dim)`` of this rank's (local-batch) ids."""
        flat = ids.reshape(-1).astype(np.int64)
        ok = self._valid(flat)
        out = np.zeros((flat.size, self.dim), np.float32)
        table = self.param.asnumpy()
        uniq, inv = np.unique(flat[ok], return_inverse=True)
        inv = inv.reshape(-1)
        if self.mode == "batch_slice":
            out[ok] = table[self._resident(uniq)][inv]
        elif self.mode == "table_column_slice":
            asked = self.x.all_gather_v(uniq)  # every rank's ids, by rank
            self._resident(np.concatenate(asked))
            answers = self.x.alltoallv([table[self._slot(a)] for a in asked])  # my columns
            out[ok] = np.concatenate(answers, axis=1)[inv]
        else:
            owner = self._owner(uniq)
            asked = self.x.alltoallv([uniq[owner == d] for d in range(self.x.size)])
            self._resident(np.concatenate(asked) - self.lo)
            answers = self.x.alltoallv([table[self._slot(a - self.lo)] for a in asked])
            rows = np.zeros((len(uniq), self.dim), np.float32)
            for d in range(self.x.size):
                rows[owner == d] = answers[d]
            out[ok] = rows[inv]
        return out.reshape(*ids.shape, self.dim)

    # ---- backward -----------------------------------------------------------------------

    def row_grad(self, ids: np.ndarray, grad: np.ndarray) -> RowTensor:
        """The gradient of ``param`` from this rank's ``grad`` of its looked-up rows (already
        divided by the rank count): a RowTensor over the owned rows (or columns)."""
        flat = ids.reshape(-1).astype(np.int64)
        g = grad.reshape(flat.size, self.dim)
        ok = self._valid(flat)
        uniq, sums = _segment_sum(flat[ok], g[ok])
        n = self.x.size
        if self.mode == "batch_slice":
            got_ids = self.x.all_gather_v(uniq)
            got_rows = self.x.all_gather_v(sums)
            local_ids, local_rows = _segment_sum(np.concatenate(got_ids), np.concatenate(got_rows))
        elif self.mode == "table_column_slice":
            got_ids = self.x.all_gather_v(uniq)
            cols = [sums[:, self.cols[d] : self.cols[d + 1]] for d in range(n)]
            got_rows = self.x.alltoallv(cols)
            local_ids, local_rows = _segment_sum(np.concatenate(got_ids), np.concatenate(got_rows))
        else:
            owner = self._owner(uniq)
            got_ids = self.x.alltoallv([uniq[owner == d] for d in range(n)])
            got_rows = self.x.alltoallv([sums[owner == d] for d in range(n)])
            local_ids, local_rows = _segment_sum(np.concatenate(got_ids), np.concatenate(got_rows))
            local_ids = local_ids - self.lo
        local_ids = self._resident(local_ids)  # (cache slots: every row of the step resident)
        return RowTensor(
            Tensor(local_ids.astype(np.int64)), Tensor(local_rows), tuple(self.param.shape)
        )

    def gather_full(self) -> np.ndarray:
        """The whole table on every rank (for checks and checkpoints)."""
        part = self.param.asnumpy() if self.cache is None else self.cache.full_table()
        if self.mode == "batch_slice":
            return part.copy()
        parts = self.x.all_gather_v(part if self.mode != "table_column_slice" else part.T)
        if self.mode == "table_column_slice":
            return np.concatenate(parts, axis=0).T.copy()
        return np.concatenate(parts, axis=0)


class ShardedTrainer:
    """A CTR model's training over ranks: its tables (``model.table_names``) sharded by
    ``slice_mode`` (a 1-column table by rows under ``table_column_slice``), the dense part data
    parallel; FTRL for parameters named ``wide*`` and LazyAdam for the rest, loss scale
    ``sens``, as :class:`~sporeling.recommender.train.TrainStepWrap`. Needs ``comm.init()``
    first and a sparse model with ``table_names`` and ``head(*rows, vals)`` (WideDeepModel,
    DeepFMModel, DCNv2Model); the model's own tables are the initial values.

    ``vocab_cache_size=N`` puts each rank's part of every table behind an N-row embedding
    cache (``storage`` 'memory' or 'disk' under ``path``, with ``host_cache_size`` rows of a
    host-memory level in front of a disk part); the cache statistics are
    ``table.cache.stats`` for each of :attr:`tables`. With ``prefetch=True`` the caches read
    the next batch's rows on background threads (``step(..., next_ids=...)``): every rank
    sends its next ids to their owners during the step, as the lookup does."""

    def __init__(
        self,
        model: Any,
        slice_mode: str = "batch_slice",
        manual_shapes: tuple[int, ...] | None = None,
        sens: float = 1024.0,
        ftrl_lr: float = 5e-2,
        adam_lr: float = 3.5e-4,
        vocab_cache_size: int = 0,
        storage: str = "memory",
        path: str | None = None,
        group: str | None = None,
        servers: tuple[list[int], float] | None = None,
        prefetch: bool = False,
        host_cache_size: int = 0,
    ) -> None:
        if not getattr(model, "sparse", False) or not hasattr(model, "head"):
            raise ValueError(
                f"{type(self).__name__}: expected a model with sparse=True and head() "
                "(WideDeepModel, DeepFMModel, DCNv2Model); the L2 term of a dense model "
                "touches the whole table"
            )
        self.model, self.x, self.sens = model, Exchange(group), float(sens)
        self.tables: list[ShardedTable] = []
        own: set[int] = set()
        for name in model.table_names:
            table = getattr(model, name).embedding_table
            own.add(id(table))
            mode = slice_mode
            if slice_mode == "table_column_slice" and table.shape[1] < self.x.size:
                mode = "table_row_slice"  # Wide&Deep's 1-column wide table
            remote = None if servers is None else (len(self.tables), servers[0], servers[1])
            self.tables.append(ShardedTable(f"{name}.embedding_table", table.asnumpy(), mode,
                                            self.x, manual_shapes, vocab_cache_size, storage,
                                            path, remote, prefetch, host_cache_size))  # fmt: skip
        self.dense = [p for p in model.trainable_params() if id(p) not in own]
        dense_w = [p for p in self.dense if "wide" in p.name]
        dense_d = [p for p in self.dense if "wide" not in p.name]
        wide_t = [t for t in self.tables if "wide" in t.param.name]
        deep_t = [t for t in self.tables if "wide" not in t.param.name]
        self.optimizer_w = None
        if dense_w or wide_t:
            self.optimizer_w = FTRL(
                [*dense_w, *(t.param for t in wide_t)], learning_rate=ftrl_lr, l1=1e-8, l2=1e-8,
                initial_accum=1.0, loss_scale=self.sens,
            )  # fmt: skip
        self.optimizer_d = LazyAdam(
            [*dense_d, *(t.param for t in deep_t)], learning_rate=adam_lr, eps=1e-8,
            loss_scale=self.sens,
        )  # fmt: skip
        self._groups = [(self.optimizer_w, dense_w, wide_t), (self.optimizer_d, dense_d, deep_t)]
        for opt, _, tables in self._groups:
            for t in tables:
                t.attach_optimizer(opt)
        k = len(self.tables)

        def loss_fn(*args: Tensor) -> Any:
            from sporeling.core import ops

            logits = model.head(*args[:k], args[k])
            per = ops.binary_cross_entropy_with_logits(logits, args[k + 1], reduction="none")
            return ops.reduce_mean(per)

        self._grad = value_and_grad(loss_fn, tuple(range(k)), self.dense)

    data_ranks: int | None = None  # ranks that hold batches (all, unless some only serve)

    def step(
        self, ids: np.ndarray | None, vals: Any = None, label: Any = None, next_ids: Any = None
    ) -> float:
        """One step on this rank's slice of the global batch; returns the global mean loss.
        A rank without data (a parameter server) passes ``ids=None`` and only serves rows.
        With ``prefetch=True`` (and a cache), ``next_ids`` (this rank's next batch, None when
        there is none) are read into the caches on their threads while this step computes."""
        n = self.data_ranks or self.x.size
        if ids is None:  # serve: take part in the exchanges with an empty batch
            ids = np.zeros((0, self.model.field_size), np.int32)
            for t in self.tables:
                t.lookup(ids)
            for t in self.tables:
                t.prefetch(None)
            g_dense = [np.zeros(p.shape, np.float32) for p in self.dense]
            g_rows = [np.zeros((*ids.shape, t.dim), np.float32) for t in self.tables]
            loss_value = 0.0
        else:
            rows = [Tensor(t.lookup(ids)) for t in self.tables]
            for t in self.tables:  # after this step's rows are resident
                t.prefetch(None if next_ids is None else np.asarray(next_ids))
            loss, (g_pos, gs) = self._grad(*rows, Tensor(vals), Tensor(label))
            g_rows = [g.asnumpy() for g in g_pos]
            g_dense = [g.asnumpy() for g in gs]
            loss_value = float(loss.asnumpy())
        flat = np.concatenate([g.reshape(-1) for g in g_dense])
        flat = comm.all_reduce(Tensor(flat), group=self.x.group).asnumpy() / n  # the mean
        dense_grads: dict[int, Tensor] = {}
        pos = 0
        for p, g in zip(self.dense, g_dense):
            dense_grads[id(p)] = Tensor(flat[pos : pos + g.size].reshape(g.shape) * self.sens)
            pos += g.size
        table_grads = {id(t): t.row_grad(ids, g / n) for t, g in zip(self.tables, g_rows)}
        restore: list[Any] = []
        for opt, dense, tables in self._groups:
            if opt is None:
                continue
            sparse = [self._nonempty(t, table_grads[id(t)], opt, restore) * self.sens
                      for t in tables]  # fmt: skip
            opt((*[dense_grads[id(p)] for p in dense], *sparse))
        for undo in restore:
            undo()
        total = comm.all_reduce(Tensor(np.array([loss_value])), group=self.x.group).asnumpy()
        return float(total[0]) / n

    @staticmethod
    def _nonempty(table: ShardedTable, g: RowTensor, optimizer: Any, restore: list[Any]) -> Any:
        """A gradient the core's optimizers accept when no row of this shard was touched:
        they reject a RowTensor without rows, so a shard of no rows gets an empty dense
        gradient, and another gets a zero gradient of row 0 whose update is undone after."""
        if g.indices.shape[0]:
            return g
        p = table.param
        if p.shape[0] == 0:
            return Tensor(np.zeros(p.shape, np.float32))
        arrays = [p.asnumpy()] + [
            q.asnumpy() for _, q in optimizer.parameters_and_names()
            if q is not p and q.name.endswith("." + p.name) and tuple(q.shape) == tuple(p.shape)
        ]  # fmt: skip
        saved = [a[0].copy() for a in arrays]

        def undo() -> None:
            for a, row in zip(arrays, saved):
                a[0] = row

        restore.append(undo)
        zero = np.zeros((1, *p.shape[1:]), np.float32)
        return RowTensor(Tensor(np.zeros(1, np.int64)), Tensor(zero), tuple(p.shape))

    def full_parameters(self) -> dict[str, np.ndarray]:
        """Every parameter by name, the tables gathered whole (on every rank)."""
        out = {p.name: p.asnumpy().copy() for p in self.dense}
        for t in self.tables:
            out[t.param.name] = t.gather_full()
        return out

    @property
    def wide(self) -> ShardedTable:
        return next(t for t in self.tables if "wide" in t.param.name)

    @property
    def deep(self) -> ShardedTable:
        return next(t for t in self.tables if "wide" not in t.param.name)


ShardedWideDeepTrainer = ShardedTrainer  # the name of the first version
