"""Tensor (model) parallel building blocks: sharded Dense, Embedding, EmbeddingLookup and
multi-head attention over a model-parallel communication group.

Every layer here is the sharded twin of a dense layer of :mod:`sporeling.core.nn`: built
with the same arguments and the same seed on every rank, it holds the rank's slice of the
dense layer's parameters (they are initialised at full size, then sliced, so the assembled
shards equal the dense layer's parameters) and computes the same function, inserting the
collectives Megatron-LM's "regions" need (Shoeybi et al., 2019):

=====================  ======================  ==========================
region op              forward                 backward
=====================  ======================  ==========================
:func:`copy_to_mp`      identity                all-reduce (sum)
:func:`reduce_from_mp`  all-reduce (sum)        identity
:func:`scatter_to_mp`   keep own slice of axis  all-gather along axis
:func:`gather_from_mp`  all-gather along axis   keep own slice of axis
=====================  ======================  ==========================

They assume what tensor parallelism assumes: tensors outside the layers are replicated over
the model-parallel group, so every rank computes the same loss; under that assumption the
gradients of the shards are exactly the dense gradients' slices.

Layers (``group=None`` is the world group; without :func:`communication.init` every layer
runs as its dense twin on one rank):

* :class:`ColumnParallelDense` — ``weight`` split on its output rows; ``gather_output``.
* :class:`RowParallelDense` — ``weight`` split on its input columns; ``input_is_parallel``.
* :class:`VocabParallelEmbedding` — ``nn.Embedding`` with the vocabulary split by rows.
* :class:`ParallelEmbeddingLookup` — ``nn.EmbeddingLookup`` with MindSpore's ``slice_mode``:
  ``batch_slice``, ``table_row_slice``, ``table_column_slice``, ``field_slice``.
* :class:`ParallelMultiheadAttention` — ``nn.MultiheadAttention`` with its heads split.

Each layer has ``tensor_parallel_axes``: ``{parameter attribute: sharded axis}`` (or
``(axis, blocks)`` when each of ``blocks`` equal blocks of the axis is split, as the q/k/v
blocks of attention's ``in_proj_weight``), which
:mod:`sporeling.core.parallel.checkpoint` uses as the model-parallel layout, and a
``from_dense(layer, ...)`` constructor that slices an existing dense layer.
"""

from __future__ import annotations

import math
from typing import Any

from .. import dtype as _dt
from .. import ops
from .._primitive import Primitive, ShapedArray
from ..communication.overlap import collective
from ..nn.layers.attention import MultiheadAttention, _mask_to_float
from ..nn.layers.basic import Dense
from ..nn.layers.embedding import (
    Embedding,
    EmbeddingLookup,
    _check_ids,
    embedding_lookup_p,
)
from ..tensor import Parameter, Tensor

__all__ = [
    "ColumnParallelDense",
    "RowParallelDense",
    "VocabParallelEmbedding",
    "ParallelEmbeddingLookup",
    "ParallelMultiheadAttention",
    "copy_to_mp",
    "reduce_from_mp",
    "scatter_to_mp",
    "gather_from_mp",
    "group_rank_size",
]


# ---- the communication group ------------------------------------------------------------


def _group(group: str | None, func: str) -> Any:
    """The communication :class:`Group` for ``group`` (None: the world), or None when
    communication is not initialised and ``group`` is None (a world of one)."""
    from ..communication import management

    if group is None:
        if not management.GlobalComm.INITED:
            return None
        group = management.GlobalComm.WORLD_COMM_GROUP
    return management.get_group(group, func)


def group_rank_size(group: str | None = None) -> tuple[int, int]:
    """``(rank in group, group size)``; ``(0, 1)`` when communication is not initialised
    and ``group`` is None (stand-alone: every parallel layer is its dense twin)."""
    g = _group(group, "tensor_parallel")
    return (0, 1) if g is None else (int(g.rank), int(g.size))


def _collective(name: str, arr: Any, group: str | None, **kw: Any) -> Any:
    """Collective ``name`` (a raw :class:`Group` method: ``allreduce``, ``allgather``...) on
    an array; no autograd here: the region primitives below own the gradients. Inside a
    copy of ``nn.MicroBatchInterleaved`` it is started non-blocking and the other copies
    compute while it is in flight (:func:`~sporeling.core.communication.overlap.collective`)."""
    return collective(_group(group, name), name, arr, **kw)


