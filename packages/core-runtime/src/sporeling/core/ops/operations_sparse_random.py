"""MindSpore primitive classes for sparse and random operations that have no functional op of
their own name here, written with the ops (so ``P.X`` works as in MindSpore's CPU tests).

Sparse: ``SparseToDense``, ``SparseTensorDenseAdd``, ``SparseTensorDenseMatmul`` (COO given as
indices, values, shape), ``CSRMul``, ``CSRMV``, ``CSRReduceSum``, ``SparseSlice``,
``SparseGatherV2``. Sparse optimizer updates (rows ``indices`` of a Parameter, repeated
indices' gradients summed first, as MindSpore's CPU kernels do): ``FusedSparseAdam``,
``FusedSparseLazyAdam``, ``SparseApplyFtrl``, ``SparseApplyFtrlV2``, ``FusedSparseFtrl``,
``SparseApplyProximalAdagrad``, ``FusedSparseProximalAdagrad``, ``SparseApplyAdagrad``,
``SparseApplyAdagradV2``; they update their Parameters in place and return them. Sampling:
``LogUniformCandidateSampler``, ``ComputeAccidentalHits``. Random: ``Randperm``,
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
    "SparseSlice",
    "SparseGatherV2",
    "FusedSparseAdam",
    "FusedSparseLazyAdam",
    "SparseApplyFtrl",
    "SparseApplyFtrlV2",
    "FusedSparseFtrl",
    "SparseApplyProximalAdagrad",
    "FusedSparseProximalAdagrad",
    "SparseApplyAdagrad",
    "SparseApplyAdagradV2",
    "LogUniformCandidateSampler",
    "ComputeAccidentalHits",
    "DenseToCSRSparseMatrix",
    "SparseTensorToCSRSparseMatrix",
    "CSRSparseMatrixToSparseTensor",
    "CSRSparseMatrixToDense",
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


# ---- SparseSlice, SparseGatherV2 ----------


def _sparse_slice(
    self: Any, indices: Tensor, values: Tensor, shape: Any, start: Any, size: Any
) -> tuple[Tensor, Tensor, Tensor]:
    """The entries of the COO tensor inside ``[start, start + size)`` (clipped to ``shape``):
    (indices relative to ``start``, their values, the slice's shape), in the input's order.
    The number of entries depends on the values, so this runs eagerly."""
    dims = np.asarray(_shape("SparseSlice", shape), np.int64)
    lo = np.asarray(_shape("SparseSlice", start), np.int64)
    n = np.asarray(_shape("SparseSlice", size), np.int64)
    if not len(dims) == len(lo) == len(n):
        raise ValueError(
            f"SparseSlice: 'shape', 'start' and 'size' must have one entry per dimension, got "
            f"{dims.tolist()}, {lo.tolist()}, {n.tolist()}"
        )
    if (lo < 0).any() or (n < 0).any():
        raise ValueError(f"SparseSlice: 'start' and 'size' must be >= 0, got {lo}, {n}")
    idx = indices.asnumpy().astype(np.int64)
    if idx.ndim != 2 or idx.shape[1] != len(dims) or idx.shape[0] != values.shape[0]:
        raise ValueError(
            f"SparseSlice: argument 'indices' expected shape (nnz, {len(dims)}) matching "
            f"values ({values.shape[0]} entries), got {tuple(idx.shape)}"
        )
    hi = np.minimum(lo + n, dims)
    keep = np.all((idx >= lo) & (idx < hi), axis=1)
    rows = Tensor(np.flatnonzero(keep).astype(np.int64))
    out_shape = np.maximum(hi - lo, 0)
    out_idx = Tensor((idx[keep] - lo).astype(indices.asnumpy().dtype))
    return out_idx, F.gather(values, rows, 0), Tensor(out_shape)


def _sparse_gather_v2(self: Any, params: Tensor, indices: Any, axis: Any) -> Tensor:
    """``Gather``: MindSpore's variant whose gradient is a RowTensor; here the gradient is
    the dense sum of the gathered rows' gradients (the same values)."""
    return F.gather(params, indices, int(axis))


# ---- CSRSparseMatrix conversions ----------
# MindSpore's (TensorFlow's) batched CSR matrix is five tensors: dense_shape ((rows, cols) or
# (batch, rows, cols)), batch_pointers (batch + 1 running nnz counts), row_pointers (rows + 1
# per batch, each batch's starting at 0), col_indices and values (nnz each, row-major).


def _int_array(op: str, arg: str, value: Any) -> np.ndarray:
    if not isinstance(value, Tensor):
        raise TypeError(f"{op}: argument '{arg}' expected a Tensor, got {type(value).__name__}")
    if value.dtype.category != 1:
        raise TypeError(f"{op}: argument '{arg}' expected int32 or int64, got {value.dtype}")
    return value.asnumpy().astype(np.int64)


def _to_csr(
    op: str, indices: Tensor, values: Tensor, shape: np.ndarray
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    idx = _int_array(op, "indices", indices)
    rank = len(shape)
    if rank not in (2, 3) or idx.ndim != 2 or idx.shape[1] != rank:
        raise ValueError(
            f"{op}: expected a 2-d or 3-d (batched) matrix with indices of shape (nnz, rank), "
            f"got dense shape {shape.tolist()} and indices {tuple(idx.shape)}"
        )
    if values.shape[0] != idx.shape[0]:
        raise ValueError(f"{op}: {idx.shape[0]} indices but {values.shape[0]} values")
    if ((idx < 0) | (idx >= shape)).any():
        raise ValueError(f"{op}: argument 'indices' has entries outside the shape {shape.tolist()}")
    full = idx if rank == 3 else np.concatenate([np.zeros((len(idx), 1), np.int64), idx], 1)
    batch, rows = (int(shape[0]), int(shape[1])) if rank == 3 else (1, int(shape[0]))
    order = np.lexsort((full[:, 2], full[:, 1], full[:, 0]))  # row-major
    full = full[order]
    batch_ptr = np.zeros(batch + 1, np.int64)
    np.add.at(batch_ptr, full[:, 0] + 1, 1)
    row_ptr = np.zeros((batch, rows + 1), np.int64)
    np.add.at(row_ptr, (full[:, 0], full[:, 1] + 1), 1)
    like = indices.asnumpy().dtype
    return (
        Tensor(shape.astype(like)),
        Tensor(np.cumsum(batch_ptr).astype(like)),
        Tensor(np.cumsum(row_ptr, axis=1).reshape(-1).astype(like)),
        Tensor(full[:, 2].astype(like)),
        F.gather(values, Tensor(order.astype(np.int64)), 0),
    )


def _from_csr(op: str, *parts: Any) -> tuple[np.ndarray, Tensor, np.ndarray]:
    """(row-major COO indices, values, dense shape) of a CSRSparseMatrix."""
    shape = _int_array(op, "x_dense_shape", parts[0])
    batch_ptr = _int_array(op, "x_batch_pointers", parts[1])
    row_ptr = _int_array(op, "x_row_pointers", parts[2])
    cols = _int_array(op, "x_col_indices", parts[3])
    values = parts[4]
    rank = len(shape)
    batch, rows = (int(shape[0]), int(shape[1])) if rank == 3 else (1, int(shape[0]))
    if rank not in (2, 3) or batch_ptr.shape != (batch + 1,) or row_ptr.size != batch * (rows + 1):
        raise ValueError(
            f"{op}: inconsistent CSRSparseMatrix: dense shape {shape.tolist()}, "
            f"{batch_ptr.size} batch pointers, {row_ptr.size} row pointers"
        )
    counts = np.diff(row_ptr.reshape(batch, rows + 1), axis=1)
    b, r = np.nonzero(counts)
    reps = counts[b, r]
    rows_of = np.repeat(r, reps)
    batches_of = np.repeat(b, reps)
    if len(cols) != len(rows_of) or values.shape[0] != len(cols):
        raise ValueError(
            f"{op}: the row pointers count {len(rows_of)} entries, but there are {len(cols)} "
            f"column indices and {values.shape[0]} values"
        )
    idx = np.stack([batches_of, rows_of, cols], 1) if rank == 3 else np.stack([rows_of, cols], 1)
    return idx, values, shape


def _dense_to_csr(self: Any, dense_input: Tensor, indices: Tensor) -> Any:
    """The entries of ``dense_input`` at ``indices`` (nnz, rank) as a CSRSparseMatrix."""
    op = "DenseToCSRSparseMatrix"
    if not isinstance(dense_input, Tensor):
        raise TypeError(f"{op}: argument 'dense_input' expected a Tensor")
    idx = _int_array(op, "indices", indices)
    if idx.ndim != 2 or idx.shape[1] != dense_input.ndim:
        raise ValueError(
            f"{op}: argument 'indices' expected shape (nnz, {dense_input.ndim}), got {idx.shape}"
        )
    if ((idx < 0) | (idx >= np.asarray(dense_input.shape))).any():
        raise ValueError(
            f"{op}: argument 'indices' has entries outside the shape {list(dense_input.shape)}"
        )
    values = F.gather_nd(dense_input, indices)
    return _to_csr(op, indices, values, np.asarray(dense_input.shape, np.int64))


def _sparse_tensor_to_csr(self: Any, indices: Tensor, values: Tensor, dense_shape: Any) -> Any:
    """A COO sparse tensor (indices, values, dense_shape) as a CSRSparseMatrix."""
    op = "SparseTensorToCSRSparseMatrix"
    return _to_csr(op, indices, values, _int_array(op, "x_dense_shape", dense_shape))


def _csr_to_sparse_tensor(self: Any, *parts: Any) -> tuple[Tensor, Tensor, Tensor]:
    """A CSRSparseMatrix as (indices (nnz, rank) row-major, values, dense_shape)."""
    idx, values, shape = _from_csr("CSRSparseMatrixToSparseTensor", *parts)
    like = parts[0].asnumpy().dtype
    return Tensor(idx.astype(like)), values, Tensor(shape.astype(like))


def _csr_to_dense(self: Any, *parts: Any) -> Tensor:
    """A CSRSparseMatrix as a dense tensor (differentiable in its values)."""
    idx, values, shape = _from_csr("CSRSparseMatrixToDense", *parts)
    return F.scatter_nd(Tensor(idx), values, tuple(int(v) for v in shape))


# ---- sparse optimizer updates ----------


def _slots(op: str, var: Any, **slots: Any) -> None:
    """var and its optimizer slots: Tensors of one shape (MindSpore's errors: TypeError for
    a non-Tensor, ValueError for a shape that differs)."""
    for name, t in (("var", var), *slots.items()):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: argument '{name}' expected a Tensor, got {type(t).__name__}")
        if t.shape != var.shape:
            raise ValueError(
                f"{op}: argument '{name}' expected the shape of 'var' {var.shape}, got {t.shape}"
            )


def _rows(op: str, var: Tensor, grad: Any, indices: Any) -> tuple[Tensor, Tensor]:
    """(the gradient scattered into var's shape, repeats summed; a bool mask of the touched
    rows, broadcastable against var)."""
    for name, t in (("grad", grad), ("indices", indices)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: argument '{name}' expected a Tensor, got {type(t).__name__}")
    idx = indices
    if idx.dtype.category != 1:
        raise TypeError(f"{op}: argument 'indices' expected int32 or int64, got {idx.dtype}")
    if idx.ndim != 1 or grad.ndim != var.ndim or grad.shape[0] != idx.shape[0]:
        raise ValueError(
            f"{op}: argument 'grad' expected shape (len(indices),) + var.shape[1:] = "
            f"{(idx.shape[0] if idx.ndim == 1 else '?',) + tuple(var.shape[1:])} with 1-d "
            f"'indices', got grad {grad.shape} and indices {idx.shape}"
        )
    if tuple(grad.shape[1:]) != tuple(var.shape[1:]):
        raise ValueError(
            f"{op}: argument 'grad' expected rows of shape {tuple(var.shape[1:])}, got "
            f"{tuple(grad.shape[1:])}"
        )
    at = F.reshape(idx, (idx.shape[0], 1))
    dense = F.tensor_scatter_add(F.zeros_like(var), at, F.cast(grad, var.dtype))
    hits = F.tensor_scatter_add(
        F.zeros((var.shape[0],), var.dtype), at, F.ones_like(idx, var.dtype)
    )
    mask = F.reshape(hits > 0, (var.shape[0],) + (1,) * (var.ndim - 1))
    return dense, mask


def _sqrt(v: Any) -> Any:
    """sqrt of a Python number as a Python number (a weak scalar), of a Tensor as one."""
    return F.sqrt(v) if isinstance(v, Tensor) else float(np.sqrt(v))


def _update(mask: Tensor, target: Tensor, new: Tensor) -> None:
    F.assign(target, F.select(F.broadcast_to(mask, target.shape), new, target))


def _adam_step(self: Any, lazy: bool, *args: Any) -> tuple[Tensor, Tensor, Tensor]:
    var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad, indices = args
    op = type(self).__name__
    _slots(op, var, m=m, v=v)
    g, mask = _rows(op, var, grad, indices)
    m_new = m * beta1 + g * (1 - beta1)
    v_new = v * beta2 + g * g * (1 - beta2)
    step = lr * _sqrt(1 - beta2_power) / (1 - beta1_power)
    if self.use_nesterov:
        update = step * (m_new * beta1 + g * (1 - beta1)) / (F.sqrt(v_new) + epsilon)
    else:
        update = step * m_new / (F.sqrt(v_new) + epsilon)
    if lazy:  # only the rows that have gradients move (m, v and var)
        _update(mask, m, m_new)
        _update(mask, v, v_new)
        _update(mask, var, var - update)
    else:  # every row: the moments decay where there is no gradient, var moves with them
        F.assign(m, m_new)
        F.assign(v, v_new)
        F.assign(var, var - update)
    return var, m, v


def _fused_sparse_adam(self: Any, *args: Any) -> tuple[Tensor, Tensor, Tensor]:
    """Adam with a gradient given as rows ``grad`` at ``indices`` (zero elsewhere):
    ``m = b1 m + (1 - b1) g``, ``v = b2 v + (1 - b2) g^2``,
    ``var -= lr sqrt(1 - b2^t) / (1 - b1^t) m / (sqrt(v) + eps)`` over every row."""
    return _adam_step(self, False, *args)


def _fused_sparse_lazy_adam(self: Any, *args: Any) -> tuple[Tensor, Tensor, Tensor]:
    """Adam's update on the rows at ``indices`` only (LazyAdam)."""
    return _adam_step(self, True, *args)


def _ftrl(
    self: Any, var: Tensor, accum: Tensor, linear: Tensor, grad: Tensor, indices: Any,
    l2_shrinkage: Any = 0.0,
) -> tuple[Tensor, Tensor, Tensor]:  # fmt: skip
    op = type(self).__name__
    _slots(op, var, accum=accum, linear=linear)
    g, mask = _rows(op, var, grad, indices)
    lr, l1, l2, p = self.lr, self.l1, self.l2, self.lr_power
    g_shrunk = g + var * (2 * l2_shrinkage) if l2_shrinkage else g
    accum_new = accum + g * g
    if p == -0.5:
        sigma = (F.sqrt(accum_new) - F.sqrt(accum)) / lr
        quadratic = F.sqrt(accum_new) / lr + 2 * l2
    else:
        sigma = (F.pow(accum_new, -p) - F.pow(accum, -p)) / lr
        quadratic = F.pow(accum_new, -p) / lr + 2 * l2
    linear_new = linear + g_shrunk - sigma * var
    var_new = F.select(
        F.abs(linear_new) > l1,
        (F.sign(linear_new) * l1 - linear_new) / quadratic,
        F.zeros_like(var),
    )
    _update(mask, var, var_new)
    _update(mask, accum, accum_new)
    _update(mask, linear, linear_new)
    return var, accum, linear


def _sparse_apply_ftrl(
    self: Any, var: Tensor, accum: Tensor, linear: Tensor, grad: Tensor, indices: Any
) -> tuple[Tensor, Tensor, Tensor]:
    """FTRL-proximal on the rows at ``indices``: ``accum' = accum + g^2``,
    ``linear += g - (accum'^-p - accum^-p) / lr * var``, ``var = (sign(linear) l1 - linear) /
    (accum'^-p / lr + 2 l2)`` where ``|linear| > l1``, else 0 (``p = lr_power``)."""
    return _ftrl(self, var, accum, linear, grad, indices)


def _sparse_apply_ftrl_v2(
    self: Any, var: Tensor, accum: Tensor, linear: Tensor, grad: Tensor, indices: Any
) -> tuple[Tensor, Tensor, Tensor]:
    """FTRL with ``l2_shrinkage``: the linear term sees ``g + 2 l2_shrinkage var``."""
    return _ftrl(self, var, accum, linear, grad, indices, self.l2_shrinkage)


def _sparse_proximal_adagrad(
    self: Any, var: Tensor, accum: Tensor, lr: Any, l1: Any, l2: Any, grad: Tensor, indices: Any
) -> tuple[Tensor, Tensor]:
    """Proximal Adagrad on the rows at ``indices``: ``accum += g^2``,
    ``prox = var - lr g / sqrt(accum)``,
    ``var = sign(prox) max(|prox| - lr l1, 0) / (1 + lr l2)``."""
    _slots(type(self).__name__, var, accum=accum)
    g, mask = _rows(type(self).__name__, var, grad, indices)
    accum_new = accum + g * g
    safe = F.select(F.broadcast_to(mask, var.shape), accum_new, F.ones_like(accum_new))
    prox = var - lr * g / F.sqrt(safe)
    var_new = F.sign(prox) * F.maximum(F.abs(prox) - lr * l1, F.zeros_like(prox)) / (1 + lr * l2)
    _update(mask, var, var_new)
    _update(mask, accum, accum_new)
    return var, accum


def _adagrad(self: Any, var: Tensor, accum: Tensor, grad: Tensor, indices: Any, eps: float):
    _slots(type(self).__name__, var, accum=accum)
    g, mask = _rows(type(self).__name__, var, grad, indices)
    accum_new = accum + g * g if self.update_slots else accum
    safe = F.select(F.broadcast_to(mask, var.shape), accum_new, F.ones_like(accum_new))
    _update(mask, var, var - self.lr * g / (F.sqrt(safe) + eps))
    _update(mask, accum, accum_new)
    return var, accum


def _sparse_apply_adagrad(
    self: Any, var: Tensor, accum: Tensor, grad: Tensor, indices: Any
) -> tuple[Tensor, Tensor]:
    """Adagrad on the rows at ``indices``: ``accum += g^2`` (if ``update_slots``),
    ``var -= lr g / sqrt(accum)``."""
    return _adagrad(self, var, accum, grad, indices, 0.0)


def _sparse_apply_adagrad_v2(
    self: Any, var: Tensor, accum: Tensor, grad: Tensor, indices: Any
) -> tuple[Tensor, Tensor]:
    """Adagrad with ``epsilon``: ``var -= lr g / (sqrt(accum) + epsilon)``."""
    return _adagrad(self, var, accum, grad, indices, self.epsilon)


# ---- candidate sampling ----------


def _log_uniform_candidate_sampler(self: Any, true_classes: Tensor) -> Any:
    """``num_sampled`` classes drawn from ``P(k) = log((k + 2) / (k + 1)) / log(range_max +
    1)`` (distinct when ``unique``), with the expected count of each true and sampled class:
    ``num_sampled P(k)``, or with ``unique`` ``1 - (1 - P(k))^tries`` for the number of draws
    it took. Returns (sampled int64, true_expected float32, sampled_expected float32)."""
    tc = true_classes.asnumpy()
    if tc.ndim != 2 or tc.shape[1] != self.num_true or tc.dtype.kind not in "iu":
        raise ValueError(
            f"LogUniformCandidateSampler: argument 'true_classes' expected an integer tensor "
            f"of shape (batch, num_true={self.num_true}), got {tc.dtype} {tuple(tc.shape)}"
        )
    n, high = int(self.num_sampled), int(self.range_max)
    if self.unique and n > high:
        raise ValueError(
            f"LogUniformCandidateSampler: num_sampled={n} distinct classes exceed range_max={high}"
        )
    rng = _generator(self)
    log_range = np.log(high + 1.0)

    def prob(k: np.ndarray) -> np.ndarray:
        return (np.log(k + 2.0) - np.log(k + 1.0)) / log_range

    def draw(count: int) -> np.ndarray:  # inverse CDF of the log-uniform distribution
        k = np.floor(np.exp(rng.random(count) * log_range)).astype(np.int64) - 1
        return np.clip(k, 0, high - 1)

    if self.unique:
        picked: list[int] = []
        seen: set[int] = set()
        tries = 0
        while len(picked) < n:
            k = int(draw(1)[0])
            tries += 1
            if k not in seen:
                seen.add(k)
                picked.append(k)
        sampled = np.asarray(picked, np.int64)

        def expected(k: np.ndarray) -> np.ndarray:
            return -np.expm1(tries * np.log1p(-prob(k)))
    else:
        sampled = draw(n)

        def expected(k: np.ndarray) -> np.ndarray:
            return prob(k) * n

    return (
        Tensor(sampled),
        Tensor(expected(tc.astype(np.float64)).astype(np.float32)),
        Tensor(expected(sampled.astype(np.float64)).astype(np.float32)),
    )


def _compute_accidental_hits(self: Any, true_classes: Tensor, sampled_candidates: Tensor):
    """Where a sampled candidate equals one of a row's true classes: (row indices int32,
    candidate positions int32, weights float32 of -FLT_MAX), row by row, true class by true
    class, positions ascending (the count depends on the values: eager)."""
    tc = true_classes.asnumpy()
    sc = sampled_candidates.asnumpy().reshape(-1)
    if tc.ndim != 2 or tc.shape[1] != self.num_true:
        raise ValueError(
            f"ComputeAccidentalHits: argument 'true_classes' expected shape (batch, "
            f"num_true={self.num_true}), got {tuple(tc.shape)}"
        )
    where: dict[int, list[int]] = {}
    for j, c in enumerate(sc.tolist()):
        where.setdefault(c, []).append(j)
    rows, ids = [], []
    for i in range(tc.shape[0]):
        for c in tc[i].tolist():
            for j in where.get(c, ()):
                rows.append(i)
                ids.append(j)
    weights = np.full(len(rows), -np.finfo(np.float32).max, np.float32)
    return (
        Tensor(np.asarray(rows, np.int32)),
        Tensor(np.asarray(ids, np.int32)),
        Tensor(weights),
    )


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
_LOCK = (("use_locking", False),)
_ADAM = (("use_locking", False), ("use_nesterov", False))
_FTRL = (("lr", None), ("l1", None), ("l2", None), ("lr_power", None), *_LOCK)
SparseSlice = _op("SparseSlice", None, (), _sparse_slice)
SparseGatherV2 = _op("SparseGatherV2", None, (), _sparse_gather_v2)
FusedSparseAdam = _op("FusedSparseAdam", None, _ADAM, _fused_sparse_adam)
FusedSparseLazyAdam = _op("FusedSparseLazyAdam", None, _ADAM, _fused_sparse_lazy_adam)
SparseApplyFtrl = _op("SparseApplyFtrl", None, _FTRL, _sparse_apply_ftrl)
SparseApplyFtrlV2 = _op(
    "SparseApplyFtrlV2",
    None,
    (("lr", None), ("l1", None), ("l2", None), ("l2_shrinkage", None), ("lr_power", None),
     *_LOCK),
    _sparse_apply_ftrl_v2,
)  # fmt: skip
FusedSparseFtrl = _op("FusedSparseFtrl", None, _FTRL, _sparse_apply_ftrl)
SparseApplyProximalAdagrad = _op(
    "SparseApplyProximalAdagrad", None, _LOCK, _sparse_proximal_adagrad
)
FusedSparseProximalAdagrad = _op(
    "FusedSparseProximalAdagrad", None, _LOCK, _sparse_proximal_adagrad
)
SparseApplyAdagrad = _op(
    "SparseApplyAdagrad",
    None,
    (("lr", None), ("update_slots", True), *_LOCK),
    _sparse_apply_adagrad,
)
SparseApplyAdagradV2 = _op(
    "SparseApplyAdagradV2",
    None,
    (("lr", None), ("epsilon", None), ("use_locking", False), ("update_slots", True)),
    _sparse_apply_adagrad_v2,
)
LogUniformCandidateSampler = _op(
    "LogUniformCandidateSampler",
    None,
    (("num_true", 1), ("num_sampled", 5), ("unique", True), ("range_max", 5), ("seed", 0)),
    _log_uniform_candidate_sampler,
)
ComputeAccidentalHits = _op(
    "ComputeAccidentalHits", None, (("num_true", 1),), _compute_accidental_hits
)
DenseToCSRSparseMatrix = _op("DenseToCSRSparseMatrix", None, (), _dense_to_csr)
SparseTensorToCSRSparseMatrix = _op(
    "SparseTensorToCSRSparseMatrix", None, (), _sparse_tensor_to_csr
)
CSRSparseMatrixToSparseTensor = _op(
    "CSRSparseMatrixToSparseTensor", None, (), _csr_to_sparse_tensor
)
CSRSparseMatrixToDense = _op("CSRSparseMatrixToDense", None, (), _csr_to_dense)
for _cls in (
    SparseToDense, SparseTensorDenseAdd, SparseTensorDenseMatmul, CSRMul, CSRMV, CSRReduceSum,
    Randperm, RandomChoiceWithMask, RandomPoisson, SparseSlice, SparseGatherV2,
    FusedSparseAdam, FusedSparseLazyAdam, SparseApplyFtrl, SparseApplyFtrlV2, FusedSparseFtrl,
    SparseApplyProximalAdagrad, FusedSparseProximalAdagrad, SparseApplyAdagrad,
    SparseApplyAdagradV2, LogUniformCandidateSampler, ComputeAccidentalHits,
    DenseToCSRSparseMatrix, SparseTensorToCSRSparseMatrix, CSRSparseMatrixToSparseTensor,
    CSRSparseMatrixToDense,
):  # fmt: skip
    _cls.__module__ = __name__
