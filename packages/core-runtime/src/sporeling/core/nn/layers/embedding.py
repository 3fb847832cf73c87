"""Embedding layers (MindSpore 1.8 ``nn.Embedding``, ``nn.EmbeddingLookup``) and
:class:`RowTensor`, the row-sparse gradient of a lookup.

Sparse gradients — the interface optimizers consume
----------------------------------------------------
``EmbeddingLookup(..., sparse=True)`` (the default) makes the gradient of its
``embedding_table`` a :class:`RowTensor` instead of a dense array:

* ``grad.indices``: int64 Tensor of shape ``(nnz,)`` — the rows touched by the batch,
  **unique, sorted ascending and inside** ``[0, vocab_size)`` (out-of-range ids, which
  look up zero rows, contribute nothing);
* ``grad.values``: Tensor of shape ``(nnz, embedding_size)`` in the table's dtype — the
  summed gradient of each touched row (duplicated ids are already added up);
* ``grad.dense_shape``: the table's shape ``(vocab_size, embedding_size)``.

A sparse-aware optimizer (``LazyAdam``, ``SGD``, ``FTRL``...) tests
``isinstance(g, RowTensor)`` and updates only ``param[g.indices]`` (and those rows of its
moments). Nothing else has to know: ``RowTensor`` is a :class:`Tensor` subclass whose dense
array (zeros outside ``indices``) is built lazily the first time any op, ``asnumpy()`` or
``_data`` reads it, so a dense optimizer, gradient clipping or loss scaling still sees the
right values. Sums of two RowTensors, products and quotients by a scalar and negation stay
sparse (what ``TrainOneStepCell``'s sensitivity scaling and gradient accumulation need).

The sparse form is produced by first-order differentiation (``grad``, ``value_and_grad``,
``Tensor.backward``); when a gradient graph is recorded for higher orders the gradient is
the dense, differentiable scatter instead.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ... import dtype as _dt
from ... import ops
from ..._backend import is_host, scatter_at
from ..._primitive import Primitive, ShapedArray
from ...autograd.tape import GradMode
from ...errors import describe
from ...kernels.cpu import scatter as scatter_kernels
from ...kernels.cpu import sparse_rows
from ...tensor import Tensor
from ..cell import Cell
from ._utils import arg_error, check_bool, check_dtype, check_float, check_int, make_param

__all__ = ["Embedding", "EmbeddingLookup", "RowTensor"]

_DATA_SLOT = Tensor.__dict__["_data"]  # the base class's storage for the dense array


# ---- the lookup and its dense / sparse gradients -----------------------------------------


def _segment_rows(xp: Any, rows: Any, ids: Any, vocab: int) -> tuple[Any, Any]:
    """Unique sorted in-range ``ids`` and the sum of ``rows`` for each (rows: (n, *row))."""
    if is_host(xp) and rows.ndim >= 1 and sparse_rows.supports(rows.dtype):
        # one hashing pass and a sort of the distinct ids only: 10.7 -> 1.5 ms for a
        # Wide&Deep batch's deep table (1024 x 39 ids, rows of 16; the shared machine at
        # load 8, so ~4x the idle times) against argsort + gather + reduceat
        width = int(np.prod(rows.shape[1:], dtype=np.int64))
        uniq, sums = sparse_rows.unique_row_sums(rows.reshape(rows.shape[0], width), ids, vocab)
        return uniq, sums.reshape((uniq.shape[0],) + rows.shape[1:])
    valid = (ids >= 0) & (ids < vocab)
    if not bool(valid.all()):
        ids, rows = ids[valid], rows[valid]
    if ids.size == 0:
        return xp.zeros((0,), np.int64), xp.zeros((0,) + rows.shape[1:], rows.dtype)
    order = xp.argsort(ids, kind="stable")
    sid = ids[order].astype(np.int64)
    first = xp.concatenate([xp.ones((1,), bool), sid[1:] != sid[:-1]])
    starts = xp.flatnonzero(first)
    srows = rows[order]
    if is_host(xp):
        vals = np.add.reduceat(srows, starts, axis=0)
    else:  # CuPy: no reduceat; scatter-add each row into its segment
        seg = xp.cumsum(first) - 1
        vals = xp.zeros((int(starts.size),) + rows.shape[1:], rows.dtype)
        scatter_at(xp, "add", vals, seg, srows)
    return sid[starts], vals


def _lookup_abstract(table: ShapedArray, ids: ShapedArray, *, sparse: bool) -> ShapedArray:
    if table.dtype.category != 2 or table.ndim != 2:
        raise TypeError(
            f"embedding_lookup: the table must be a 2-d floating tensor, got {table.shape} "
            f"{table.dtype}"
        )
    if ids.dtype.category != 1:
        raise TypeError(f"embedding_lookup: the indices must be integers, got {ids.dtype}")
    return ShapedArray(ids.shape + table.shape[1:], table.dtype)


def _lookup_impl(xp: Any, table: Any, ids: Any, *, sparse: bool) -> Any:
    vocab = table.shape[0]
    if is_host(xp) and table.flags.c_contiguous and sparse_rows.supports(table.dtype):
        return sparse_rows.lookup_rows(table, ids).reshape(ids.shape + table.shape[1:])
    valid = (ids >= 0) & (ids < vocab)
    if bool(valid.all()):
        return table[ids]
    out = table[xp.where(valid, ids, 0)]
    out[~valid] = 0  # MindSpore: ids outside the table look up zero rows
    return out


def _scatter_abstract(g: ShapedArray, ids: ShapedArray, *, vocab: int) -> ShapedArray:
    return ShapedArray((vocab,) + g.shape[ids.ndim :], g.dtype)


def _scatter_impl(xp: Any, g: Any, ids: Any, *, vocab: int) -> Any:
    row = g.shape[ids.ndim :]
    if is_host(xp) and scatter_kernels.supports(g.dtype, "add"):
        # rows added in index order straight into a zeroed table, without sorting and
        # gathering them first: 2.4 -> 0.1 ms for a GPT batch (2048 rows of 256)
        flat = ids.reshape(-1).astype(np.int64)
        flat = np.where((flat >= 0) & (flat < vocab), flat, -1)  # out of range: dropped
        width = int(np.prod(row, dtype=np.int64))
        table = np.zeros((1, vocab, width), g.dtype)
        scatter_kernels.scatter_rows(table, flat, g.reshape(1, -1, width), "add")
        return table.reshape((vocab,) + row)
    uniq, vals = _segment_rows(xp, g.reshape((-1,) + row), ids.reshape(-1), vocab)
    out = xp.zeros((vocab,) + row, g.dtype)
    out[uniq] = vals
    return out


def _lookup_vjp(g: Tensor, table: Tensor, ids: Tensor, *, out: Tensor, sparse: bool) -> Any:
    vocab = table.shape[0]

    def table_grad() -> Tensor:
        if sparse and not GradMode.enabled:  # first order: keep only the touched rows
            row = table.shape[1:]
            xp = g._device.xp
            uniq, vals = _segment_rows(
                xp, g._data.reshape((-1,) + row), ids._data.reshape(-1), vocab
            )
            return RowTensor(
                Tensor._wrap(uniq, g._device), Tensor._wrap(vals, g._device), table.shape
            )
        return embedding_scatter_p.bind(g, ids, vocab=vocab)

    return table_grad, None


embedding_lookup_p = Primitive(
    "nn_embedding_lookup",
    "opaque",
    _lookup_abstract,
    impl=_lookup_impl,
    vjp=_lookup_vjp,
)
embedding_scatter_p = Primitive(
    "nn_embedding_scatter",
    "opaque",
    _scatter_abstract,
    impl=_scatter_impl,
    vjp=lambda gg, g, ids, *, out, vocab: (
        lambda: embedding_lookup_p.bind(gg, ids, sparse=False),
        None,
    ),
)


# ---- RowTensor ------------------------------------------------------------------------------


def _is_scalar(value: Any) -> bool:
    if isinstance(value, numbers.Number) and not isinstance(value, bool):
        return True
    return isinstance(value, Tensor) and not isinstance(value, RowTensor) and value.size == 1


class RowTensor(Tensor):
    """Rows ``indices`` of a tensor of shape ``dense_shape`` (all other rows are zero):
    ``dense[indices[i]] = values[i]`` (MindSpore 1.8's ``RowTensor``).

    ``RowTensor(indices, values, dense_shape)`` or ``RowTensor(row_tensor=other)``.
    ``indices`` is a 1-d integer Tensor; ``values`` has shape
    ``(len(indices),) + dense_shape[1:]``. Duplicate indices add up. It is also a Tensor:
    reading it densely (any op, ``asnumpy()``) materialises the dense array once.

    >>> g = RowTensor(Tensor([2, 0]), Tensor([[1.0, 1.0], [3.0, 3.0]]), (4, 2))
    >>> g.asnumpy().tolist()
    [[3.0, 3.0], [0.0, 0.0], [1.0, 1.0], [0.0, 0.0]]
    """

    __slots__ = ("_indices", "_values", "_dense_shape")

    def __init__(
        self,
        indices: Tensor | None = None,
        values: Tensor | None = None,
        dense_shape: Any = None,
        row_tensor: RowTensor | None = None,
    ) -> None:
        if row_tensor is not None:
            if not isinstance(row_tensor, RowTensor):
                raise arg_error("RowTensor", "row_tensor", row_tensor, "a RowTensor", TypeError)
            indices, values, dense_shape = (
                row_tensor.indices,
                row_tensor.values,
                row_tensor.dense_shape,
            )
        if not isinstance(indices, Tensor) or indices.ndim != 1 or indices.dtype.category != 1:
            raise arg_error("RowTensor", "indices", indices, "a 1-d integer Tensor", TypeError)
        if not isinstance(values, Tensor):
            raise arg_error("RowTensor", "values", values, "a Tensor", TypeError)
        if not isinstance(dense_shape, (tuple, list)) or not dense_shape:
            raise arg_error("RowTensor", "dense_shape", dense_shape, "a non-empty tuple of ints")
        shape = tuple(check_int("RowTensor", "dense_shape", d, 0) for d in dense_shape)
        if values.shape != (indices.shape[0],) + shape[1:]:
            raise arg_error(
                "RowTensor",
                "values",
                values,
                f"shape {(indices.shape[0],) + shape[1:]} (one row per index)",
            )
        if indices._device is not values._device:
            raise ValueError("RowTensor: 'indices' and 'values' must be on the same device")
        self._indices = indices.detach()
        self._values = values
        self._dense_shape = shape
        self._device = values._device
        self._node = None
        self._index = 0
        self._requires_grad = False
        self.grad = None

    # The dense array: built on first read, then kept in the base class's slot.
    @property
    def _data(self) -> Any:
        try:
            return _DATA_SLOT.__get__(self, RowTensor)
        except AttributeError:
            xp = self._device.xp
            vals = self._values._data
            dense = xp.zeros(self._dense_shape, vals.dtype)
            idx = self._indices._data
            if idx.size:
                scatter_at(xp, "add", dense, idx, vals)
            _DATA_SLOT.__set__(self, dense)
            return dense

    @_data.setter
    def _data(self, value: Any) -> None:
        _DATA_SLOT.__set__(self, value)

    @property
    def indices(self) -> Tensor:
        """The row indices (1-d integer Tensor)."""
        return self._indices

    @property
    def values(self) -> Tensor:
        """One row per index: shape ``(len(indices),) + dense_shape[1:]``."""
        return self._values

    @property
    def dense_shape(self) -> tuple[int, ...]:
        return self._dense_shape

    @property
    def shape(self) -> tuple[int, ...]:
        return self._dense_shape

    @property
    def dtype(self) -> _dt.DType:
        return self._values.dtype

    @property
    def ndim(self) -> int:
        return len(self._dense_shape)

    @property
    def size(self) -> int:
        return int(np.prod(self._dense_shape))

    @property
    def itemsize(self) -> int:
        return self._values.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    def to_dense(self) -> Tensor:
        """The dense Tensor (zeros outside ``indices``)."""
        return Tensor._wrap(self._data, self._device)

    def to_tuple(self) -> tuple[Tensor, Tensor, tuple[int, ...]]:
        return self._indices, self._values, self._dense_shape

    def _with_values(self, values: Tensor) -> RowTensor:
        return RowTensor(self._indices, values, self._dense_shape)

    def coalesce(self) -> RowTensor:
        """Unique sorted in-range indices with duplicate rows added up."""
        xp = self._device.xp
        uniq, vals = _segment_rows(
            xp, self._values._data, self._indices._data, self._dense_shape[0]
        )
        return RowTensor(
            Tensor._wrap(uniq, self._device), Tensor._wrap(vals, self._device), self._dense_shape
        )

    def __add__(self, other: Any) -> Any:
        if isinstance(other, RowTensor) and other._dense_shape == self._dense_shape:
            idx = ops.concat(
                (ops.cast(self._indices, _dt.int64), ops.cast(other._indices, _dt.int64))
            )
            vals = ops.concat((self._values, ops.cast(other._values, self._values.dtype)))
            return RowTensor(idx, vals, self._dense_shape).coalesce()
        return ops.add(self.to_dense(), other)

    def __radd__(self, other: Any) -> Any:
        return ops.add(other, self.to_dense())

    def __mul__(self, other: Any) -> Any:
        if _is_scalar(other):
            return self._with_values(self._values * other)
        return ops.mul(self.to_dense(), other)

    def __rmul__(self, other: Any) -> Any:
        if _is_scalar(other):
            return self._with_values(other * self._values)
        return ops.mul(other, self.to_dense())

    def __truediv__(self, other: Any) -> Any:
        if _is_scalar(other):
            return self._with_values(self._values / other)
        return ops.div(self.to_dense(), other)

    def __neg__(self) -> RowTensor:
        return self._with_values(-self._values)

    def __repr__(self) -> str:
        return (
            f"RowTensor(indices={self._indices.tolist()}, values shape={self._values.shape}, "
            f"dense_shape={self._dense_shape}, dtype={self.dtype})"
        )

    __str__ = __repr__


# ---- layers -------------------------------------------------------------------------------


def _check_ids(cls: str, x: Any) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{cls}: the input expected an integer Tensor of ids, got {describe(x)}")
    if x.dtype.category != 1:
        raise TypeError(f"{cls}: the input expected an integer Tensor of ids, got {describe(x)}")
    return x


def _table_dtype(cls: str, dtype: Any) -> _dt.DType:
    dt = check_dtype(cls, "dtype", dtype)
    return dt if dt.category == 2 else _dt.float32


class Embedding(Cell):
    """A lookup table: ``out[..., :] = embedding_table[x[...]]`` (ids outside
    ``[0, vocab_size)`` give zero rows).

    ``embedding_table`` (the parameter's name) has shape ``(vocab_size, embedding_size)``;
    ``use_one_hot`` computes ``one_hot(x) @ table`` instead of gathering; ``padding_idx``
    zeroes that row of the initial table (MindSpore 1.8). ``dtype`` is the table's dtype
    (float32 unless a floating dtype is given). Gradients are dense; see
    :class:`EmbeddingLookup` for row-sparse ones.

    >>> import numpy as np
    >>> Embedding(10, 4)(Tensor(np.array([[1, 2, 3]], np.int32))).shape
    (1, 3, 4)
    """

    def __init__(
        self,
        vocab_size: int,
        embedding_size: int,
        use_one_hot: bool = False,
        embedding_table: Any = "normal",
        dtype: Any = _dt.float32,
        padding_idx: int | None = None,
    ) -> None:
        super().__init__()
        self.vocab_size = check_int("Embedding", "vocab_size", vocab_size, 1)
        self.embedding_size = check_int("Embedding", "embedding_size", embedding_size, 1)
        self.use_one_hot = check_bool("Embedding", "use_one_hot", use_one_hot)
        self.dtype = _table_dtype("Embedding", dtype)
        if padding_idx is not None:
            padding_idx = check_int("Embedding", "padding_idx", padding_idx)
            if not 0 <= padding_idx < self.vocab_size:
                raise arg_error(
                    "Embedding", "padding_idx", padding_idx, f"an int in [0, {self.vocab_size})"
                )
        self.padding_idx = padding_idx
        table = make_param(
            "Embedding",
            "embedding_table",
            embedding_table,
            (self.vocab_size, self.embedding_size),
            "embedding_table",
            self.dtype,
        )
        if padding_idx is not None:
            data = table._data.copy()
            data[padding_idx] = 0
            table.set_data(Tensor._wrap(data, table._device))
        self.embedding_table = table

    def construct(self, x: Tensor) -> Tensor:
        ids = _check_ids("Embedding", x)
        if self.use_one_hot:
            hot = ops.one_hot(ids, self.vocab_size, 1.0, 0.0)
            return ops.matmul(ops.cast(hot, self.embedding_table.dtype), self.embedding_table)
        return embedding_lookup_p.bind(self.embedding_table, ids, sparse=False)

    def extend_repr(self) -> str:
        return (
            f"vocab_size={self.vocab_size}, embedding_size={self.embedding_size}, "
            f"use_one_hot={self.use_one_hot}, embedding_table={self.embedding_table}, "
            f"dtype={self.dtype}, padding_idx={self.padding_idx}"
        )


class EmbeddingLookup(Cell):
    """A lookup table with row-sparse gradients (MindSpore 1.8's ``nn.EmbeddingLookup``).

    ``out = embedding_table[indices]`` with zero rows for ids outside ``[0, vocab_size)``.
    With ``sparse=True`` the table's gradient is a :class:`RowTensor` holding only the
    touched rows (see the module docstring), so sparse optimizers write only those rows.
    ``max_norm`` clips each looked-up vector to that L2 norm.

    ``target`` is ``'CPU'`` (requires ``sparse=True``, as in MindSpore) or ``'DEVICE'``;
    both run on the table's device here. ``slice_mode``/``manual_shapes`` (model-parallel
    sharding) are validated and stored. ``vocab_cache_size > 0`` needs parameter-server mode,
    which Sporeling does not have, and raises ValueError.
    """

    BATCH_SLICE = "batch_slice"
    FIELD_SLICE = "field_slice"
    TABLE_ROW_SLICE = "table_row_slice"
    TABLE_COLUMN_SLICE = "table_column_slice"

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
    ) -> None:
        super().__init__()
        cls = "EmbeddingLookup"
        self.vocab_size = check_int(cls, "vocab_size", vocab_size, 1)
        self.embedding_size = check_int(cls, "embedding_size", embedding_size, 1)
        if target not in ("CPU", "DEVICE"):
            raise arg_error(cls, "target", target, "'CPU' or 'DEVICE'")
        self.target = target
        self.sparse = check_bool(cls, "sparse", sparse)
        if target == "CPU" and not self.sparse:
            raise ValueError(
                f"{cls}: target='CPU' requires sparse=True (MindSpore runs the CPU lookup "
                "with sparse gradients); use target='DEVICE' for dense gradients"
            )
        modes = (self.BATCH_SLICE, self.FIELD_SLICE, self.TABLE_ROW_SLICE, self.TABLE_COLUMN_SLICE)
        if slice_mode not in modes:
            raise arg_error(cls, "slice_mode", slice_mode, f"one of {list(modes)}")
        self.slice_mode = slice_mode
        if manual_shapes is not None:
            if slice_mode != self.FIELD_SLICE:
                raise arg_error(
                    cls, "manual_shapes", manual_shapes, "None unless slice_mode is 'field_slice'"
                )
            if not isinstance(manual_shapes, (tuple, list)):
                raise arg_error(cls, "manual_shapes", manual_shapes, "a tuple of ints", TypeError)
            manual_shapes = tuple(check_int(cls, "manual_shapes", s, 1) for s in manual_shapes)
        self.manual_shapes = manual_shapes
        self.max_norm = (
            None if max_norm is None else check_float(cls, "max_norm", max_norm, 0.0, low_open=True)
        )
        self.vocab_cache_size = check_int(cls, "vocab_cache_size", vocab_cache_size, 0)
        if self.vocab_cache_size > 0:
            raise ValueError(
                f"{cls}: vocab_cache_size={vocab_cache_size} needs parameter-server mode, "
                "which Sporeling does not provide; use vocab_cache_size=0"
            )
        self.embedding_table = make_param(
            cls, "param_init", param_init, (self.vocab_size, self.embedding_size), "embedding_table"
        )

    def construct(self, indices: Tensor) -> Tensor:
        ids = _check_ids("EmbeddingLookup", indices)
        out = embedding_lookup_p.bind(self.embedding_table, ids, sparse=self.sparse)
        if self.max_norm is not None:
            sq = ops.reduce_sum(out * out, -1, keep_dims=True)
            norm = ops.sqrt(ops.maximum(sq, self.max_norm**2))
            out = out * (self.max_norm / norm)
        return out

    def extend_repr(self) -> str:
        return (
            f"vocab_size={self.vocab_size}, embedding_size={self.embedding_size}, "
            f"target={self.target}, sparse={self.sparse}, slice_mode={self.slice_mode}"
            + ("" if self.max_norm is None else f", max_norm={self.max_norm}")
        )
