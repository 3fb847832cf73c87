"""VocabParallelEmbedding and ParallelEmbeddingLookup (MindSpore's slice modes)."""

from __future__ import annotations

from typing import Any

from ... import dtype as _dt
from ... import ops
from ...nn.layers.embedding import (
    Embedding,
    EmbeddingLookup,
    _check_ids,
    embedding_lookup_p,
)
from ...tensor import Tensor
from ._common import _copy_from, _divisible, _ParallelMixin, _shard_param
from .regions import _chunk, gather_from_mp, reduce_from_mp

__all__ = [
    "VocabParallelEmbedding",
    "ParallelEmbeddingLookup",
]

# ---- embeddings ---------------------------------------------------------------------------


def _masked_local_ids(ids: Tensor, start: int, stop: int) -> Tensor:
    """Global ids -> ids local to rows ``[start, stop)``; others become ``-1`` (a zero row)."""
    local = ids - start
    inside = ops.logical_and(ids >= start, ids < stop)
    return ops.select(inside, local, ops.zeros_like(local) - 1)


class VocabParallelEmbedding(_ParallelMixin, Embedding):
    """``nn.Embedding`` with the table's rows (the vocabulary) split over the group.

    Same arguments as ``Embedding`` plus ``group``. Each rank looks up the ids in its
    ``vocab_size / p`` rows (others give zero rows) and the partial results are
    all-reduced, so the output equals the dense lookup. ``use_one_hot`` multiplies a local
    one-hot slice by the local table instead.
    """

    def __init__(
        self,
        vocab_size: int,
        embedding_size: int,
        use_one_hot: bool = False,
        embedding_table: Any = "normal",
        dtype: Any = _dt.float32,
        padding_idx: int | None = None,
        group: str | None = None,
    ) -> None:
        super().__init__(
            vocab_size, embedding_size, use_one_hot, embedding_table, dtype, padding_idx
        )
        self._init_group(group)
        per = _divisible("VocabParallelEmbedding", "vocab_size", self.vocab_size, self.mp_size)
        self.vocab_start_index = self.mp_rank * per
        self.vocab_end_index = self.vocab_start_index + per
        self.tensor_parallel_axes = {"embedding_table": 0}
        _shard_param(self.embedding_table, 0, self.mp_rank, self.mp_size)

    @classmethod
    def from_dense(cls, emb: Embedding, group: str | None = None) -> VocabParallelEmbedding:
        layer = cls(
            emb.vocab_size, emb.embedding_size, emb.use_one_hot, "zeros", emb.dtype, None, group
        )
        layer.padding_idx = emb.padding_idx
        _copy_from(layer.embedding_table, emb.embedding_table, 0, layer.mp_rank, layer.mp_size)
        return layer

    def construct(self, x: Tensor) -> Tensor:
        ids = _check_ids("VocabParallelEmbedding", x)
        local = _masked_local_ids(ids, self.vocab_start_index, self.vocab_end_index)
        table = self.embedding_table
        if self.use_one_hot:
            per = self.vocab_end_index - self.vocab_start_index
            hot = ops.cast(ops.one_hot(local, per, 1.0, 0.0), table.dtype)
            out = ops.matmul(hot, table)
        else:
            out = embedding_lookup_p.bind(table, local, sparse=False)
        return reduce_from_mp(out, self.group)


