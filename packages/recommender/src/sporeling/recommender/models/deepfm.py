"""DeepFM (Guo et al. 2017, MindSpore model zoo ``deepfm``) on Criteo-style inputs.

logit = first order + FM second order + deep: the first order is ``EmbeddingLookup(vocab, 1)``
times the values, summed, plus a bias (named ``wide_*``, so ``TrainStepWrap`` gives it FTRL
as it does Wide&Deep's wide part); the factors ``v = EmbeddingLookup(vocab, k)`` times the
values feed both the FM term ``1/2 sum_k ((sum_f v)^2 - sum_f v^2)`` and a ReLU MLP.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sporeling.core import Parameter, Tensor, nn, ops

from ._layers import DeepTower, check_positive_int, embedding
from .scale_rows import scale_rows

__all__ = ["DeepFMModel", "fm_interaction"]


def fm_interaction(v: Tensor) -> Tensor:
    """Factorization-machine pairwise term of ``v`` (B, F, k): ``sum_{i<j} <v_i, v_j>``
    computed as ``1/2 sum_k ((sum_f v)^2 - sum_f v^2)``, shape (B, 1)."""
    square_of_sum = ops.square(ops.reduce_sum(v, 1))
    sum_of_square = ops.reduce_sum(ops.square(v), 1)
    return 0.5 * ops.reduce_sum(square_of_sum - sum_of_square, 1, keep_dims=True)


class DeepFMModel(nn.Cell):
    """``DeepFMModel(vocab_size, field_size=39, emb_dim=16, deep_layer_dims=(400, 400, 400),
    sparse=True, vocab_cache_size=0)``; ``construct(ids, vals) -> (logits, factor table)``."""

    def __init__(
        self,
        vocab_size: int,
        field_size: int = 39,
        emb_dim: int = 16,
        deep_layer_dims: tuple[int, ...] = (400, 400, 400),
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
        dims = tuple(check_positive_int(cls, "deep_layer_dims", d) for d in deep_layer_dims)
        self.sparse = bool(sparse)
        opts = (sparse, vocab_cache_size, init_sigma)
        self.wide_embeddinglookup = embedding("wide", vocab_size, 1, *opts, **cache_options)
        self.deep_embeddinglookup = embedding("deep", vocab_size, emb_dim, *opts, **cache_options)
        self.wide_b = Parameter(np.zeros(1, np.float32), name="wide_b")
        self.deep = DeepTower(field_size * emb_dim, dims, init_sigma)

    @property
    def embedding_table(self) -> Parameter:
        return self.deep_embeddinglookup.embedding_table

    table_names = ("wide_embeddinglookup", "deep_embeddinglookup")

    def construct(self, id_hldr: Tensor, wt_hldr: Tensor) -> tuple[Tensor, Parameter]:
        first = self.wide_embeddinglookup(id_hldr)
        factors = self.deep_embeddinglookup(id_hldr)
        return self.head(first, factors, wt_hldr), self.embedding_table

    def head(self, first_rows: Tensor, factor_rows: Tensor, wt_hldr: Tensor) -> Tensor:
        """The logits from the looked-up rows (``(B, F, 1)``, ``(B, F, emb_dim)``)."""
        mask = ops.reshape(wt_hldr, (-1, self.field_size, 1))
        first = ops.reshape(ops.reduce_sum(first_rows * mask, 1) + self.wide_b, (-1, 1))
        v = scale_rows(factor_rows, mask)
        deep = self.deep(ops.reshape(v, (-1, self.field_size * self.emb_dim)))
        return first + fm_interaction(v) + deep
