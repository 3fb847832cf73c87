"""DCN-v2 (Wang et al. 2021, "DCN V2: Improved Deep & Cross Network"), stacked form, on
Criteo-style inputs.

``x0`` = the embeddings of the 39 fields times their values, flattened (B, F * k); each cross
layer computes ``x_{l+1} = x0 * (W_l x_l + b_l) + x_l`` with a full-rank ``W_l`` (d x d); the
cross output goes through a ReLU MLP into one unit. No wide part: ``TrainStepWrap`` then runs
Adam/LazyAdam alone.
"""

from __future__ import annotations

from typing import Any

from sporeling.core import Parameter, Tensor, nn, ops
from sporeling.core.initializer import Normal

from ._layers import DeepTower, check_positive_int, embedding
from .scale_rows import scale_rows

__all__ = ["DCNv2Model", "CrossLayer"]


class CrossLayer(nn.Cell):
    """``x0 * (W x + b) + x`` (one DCN-v2 cross layer, full-rank W of shape (d, d))."""

    def __init__(self, dim: int, init_sigma: float = 0.01) -> None:
        super().__init__()
        self.dense = nn.Dense(dim, dim, Normal(init_sigma), "zeros")

    def construct(self, x0: Tensor, x: Tensor) -> Tensor:
        return x0 * self.dense(x) + x


class DCNv2Model(nn.Cell):
    """``DCNv2Model(vocab_size, field_size=39, emb_dim=16, num_cross_layers=3,
    deep_layer_dims=(512, 256), sparse=True, vocab_cache_size=0)``;
    ``construct(ids, vals) -> (logits, table)``."""

    def __init__(
        self,
        vocab_size: int,
        field_size: int = 39,
        emb_dim: int = 16,
        deep_layer_dims: tuple[int, ...] = (512, 256),
        sparse: bool = True,
        vocab_cache_size: int = 0,
        init_sigma: float = 0.01,
        num_cross_layers: int = 3,
        **cache_options: Any,
    ) -> None:
        super().__init__()
        cls = type(self).__name__
        self.vocab_size = check_positive_int(cls, "vocab_size", vocab_size)
        self.field_size = check_positive_int(cls, "field_size", field_size)
        self.emb_dim = check_positive_int(cls, "emb_dim", emb_dim)
        self.num_cross_layers = check_positive_int(cls, "num_cross_layers", num_cross_layers)
        dims = tuple(check_positive_int(cls, "deep_layer_dims", d) for d in deep_layer_dims)
        self.sparse = bool(sparse)
        self.deep_embeddinglookup = embedding(
            "deep", vocab_size, emb_dim, sparse, vocab_cache_size, init_sigma, **cache_options
        )
        d = field_size * emb_dim
        self.cross = nn.CellList([CrossLayer(d, init_sigma) for _ in range(num_cross_layers)])
        self.deep = DeepTower(d, dims, init_sigma)

    @property
    def embedding_table(self) -> Parameter:
        return self.deep_embeddinglookup.embedding_table

    table_names = ("deep_embeddinglookup",)

    def construct(self, id_hldr: Tensor, wt_hldr: Tensor) -> tuple[Tensor, Parameter]:
        return self.head(self.deep_embeddinglookup(id_hldr), wt_hldr), self.embedding_table

    def head(self, rows: Tensor, wt_hldr: Tensor) -> Tensor:
        """The logits from the looked-up rows ``(B, F, emb_dim)``."""
        mask = ops.reshape(wt_hldr, (-1, self.field_size, 1))
        x0 = ops.reshape(scale_rows(rows, mask), (-1, self.field_size * self.emb_dim))
        x = x0
        for layer in self.cross:
            x = layer(x0, x)
        return self.deep(x)
