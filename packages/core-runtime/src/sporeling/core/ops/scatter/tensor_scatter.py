"""Functional scatters: tensor_scatter_*, scatter_nd and tensor_scatter_elements."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import check_axis, check_int, op_error
from ...tensor import Tensor
from .._core import as_tensor, cast, full
from ._common import _index, _tensor
from ._prims import tensor_scatter_elements_p, tensor_scatter_p


def _updates_for(op: str, x: Tensor, updates: Any) -> Tensor:
    """``updates`` as a tensor of ``x``'s dtype (no float -> int narrowing)."""
    u = as_tensor(updates, op, "updates", x, x.dtype)
    if u.dtype.category > x.dtype.category:
        raise TypeError(
            f"{op}: argument 'updates' of dtype {u.dtype} cannot be written into "
            f"'input_x' of dtype {x.dtype}"
        )
    if u._device is not x._device:
        raise ValueError(
            f"{op}: argument 'updates' is on {u.device} but 'input_x' is on "
            f"{x.device}; move one with .to(...)"
        )
    return cast(u, x.dtype)


def _tensor_scatter(op: str, name: str, input_x: Any, indices: Any, updates: Any) -> Tensor:
    x = _tensor(name, "input_x", input_x)
    idx = _index(name, "indices", indices, x)
    u = _updates_for(name, x, updates)
    return tensor_scatter_p.bind(x, idx, u, op=op, name=name)


def tensor_scatter_add(input_x: Tensor, indices: Any, updates: Any) -> Tensor:
    """A copy of ``input_x`` with ``updates`` added at ``indices`` (repeats accumulate).

    >>> tensor_scatter_add(Tensor([1.0, 2.0, 3.0]), Tensor([[0], [0], [2]]),
    ...                    Tensor([1.0, 1.0, 5.0])).tolist()
    [3.0, 2.0, 8.0]
    """
    return _tensor_scatter("add", "tensor_scatter_add", input_x, indices, updates)


def tensor_scatter_sub(input_x: Tensor, indices: Any, updates: Any) -> Tensor:
    """A copy of ``input_x`` with ``updates`` subtracted at ``indices``."""
    return _tensor_scatter("sub", "tensor_scatter_sub", input_x, indices, updates)


def tensor_scatter_mul(input_x: Tensor, indices: Any, updates: Any) -> Tensor:
    """A copy of ``input_x`` multiplied by ``updates`` at ``indices``."""
    return _tensor_scatter("mul", "tensor_scatter_mul", input_x, indices, updates)


def tensor_scatter_div(input_x: Tensor, indices: Any, updates: Any) -> Tensor:
    """A copy of ``input_x`` divided by ``updates`` at ``indices`` (integers: floor division,
    ``n // 0 = 0``)."""
    return _tensor_scatter("div", "tensor_scatter_div", input_x, indices, updates)


def tensor_scatter_max(input_x: Tensor, indices: Any, updates: Any) -> Tensor:
    """A copy of ``input_x`` with ``max(input_x[i], updates)`` at each index ``i``."""
    return _tensor_scatter("max", "tensor_scatter_max", input_x, indices, updates)


def tensor_scatter_min(input_x: Tensor, indices: Any, updates: Any) -> Tensor:
    """A copy of ``input_x`` with ``min(input_x[i], updates)`` at each index ``i``."""
    return _tensor_scatter("min", "tensor_scatter_min", input_x, indices, updates)


def tensor_scatter_update(input_x: Tensor, indices: Any, updates: Any) -> Tensor:
    """A copy of ``input_x`` with ``updates`` written at ``indices`` (for a repeated index
    the last update wins; every repeat receives the gradient)."""
    return _tensor_scatter("update", "tensor_scatter_update", input_x, indices, updates)


def scatter_nd(indices: Any, updates: Tensor, shape: Any) -> Tensor:
    """A zero tensor of ``shape`` with ``updates`` summed in at ``indices``.

    >>> scatter_nd(Tensor([[1], [1], [3]]), Tensor([1.0, 2.0, 3.0]), (4,)).tolist()
    [0.0, 3.0, 0.0, 3.0]
    """
    u = _tensor("scatter_nd", "updates", updates)
    if isinstance(shape, Tensor):
        shape = shape.tolist()
    if isinstance(shape, (int, np.integer)) or shape is None:
        raise op_error("scatter_nd", "shape", shape, "a tuple of positive ints", TypeError)
    dims = tuple(check_int("scatter_nd", "shape", d, 1) for d in shape)
    if not dims:
        raise op_error("scatter_nd", "shape", shape, "a non-empty tuple of positive ints")
    idx = _index("scatter_nd", "indices", indices, u)
    zeros = full(dims, 0, u.dtype, u._device)
    return tensor_scatter_p.bind(zeros, idx, u, op="add", name="scatter_nd")


def tensor_scatter_elements(
    input_x: Tensor, indices: Any, updates: Any, axis: int = 0, reduction: str = "none"
) -> Tensor:
    """A copy of ``input_x`` with ``output[i][indices[i][j]] = updates[i][j]`` (for
    ``axis=1``; ``reduction="add"`` accumulates instead of writing).

    >>> tensor_scatter_elements(Tensor([[0.0, 0.0, 0.0]]), Tensor([[2, 0]]),
    ...                         Tensor([[5.0, 7.0]]), 1).tolist()
    [[7.0, 0.0, 5.0]]
    """
    op = "tensor_scatter_elements"
    x = _tensor(op, "input_x", input_x)
    if x.ndim == 0:
        raise op_error(op, "input_x", x, "a tensor of rank >= 1")
    ax = check_axis(op, axis, x.ndim)
    if reduction not in ("none", "add"):
        raise op_error(op, "reduction", reduction, "'none' or 'add'")
    idx = _index(op, "indices", indices, x)
    u = _updates_for(op, x, updates)
    return tensor_scatter_elements_p.bind(x, idx, u, axis=ax, reduction=reduction)
