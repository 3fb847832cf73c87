"""Graph optimisation passes, run in order by :func:`optimize`.

Order: drop dead code; fold what is known at compile time; drop multiplications by ones
(which folding reveals); expand softmax / layer norm into their parts (only with fusion on);
sum slice gradients into one array; turn transposed products into products of transposes;
merge duplicates (folding first, so equal constants and the ops on them meet); drop what
merging left dead; give the backward its own copies of ``recompute()`` cells' values (after
merging, which would fold the copies back into the originals); fold biases into their
products (before fusion: a fused kernel would otherwise read the product and the bias and
store their sum again for the backward); fold ReLUs into the batch norms before them
(forward and gradient; fusion on); fuse elementwise chains (on the final, smallest
graph); then plan in-place writes (last, because fusion changes which buffers exist and when
they die).

Effects (``optimizer_step``, ``assign_inplace``) and random primitives are never removed,
merged, copied or moved across one another by any pass. A pass that replaces an equation
gives the new ones its ``remat``/``backward`` tags (``_util.tagged_like``).
"""

from __future__ import annotations

from ..graph import Graph
from .bias import fold_dense_bias
from .cse import common_subexpression_elimination
from .dce import dead_code_elimination
from .expand import expand_row_ops
from .fold import constant_folding
from .fusion import elementwise_fusion
from .norm_relu import fuse_norm_relu
from .products import transpose_products
from .remat import rematerialise
from .reuse import buffer_reuse
from .simplify import algebraic_simplification
from .slices import merge_slice_grads

__all__ = ["optimize", "PASSES"]

PASSES = [
    dead_code_elimination,
    constant_folding,
    algebraic_simplification,
    expand_row_ops,
    merge_slice_grads,
    transpose_products,
    common_subexpression_elimination,
    dead_code_elimination,
    rematerialise,
    fold_dense_bias,
    fuse_norm_relu,
    elementwise_fusion,
    buffer_reuse,
]


def optimize(graph: Graph) -> Graph:
    """Apply every pass of :data:`PASSES` in order."""
    for p in PASSES:
        graph = p(graph)
    return graph