class ParallelEmbeddingLookup(_ParallelMixin, EmbeddingLookup):
    """``nn.EmbeddingLookup`` sharded by ``slice_mode`` over the group (MindSpore's
    semi-auto-parallel behaviour, run eagerly with explicit collectives).

    Same arguments as ``EmbeddingLookup`` plus ``group``; indices are the full batch on
    every rank (MindSpore's ``full_batch=True``). With ``p`` ranks:

    * ``batch_slice``: the table is replicated; rank ``r`` looks up rows ``r`` of ``p``
      equal slices of the batch (dim 0) and returns **its batch slice** only. The table's
      gradient is this slice's; sum it over the group (the data-parallel all-reduce) to
      get the full-batch gradient.
    * ``table_row_slice``: the table's rows are split in ``p`` equal blocks; each rank looks
      up the ids in its block (others give zero rows) and the results are all-reduced.
    * ``table_column_slice``: the table's columns (``embedding_size``) are split; each rank
      looks up its columns and the results are all-gathered on the last axis.
    * ``field_slice``: the table's rows are split in blocks of ``manual_shapes[r]`` rows
      (``len(manual_shapes) == p``, summing to ``vocab_size``); the indices ``(batch,
      fields)`` are split on the field axis (dim 1) and rank ``r`` looks up its fields in
      its block, so ids of rank ``r``'s fields must lie in its rows (as Wide&Deep lays them
      out); the results are all-gathered on the field axis.

    ``max_norm`` is applied to the full looked-up vectors; gradients stay row-sparse
    (:class:`RowTensor`) with ``sparse=True``.
    """

    def __init__(
        self,
        vocab_size: int,
        embedding_size: int,
        param_init: Any = "normal",
        target: str = "CPU",
        slice_mode: str = "batch_slice",
        manual_shapes: Any = None,
        max_norm: float | None = None,
        sparse: bool = True,
        vocab_cache_size: int = 0,
        group: str | None = None,
    ) -> None:
        super().__init__(
            vocab_size,
            embedding_size,
            param_init,
            target,
            slice_mode,
            manual_shapes,
            max_norm,
            sparse,
            vocab_cache_size,
        )
        self._init_group(group)
        cls, rank, size = "ParallelEmbeddingLookup", self.mp_rank, self.mp_size
        self.row_start, self.row_end = 0, self.vocab_size
        self.tensor_parallel_axes = {}
        if slice_mode == self.TABLE_ROW_SLICE:
            per = _divisible(cls, "vocab_size (table_row_slice)", self.vocab_size, size)
            self.row_start, self.row_end = rank * per, (rank + 1) * per
            self.tensor_parallel_axes["embedding_table"] = 0
            _shard_param(self.embedding_table, 0, rank, size)
        elif slice_mode == self.TABLE_COLUMN_SLICE:
            _divisible(cls, "embedding_size (table_column_slice)", self.embedding_size, size)
            self.tensor_parallel_axes["embedding_table"] = 1
            _shard_param(self.embedding_table, 1, rank, size)
        elif slice_mode == self.FIELD_SLICE:
            shapes = self.manual_shapes
            if shapes is None:
                raise ValueError(f"{cls}: slice_mode='field_slice' needs 'manual_shapes'")
            if len(shapes) != size or sum(shapes) != self.vocab_size:
                raise ValueError(
                    f"{cls}: manual_shapes {shapes} must have one entry per rank ({size}) and "
                    f"sum to vocab_size ({self.vocab_size})"
                )
            self.row_start = sum(shapes[:rank])
            self.row_end = self.row_start + shapes[rank]
            self.tensor_parallel_axes["embedding_table"] = 0
            if size > 1:
                data = self.embedding_table._data[self.row_start : self.row_end].copy()
                self.embedding_table.set_data(Tensor._wrap(data, self.embedding_table._device))

    @classmethod
    def from_dense(
        cls, emb: EmbeddingLookup, slice_mode: str | None = None, group: str | None = None
    ) -> ParallelEmbeddingLookup:
        mode = emb.slice_mode if slice_mode is None else slice_mode
        layer = cls(
            emb.vocab_size,
            emb.embedding_size,
            "zeros",
            emb.target,
            mode,
            emb.manual_shapes,
            emb.max_norm,
            emb.sparse,
            0,
            group,
        )
        full = emb.embedding_table._data
        if mode == cls.TABLE_COLUMN_SLICE:
            xp = emb.embedding_table._device.xp
            data = _chunk(xp, full, 1, layer.mp_rank, layer.mp_size)
        else:
            data = full[layer.row_start : layer.row_end]
        layer.embedding_table.set_data(Tensor._wrap(data.copy(), emb.embedding_table._device))
        return layer

    def construct(self, indices: Tensor) -> Tensor:
        ids = _check_ids("ParallelEmbeddingLookup", indices)
        mode, group, size = self.slice_mode, self.group, self.mp_size
        table = self.embedding_table
        if size == 1:
            out = embedding_lookup_p.bind(table, ids, sparse=self.sparse)
        elif mode == self.BATCH_SLICE:
            if ids.ndim == 0 or ids.shape[0] % size:
                raise ValueError(
                    f"ParallelEmbeddingLookup: batch_slice splits the indices' dim 0 over "
                    f"{size} ranks, got indices of shape {ids.shape}"
                )
            n = ids.shape[0] // size
            local = ids[self.mp_rank * n : (self.mp_rank + 1) * n]
            out = embedding_lookup_p.bind(table, local, sparse=self.sparse)
        elif mode == self.TABLE_COLUMN_SLICE:
            out = embedding_lookup_p.bind(table, ids, sparse=self.sparse)
            out = gather_from_mp(out, -1, group)
        elif mode == self.TABLE_ROW_SLICE:
            local = _masked_local_ids(ids, self.row_start, self.row_end)
            out = reduce_from_mp(embedding_lookup_p.bind(table, local, sparse=self.sparse), group)
        else:  # field slice
            if ids.ndim < 2 or ids.shape[1] % size:
                raise ValueError(
                    f"ParallelEmbeddingLookup: field_slice splits the indices' dim 1 (fields) "
                    f"over {size} ranks, got indices of shape {ids.shape}"
                )
            f = ids.shape[1] // size
            mine = ids[:, self.mp_rank * f : (self.mp_rank + 1) * f]
            local = _masked_local_ids(mine, self.row_start, self.row_end)
            out = embedding_lookup_p.bind(table, local, sparse=self.sparse)
            out = gather_from_mp(out, 1, group)
        if self.max_norm is not None:
            sq = ops.reduce_sum(out * out, -1, keep_dims=True)
            norm = ops.sqrt(ops.maximum(sq, self.max_norm**2))
            out = out * (self.max_norm / norm)
        return out

    def extend_repr(self) -> str:
        return super().extend_repr() + f", group_size={self.mp_size}"
