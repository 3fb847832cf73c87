"""``Tensor(shape=[None, 3], dtype=...)``: a tensor with no data, whose ``None`` (or -1) axes
may take any size. It serves as an input signature: ``jit(fn, input_signature=...)`` and
``Cell.set_inputs(...)`` check each call's tensors against it (rank, fixed sizes, dtype), and
one graph serves every free size (``compiler/poly.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["Placeholder", "is_placeholder"]


class Placeholder:
    """The ``_data`` of a placeholder Tensor: a shape (-1 for any size) and a dtype."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: Any, dtype: Any) -> None:
        dims = (shape,) if isinstance(shape, int) else tuple(shape)
        for d in dims:
            if not (d is None or (isinstance(d, (int, np.integer)) and (d >= 0 or d == -1))):
                raise ValueError(
                    f"Tensor: argument 'shape' expected sizes >= 0, -1 or None (any size), "
                    f"got {list(dims)}"
                )
        self.shape = tuple(-1 if d is None else int(d) for d in dims)
        self.dtype = np.dtype(dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return -1 if -1 in self.shape else int(np.prod(self.shape, dtype=np.int64))

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            f"Tensor(shape={list(self.shape)}) is a placeholder without data: use it as an "
            "input signature (jit(fn, input_signature=...), Cell.set_inputs(...)), not as a "
            "value"
        )

    __array__ = get = tolist = item = copy = astype = reshape = __getitem__ = _refuse
    __float__ = __int__ = __bool__ = __len__ = __iter__ = _refuse

    def matches(self, shape: tuple[int, ...], dtype: Any) -> str | None:
        """Why a tensor of ``shape``/``dtype`` does not fit, or None."""
        if len(shape) != len(self.shape):
            return f"rank {len(shape)} (shape {list(shape)}), expected rank {len(self.shape)}"
        for i, (got, want) in enumerate(zip(shape, self.shape, strict=True)):
            if want != -1 and got != want:
                return f"size {got} on axis {i} (shape {list(shape)}), expected {want}"
        if np.dtype(dtype) != self.dtype:
            return f"dtype {np.dtype(dtype)}, expected {self.dtype}"
        return None


def is_placeholder(t: Any) -> bool:
    return isinstance(getattr(t, "_data", None), Placeholder)