def _all_gather_axis(xp: Any, x: Any, axis: int, group: str | None, size: int) -> Any:
    moved = xp.ascontiguousarray(xp.moveaxis(x, axis, 0))
    gathered = _collective("allgather", moved, group)  # concatenated on dim 0
    parts = xp.split(gathered, size, axis=0)
    return xp.concatenate([xp.moveaxis(p, 0, axis) for p in parts], axis=axis)


def _chunk(xp: Any, x: Any, axis: int, rank: int, size: int) -> Any:
    n = x.shape[axis] // size
    index = [slice(None)] * x.ndim
    index[axis] = slice(rank * n, (rank + 1) * n)
    return xp.ascontiguousarray(x[tuple(index)])


# ---- region primitives --------------------------------------------------------------------


def _same(x: ShapedArray, **_: Any) -> ShapedArray:
    return ShapedArray(x.shape, x.dtype)


def _split_abstract(x: ShapedArray, *, axis: int, group: str | None) -> ShapedArray:
    _, size = group_rank_size(group)
    if x.shape[axis] % size:
        raise ValueError(
            f"scatter_to_mp: axis {axis} of shape {x.shape} has length {x.shape[axis]}, which "
            f"does not divide into the {size} ranks of the model-parallel group"
        )
    shape = list(x.shape)
    shape[axis] //= size
    return ShapedArray(tuple(shape), x.dtype)


def _gather_abstract(x: ShapedArray, *, axis: int, group: str | None) -> ShapedArray:
    _, size = group_rank_size(group)
    shape = list(x.shape)
    shape[axis] *= size
    return ShapedArray(tuple(shape), x.dtype)


def _copy_impl(xp: Any, x: Any, *, group: str | None) -> Any:
    return x


def _reduce_impl(xp: Any, x: Any, *, group: str | None) -> Any:
    if group_rank_size(group)[1] == 1:
        return x
    return _collective("allreduce", xp.ascontiguousarray(x), group)


def _split_impl(xp: Any, x: Any, *, axis: int, group: str | None) -> Any:
    rank, size = group_rank_size(group)
    return x if size == 1 else _chunk(xp, x, axis, rank, size)


def _gather_impl(xp: Any, x: Any, *, axis: int, group: str | None) -> Any:
    size = group_rank_size(group)[1]
    return x if size == 1 else _all_gather_axis(xp, x, axis, group, size)


tp_copy_p = Primitive(
    "tp_copy_to_mp",
    "opaque",
    _same,
    impl=_copy_impl,
    vjp=lambda g, x, *, out, group: (lambda: tp_reduce_p.bind(g, group=group),),
)
tp_reduce_p: Primitive = Primitive(
    "tp_reduce_from_mp",
    "opaque",
    _same,
    impl=_reduce_impl,
    vjp=lambda g, x, *, out, group: (lambda: tp_copy_p.bind(g, group=group),),
)
tp_split_p = Primitive(
    "tp_scatter_to_mp",
    "opaque",
    _split_abstract,
    impl=_split_impl,
    vjp=lambda g, x, *, out, axis, group: (lambda: tp_gather_p.bind(g, axis=axis, group=group),),
)
tp_gather_p: Primitive = Primitive(
    "tp_gather_from_mp",
    "opaque",
    _gather_abstract,
    impl=_gather_impl,
    vjp=lambda g, x, *, out, axis, group: (lambda: tp_split_p.bind(g, axis=axis, group=group),),
)


def _axis(x: Tensor, axis: int, op: str) -> int:
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"{op}: axis {axis} is out of range for shape {x.shape}")
    return axis % x.ndim


def copy_to_mp(x: Tensor, group: str | None = None) -> Tensor:
    """Identity forward, all-reduce (sum) of the gradient backward."""
    return tp_copy_p.bind(x, group=group)


def reduce_from_mp(x: Tensor, group: str | None = None) -> Tensor:
    """All-reduce (sum) forward, identity backward."""
    return tp_reduce_p.bind(x, group=group)


def scatter_to_mp(x: Tensor, axis: int = -1, group: str | None = None) -> Tensor:
    """This rank's equal slice of ``axis`` forward, all-gather of the gradient backward."""
    return tp_split_p.bind(x, axis=_axis(x, axis, "scatter_to_mp"), group=group)


