"""Unsorted segment reductions (sum, prod, max, min) on the CPU.

A segment reduction is a row scatter into a freshly filled output: ``x`` is viewed as
``(K, D)`` rows, row ``k`` is combined into output row ``ids[k]`` (negative ids are
dropped, as MindSpore does), so it reuses :func:`.scatter.scatter_rows`'s serial kernel.
Empty segments keep the reduction's identity: 0 for sum, 1 for prod, and the lowest /
highest finite value of the dtype for max / min (MindSpore's documented fill).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .scatter import scatter_rows, supports

__all__ = ["SEGMENT_OPS", "identity", "segment_reduce", "supports"]

#: segment reduction -> the scatter reduction that implements it
SEGMENT_OPS = {"sum": "add", "prod": "mul", "max": "max", "min": "min"}


def identity(op: str, dtype: Any) -> Any:
    """The value an empty segment holds for reduction ``op`` in ``dtype``."""
    dt = np.dtype(dtype)
    if op == "sum":
        return dt.type(0)
    if op == "prod":
        return dt.type(1)
    info = np.finfo(dt) if dt.kind == "f" else np.iinfo(dt)
    return info.min if op == "max" else info.max


def segment_reduce(x2: np.ndarray, ids: np.ndarray, num_segments: int, op: str) -> np.ndarray:
    """Reduce rows of ``x2 (K, D)`` into ``(num_segments, D)`` by ``ids (K,)``.

    Ids must already be below ``num_segments``; negative ids are skipped by the kernel.
    """
    out = np.full((1, num_segments, x2.shape[1]), identity(op, x2.dtype), x2.dtype)
    scatter_rows(out, ids, x2.reshape(1, *x2.shape), SEGMENT_OPS[op])
    return out[0]
