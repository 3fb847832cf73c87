"""Sparse tensors: :class:`COOTensor` and :class:`CSRTensor` (MindSpore 1.8's classes).

Both are thin containers of dense Tensors (integer indices and a 1-D ``values`` tensor)
plus a static dense ``shape``. Indices never carry gradients; ``values`` is kept as given,
so gradients flow from every sparse op (``to_dense``, ``ops.csr_mv``...) back to whatever
produced the values. Structure is validated when a tensor is built, so no op ever sees
out-of-range indices (MindSpore leaves that case undefined). They live with the op
library because their methods are its sparse ops; ``sporeling.core.sparse_tensor`` and
``sporeling.core`` re-export them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtype as _dt
from ..errors import describe, op_error
from ..tensor import Tensor

__all__ = ["COOTensor", "CSRTensor"]


def _shape_tuple(cls: str, shape: Any, ndim: int | None = None) -> tuple[int, ...]:
    if not isinstance(shape, (tuple, list)) or not all(
        isinstance(d, (int, np.integer)) and not isinstance(d, (bool, np.bool_)) for d in shape
    ):
        raise op_error(cls, "shape", shape, "a tuple of ints", TypeError)
    dims = tuple(int(d) for d in shape)
    if any(d <= 0 for d in dims):
        raise op_error(cls, "shape", dims, "positive sizes")
    if ndim is not None and len(dims) != ndim:
        raise op_error(cls, "shape", dims, f"{ndim} dimensions")
    return dims


def _int_tensor(cls: str, arg: str, value: Any, ndim: int) -> Tensor:
    if not isinstance(value, Tensor):
        raise op_error(cls, arg, value, f"a {ndim}-D integer Tensor", TypeError)
    if value.dtype.category != 1:
        raise op_error(cls, arg, value, "an int16, int32 or int64 Tensor", TypeError)
    if value.ndim != ndim:
        raise op_error(cls, arg, value, f"a {ndim}-D integer Tensor")
    return value


def _values_tensor(cls: str, values: Any, n: int) -> Tensor:
    if not isinstance(values, Tensor):
        raise op_error(cls, "values", values, "a 1-D Tensor", TypeError)
    if values.ndim != 1 or values.shape[0] != n:
        raise op_error(cls, "values", values, f"a 1-D Tensor of length {n} (one per index)")
    return values


def _index_tensor(data: Any, device: Any) -> Tensor:
    """An int64 index Tensor (no autograd history) from a backend array."""
    return Tensor._wrap(data.astype(np.int64), device)


class _StoredValues:
    """The properties COOTensor and CSRTensor share (MindSpore's names): both keep
    ``_indices``, ``_values`` and ``_shape``."""

    __slots__ = ()
    _indices: Tensor
    _values: Tensor
    _shape: tuple[int, ...]

    @property
    def indices(self) -> Tensor:
        return self._indices

    @property
    def values(self) -> Tensor:
        return self._values

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def dtype(self) -> _dt.DType:
        return self._values.dtype

    @property
    def size(self) -> int:
        """The number of stored values."""
        return self._values.size

    @property
    def itemsize(self) -> int:
        return self._values.itemsize


class COOTensor(_StoredValues):
    """A sparse tensor in coordinate format: ``dense[indices[i]] = values[i]``.

    ``COOTensor(indices, values, shape)`` with ``indices`` an (N, ndims) integer Tensor,
    ``values`` a 1-D Tensor of length N and ``shape`` the dense shape; or
    ``COOTensor(coo_tensor=other)``. Duplicate coordinates are allowed and add up in
    :meth:`to_dense`.

    >>> x = COOTensor(Tensor([[0, 1], [1, 2]]), Tensor([1.0, 2.0]), (3, 4))
    >>> x.to_dense().tolist()[1]
    [0.0, 0.0, 2.0, 0.0]
    """

    __slots__ = ("_indices", "_values", "_shape")

    def __init__(
        self,
        indices: Tensor | None = None,
        values: Tensor | None = None,
        shape: Any = None,
        coo_tensor: COOTensor | None = None,
    ) -> None:
        if coo_tensor is not None:
            if not isinstance(coo_tensor, COOTensor):
                raise op_error("COOTensor", "coo_tensor", coo_tensor, "a COOTensor", TypeError)
            if indices is not None or values is not None or shape is not None:
                raise TypeError(
                    "COOTensor: give either 'coo_tensor' or 'indices', 'values' and 'shape'"
                )
            self._indices, self._values, self._shape = coo_tensor.to_tuple()
            return
        idx = _int_tensor("COOTensor", "indices", indices, 2)
        vals = _values_tensor("COOTensor", values, idx.shape[0])
        dims = _shape_tuple("COOTensor", shape, idx.shape[1])
        if vals._device is not idx._device:
            raise ValueError("COOTensor: 'indices' and 'values' must be on one device")
        data = idx.asnumpy()
        if data.size and (np.any(data < 0) or np.any(data >= np.asarray(dims))):
            raise ValueError(
                f"COOTensor: argument 'indices' has entries outside the dense shape {dims}"
            )
        self._indices = idx
        self._values = vals
        self._shape = dims

    # ---- properties (MindSpore's) -------------------------------------------------

    @property
    def ndim(self) -> int:
        return len(self._shape)

    # ---- conversions ------------------------------------------------------------------
    def to_tuple(self) -> tuple[Tensor, Tensor, tuple[int, ...]]:
        return self._indices, self._values, self._shape

    def _coords(self) -> list[Tensor]:
        data = self._indices._data
        return [_index_tensor(data[:, d], self._indices._device) for d in range(self.ndim)]

    def to_dense(self) -> Tensor:
        """The dense tensor (duplicates summed); differentiable w.r.t. ``values``."""
        from .sparse import _scatter_add

        return _scatter_add(self._values, self._coords(), self._shape)

    def to_csr(self) -> CSRTensor:
        """The same matrix in CSR format (entries sorted by row, then column)."""
        from .sparse import coo_to_csr

        return coo_to_csr(self)

    def astype(self, dtype: Any) -> COOTensor:
        """A copy with values cast to ``dtype``."""
        from . import cast

        return COOTensor(self._indices, cast(self._values, dtype), self._shape)

    def abs(self) -> COOTensor:
        """A copy with the absolute values."""
        from . import select

        v = self._values
        return COOTensor(self._indices, select(v < 0, -v, v), self._shape)

    def __neg__(self) -> COOTensor:
        return COOTensor(self._indices, -self._values, self._shape)

    def __repr__(self) -> str:
        return (
            f"COOTensor(shape={list(self._shape)}, dtype={self.dtype}, "
            f"indices={self._indices!r}, values={self._values!r})"
        )


class CSRTensor(_StoredValues):
    """A 2-D sparse matrix in compressed sparse row format.

    ``CSRTensor(indptr, indices, values, shape)``: row ``i`` holds ``values[indptr[i]:
    indptr[i+1]]`` at columns ``indices[indptr[i]:indptr[i+1]]``; or
    ``CSRTensor(csr_tensor=other)``. ``x * dense`` and ``x / dense`` give CSRTensors with
    the same structure (see :func:`sporeling.core.ops.csr_mul`).

    >>> x = CSRTensor(Tensor([0, 1, 2, 2]), Tensor([1, 2]), Tensor([1.0, 2.0]), (3, 4))
    >>> x.to_dense().tolist()[0]
    [0.0, 1.0, 0.0, 0.0]
    """

    __slots__ = ("_indptr", "_indices", "_values", "_shape", "_rows")

    def __init__(
        self,
        indptr: Tensor | None = None,
        indices: Tensor | None = None,
        values: Tensor | None = None,
        shape: Any = None,
        csr_tensor: CSRTensor | None = None,
    ) -> None:
        self._rows: Tensor | None = None
        if csr_tensor is not None:
            if not isinstance(csr_tensor, CSRTensor):
                raise op_error("CSRTensor", "csr_tensor", csr_tensor, "a CSRTensor", TypeError)
            if any(a is not None for a in (indptr, indices, values, shape)):
                raise TypeError(
                    "CSRTensor: give either 'csr_tensor' or 'indptr', 'indices', 'values' "
                    "and 'shape'"
                )
            self._indptr, self._indices, self._values, self._shape = csr_tensor.to_tuple()
            self._rows = csr_tensor._rows
            return
        ptr = _int_tensor("CSRTensor", "indptr", indptr, 1)
        idx = _int_tensor("CSRTensor", "indices", indices, 1)
        vals = _values_tensor("CSRTensor", values, idx.shape[0])
        dims = _shape_tuple("CSRTensor", shape, 2)
        if ptr.shape[0] != dims[0] + 1:
            raise op_error(
                "CSRTensor", "indptr", ptr, f"length shape[0] + 1 = {dims[0] + 1} for shape {dims}"
            )
        if not (ptr._device is idx._device is vals._device):
            raise ValueError("CSRTensor: 'indptr', 'indices' and 'values' must be on one device")
        p = ptr.asnumpy()
        if p[0] != 0 or p[-1] != idx.shape[0] or np.any(np.diff(p) < 0):
            raise ValueError(
                "CSRTensor: argument 'indptr' expected a non-decreasing sequence from 0 to "
                f"nnz = {idx.shape[0]}, got {p.tolist() if p.size <= 12 else describe(ptr)}"
            )
        cols = idx.asnumpy()
        if cols.size and (np.any(cols < 0) or np.any(cols >= dims[1])):
            raise ValueError(
                f"CSRTensor: argument 'indices' has column indices outside [0, {dims[1]})"
            )
        self._indptr = ptr
        self._indices = idx
        self._values = vals
        self._shape = dims

    # ---- properties (MindSpore's) -------------------------------------------------
    @property
    def indptr(self) -> Tensor:
        return self._indptr

    @property
    def ndim(self) -> int:
        return 2

    def _row_indices(self) -> Tensor:
        """The row of each stored value (int64, cached): ``repeat(arange(M), diff(indptr))``."""
        if self._rows is None:
            # on the host: CuPy's repeat takes only Python/NumPy repeat counts
            # (np.diff's stubs type int64 differences as timedelta64: subtract directly)
            ptr = self._indptr.asnumpy().astype(np.int64)
            counts = ptr[1:] - ptr[:-1]
            rows = np.repeat(np.arange(self._shape[0], dtype=np.int64), counts)
            self._rows = Tensor(rows, device=self._indptr._device)
        return self._rows

    def _col_indices(self) -> Tensor:
        return _index_tensor(self._indices._data, self._indices._device)

    # ---- conversions and ops ------------------------------------------------------------
    def to_tuple(self) -> tuple[Tensor, Tensor, Tensor, tuple[int, ...]]:
        return self._indptr, self._indices, self._values, self._shape

    def to_coo(self) -> COOTensor:
        """The same matrix in COO format."""
        from .sparse import csr_to_coo

        return csr_to_coo(self)

    def to_dense(self) -> Tensor:
        """The dense matrix; differentiable w.r.t. ``values``."""
        from .sparse import csr_to_dense

        return csr_to_dense(self)

    def astype(self, dtype: Any) -> CSRTensor:
        """A copy with values cast to ``dtype``."""
        from . import cast

        return self._with_values(cast(self._values, dtype))

    def abs(self) -> CSRTensor:
        """A copy with the absolute values."""
        from . import select

        v = self._values
        return self._with_values(select(v < 0, -v, v))

    def mv(self, dense_vector: Tensor) -> Tensor:
        """Matrix-vector product (see :func:`sporeling.core.ops.csr_mv`)."""
        from .sparse import csr_mv

        return csr_mv(self, dense_vector)

    def mm(self, matrix: Any) -> Any:
        """Matrix product with a dense matrix or a CSRTensor (see ``ops.csr_mm``)."""
        from .sparse import csr_mm

        return csr_mm(self, matrix)

    def sum(self, axis: int) -> Tensor:
        """Sum over ``axis``, keeping it as size 1 (see ``ops.csr_reduce_sum``)."""
        from .sparse import csr_reduce_sum

        return csr_reduce_sum(self, axis)

    def _with_values(self, values: Tensor) -> CSRTensor:
        out = object.__new__(CSRTensor)
        out._indptr, out._indices, out._values, out._shape = (
            self._indptr,
            self._indices,
            values,
            self._shape,
        )
        out._rows = self._rows
        return out

    def __mul__(self, other: Any) -> CSRTensor:
        from .sparse import csr_mul

        return self._with_values(csr_mul(self, other))

    def __truediv__(self, other: Any) -> CSRTensor:
        from .sparse import csr_div

        return self._with_values(csr_div(self, other))

    def __neg__(self) -> CSRTensor:
        return self._with_values(-self._values)

    def __repr__(self) -> str:
        return (
            f"CSRTensor(shape={list(self._shape)}, dtype={self.dtype}, indptr={self._indptr!r}, "
            f"indices={self._indices!r}, values={self._values!r})"
        )
