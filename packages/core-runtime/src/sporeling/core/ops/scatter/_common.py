"""Argument and index checks and the row machinery (raw arrays) shared by every gather/scatter."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._backend import is_host, scatter_at
from ...errors import op_error
from ...kernels.cpu import scatter as _kscatter
from ...tensor import Tensor
from .._core import as_tensor

SCATTER_OPS = ("update", "add", "sub", "mul", "div", "max", "min")


def _prod(dims: Any) -> int:
    n = 1
    for d in dims:
        n *= int(d)
    return n


# ---- index checks and the row machinery (raw arrays; shared by every impl) --------------


def _check_index_dtype(op: str, arg: str, aval: Any) -> None:
    if aval.dtype.category != 1:
        raise TypeError(
            f"{op}: argument '{arg}' expected an integer tensor (int32 or int64), "
            f"got dtype {aval.dtype}"
        )


def _check_range(
    xp: Any,
    op: str,
    arg: str,
    ids: Any,
    n: int,
    *,
    wrap: bool = False,
    what: str = "",
    drop_negative: bool = False,
) -> Any:
    """``ids`` as int64 in ``[0, n)`` (``wrap``: ``[-n, n)`` accepted and wrapped), else an
    IndexError naming the first bad index and its position."""
    ids = ids.astype(np.int64, copy=False)
    if ids.size == 0:
        return ids
    lo = -1 << 62 if drop_negative else (-n if wrap else 0)
    bad = (ids < lo) | (ids >= n)
    if bool(bad.any()):
        flat = int(xp.argmax(bad.reshape(-1)))
        value = int(ids.reshape(-1)[flat])
        pos = tuple(int(p) for p in np.unravel_index(flat, ids.shape))
        span = f"below {n}" if drop_negative else f"in [{-n if wrap else 0}, {n})"
        raise IndexError(
            f"{op}: argument '{arg}' holds index {value} at position {pos}, "
            f"expected indices {span}{what}"
        )
    if wrap:
        ids = xp.where(ids < 0, ids + n, ids)
    return ids


def _nd_rows(xp: Any, op: str, arg: str, idx: Any, shape: tuple[int, ...]) -> Any:
    """Row ids ``(K,)`` into ``shape[:M]`` for nd-indices ``idx (..., M)``, range-checked."""
    m = idx.shape[-1]
    cols = idx.reshape(-1, m)
    rows = xp.zeros(cols.shape[0], np.int64)
    for j in range(m):
        col = cols[:, j]
        bad = (col < 0) | (col >= shape[j])
        if bool(bad.any()):
            k = int(xp.argmax(bad))
            pos = tuple(int(p) for p in np.unravel_index(k, idx.shape[:-1])) + (j,)
            raise IndexError(
                f"{op}: argument '{arg}' holds index {int(col[k])} at position "
                f"{pos}, expected indices in [0, {shape[j]}) for dimension {j} "
                f"of a tensor of shape {shape}"
            )
        rows = rows * shape[j] + col.astype(np.int64)
    return rows


def _element_rows(xp: Any, op: str, arg: str, idx: Any, shape: tuple[int, ...], axis: int) -> Any:
    """Flat element positions into ``shape`` for an along-``axis`` index array ``idx``."""
    ids = _check_range(
        xp, op, arg, idx, shape[axis], wrap=True, what=f" for axis {axis} of size {shape[axis]}"
    )
    strides = [_prod(shape[d + 1 :]) for d in range(len(shape))]
    lin = ids * strides[axis]
    for d in range(len(shape)):
        if d != axis and idx.shape[d] > 1:
            view = [1] * len(shape)
            view[d] = idx.shape[d]
            lin = lin + xp.arange(idx.shape[d], dtype=np.int64).reshape(view) * strides[d]
    return lin.reshape(-1)


def _add_at(xp: Any, out: Any, ids: Any, upd: Any, op: str) -> bool:
    """Unbuffered add/sub/max/min (NumPy ufunc.at, cupyx scatter_*); False if unsupported."""
    where: Any = (slice(None), ids)  # NumPy's stubs reject tuple indices for ufunc.at
    try:
        scatter_at(xp, op, out, where, upd)
        return True
    except (TypeError, ValueError, NotImplementedError, AttributeError):  # pragma: no cover
        if is_host(xp):  # NumPy supports every case: a real error
            raise
        return False  # a dtype CuPy cannot scatter


def _scatter_rows_xp(xp: Any, out: Any, ids: Any, upd: Any, op: str) -> None:
    """Generic row scatter: ``out (O, N, I)``, ``ids (K,)``, ``upd (O, K, I)``, in place.

    add/sub/max/min use unbuffered scatter ufuncs; update/mul/div run in *rounds*: the
    ``r``-th occurrence of every row id goes in round ``r``, so each round has distinct
    rows and rounds follow index order (the same result as the sequential kernel)."""
    k = int(ids.shape[0])
    if k == 0 or out.size == 0:
        return
    keep = ids >= 0
    if not bool(keep.all()):  # segment ops drop negative ids
        sel = xp.nonzero(keep)[0]
        ids, upd, k = ids[sel], upd[:, sel], int(sel.shape[0])
        if k == 0:
            return
    if op in ("add", "sub", "max", "min") and _add_at(xp, out, ids, upd, op):
        return
    order = xp.argsort(ids * k + xp.arange(k, dtype=np.int64))  # stable by construction
    sorted_ids = ids[order]
    first = xp.searchsorted(sorted_ids, sorted_ids, side="left")
    rank = xp.empty(k, np.int64)
    rank[order] = xp.arange(k, dtype=np.int64) - first
    for r in range(int(rank.max()) + 1):
        sel = xp.nonzero(rank == r)[0]
        rows = ids[sel]
        cur, u = out[:, rows], upd[:, sel]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if op == "update":
                new = u
            elif op == "add":
                new = cur + u
            elif op == "sub":
                new = cur - u
            elif op == "mul":
                new = cur * u
            elif op == "max":
                new = xp.maximum(cur, u)
            elif op == "min":
                new = xp.minimum(cur, u)
            elif out.dtype.kind in "iu":  # integer division: floor, and x // 0 -> 0
                zero = u == 0
                new = xp.where(zero, 0, xp.floor_divide(cur, xp.where(zero, 1, u)))
            else:
                new = cur / u
        out[:, rows] = new


def _scatter_rows(xp: Any, out: Any, ids: Any, upd: Any, op: str, fast: bool) -> None:
    if fast and _kscatter.supports(out.dtype, op):
        _kscatter.scatter_rows(out, ids, upd, op)
    else:
        _scatter_rows_xp(xp, out, ids, upd, op)


def _gather_rows(xp: Any, src: Any, ids: Any, fast: bool) -> Any:
    if fast and _kscatter.supports(src.dtype):
        return _kscatter.gather_rows(src, ids)
    return xp.take(src, ids, axis=1)


def _split3(shape: tuple[int, ...], axis: int) -> tuple[int, int, int]:
    return _prod(shape[:axis]), shape[axis], _prod(shape[axis + 1 :])


def _with_cpu(impl: Any) -> Any:
    """The CPU variant of a generic impl: same code with the Numba row kernels."""

    def cpu(xp: Any, *args: Any, **params: Any) -> Any:
        return impl(xp, *args, fast=True, **params)

    return cpu


def _tensor(op: str, arg: str, value: Any) -> Tensor:
    if not isinstance(value, Tensor):
        raise op_error(op, arg, value, "a Tensor", TypeError)
    return value


def _index(op: str, arg: str, value: Any, like: Tensor) -> Tensor:
    """An integer index tensor on ``like``'s device (lists and ints are accepted)."""
    if isinstance(value, (bool, np.bool_)):
        raise op_error(op, arg, value, "an integer tensor (int32 or int64)", TypeError)
    t = as_tensor(value, op, arg, like)
    if t.dtype.category != 1:
        raise op_error(op, arg, t, "an integer tensor (int32 or int64)", TypeError)
    if t._device is not like._device:
        raise ValueError(
            f"{op}: argument '{arg}' is on {t.device} but the input is on "
            f"{like.device}; move one with .to(...)"
        )
    return t
