"""Sparse ops on :class:`~sporeling.core.CSRTensor` and ``COOTensor``.

Every op is a composition of two existing primitives: a *gather* of dense entries at
index tensors (``getitem``) and its transpose, a *scatter-add* into a zero tensor
(``getitem_grad``). Each is the other's vjp, so gradients w.r.t. the sparse values and the
dense operands (first and second order) come for free, e.g. for ``y = csr_mv(A, x)``:
``dL/dvalues[k] = g[row[k]] * x[col[k]]`` (gathered products) and ``dL/dx = A^T g``.
Indices are never differentiated. Structure (which entries are stored) is data-dependent
and computed eagerly on the host side of the arrays' device.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtype as _dt
from ..errors import check_axis, op_error
from ..tensor import Tensor
from ._core import reshape, transpose
from ._elementwise import promote_args
from ._indexing import getitem_grad_p, getitem_p
from ._sparse_tensor import COOTensor, CSRTensor, _index_tensor

__all__ = [
    "dense_to_sparse_coo",
    "dense_to_sparse_csr",
    "csr_to_coo",
    "coo_to_csr",
    "csr_to_dense",
    "csr2coo",
    "coo2csr",
    "csr_mul",
    "csr_div",
    "csr_mv",
    "csr_mm",
    "csr_reduce_sum",
]


# ---- the two building blocks --------------------------------------------------------


def _template(n: int) -> tuple[tuple[Any, ...], ...]:
    return tuple(("t", i) for i in range(n))


def _gather(x: Tensor, index: list[Tensor]) -> Tensor:
    """``x[index[0], index[1], ...]`` (differentiable w.r.t. ``x``)."""
    return getitem_p.bind(x, *index, template=_template(len(index)))


def _scatter_add(values: Tensor, index: list[Tensor], shape: tuple[int, ...]) -> Tensor:
    """``zeros(shape)`` with ``values`` added at ``index`` (duplicates accumulate)."""
    return getitem_grad_p.bind(values, *index, template=_template(len(index)), shape=tuple(shape))


# ---- argument checks ----------------------------------------------------------------


def _csr_arg(op: str, arg: str, value: Any) -> CSRTensor:
    if not isinstance(value, CSRTensor):
        raise op_error(op, arg, value, "a CSRTensor", TypeError)
    return value


def _dense_2d(op: str, arg: str, value: Any) -> Tensor:
    if not isinstance(value, Tensor):
        raise op_error(op, arg, value, "a Tensor", TypeError)
    if value.ndim != 2:
        raise op_error(op, arg, value, "a 2-D Tensor")
    return value


# ---- conversions --------------------------------------------------------------------


def _nonzero(op: str, tensor: Any) -> tuple[Tensor, Tensor, Tensor]:
    t = _dense_2d(op, "tensor", tensor)
    xp = t._device.xp
    rows, cols = xp.nonzero(t._data)
    r = _index_tensor(rows, t._device)
    c = _index_tensor(cols, t._device)
    return t, r, c


def dense_to_sparse_coo(tensor: Tensor) -> COOTensor:
    """The non-zero entries of a 2-D tensor as a COOTensor (row-major order; int64
    indices). Differentiable: the values' gradient flows back into ``tensor``.

    >>> dense_to_sparse_coo(Tensor([[1.0, 0.0], [-5.0, 0.0]])).indices.tolist()
    [[0, 0], [1, 0]]
    """
    t, r, c = _nonzero("dense_to_sparse_coo", tensor)
    xp = t._device.xp
    indices = Tensor._wrap(xp.stack([r._data, c._data], axis=1), t._device)
    return COOTensor(indices, _gather(t, [r, c]), t.shape)


def dense_to_sparse_csr(tensor: Tensor) -> CSRTensor:
    """The non-zero entries of a 2-D tensor as a CSRTensor (int64 indptr/indices).

    >>> dense_to_sparse_csr(Tensor([[1.0, 0.0], [-5.0, 0.0]])).indptr.tolist()
    [0, 1, 2]
    """
    t, r, c = _nonzero("dense_to_sparse_csr", tensor)
    indptr = coo2csr(r, t.shape[0])
    out = CSRTensor(indptr, c, _gather(t, [r, c]), t.shape)
    out._rows = r
    return out


def csr2coo(indptr: Tensor, nnz: int) -> Tensor:
    """Row indices (int64) of the ``nnz`` stored entries of a CSR ``indptr``.

    >>> csr2coo(Tensor([0, 2, 2, 3]), 3).tolist()
    [0, 0, 2]
    """
    ptr = indptr if isinstance(indptr, Tensor) else None
    if ptr is None or ptr.ndim != 1 or ptr.dtype.category != 1:
        raise op_error("csr2coo", "indptr", indptr, "a 1-D integer Tensor", TypeError)
    host = ptr.asnumpy().astype(np.int64)
    counts = host[1:] - host[:-1]  # np.diff, whose stubs type this as timedelta64
    if np.any(counts < 0) or int(ptr.asnumpy()[-1]) != nnz or int(ptr.asnumpy()[0]) != 0:
        raise op_error("csr2coo", "indptr", ptr, f"a non-decreasing sequence from 0 to nnz={nnz}")
    rows = np.repeat(np.arange(ptr.shape[0] - 1, dtype=np.int64), counts)
    return Tensor(rows, device=ptr._device)


def coo2csr(row_indices: Tensor, height: int) -> Tensor:
    """The CSR ``indptr`` (int64, length ``height + 1``) of sorted COO row indices.

    >>> coo2csr(Tensor([0, 0, 2]), 3).tolist()
    [0, 2, 2, 3]
    """
    if (
        not isinstance(row_indices, Tensor)
        or row_indices.ndim != 1
        or row_indices.dtype.category != 1
    ):
        raise op_error("coo2csr", "row_indices", row_indices, "a 1-D integer Tensor", TypeError)
    if (
        isinstance(height, (bool, np.bool_))
        or not isinstance(height, (int, np.integer))
        or height < 0
    ):
        raise op_error("coo2csr", "height", height, "a non-negative int", TypeError)
    rows = row_indices.asnumpy().astype(np.int64)
    if rows.size and (rows.min() < 0 or rows.max() >= height):
        raise op_error("coo2csr", "row_indices", row_indices, f"rows in [0, {height})")
    if np.any(np.diff(rows) < 0):
        raise op_error("coo2csr", "row_indices", row_indices, "sorted (non-decreasing) rows")
    indptr = np.zeros(height + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=height), out=indptr[1:])
    return Tensor(indptr, device=row_indices._device)


def csr_to_coo(tensor: CSRTensor) -> COOTensor:
    """A CSRTensor as a COOTensor (same values, so gradients pass through).

    >>> x = CSRTensor(Tensor([0, 1, 2]), Tensor([0, 1]), Tensor([2.0, 1.0]), (2, 4))
    >>> csr_to_coo(x).indices.tolist()
    [[0, 0], [1, 1]]
    """
    x = _csr_arg("csr_to_coo", "tensor", tensor)
    xp = x.indices._device.xp
    rows = x._row_indices()._data
    cols = x.indices._data.astype(np.int64)
    indices = Tensor._wrap(xp.stack([rows, cols], axis=1), x.indices._device)
    return COOTensor(indices, x.values, x.shape)


def coo_to_csr(tensor: COOTensor) -> CSRTensor:
    """A 2-D COOTensor as a CSRTensor, entries sorted by (row, column).

    >>> x = COOTensor(Tensor([[1, 2], [0, 1]]), Tensor([2.0, 1.0]), (3, 4))
    >>> coo_to_csr(x).indptr.tolist()
    [0, 1, 2, 2]
    """
    if not isinstance(tensor, COOTensor):
        raise op_error("coo_to_csr", "tensor", tensor, "a COOTensor", TypeError)
    if tensor.ndim != 2:
        raise op_error("coo_to_csr", "tensor", tensor.shape, "a 2-D COOTensor")
    device = tensor.indices._device
    idx = tensor.indices.asnumpy().astype(np.int64)
    order = np.lexsort((idx[:, 1], idx[:, 0]))
    rows = idx[order, 0]
    perm = Tensor(order.astype(np.int64), device=device)
    values = _gather(tensor.values, [perm])
    out = CSRTensor(
        coo2csr(Tensor(rows, device=device), tensor.shape[0]),
        Tensor(idx[order, 1], device=device),
        values,
        tensor.shape,
    )
    return out


def csr_to_dense(csr_tensor: CSRTensor) -> Tensor:
    """The dense matrix of a CSRTensor (differentiable w.r.t. its values).

    >>> x = CSRTensor(Tensor([0, 1, 2]), Tensor([0, 1]), Tensor([2.0, 1.0]), (2, 4))
    >>> csr_to_dense(x).tolist()
    [[2.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]]
    """
    x = _csr_arg("csr_to_dense", "csr_tensor", csr_tensor)
    return _scatter_add(x.values, [x._row_indices(), x._col_indices()], x.shape)


# ---- arithmetic -------------------------------------------------------------------------


def _dense_at_entries(op: str, x: CSRTensor, y: Any) -> tuple[Tensor, Tensor]:
    """``(values, y_b[row, col])`` for each stored entry, with ``y`` broadcast to x.shape
    (never materialised: size-1 dimensions are indexed with 0) and dtypes promoted."""
    values, dense = promote_args(op, x.values, y, ("x", "y"))
    if dense.ndim > 2 or any(d not in (1, s) for d, s in zip(dense.shape[::-1], x.shape[::-1])):
        raise op_error(op, "y", dense, f"a shape that broadcasts to the sparse shape {x.shape}")
    d2 = reshape(dense, (1,) * (2 - dense.ndim) + dense.shape)
    rows, cols = x._row_indices(), x._col_indices()
    xp = rows._device.xp
    zeros = _index_tensor(xp.zeros(rows.shape, np.int64), rows._device)
    index = [rows if d2.shape[0] != 1 else zeros, cols if d2.shape[1] != 1 else zeros]
    return values, _gather(d2, index)


def csr_mul(x: CSRTensor, y: Any) -> Tensor:
    """The values of ``x * y`` for a CSRTensor ``x`` and a dense ``y`` broadcastable to
    ``x.shape``: ``values[k] * y[row[k], col[k]]`` (``x * y`` gives the CSRTensor).

    >>> x = CSRTensor(Tensor([0, 1, 2]), Tensor([0, 1]), Tensor([2.0, 1.0]), (2, 4))
    >>> csr_mul(x, Tensor([[1.0], [3.0]])).tolist()
    [2.0, 3.0]
    """
    values, gathered = _dense_at_entries("csr_mul", _csr_arg("csr_mul", "x", x), y)
    return values * gathered


def csr_div(x: CSRTensor, y: Any) -> Tensor:
    """The values of ``x / y`` for a CSRTensor ``x`` and a dense ``y`` broadcastable to
    ``x.shape`` (only stored entries are divided; zeros of ``y`` elsewhere are ignored).

    >>> x = CSRTensor(Tensor([0, 1, 2]), Tensor([0, 1]), Tensor([2.0, 1.0]), (2, 4))
    >>> csr_div(x, Tensor(2.0)).tolist()
    [1.0, 0.5]
    """
    x = _csr_arg("csr_div", "x", x)
    values, gathered = _dense_at_entries("csr_div", x, y)
    if values.dtype.category != 2:
        values, gathered = promote_args("csr_div", values, gathered, ("x", "y"), min_category=2)
    return values / gathered


def csr_mv(csr_tensor: CSRTensor, dense: Any) -> Tensor:
    """Sparse matrix times dense vector: (M, N) @ (N,) -> (M,), or (N, 1) -> (M, 1).

    >>> x = CSRTensor(Tensor([0, 1, 2]), Tensor([0, 1]), Tensor([2.0, 1.0]), (2, 4))
    >>> csr_mv(x, Tensor([[1.0], [1.0], [1.0], [1.0]])).tolist()
    [[2.0], [1.0]]
    """
    op = "csr_mv"
    x = _csr_arg(op, "csr_tensor", csr_tensor)
    if not isinstance(dense, Tensor):
        raise op_error(op, "dense", dense, "a Tensor", TypeError)
    m, n = x.shape
    if dense.shape not in ((n,), (n, 1)):
        raise op_error(op, "dense", dense, f"shape ({n},) or ({n}, 1) for a {x.shape} matrix")
    values, vec = promote_args(op, x.values, dense, ("csr_tensor", "dense"))
    flat = reshape(vec, (n,))
    prod = values * _gather(flat, [x._col_indices()])
    out = _scatter_add(prod, [x._row_indices()], (m,))
    return out if dense.ndim == 1 else reshape(out, (m, 1))


def csr_mm(
    a: CSRTensor,
    b: Any,
    trans_a: bool = False,
    trans_b: bool = False,
    adjoint_a: bool = False,
    adjoint_b: bool = False,
) -> Any:
    """``op(a) @ op(b)`` for a CSRTensor ``a`` and a dense matrix (dense result) or a
    CSRTensor ``b`` (CSRTensor result, built through the dense product); ``op`` transposes
    when ``trans_*`` or ``adjoint_*`` is set (the same thing for real dtypes).

    >>> a = CSRTensor(Tensor([0, 1, 2]), Tensor([0, 1]), Tensor([2.0, 1.0]), (2, 4))
    >>> csr_mm(a, Tensor(np.ones((4, 2), np.float32))).tolist()
    [[2.0, 2.0], [1.0, 1.0]]
    """
    op = "csr_mm"
    x = _csr_arg(op, "a", a)
    for name, flag in (
        ("trans_a", trans_a),
        ("trans_b", trans_b),
        ("adjoint_a", adjoint_a),
        ("adjoint_b", adjoint_b),
    ):
        if not isinstance(flag, (bool, np.bool_)):
            raise op_error(op, name, flag, "a bool", TypeError)
    ta, tb = bool(trans_a or adjoint_a), bool(trans_b or adjoint_b)
    if isinstance(b, CSRTensor):
        return dense_to_sparse_csr(csr_mm(x, b.to_dense(), ta, tb))
    dense = _dense_2d(op, "b", b)
    if tb:
        dense = transpose(dense, (1, 0))
    rows, cols = x._row_indices(), x._col_indices()
    out_rows, k = (x.shape[1], x.shape[0]) if ta else x.shape
    if ta:
        rows, cols = cols, rows
    if dense.shape[0] != k:
        raise op_error(
            op, "b", dense, f"{k} rows to multiply a {'transposed ' if ta else ''}{x.shape} matrix"
        )
    values, d = promote_args(op, x.values, dense, ("a", "b"))
    prod = reshape(values, (values.shape[0], 1)) * _gather(d, [cols])
    return _scatter_add(prod, [rows], (out_rows, d.shape[1]))


def csr_reduce_sum(csr_tensor: CSRTensor, axis: int) -> Tensor:
    """Sum a CSRTensor over ``axis`` (0 or 1, negative allowed), keeping the reduced
    dimension with size 1: (M, N) -> (M, 1) for axis 1, (1, N) for axis 0.

    >>> x = CSRTensor(Tensor([0, 1, 2]), Tensor([0, 1]), Tensor([2.0, 1.0]), (2, 4))
    >>> csr_reduce_sum(x, 1).tolist()
    [[2.0], [1.0]]
    """
    op = "csr_reduce_sum"
    x = _csr_arg(op, "csr_tensor", csr_tensor)
    ax = check_axis(op, axis, 2)
    m, n = x.shape
    if ax == 1:
        return reshape(_scatter_add(x.values, [x._row_indices()], (m,)), (m, 1))
    return reshape(_scatter_add(x.values, [x._col_indices()], (n,)), (1, n))


_ = _dt
