"""Gathers, scatters, unsorted segment reductions and the in-place Parameter updates.

Every op of the family reduces to *rows*: a tensor seen as ``(outer, rows, inner)`` and a
flat vector of row ids. A gather copies rows out (``gather`` along an axis, ``gather_nd``
along the leading ``M`` axes, ``gather_elements`` along single elements); a scatter
combines update rows in (``update/add/sub/mul/div/max/min``), in index order, so repeated
indices act like a sequential loop. On the CPU the row loops are the Numba kernels of
:mod:`sporeling.core.kernels.cpu.scatter`; the generic ``xp`` code (NumPy/CuPy) is the GPU
and reference path.

Indices are checked against the shape on every call; a bad one raises ``IndexError``
naming the op, the argument, the index and its position (kernels never see it).
``gather``, ``gather_nd`` and the ``*scatter*`` ops take indices in ``[0, n)``;
``gather_d``/``gather_elements``/``tensor_scatter_elements`` also take ``[-n, 0)``;
segment ops drop negative segment ids (MindSpore's rule).

In-place ops (``assign*``, ``scatter_*``, ``scatter_nd_*``, ``index_add``) change a
:class:`~sporeling.core.Parameter`'s array in place (on its own device) and return the
Parameter; like MindSpore's Parameter updates they are not differentiated. Given a plain
Tensor instead, they rebind it to the functional result, so a Tensor that autograd tracks
keeps correct gradients (the update is recorded like ``x[i] = v``).
"""

from ._common import SCATTER_OPS as SCATTER_OPS
from ._common import _scatter_rows as _scatter_rows
from ._common import _scatter_rows_xp as _scatter_rows_xp
from ._prims import gather_elements_p as gather_elements_p
from ._prims import gather_grad_p as gather_grad_p
from ._prims import gather_nd_p as gather_nd_p
from ._prims import gather_p as gather_p
from ._prims import tensor_scatter_elements_p as tensor_scatter_elements_p
from ._prims import tensor_scatter_p as tensor_scatter_p
from .gathers import gather, gather_d, gather_elements, gather_nd
from .inplace import (
    assign,
    assign_add,
    assign_sub,
    index_add,
    inplace_add,
    inplace_sub,
    inplace_update,
    scatter_add,
    scatter_div,
    scatter_max,
    scatter_min,
    scatter_mul,
    scatter_nd_add,
    scatter_nd_div,
    scatter_nd_max,
    scatter_nd_min,
    scatter_nd_mul,
    scatter_nd_sub,
    scatter_nd_update,
    scatter_sub,
    scatter_update,
)
from .segment import _segment_impl as _segment_impl
from .segment import segment_p as segment_p
from .segment import (
    unsorted_segment_max,
    unsorted_segment_min,
    unsorted_segment_prod,
    unsorted_segment_sum,
)
from .tensor_scatter import (
    scatter_nd,
    tensor_scatter_add,
    tensor_scatter_div,
    tensor_scatter_elements,
    tensor_scatter_max,
    tensor_scatter_min,
    tensor_scatter_mul,
    tensor_scatter_sub,
    tensor_scatter_update,
)

__all__ = [
    "gather",
    "gather_d",
    "gather_elements",
    "gather_nd",
    "scatter_nd",
    "tensor_scatter_add",
    "tensor_scatter_sub",
    "tensor_scatter_mul",
    "tensor_scatter_div",
    "tensor_scatter_max",
    "tensor_scatter_min",
    "tensor_scatter_update",
    "tensor_scatter_elements",
    "unsorted_segment_sum",
    "unsorted_segment_max",
    "unsorted_segment_min",
    "unsorted_segment_prod",
    "assign",
    "assign_add",
    "assign_sub",
    "index_add",
    "scatter_add",
    "scatter_sub",
    "scatter_mul",
    "scatter_div",
    "scatter_max",
    "scatter_min",
    "scatter_update",
    "scatter_nd_add",
    "scatter_nd_sub",
    "scatter_nd_mul",
    "scatter_nd_div",
    "scatter_nd_max",
    "scatter_nd_min",
    "scatter_nd_update",
    "inplace_add",
    "inplace_sub",
    "inplace_update",
]
