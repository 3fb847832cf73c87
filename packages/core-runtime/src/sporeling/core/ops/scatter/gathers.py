"""Gathers: gather (embedding lookup), gather_nd, gather_elements and gather_d."""

from __future__ import annotations

from typing import Any

from ...errors import check_axis, op_error
from ...tensor import Tensor
from ._common import _index, _tensor
from ._prims import gather_elements_p, gather_nd_p, gather_p


def gather(input_params: Tensor, input_indices: Any, axis: int) -> Tensor:
    """Slices of ``input_params`` at ``input_indices`` along ``axis`` (an embedding lookup
    for ``axis=0``); the gradient sums rows back into the looked-up rows.

    Output shape: ``params.shape[:axis] + indices.shape + params.shape[axis+1:]``.

    >>> gather(Tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), Tensor([2, 0]), 0).tolist()
    [[5.0, 6.0], [1.0, 2.0]]
    """
    x = _tensor("gather", "input_params", input_params)
    ax = check_axis("gather", axis, x.ndim)
    if x.ndim == 0:
        raise op_error("gather", "input_params", x, "a tensor of rank >= 1")
    return gather_p.bind(x, _index("gather", "input_indices", input_indices, x), axis=ax)


def gather_nd(input_x: Tensor, indices: Any) -> Tensor:
    """Gather slices of ``input_x`` at the positions ``indices[..., :]`` address in its
    leading ``M = indices.shape[-1]`` dimensions.

    Output shape: ``indices.shape[:-1] + input_x.shape[M:]``.

    >>> gather_nd(Tensor([[1.0, 2.0], [3.0, 4.0]]), Tensor([[1, 0], [0, 1]])).tolist()
    [3.0, 2.0]
    """
    x = _tensor("gather_nd", "input_x", input_x)
    return gather_nd_p.bind(x, _index("gather_nd", "indices", indices, x))


def gather_elements(x: Tensor, dim: int, index: Any) -> Tensor:
    """``out[i][j][k] = x[i][index[i][j][k]][k]`` for ``dim=1`` (and so on for other dims);
    ``index`` has ``x``'s rank and is no larger outside ``dim``.

    >>> gather_elements(Tensor([[1.0, 2.0], [3.0, 4.0]]), 1, Tensor([[0, 0], [1, 0]])).tolist()
    [[1.0, 1.0], [4.0, 3.0]]
    """
    t = _tensor("gather_elements", "x", x)
    d = check_axis("gather_elements", dim, t.ndim, "dim")
    return gather_elements_p.bind(t, _index("gather_elements", "index", index, t), dim=d)


def gather_d(x: Tensor, dim: int, index: Any) -> Tensor:
    """MindSpore's GatherD: the same as :func:`gather_elements`."""
    t = _tensor("gather_d", "x", x)
    d = check_axis("gather_d", dim, t.ndim, "dim")
    return gather_elements_p.bind(t, _index("gather_d", "index", index, t), dim=d)