def gather_from_mp(x: Tensor, axis: int = -1, group: str | None = None) -> Tensor:
    """All-gather (concatenate on ``axis``) forward, own slice of the gradient backward."""
    return tp_gather_p.bind(x, axis=_axis(x, axis, "gather_from_mp"), group=group)


# ---- helpers ------------------------------------------------------------------------------


def _divisible(cls: str, what: str, n: int, size: int) -> int:
    if n % size:
        raise ValueError(
            f"{cls}: {what} ({n}) must be divisible by the model-parallel group size ({size}); "
            "choose a group size that divides it"
        )
    return n // size


def _shard_param(param: Parameter, axis: int, rank: int, size: int) -> None:
    """Replace ``param``'s data with this rank's slice of ``axis`` (name and flags kept)."""
    if size == 1:
        return
    xp = param._device.xp
    param.set_data(Tensor._wrap(_chunk(xp, param._data, axis, rank, size), param._device))


def _copy_from(param: Parameter, source: Tensor, axis: int | None, rank: int, size: int) -> None:
    data = source._data
    if axis is not None and size > 1:
        data = _chunk(source._device.xp, data, axis, rank, size)
    param.set_data(Tensor._wrap(data.copy(), source._device))


class _ParallelMixin:
    """``group``, ``rank``/``group_size`` and the sharded-axis table."""

    tensor_parallel_axes: dict[str, int | tuple[int, int]]
    group: str | None
    mp_rank: int
    mp_size: int

    def _init_group(self, group: str | None) -> None:
        if group is not None and not isinstance(group, str):
            raise TypeError(
                f"{type(self).__name__}: argument 'group' expected a group name (str) or None, "
                f"got {type(group).__name__}"
            )
        self.group = group
        self.mp_rank, self.mp_size = group_rank_size(group)


# ---- Dense ----------------------------------------------------------------------------------


