"""``WideDeepModel`` as in MindSpore's model zoo / Recommender (``src/wide_and_deep.py``).

Wide: ``EmbeddingLookup(vocab, 1)`` times the weight mask, summed over fields, plus the bias
``wide_b``. Deep: ``EmbeddingLookup(vocab, emb_dim)`` times the mask, flattened to
``field_size * emb_dim``, through ReLU layers into one unit. The logit is wide + deep; the
model also returns the deep table, on which :class:`~sporeling.recommender.train.NetWithLossClass`
puts its L2 term. Parameter names keep ``wide`` in the wide part's names, which is how the
train step splits FTRL (wide) from Adam (deep).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sporeling.core import Parameter, Tensor, nn, ops

from ._layers import DeepTower, check_positive_int, embedding
from .scale_rows import scale_rows

__all__ = ["WideDeepModel"]


class WideDeepModel(nn.Cell):
    """``WideDeepModel(vocab_size, field_size=39, emb_dim=80, deep_layer_dims=(1024, 512,
    256, 128), sparse=True, vocab_cache_size=0, init_sigma=0.01)``;
    ``construct(feat_ids (B, F) int32, feat_vals (B, F) float32) -> (logits (B, 1), table)``.

    ``sparse=True`` (host lookups, row-sparse gradients for FTRL/LazyAdam) is MindSpore's
    ``host_device_mix``/parameter-server form; ``sparse=False`` gives dense table gradients
    (Adam, and the L2 term on the whole deep table). Ids outside ``[0, vocab_size)`` look up
    zero rows, as in MindSpore.
    """

    def __init__(
        self,
        vocab_size: int,
        field_size: int = 39,
        emb_dim: int = 80,
        deep_layer_dims: tuple[int, ...] = (1024, 512, 256, 128),
        sparse: bool = True,
        vocab_cache_size: int = 0,
        init_sigma: float = 0.01,
        **cache_options: Any,
    ) -> None:
        super().__init__()
        cls = type(self).__name__
        self.vocab_size = check_positive_int(cls, "vocab_size", vocab_size)
        self.field_size = check_positive_int(cls, "field_size", field_size)
        self.emb_dim = check_positive_int(cls, "emb_dim", emb_dim)
        self.deep_layer_dims = tuple(
            check_positive_int(cls, "deep_layer_dims", d) for d in deep_layer_dims
        )
        self.sparse = bool(sparse)
        self.wide_embeddinglookup = embedding(
            "wide", vocab_size, 1, sparse, vocab_cache_size, init_sigma, **cache_options
        )
        self.deep_embeddinglookup = embedding(
            "deep", vocab_size, emb_dim, sparse, vocab_cache_size, init_sigma, **cache_options
        )
        self.wide_b = Parameter(np.zeros(1, np.float32), name="wide_b")
        self.deep = DeepTower(field_size * emb_dim, self.deep_layer_dims, init_sigma)

    @property
    def embedding_table(self) -> Parameter:
        return self.deep_embeddinglookup.embedding_table

    table_names = ("wide_embeddinglookup", "deep_embeddinglookup")  # what head() takes

    def construct(self, id_hldr: Tensor, wt_hldr: Tensor) -> tuple[Tensor, Parameter]:
        wide_id_weight = self.wide_embeddinglookup(id_hldr)
        deep_id_embs = self.deep_embeddinglookup(id_hldr)
        return self.head(wide_id_weight, deep_id_embs, wt_hldr), self.embedding_table

    def head(self, wide_id_weight: Tensor, deep_id_embs: Tensor, wt_hldr: Tensor) -> Tensor:
        """The logits from the looked-up rows ``(B, F, 1)`` and ``(B, F, emb_dim)`` (what
        the sharded trainer calls after exchanging rows between ranks)."""
        mask = ops.reshape(wt_hldr, (-1, self.field_size, 1))
        wx = wide_id_weight * mask
        wide_out = ops.reshape(ops.reduce_sum(wx, 1) + self.wide_b, (-1, 1))
        vx = scale_rows(deep_id_embs, mask)
        deep_in = ops.reshape(vx, (-1, self.field_size * self.emb_dim))
        return wide_out + self.deep(deep_in)
