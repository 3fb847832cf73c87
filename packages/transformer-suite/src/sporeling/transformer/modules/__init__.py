"""``sporeling.transformer.modules``: MindSpore 1.8's ``mindspore.nn.transformer`` API."""

from .attention import AttentionMask, MultiHeadAttention, add_flags_recursive
from .config import (
    EmbeddingOpParallelConfig,
    MoEConfig,
    OpParallelConfig,
    TransformerOpParallelConfig,
    TransformerRecomputeConfig,
    check_config,
    default_dpmp_config,
    default_embedding_parallel_config,
    default_lambda_func,
    default_moe_config,
    default_transformer_config,
)
from .embedding import VocabEmbedding
from .ffn import FeedForward
from .loss import CrossEntropyLoss
from .moe import MoE
from .sparse_attention import FixedSparseAttention
from .transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ = [
    "AttentionMask",
    "VocabEmbedding",
    "MultiHeadAttention",
    "FeedForward",
    "TransformerEncoder",
    "TransformerDecoder",
    "TransformerEncoderLayer",
    "TransformerDecoderLayer",
    "Transformer",
    "TransformerOpParallelConfig",
    "EmbeddingOpParallelConfig",
    "TransformerRecomputeConfig",
    "OpParallelConfig",
    "MoEConfig",
    "MoE",
    "FixedSparseAttention",
    "CrossEntropyLoss",
    "add_flags_recursive",
    "check_config",
    "default_dpmp_config",
    "default_embedding_parallel_config",
    "default_lambda_func",
    "default_moe_config",
    "default_transformer_config",
]
