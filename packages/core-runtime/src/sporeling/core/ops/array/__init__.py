"""Array ops (MindSpore 1.8 names): creation, reshaping and movement, diagonals, masks,
selection (top-k, sort, unique), type conversion and clipping.

Most ops are compositions of the core primitives (reshape, broadcast, transpose, getitem and
setitem with integer index tensors, select), so their gradients are the exact vjps of those
movements. Primitives are added where an op needs its own kernel (``top_k`` has a Numba CPU
kernel; ``sort``, ``reverse_sequence`` and ``population_count`` run one array-module call).

Ops whose output shape depends on the data (``nonzero``, ``unique*``, ``masked_select``)
read their input on the host and cannot be traced into a graph.
"""

from .clip import clip_by_global_norm, clip_by_value
from .conversion import (
    dyn_shape,
    rank,
    scalar_cast,
    scalar_to_array,
    scalar_to_tensor,
    shape,
    size,
    tuple_to_array,
)
from .creation import arange, eye, fill, fills, linspace, narrow, ones, range, zeros
from .creation import arange_p as arange_p
from .creation import eye_p as eye_p
from .creation import linspace_p as linspace_p
from .diagonal import (
    diag,
    matrix_band_part,
    matrix_diag,
    matrix_diag_part,
    matrix_set_diag,
    tril,
    triu,
)
from .masking import index_fill, masked_fill, masked_select, nonzero, one_hot, sequence_mask, where
from .movement import (
    batch_to_space_nd,
    expand_dims,
    flatten,
    flip,
    meshgrid,
    repeat_elements,
    reverse,
    reverse_sequence,
    roll,
    slice,
    space_to_batch_nd,
    squeeze,
    strided_slice,
    swapaxes,
    tile,
    unstack,
)
from .movement import reverse_sequence_p as reverse_sequence_p
from .selection import _top_k_any as _top_k_any
from .selection import (
    argsort,
    count_nonzero,
    intopk,
    population_count,
    sort,
    top_k,
    unique,
    unique_consecutive,
    unique_with_pad,
)
from .selection import population_count_p as population_count_p
from .selection import sort_p as sort_p
from .selection import top_k_p as top_k_p

__all__ = [
    # creation
    "eye",
    "fill",
    "fills",
    "ones",
    "zeros",
    "linspace",
    "range",
    "arange",
    "narrow",
    # reshaping and movement
    "unstack",
    "expand_dims",
    "squeeze",
    "tile",
    "flatten",
    "swapaxes",
    "repeat_elements",
    "flip",
    "reverse",
    "roll",
    "meshgrid",
    "slice",
    "strided_slice",
    "space_to_batch_nd",
    "batch_to_space_nd",
    "reverse_sequence",
    # masks and fills
    "masked_fill",
    "masked_select",
    "index_fill",
    "nonzero",
    "where",
    "one_hot",
    "sequence_mask",
    # diagonals and bands
    "diag",
    "matrix_diag",
    "matrix_diag_part",
    "matrix_set_diag",
    "matrix_band_part",
    "tril",
    "triu",
    # selection and counting
    "top_k",
    "intopk",
    "sort",
    "argsort",
    "unique",
    "unique_consecutive",
    "unique_with_pad",
    "population_count",
    "count_nonzero",
    # shapes and conversions
    "shape",
    "rank",
    "size",
    "dyn_shape",
    "scalar_cast",
    "scalar_to_array",
    "scalar_to_tensor",
    "tuple_to_array",
    # clipping
    "clip_by_value",
    "clip_by_global_norm",
]
