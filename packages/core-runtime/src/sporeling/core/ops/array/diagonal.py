"""Diagonals and bands: matrix_diag(_part), matrix_set_diag, diag, band_part, tril/triu."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import check_int, op_error
from ...tensor import Tensor
from .._compare import select
from .._core import (
    full,
    reshape,
    zeros_like,
)
from .._indexing import getitem, setitem
from ._common import _brange, _index, _ints, _scalar, _tensor

# ---- diagonals and bands ---------------------------------------------------------------------

_ALIGNS = ("RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT")


def _diag_range(op: str, k: Any) -> tuple[int, int]:
    ks = _ints(op, "k", k)
    if len(ks) == 1:
        return ks[0], ks[0]
    if len(ks) != 2 or ks[0] > ks[1]:
        raise op_error(op, "k", k, "an int or a pair (low, high) with low <= high")
    return ks[0], ks[1]


def _check_align(op: str, align: Any) -> str:
    if align not in _ALIGNS:
        raise op_error(op, "align", align, f"one of {', '.join(_ALIGNS)}")
    return str(align)


def _diag_indices(
    rows: int, cols: int, k0: int, k1: int, align: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Matrix coordinates of diagonals ``k1, k1-1, ..., k0`` of a ``rows x cols`` matrix and
    their (diagonal row, position) in the packed layout, aligned as in TensorFlow/MindSpore:
    the first word of ``align`` places superdiagonals, the second subdiagonals."""
    max_len = min(rows + min(k1, 0), cols - max(k0, 0))
    left_super = align.startswith("LEFT")
    left_sub = align.endswith("LEFT")
    r_idx, c_idx, d_row, d_pos = [], [], [], []
    for d in _brange(k1, k0 - 1, -1):
        length = min(rows + min(d, 0), cols - max(d, 0))
        if length <= 0:
            continue
        left = (d >= 0 and left_super) or (d <= 0 and left_sub)
        offset = 0 if left else max_len - length
        i = np.arange(length)
        r_idx.append(i - min(d, 0))
        c_idx.append(i + max(d, 0))
        d_row.append(np.full(length, k1 - d))
        d_pos.append(i + offset)
    cat = [np.concatenate(a) if a else np.zeros(0, np.int64) for a in (r_idx, c_idx, d_row, d_pos)]
    return cat[0], cat[1], cat[2], cat[3], max_len


def matrix_diag_part(
    x: Tensor, k: Any = 0, padding_value: Any = 0, align: str = "RIGHT_LEFT"
) -> Tensor:
    """The diagonals ``k`` (an int or a range ``(low, high)``) of the innermost matrices,
    packed as rows of length ``max_diag_len`` padded with ``padding_value``.

    >>> matrix_diag_part(Tensor([[1, 2], [3, 4]])).tolist()
    [1, 4]
    """
    op = "matrix_diag_part"
    x = _tensor(op, "x", x)
    if x.ndim < 2:
        raise op_error(op, "x", x, "a tensor with at least 2 dimensions")
    k0, k1 = _diag_range(op, k)
    m, n = x.shape[-2:]
    if not (-m < k0 <= k1 < n) and m * n:
        raise op_error(op, "k", k, f"diagonals in ({-m}, {n}) for {m}x{n} matrices")
    rows, cols, d_row, d_pos, max_len = _diag_indices(m, n, k0, k1, _check_align(op, align))
    nd = k1 - k0 + 1
    batch = x.shape[:-2]
    pad = _scalar(op, "padding_value", padding_value)
    out = full(batch + (nd, int(max(max_len, 0))), pad, x.dtype, x._device)
    if rows.size:
        vals = getitem(x, (Ellipsis, _index(rows, x), _index(cols, x)))
        out = setitem(out, (Ellipsis, _index(d_row, x), _index(d_pos, x)), vals)
    return reshape(out, batch + (out.shape[-1],)) if nd == 1 else out


def matrix_set_diag(x: Tensor, diagonal: Tensor, k: Any = 0, align: str = "RIGHT_LEFT") -> Tensor:
    """``x`` with its diagonals ``k`` replaced by ``diagonal`` (packed as ``matrix_diag_part``
    returns them)."""
    op = "matrix_set_diag"
    x = _tensor(op, "x", x)
    diag = _tensor(op, "diagonal", diagonal)
    if x.ndim < 2:
        raise op_error(op, "x", x, "a tensor with at least 2 dimensions")
    if diag.dtype != x.dtype:
        raise op_error(op, "diagonal", diag, f"dtype {x.dtype} like x", TypeError)
    k0, k1 = _diag_range(op, k)
    m, n = x.shape[-2:]
    if not (-m < k0 <= k1 < n):
        raise op_error(op, "k", k, f"diagonals in ({-m}, {n}) for {m}x{n} matrices")
    rows, cols, d_row, d_pos, max_len = _diag_indices(m, n, k0, k1, _check_align(op, align))
    nd = k1 - k0 + 1
    want = x.shape[:-2] + ((max_len,) if nd == 1 else (nd, max_len))
    if diag.shape != tuple(int(v) for v in want):
        raise op_error(op, "diagonal", diag, f"shape {tuple(int(v) for v in want)}")
    if nd == 1:
        diag = reshape(diag, x.shape[:-2] + (1, int(max_len)))
    vals = getitem(diag, (Ellipsis, _index(d_row, x), _index(d_pos, x)))
    return setitem(x, (Ellipsis, _index(rows, x), _index(cols, x)), vals)


