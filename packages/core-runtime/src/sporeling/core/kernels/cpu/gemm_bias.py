"""``x @ y + bias`` as one OpenBLAS ``?gemm`` call: the bias is written into the output
first and the product is added onto it (``beta = 1``).

NumPy's ``matmul`` has no ``beta``: a Dense layer's bias then took a pass of its own over
the finished output (a read and a write), while OpenBLAS, asked for ``beta = 0``, had
already made a pass over it to zero it. With ``beta = 1`` OpenBLAS skips that pass, and
filling the output with the bias (a write only) takes its place: 0.04-0.18 ms less per
product for the GPT benchmark's 2048-row Dense layers (cold caches, interleaved runs).
Used for the large 2-d products of compiled graphs (:mod:`.blas`) when the OpenBLAS found
by :mod:`.openblas_threads` exports CBLAS; the operands must be float32 or float64, with
one unit stride each, and ``out`` C-contiguous.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from .openblas_threads import openblas_libraries

__all__ = ["gemm_bias"]

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
_FUNCS: dict[str, Any] = {}
_CHARS = {np.dtype(np.float32): "s", np.dtype(np.float64): "d"}  # CBLAS's type letters


def _cblas(char: str) -> Any:
    """``cblas_{char}gemm`` of the first OpenBLAS found, or None (looked up once)."""
    if char not in _FUNCS:
        fn = None
        for dll, prefix, suffix in openblas_libraries():
            fn = getattr(dll, f"{prefix}cblas_{char}gemm{suffix}", None)
            config = getattr(dll, f"{prefix}openblas_get_config{suffix}", None)
            if fn is not None and config is not None:
                config.restype = ctypes.c_char_p
                # the integer width of the interface: INTERFACE64 builds say USE64BITINT
                wide = b"USE64BITINT" in (config() or b"")
                i = ctypes.c_int64 if wide else ctypes.c_int32
                real = ctypes.c_float if char == "s" else ctypes.c_double
                e, p = ctypes.c_int, ctypes.c_void_p
                fn.argtypes = [e, e, e, i, i, i, real, p, i, p, i, real, p, i]
                fn.restype = None
                break
            fn = None
        _FUNCS[char] = fn
    return _FUNCS[char]


def _operand(a: np.ndarray) -> tuple[int, int] | None:
    """CBLAS's ``(transpose flag, leading dimension)`` of a row-major 2-d operand, or None
    when neither stride is the unit (or a leading stride is too small for BLAS)."""
    rows, cols = a.shape
    s0, s1 = a.strides
    size = a.itemsize
    if s1 == size and s0 % size == 0 and s0 // size >= max(1, cols):
        return _NO_TRANS, s0 // size
    if s0 == size and s1 % size == 0 and s1 // size >= max(1, rows):
        return _TRANS, s1 // size
    return None


def gemm_bias(x: np.ndarray, y: np.ndarray, bias: np.ndarray, out: np.ndarray | None) -> Any:
    """``x @ y + bias`` (2-d ``x``, ``y``; ``bias`` along the last axis) in ``out`` (new if
    None), or None when this path does not apply (the caller then multiplies and adds)."""
    dt = x.dtype
    char = _CHARS.get(dt)
    if char is None or y.dtype != dt or bias.dtype != dt or bias.ndim != 1:
        return None
    m, k = x.shape
    n = y.shape[1]
    if min(m, n, k) == 0 or bias.shape[0] != n:
        return None
    if out is None:
        out = np.empty((m, n), dt)
    elif out.shape != (m, n) or out.dtype != dt or not out.flags.c_contiguous:
        return None
    if not (x.dtype.isnative and x.flags.aligned and y.flags.aligned and out.flags.aligned):
        return None
    if np.may_share_memory(out, x) or np.may_share_memory(out, y) or np.may_share_memory(out, bias):
        return None  # the bias fill would overwrite an operand
    ax, ay = _operand(x), _operand(y)
    fn = _cblas(char)
    if fn is None or ax is None or ay is None:
        return None
    out[...] = bias
    fn(_ROW_MAJOR, ax[0], ay[0], m, n, k, 1.0, x.ctypes.data, ax[1], y.ctypes.data, ay[1],
       1.0, out.ctypes.data, n)  # fmt: skip
    return out