class ColumnParallelDense(_ParallelMixin, Dense):
    """``Dense`` with ``weight`` (and ``bias``) split along the output features.

    ``ColumnParallelDense(in_channels, out_channels, weight_init=None, bias_init=None,
    has_bias=True, activation=None, gather_output=True, group=None)``. Each rank holds
    ``out_channels / p`` rows of ``weight``; the input is replicated. With
    ``gather_output=True`` the outputs are all-gathered into the full ``out_channels``;
    with False each rank returns its ``out_channels / p`` slice (feed it to a
    :class:`RowParallelDense` with ``input_is_parallel=True``).

    >>> import numpy as np
    >>> ColumnParallelDense(3, 4)(Tensor(np.ones((2, 3), np.float32))).shape
    (2, 4)
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        weight_init: Any = None,
        bias_init: Any = None,
        has_bias: bool = True,
        activation: Any = None,
        gather_output: bool = True,
        group: str | None = None,
    ) -> None:
        super().__init__(in_channels, out_channels, weight_init, bias_init, has_bias, activation)
        self._init_group(group)
        self.gather_output = bool(gather_output)
        self.out_channels_per_partition = _divisible(
            "ColumnParallelDense", "out_channels", self.out_channels, self.mp_size
        )
        self.tensor_parallel_axes = {"weight": 0}
        _shard_param(self.weight, 0, self.mp_rank, self.mp_size)
        if self.bias is not None:
            self.tensor_parallel_axes["bias"] = 0
            _shard_param(self.bias, 0, self.mp_rank, self.mp_size)

    @classmethod
    def from_dense(
        cls, dense: Dense, gather_output: bool = True, group: str | None = None
    ) -> ColumnParallelDense:
        """The column-parallel twin of ``dense`` (this rank's slice of its parameters)."""
        layer = cls(
            dense.in_channels,
            dense.out_channels,
            "zeros",
            "zeros",
            dense.has_bias,
            dense.activation,
            gather_output,
            group,
        )
        _copy_from(layer.weight, dense.weight, 0, layer.mp_rank, layer.mp_size)
        if dense.bias is not None and layer.bias is not None:
            _copy_from(layer.bias, dense.bias, 0, layer.mp_rank, layer.mp_size)
        return layer

    def construct(self, x: Tensor) -> Tensor:
        if not isinstance(x, Tensor) or x.ndim < 1 or x.shape[-1] != self.in_channels:
            raise ValueError(
                f"ColumnParallelDense: the input expected a Tensor whose last dimension is "
                f"in_channels={self.in_channels}, got {getattr(x, 'shape', x)!r}"
            )
        y = ops.matmul(copy_to_mp(x, self.group), ops.transpose(self.weight, (1, 0)))
        if self.bias is not None:
            y = y + self.bias
        if self.activation is not None:
            y = self.activation(y)
        if self.gather_output:
            y = gather_from_mp(y, -1, self.group)
        return y

    def extend_repr(self) -> str:
        return (
            super().extend_repr()
            + f", gather_output={self.gather_output}, group_size={self.mp_size}"
        )


class RowParallelDense(_ParallelMixin, Dense):
    """``Dense`` with ``weight`` split along the input features.

    ``RowParallelDense(in_channels, out_channels, weight_init=None, bias_init=None,
    has_bias=True, activation=None, input_is_parallel=False, group=None)``. Each rank holds
    ``in_channels / p`` columns of ``weight`` and the whole ``bias``; partial products are
    all-reduced, then the bias and activation are applied. With ``input_is_parallel=True``
    the input is already this rank's ``in_channels / p`` slice (the output of a
    :class:`ColumnParallelDense` with ``gather_output=False``); otherwise the full input is
    given and sliced here.

    >>> import numpy as np
    >>> RowParallelDense(4, 3)(Tensor(np.ones((2, 4), np.float32))).shape
    (2, 3)
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        weight_init: Any = None,
        bias_init: Any = None,
        has_bias: bool = True,
        activation: Any = None,
        input_is_parallel: bool = False,
        group: str | None = None,
    ) -> None:
        super().__init__(in_channels, out_channels, weight_init, bias_init, has_bias, activation)
        self._init_group(group)
        self.input_is_parallel = bool(input_is_parallel)
        self.in_channels_per_partition = _divisible(
            "RowParallelDense", "in_channels", self.in_channels, self.mp_size
        )
        self.tensor_parallel_axes = {"weight": 1}
        _shard_param(self.weight, 1, self.mp_rank, self.mp_size)

    @classmethod
    def from_dense(
        cls, dense: Dense, input_is_parallel: bool = False, group: str | None = None
    ) -> RowParallelDense:
        """The row-parallel twin of ``dense`` (this rank's slice of its parameters)."""
        layer = cls(
            dense.in_channels,
            dense.out_channels,
            "zeros",
            "zeros",
            dense.has_bias,
            dense.activation,
            input_is_parallel,
            group,
        )
        _copy_from(layer.weight, dense.weight, 1, layer.mp_rank, layer.mp_size)
        if dense.bias is not None and layer.bias is not None:
            _copy_from(layer.bias, dense.bias, None, 0, 1)
        return layer

    def construct(self, x: Tensor) -> Tensor:
        want = self.in_channels_per_partition if self.input_is_parallel else self.in_channels
        if not isinstance(x, Tensor) or x.ndim < 1 or x.shape[-1] != want:
            raise ValueError(
                f"RowParallelDense: the input expected a Tensor whose last dimension is {want} "
                f"(input_is_parallel={self.input_is_parallel}), got {getattr(x, 'shape', x)!r}"
            )
        if not self.input_is_parallel:
            x = scatter_to_mp(x, -1, self.group)
        y = reduce_from_mp(ops.matmul(x, ops.transpose(self.weight, (1, 0))), self.group)
        if self.bias is not None:
            y = y + self.bias
        if self.activation is not None:
            y = self.activation(y)
        return y

    def extend_repr(self) -> str:
        return (
            super().extend_repr()
            + f", input_is_parallel={self.input_is_parallel}, group_size={self.mp_size}"
        )


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


# ---- attention ----------------------------------------------------------------------------


class ParallelMultiheadAttention(_ParallelMixin, MultiheadAttention):
    """``nn.MultiheadAttention`` with its heads split over the model-parallel group.

    ``ParallelMultiheadAttention(embed_dim, num_heads, dropout=0.0, has_bias=True,
    batch_first=False, group=None)``: each rank holds ``num_heads / p`` heads — its rows of
    the q, k and v blocks of ``in_proj_weight``/``in_proj_bias`` (a column-parallel input
    projection) and the matching columns of ``out_proj.weight`` (a row-parallel output
    projection, whose partial results are all-reduced before the replicated bias is added).
    Inputs, masks and outputs are as in ``MultiheadAttention``; ``attn_weights`` are
    all-gathered over heads when asked for. ``add_bias_kv``, ``add_zero_attn`` and
    ``kdim``/``vdim`` different from ``embed_dim`` are not supported.
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        has_bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        group: str | None = None,
    ) -> None:
        cls = "ParallelMultiheadAttention"

        def unsupported(arg: str, value: Any) -> ValueError:
            return ValueError(
                f"{cls}: argument '{arg}'={value!r} is not supported with heads split over "
                "ranks (add_bias_kv, add_zero_attn and kdim/vdim != embed_dim are not); use "
                "nn.MultiheadAttention"
            )

        if add_bias_kv:
            raise unsupported("add_bias_kv", add_bias_kv)
        if add_zero_attn:
            raise unsupported("add_zero_attn", add_zero_attn)
        if kdim not in (None, embed_dim):
            raise unsupported("kdim", kdim)
        if vdim not in (None, embed_dim):
            raise unsupported("vdim", vdim)
        super().__init__(
            embed_dim, num_heads, dropout, has_bias, False, False, None, None, batch_first
        )
        self._init_group(group)
        self.local_heads = _divisible(cls, "num_heads", self.num_heads, self.mp_size)
        # (axis, blocks): the q, k and v blocks of axis 0 are each split over the ranks
        self.tensor_parallel_axes = {"in_proj_weight": (0, 3), "out_proj.weight": 1}
        if self.in_proj_bias is not None:
            self.tensor_parallel_axes["in_proj_bias"] = (0, 3)
        # kdim == vdim == embed_dim (checked above), so the packed q/k/v weight exists
        assert self.in_proj_weight is not None
        self._shard_from(self.in_proj_weight, self.in_proj_bias, self.out_proj.weight)

    def _shard_from(self, w_in: Tensor, b_in: Tensor | None, w_out: Tensor) -> None:
        rank, size = self.mp_rank, self.mp_size
        xp = w_in._device.xp

        def qkv_rows(data: Any) -> Any:
            if size == 1:
                return data.copy()
            return xp.concatenate(
                [_chunk(xp, part, 0, rank, size) for part in xp.split(data, 3, axis=0)], axis=0
            )

        assert self.in_proj_weight is not None
        self.in_proj_weight.set_data(Tensor._wrap(qkv_rows(w_in._data), w_in._device))
        if b_in is not None and self.in_proj_bias is not None:
            self.in_proj_bias.set_data(Tensor._wrap(qkv_rows(b_in._data), b_in._device))
        w = w_out._data if size == 1 else _chunk(xp, w_out._data, 1, rank, size)
        self.out_proj.weight.set_data(Tensor._wrap(w.copy(), w_out._device))

    @classmethod
    def from_dense(
        cls, mha: MultiheadAttention, group: str | None = None
    ) -> ParallelMultiheadAttention:
        """The head-parallel twin of ``mha`` (this rank's heads of its parameters)."""
        if mha.in_proj_weight is None or mha.bias_k is not None or mha.add_zero_attn:
            raise ValueError(
                "ParallelMultiheadAttention.from_dense: argument 'mha' with kdim/vdim != "
                "embed_dim, add_bias_kv or add_zero_attn is not supported (only such attention "
                "can be split by heads)"
            )
        layer = cls(
            mha.embed_dim,
            mha.num_heads,
            mha.dropout,
            mha.has_bias,
            batch_first=mha.batch_first,
            group=group,
        )
        layer._shard_from(mha.in_proj_weight, mha.in_proj_bias, mha.out_proj.weight)
        if mha.out_proj.bias is not None and layer.out_proj.bias is not None:
            layer.out_proj.bias.set_data(mha.out_proj.bias)
        return layer

    def construct(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
    ) -> tuple[Tensor, Tensor | None]:
        name = "ParallelMultiheadAttention"
        batched = self._check_qkv(query, key, value)
        dtype = query.dtype
        if not batched:
            query, key, value = (ops.expand_dims(t, 1) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = ops.expand_dims(key_padding_mask, 0)
        elif self.batch_first:
            query, key, value = (ops.swapaxes(t, 0, 1) for t in (query, key, value))
        tgt_len, bsz, _ = query.shape
        src_len = key.shape[0]
        heads, hd, size = self.local_heads, self.head_dim, self.mp_size
        local_e = heads * hd
        assert self.in_proj_weight is not None
        w_q, w_k, w_v = ops.split(self.in_proj_weight, 0, 3)
        b_q = b_k = b_v = None
        if self.in_proj_bias is not None:
            b_q, b_k, b_v = ops.split(self.in_proj_bias, 0, 3)
        group = self.group

        def proj(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
            y = ops.matmul(copy_to_mp(x, group), ops.transpose(w, (1, 0)))
            return y if b is None else y + b

        q, k, v = proj(query, w_q, b_q), proj(key, w_k, b_k), proj(value, w_v, b_v)

        mask = None
        if attn_mask is not None:
            mask = _mask_to_float("attn_mask", attn_mask, dtype, allow_uint8=True)
            if mask.ndim == 2:
                if mask.shape != (tgt_len, src_len):
                    raise ValueError(f"{name}: attn_mask expected shape ({tgt_len}, {src_len})")
                mask = ops.expand_dims(mask, 0)
            elif mask.ndim == 3 and mask.shape == (bsz * self.num_heads, tgt_len, src_len):
                # keep this rank's heads: (N, H, L, S) -> (N, H/p, L, S)
                mask = ops.reshape(mask, (bsz, self.num_heads, tgt_len, src_len))
                start = self.mp_rank * heads
                mask = ops.reshape(mask[:, start : start + heads], (bsz * heads, tgt_len, src_len))
            else:
                raise ValueError(
                    f"{name}: attn_mask expected shape ({tgt_len}, {src_len}) or "
                    f"({bsz * self.num_heads}, {tgt_len}, {src_len}), got {mask.shape}"
                )
        if key_padding_mask is not None:
            kpm = _mask_to_float("key_padding_mask", key_padding_mask, dtype, allow_uint8=False)
            if kpm.shape != (bsz, src_len):
                raise ValueError(f"{name}: key_padding_mask expected shape ({bsz}, {src_len})")
            kpm = ops.reshape(
                ops.broadcast_to(ops.reshape(kpm, (bsz, 1, 1, src_len)), (bsz, heads, 1, src_len)),
                (bsz * heads, 1, src_len),
            )
            mask = kpm if mask is None else mask + kpm

        q = ops.transpose(ops.reshape(q, (tgt_len, bsz * heads, hd)), (1, 0, 2))
        k = ops.transpose(ops.reshape(k, (src_len, bsz * heads, hd)), (1, 0, 2))
        v = ops.transpose(ops.reshape(v, (src_len, bsz * heads, hd)), (1, 0, 2))
        scores = ops.matmul(q * (1.0 / math.sqrt(hd)), ops.transpose(k, (0, 2, 1)))
        if mask is not None:
            scores = scores + mask
        weights = ops.softmax(scores, -1)
        if self.dropout and self.training:
            weights = ops.dropout(weights, self.dropout)[0]
        out = ops.matmul(weights, v)  # (N * heads/p, L, hd)
        out = ops.reshape(ops.transpose(out, (1, 0, 2)), (tgt_len * bsz, local_e))
        w_o = self.out_proj.weight
        out = reduce_from_mp(ops.matmul(out, ops.transpose(w_o, (1, 0))), group)
        if self.out_proj.bias is not None:
            out = out + self.out_proj.bias
        out = ops.reshape(out, (tgt_len, bsz, self.embed_dim))
        if batched and self.batch_first:
            out = ops.swapaxes(out, 0, 1)
        elif not batched:
            out = ops.squeeze(out, 1)
        if not need_weights:
            return out, None
        weights = ops.reshape(weights, (bsz, heads, tgt_len, src_len))
        if size > 1:
            weights = gather_from_mp(weights, 1, group)
        if average_attn_weights:
            weights = ops.reduce_mean(weights, 1)
        if not batched:
            weights = ops.squeeze(weights, 0)
        return out, weights

    def extend_repr(self) -> str:
        return (
            super().extend_repr() + f", local_heads={self.local_heads}, group_size={self.mp_size}"
        )