def matrix_diag(
    x: Tensor,
    k: Any = 0,
    num_rows: Any = -1,
    num_cols: Any = -1,
    padding_value: Any = 0,
    align: str = "RIGHT_LEFT",
) -> Tensor:
    """Matrices whose diagonals ``k`` are given by ``x`` (packed as in ``matrix_diag_part``)
    and whose other entries are ``padding_value``; ``num_rows``/``num_cols`` default to the
    smallest (square when both are -1) size that fits.

    >>> matrix_diag(Tensor([1, 2])).tolist()
    [[1, 0], [0, 2]]
    """
    op = "matrix_diag"
    x = _tensor(op, "x", x)
    k0, k1 = _diag_range(op, k)
    nd = k1 - k0 + 1
    if x.ndim < (1 if nd == 1 else 2):
        raise op_error(op, "x", x, f"a tensor with at least {1 if nd == 1 else 2} dimensions")
    if nd > 1 and x.shape[-2] != nd:
        raise op_error(op, "x", x, f"{nd} diagonals in dimension -2 for k=({k0}, {k1})")
    max_len = x.shape[-1]
    min_rows = max_len - min(k1, 0)
    min_cols = max_len + max(k0, 0)
    nr = check_int(op, "num_rows", _scalar(op, "num_rows", num_rows))
    nc = check_int(op, "num_cols", _scalar(op, "num_cols", num_cols))
    if nr == -1 and nc == -1:
        nr = nc = max(min_rows, min_cols)
    elif nr == -1:
        nr = min_rows
    elif nc == -1:
        nc = min_cols
    if nr < min_rows:
        raise op_error(op, "num_rows", num_rows, f"-1 or at least {min_rows}")
    if nc < min_cols:
        raise op_error(op, "num_cols", num_cols, f"-1 or at least {min_cols}")
    if nr != min_rows and nc != min_cols:
        raise op_error(
            op,
            "num_rows",
            num_rows,
            f"{min_rows} rows or {min_cols} columns to match diagonals of length {max_len}",
        )
    rows, cols, d_row, d_pos, _ = _diag_indices(nr, nc, k0, k1, _check_align(op, align))
    batch = x.shape[:-1] if nd == 1 else x.shape[:-2]
    packed = reshape(x, batch + (1, max_len)) if nd == 1 else x
    pad = _scalar(op, "padding_value", padding_value)
    out = full(batch + (nr, nc), pad, x.dtype, x._device)
    if rows.size:
        vals = getitem(packed, (Ellipsis, _index(d_row, x), _index(d_pos, x)))
        out = setitem(out, (Ellipsis, _index(rows, x), _index(cols, x)), vals)
    return out


def diag(input_x: Tensor) -> Tensor:
    """A tensor of shape ``shape + shape`` with ``input_x`` on its diagonal (rank >= 1).

    >>> diag(Tensor([1, 2])).tolist()
    [[1, 0], [0, 2]]
    """
    x = _tensor("diag", "input_x", input_x)
    if x.ndim == 0:
        raise op_error("diag", "input_x", x, "a tensor with at least 1 dimension")
    n = x.size
    out = full((n, n), 0, x.dtype, x._device)
    pos = _index(np.arange(n), x)
    out = setitem(out, (pos, pos), reshape(x, (n,)))
    return reshape(out, x.shape + x.shape)


def _band(op: str, x: Tensor, keep: np.ndarray) -> Tensor:
    mask = Tensor(keep, device=x._device)
    return select(mask, x, zeros_like(x))


def matrix_band_part(x: Tensor, lower: Any, upper: Any) -> Tensor:
    """Keep entries with ``i - j <= lower`` and ``j - i <= upper`` (a negative bound keeps the
    whole triangle) of the innermost matrices; zero the rest."""
    x = _tensor("matrix_band_part", "x", x)
    if x.ndim < 2:
        raise op_error("matrix_band_part", "x", x, "a tensor with at least 2 dimensions")
    lo = check_int("matrix_band_part", "lower", _scalar("matrix_band_part", "lower", lower))
    hi = check_int("matrix_band_part", "upper", _scalar("matrix_band_part", "upper", upper))
    m, n = x.shape[-2:]
    i = np.arange(m)[:, None]
    j = np.arange(n)[None, :]
    keep = ((lo < 0) | (i - j <= lo)) & ((hi < 0) | (j - i <= hi))
    return _band("matrix_band_part", x, keep)


def tril(input_x: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle (``j - i <= diagonal``) of the innermost matrices."""
    x = _tensor("tril", "input_x", input_x)
    if x.ndim < 2:
        raise op_error("tril", "input_x", x, "a tensor with at least 2 dimensions")
    d = check_int("tril", "diagonal", diagonal)
    m, n = x.shape[-2:]
    return _band("tril", x, np.arange(n)[None, :] - np.arange(m)[:, None] <= d)


def triu(input_x: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle (``j - i >= diagonal``) of the innermost matrices."""
    x = _tensor("triu", "input_x", input_x)
    if x.ndim < 2:
        raise op_error("triu", "input_x", x, "a tensor with at least 2 dimensions")
    d = check_int("triu", "diagonal", diagonal)
    m, n = x.shape[-2:]
    return _band("triu", x, np.arange(n)[None, :] - np.arange(m)[:, None] >= d)
