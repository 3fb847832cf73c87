"""``FixedSparseAttention``: the "fixed" pattern of Sparse Transformers (Child et al. 2019),
with MindSpore 1.8's signature.

Query ``i`` of head ``h`` may attend key ``j`` when both are in the same block of
``block_size`` positions (local), or when ``j`` is one of the summary columns of its block
(global): with ``c = block_size // num_different_global_patterns`` and ``p = h mod
num_different_global_patterns``, the columns ``block_size - (p + 1) c <= j mod block_size <
block_size - p c``, so different heads read different sub-blocks. ``attention_mask``
(batch, seq, seq; 1 = allowed, e.g. causal) is applied on top.

Differences from 1.8: the scores are computed densely and masked (1.8 runs fused sparse
kernels on Ascend), and ``seq_length``/``block_size`` are not restricted to 1024/2048 and 64
(any ``block_size`` dividing ``seq_length``).
"""

from __future__ import annotations

import math

import numpy as np

from sporeling.core import Tensor, nn, ops
from sporeling.core import dtype as mstype

from ._checks import multiple, positive_int
from .config import OpParallelConfig, default_dpmp_config

__all__ = ["FixedSparseAttention", "fixed_sparse_pattern"]


def fixed_sparse_pattern(
    num_heads: int, seq_length: int, block_size: int, patterns: int
) -> np.ndarray:
    """(heads, seq, seq) boolean: where the fixed pattern lets query i read key j."""
    pos = np.arange(seq_length)
    local = (pos[:, None] // block_size) == (pos[None, :] // block_size)
    c = block_size // patterns
    col = pos % block_size
    out = np.empty((num_heads, seq_length, seq_length), bool)
    for h in range(num_heads):
        p = h % patterns
        glob = (col >= block_size - (p + 1) * c) & (col < block_size - p * c)
        out[h] = local | glob[None, :]
    return out


class FixedSparseAttention(nn.Cell):
    """``construct(q, k, v, attention_mask)``: q/k/v (batch, seq, heads * size_per_head),
    attention_mask (batch, seq, seq) -> (batch, seq, heads * size_per_head)."""

    def __init__(
        self,
        batch_size: int | None,
        num_heads: int,
        size_per_head: int,
        block_size: int,
        seq_length: int = 1024,
        num_different_global_patterns: int = 4,
        parallel_config: OpParallelConfig = default_dpmp_config,
    ) -> None:
        super().__init__()
        cls = "FixedSparseAttention"
        if batch_size is not None:
            positive_int(cls, "batch_size", batch_size)
        self.batch_size = batch_size
        self.num_heads = positive_int(cls, "num_heads", num_heads)
        self.size_per_head = positive_int(cls, "size_per_head", size_per_head)
        self.block_size = positive_int(cls, "block_size", block_size)
        self.seq_length = positive_int(cls, "seq_length", seq_length)
        self.patterns = positive_int(
            cls, "num_different_global_patterns", num_different_global_patterns
        )
        multiple(cls, "seq_length", seq_length, "block_size", block_size)
        multiple(
            cls,
            "block_size",
            block_size,
            "num_different_global_patterns",
            num_different_global_patterns,
        )
        multiple(
            cls,
            "num_heads",
            num_heads,
            "parallel_config.model_parallel",
            parallel_config.model_parallel,
        )
        self.parallel_config = parallel_config
        pattern = fixed_sparse_pattern(
            num_heads, seq_length, block_size, num_different_global_patterns
        )
        self.pattern = Tensor(pattern.astype(np.float32)[None])  # (1, heads, seq, seq)

    def construct(self, q: Tensor, k: Tensor, v: Tensor, attention_mask: Tensor) -> Tensor:
        hidden = self.num_heads * self.size_per_head
        expected = (self.seq_length, hidden)
        for name, t in (("q", q), ("k", k), ("v", v)):
            if (
                t.ndim != 3
                or t.shape[1:] != expected
                or (self.batch_size and t.shape[0] != self.batch_size)
            ):
                raise ValueError(
                    f"For 'FixedSparseAttention', the shape of the input '{name}' must be "
                    f"[{self.batch_size or 'batch_size'}, {self.seq_length}, {hidden}], but got "
                    f"{list(t.shape)}."
                )
        b = q.shape[0]
        nh, d = self.num_heads, self.size_per_head

        def heads(t: Tensor) -> Tensor:
            return ops.transpose(ops.reshape(t, (b, self.seq_length, nh, d)), (0, 2, 1, 3))

        qh, kh, vh = heads(q), heads(k), heads(v)
        score = ops.matmul(qh, ops.transpose(kh, (0, 1, 3, 2))) * (1.0 / math.sqrt(d))
        sdt = mstype.float64 if q.dtype == mstype.float64 else mstype.float32
        score = ops.cast(score, sdt)
        allowed = self.pattern * ops.expand_dims(ops.cast(attention_mask, sdt), 1)
        score = score + (1.0 - ops.cast(allowed, sdt)) * -10000.0
        probs = ops.cast(ops.softmax(score, -1), q.dtype)
        ctx = ops.matmul(probs, vh)
        return ops.reshape(ops.transpose(ctx, (0, 2, 1, 3)), (b, self.seq_length, hidden))
