"""MindSpore primitive classes for sparse and random operations that have no functional op of
their own name here, written with the ops (so ``P.X`` works as in MindSpore's CPU tests).

Sparse: ``SparseToDense``, ``SparseTensorDenseAdd``, ``SparseTensorDenseMatmul`` (COO given as
indices, values, shape), ``CSRMul``, ``CSRMV``, ``CSRReduceSum``. Random: ``Randperm``,
``RandomChoiceWithMask``, ``RandomPoisson``; draws come from the core's seeded generator
(``set_seed``), or from the instance's own stream when it is given a non-zero ``seed``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import ops as F
from ..tensor import Tensor
from .operations import _op

__all__ = [
    "SparseToDense",
    "SparseTensorDenseAdd",
    "SparseTensorDenseMatmul",
    "CSRMul",
    "CSRMV",
    "CSRReduceSum",
    "Randperm",
    "RandomChoiceWithMask",
    "RandomPoisson",
]


def _shape(op: str, value: Any) -> tuple[int, ...]:
    if isinstance(value, Tensor):
        value = value.asnumpy().tolist()
    try:
        return tuple(int(v) for v in value)
    except TypeError:
        raise TypeError(f"{op}: argument 'shape' expected a tuple of ints, got {value!r}") from None


def _coo_dense(op: str, indices: Tensor, values: Tensor, shape: Any) -> Tensor:
    dims = _shape(op, shape)
    if indices.ndim != 2 or indices.shape[1] != len(dims) or indices.shape[0] != values.shape[0]:
        raise ValueError(
            f"{op}: argument 'indices' expected shape (nnz, {len(dims)}) matching values "
            f"({values.shape[0]} entries), got {indices.shape}"
        )
    return F.scatter_nd(indices, values, dims)


def _sparse_to_dense(self: Any, indices: Tensor, values: Tensor, sparse_shape: Any) -> Tensor:
    """Dense tensor of ``sparse_shape`` with ``values`` at ``indices`` (repeats add up)."""
    return _coo_dense("SparseToDense", indices, values, sparse_shape)


def _sparse_dense_add(self: Any, indices: Tensor, values: Tensor, shape: Any, x2: Tensor):
    """The COO tensor (indices, values, shape) plus the dense ``x2``."""
    return _coo_dense("SparseTensorDenseAdd", indices, values, shape) + x2


def _sparse_dense_matmul(self: Any, indices: Tensor, values: Tensor, shape: Any, dense: Tensor):
    """The 2-d COO tensor times ``dense`` (each transposed first when ``adjoint_st`` /
    ``adjoint_dt``; real values, so the adjoint is the transpose)."""
    a = _coo_dense("SparseTensorDenseMatmul", indices, values, shape)
    a = F.transpose(a, (1, 0)) if self.adjoint_st else a
    b = F.transpose(dense, (1, 0)) if self.adjoint_dt else dense
    return F.matmul(a, b)


def _generator(prim: Any) -> Any:
    """The instance's own stream when it has a non-zero ``seed``, else the core's generator."""
    from ..random_state import generator

    if not prim.seed:
        return generator(F.zeros(1)._device)
    rng = prim.__dict__.get("_rng")
    if rng is None:
        rng = prim.__dict__["_rng"] = np.random.default_rng(prim.seed)
    return rng


def _randperm(self: Any, n: Any) -> Tensor:
    """A random permutation of 0..n-1, padded with ``pad`` to ``max_length`` (``dtype``)."""
    count = int(n.asnumpy().reshape(-1)[0]) if isinstance(n, Tensor) else int(n)
    if not 0 <= count <= self.max_length:
        raise ValueError(
            f"Randperm: input 'n' must be in [0, max_length={self.max_length}], got {count}"
        )
    out = np.full(self.max_length, self.pad, np.int64)
    out[:count] = _generator(self).permutation(count)
    return F.cast(Tensor(out), self.dtype)


def _random_choice_with_mask(self: Any, input_x: Tensor) -> tuple[Tensor, Tensor]:
    """Up to ``count`` random coordinates of True entries of the bool ``input_x``:
    (index int32 (count, rank), mask bool (count,)); missing rows are zeros, mask False."""
    x = input_x.asnumpy()
    if x.dtype != np.bool_ or not 1 <= x.ndim <= 5:
        raise TypeError(
            f"RandomChoiceWithMask: input 'input_x' expected a bool tensor of rank 1 to 5, "
            f"got {x.dtype} of rank {x.ndim}"
        )
    coords = np.argwhere(x)
    picked = _generator(self).permutation(len(coords))[: self.count]
    index = np.zeros((self.count, x.ndim), np.int32)
    mask = np.zeros(self.count, np.bool_)
    index[: len(picked)] = coords[picked]
    mask[: len(picked)] = True
    return Tensor(index), Tensor(mask)


def _random_poisson(self: Any, shape: Any, rate: Tensor) -> Tensor:
    """Poisson draws of shape ``shape + rate.shape`` (``dtype``)."""
    dims = _shape("RandomPoisson", shape)
    full = F.broadcast_to(rate, dims + tuple(rate.shape))
    out = F.poisson(dims + tuple(rate.shape), full, seed=self.seed or None)
    return F.cast(out, self.dtype)


_SEEDS = (("seed", 0), ("seed2", 0))
SparseToDense = _op("SparseToDense", None, (), _sparse_to_dense)
SparseTensorDenseAdd = _op("SparseTensorDenseAdd", None, (), _sparse_dense_add)
SparseTensorDenseMatmul = _op(
    "SparseTensorDenseMatmul",
    None,
    (("adjoint_st", False), ("adjoint_dt", False)),
    _sparse_dense_matmul,
)
CSRMul = _op("CSRMul", F.csr_mul)
CSRMV = _op("CSRMV", F.csr_mv)
CSRReduceSum = _op("CSRReduceSum", F.csr_reduce_sum)
Randperm = _op(
    "Randperm",
    None,
    (("max_length", 1), ("pad", -1), ("dtype", np.int32), ("seed", 0)),
    _randperm,
)
RandomChoiceWithMask = _op(
    "RandomChoiceWithMask", None, (("count", 256), *_SEEDS), _random_choice_with_mask
)
RandomPoisson = _op("RandomPoisson", None, (*_SEEDS, ("dtype", np.int64)), _random_poisson)
for _cls in (
    SparseToDense, SparseTensorDenseAdd, SparseTensorDenseMatmul, CSRMul, CSRMV, CSRReduceSum,
    Randperm, RandomChoiceWithMask, RandomPoisson,
):  # fmt: skip
    _cls.__module__ = __name__
