"""Tensor (model) parallel building blocks: sharded Dense, Embedding, EmbeddingLookup and
multi-head attention over a model-parallel communication group.

Every layer here is the sharded twin of a dense layer of :mod:`sporeling.core.nn`: built
with the same arguments and the same seed on every rank, it holds the rank's slice of the
dense layer's parameters (they are initialised at full size, then sliced, so the assembled
shards equal the dense layer's parameters) and computes the same function, inserting the
collectives Megatron-LM's "regions" need (Shoeybi et al., 2019):

=====================  ======================  ==========================
region op              forward                 backward
=====================  ======================  ==========================
:func:`copy_to_mp`      identity                all-reduce (sum)
:func:`reduce_from_mp`  all-reduce (sum)        identity
:func:`scatter_to_mp`   keep own slice of axis  all-gather along axis
:func:`gather_from_mp`  all-gather along axis   keep own slice of axis
=====================  ======================  ==========================

They assume what tensor parallelism assumes: tensors outside the layers are replicated over
the model-parallel group, so every rank computes the same loss; under that assumption the
gradients of the shards are exactly the dense gradients' slices.

Layers (``group=None`` is the world group; without :func:`communication.init` every layer
runs as its dense twin on one rank):

* :class:`ColumnParallelDense` — ``weight`` split on its output rows; ``gather_output``.
* :class:`RowParallelDense` — ``weight`` split on its input columns; ``input_is_parallel``.
* :class:`VocabParallelEmbedding` — ``nn.Embedding`` with the vocabulary split by rows.
* :class:`ParallelEmbeddingLookup` — ``nn.EmbeddingLookup`` with MindSpore's ``slice_mode``:
  ``batch_slice``, ``table_row_slice``, ``table_column_slice``, ``field_slice``.
* :class:`ParallelMultiheadAttention` — ``nn.MultiheadAttention`` with its heads split.

Each layer has ``tensor_parallel_axes``: ``{parameter attribute: sharded axis}`` (or
``(axis, blocks)`` when each of ``blocks`` equal blocks of the axis is split, as the q/k/v
blocks of attention's ``in_proj_weight``), which
:mod:`sporeling.core.parallel.checkpoint` uses as the model-parallel layout, and a
``from_dense(layer, ...)`` constructor that slices an existing dense layer.


One module per layer type: :mod:`.dense`, :mod:`.embedding`, :mod:`.attention`; the
region ops in :mod:`.regions`.
"""

from .attention import *  # noqa: F403
from .attention import __all__ as _attention
from .dense import *  # noqa: F403
from .dense import __all__ as _dense
from .embedding import *  # noqa: F403
from .embedding import __all__ as _embedding
from .regions import *  # noqa: F403
from .regions import __all__ as _regions
from .regions import _collective  # noqa: F401  (parallel.shard uses it)

__all__ = [*_regions, *_dense, *_embedding, *_attention]
