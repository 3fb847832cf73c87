"""``VocabEmbedding``: a lookup into ``embedding_table`` that also returns the table (GPT
ties its output projection to it)."""

from __future__ import annotations

from typing import Any

from sporeling.core import Tensor, nn, ops
from sporeling.core import dtype as mstype

from ._checks import positive_int
from .config import EmbeddingOpParallelConfig, default_embedding_parallel_config
from .layers import make_param

__all__ = ["VocabEmbedding"]


class VocabEmbedding(nn.Cell):
    """``construct(input_ids) -> (embeddings, embedding_table)``; with ``vocab_emb_dp=False``
    the table's rows are split ``model_parallel`` ways, so ``vocab_size`` must divide."""

    def __init__(
        self,
        vocab_size: int,
        embedding_size: int,
        parallel_config: EmbeddingOpParallelConfig = default_embedding_parallel_config,
        param_init: Any = "normal",
        param_init_type: Any = mstype.float32,
    ) -> None:
        super().__init__()
        self.vocab_size = positive_int("VocabEmbedding", "vocab_size", vocab_size)
        self.embedding_size = positive_int("VocabEmbedding", "embedding_size", embedding_size)
        if not isinstance(parallel_config, EmbeddingOpParallelConfig):
            raise TypeError(
                "For 'VocabEmbedding', the argument 'parallel_config' must be an "
                "EmbeddingOpParallelConfig, "
                f"but got {type(parallel_config).__name__}."
            )
        if not parallel_config.vocab_emb_dp and vocab_size % parallel_config.model_parallel != 0:
            raise ValueError(
                f"The vocab size of the embedding {vocab_size} must be a multiple of "
                f"parallel_config.model_parallel {parallel_config.model_parallel}."
            )
        self.parallel_config = parallel_config
        self.embedding_table = make_param(
            param_init, (vocab_size, embedding_size), param_init_type, "embedding_table"
        )

    def construct(self, input_ids: Tensor) -> tuple[Tensor, Tensor]:
        if input_ids.dtype.category == 2:
            raise TypeError(
                "For 'VocabEmbedding', 'input_ids' must be an int tensor, but got "
                f"{input_ids.dtype}."
            )
        return ops.gather(self.embedding_table, input_ids, 0), self.embedding_table
