"""GPT as the 1.8 transformer suite builds it: ``VocabEmbedding`` for tokens and positions,
an encoder-only ``Transformer`` with the causal ``AttentionMask``, a final layer norm, and
a head tied to the token table. ``GPTWithLoss`` shifts the tokens by one and applies the
masked ``CrossEntropyLoss``.

``construct`` has two phases when ``use_past`` is on (switched with
``add_flags_recursive(model, is_first_iteration=...)``): the first takes the padded prompts
``(batch, seq_length)`` and their ``batch_valid_length``; later ones take one token per row
``(batch, 1)`` with its position ``input_position`` (batch, 1). Beyond 1.8, the first phase
also takes a shorter window ``(batch, s <= seq_length)`` with ``input_position`` and
``batch_valid_length`` (generation runs the prompt pass over the longest prompt rounded up,
not over all ``seq_length`` positions); the caches it fills still span ``seq_length``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np

from sporeling.core import Tensor, nn, ops
from sporeling.core import dtype as mstype

from ..modules import (
    AttentionMask,
    CrossEntropyLoss,
    MoEConfig,
    Transformer,
    TransformerOpParallelConfig,
    VocabEmbedding,
)
from ..modules.layers import LayerNorm

__all__ = ["GPTConfig", "GPTModel", "GPT", "GPTWithLoss", "DTYPES"]

DTYPES = {
    "float16": mstype.float16,
    "float32": mstype.float32,
    "float64": mstype.float64,
    "bfloat16": mstype.bfloat16,
}


@dataclass
class GPTConfig:
    """The ``model`` section of a GPT YAML config (1.8 suite names)."""

    batch_size: int | None = None
    seq_length: int = 1024
    vocab_size: int = 50257
    embedding_size: int = 768
    num_layers: int = 12
    num_heads: int = 12
    expand_ratio: int = 4
    hidden_act: str = "gelu"
    dropout_rate: float = 0.1
    compute_dtype: str = "float32"
    layernorm_dtype: str = "float32"
    softmax_dtype: str = "float32"
    param_init_type: str = "float32"
    use_past: bool = False
    post_layernorm_residual: bool = False
    eos_token: int = -1  # token id excluded from the loss (-1: none)
    init_std: float = 0.02
    # 0: the blocks' dense weights keep 1.8's "normal" (N(0, 0.01)); > 0: N(0, dense_init_std)
    dense_init_std: float = 0.0
    # GPT-2 / nanoGPT: the residual projections (attention and feed-forward outputs) drawn with
    # std / sqrt(2 * num_layers), so the residual stream's variance does not grow with depth
    scaled_residual_init: bool = False
    # False (nanoGPT's ``bias=False``): the blocks' and final layer norm's biases stay zero and
    # frozen, so the model has nanoGPT's parameters (1.8's layers always build biases)
    bias: bool = True
    parallel_config: TransformerOpParallelConfig = field(
        default_factory=TransformerOpParallelConfig
    )
    moe_config: MoEConfig = field(default_factory=MoEConfig)

    @classmethod
    def from_dict(
        cls,
        d: dict[str, Any],
        parallel: dict[str, Any] | None = None,
        moe: dict[str, Any] | None = None,
    ) -> GPTConfig:
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"GPTConfig: unknown model keys {unknown}; known: {sorted(names)}")
        kw = dict(d)
        if parallel:
            kw["parallel_config"] = TransformerOpParallelConfig.from_dict(parallel)
        if moe:
            kw["moe_config"] = MoEConfig(**moe)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in asdict(self).items() if k not in ("parallel_config", "moe_config")}
        d["parallel_config"] = self.parallel_config.to_dict()
        d["moe_config"] = self.moe_config.to_dict()
        return d

    def dtype(self, name: str) -> Any:
        value = getattr(self, name)
        if value not in DTYPES:
            raise ValueError(f"GPTConfig: '{name}' must be one of {sorted(DTYPES)}, got {value!r}")
        return DTYPES[value]


class GPTModel(nn.Cell):
    """The backbone: ``construct(input_ids, input_mask, input_position=None, init_reset=True,
    batch_valid_length=None) -> (hidden, layer_present, embedding_table)``."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = config
        c = config
        pit = c.dtype("param_init_type")
        init = _normal(c.init_std)
        self.word_embedding = VocabEmbedding(
            c.vocab_size, c.embedding_size, c.parallel_config.embedding_dp_mp_config, init, pit
        )
        self.position_embedding = VocabEmbedding(
            c.seq_length, c.embedding_size, c.parallel_config.embedding_dp_mp_config, init, pit
        )
        self.transformer = Transformer(
            hidden_size=c.embedding_size,
            batch_size=c.batch_size,
            ffn_hidden_size=c.embedding_size * c.expand_ratio,
            src_seq_length=c.seq_length,
            tgt_seq_length=c.seq_length,
            encoder_layers=c.num_layers,
            decoder_layers=0,
            num_heads=c.num_heads,
            attention_dropout_rate=c.dropout_rate,
            hidden_dropout_rate=c.dropout_rate,
            hidden_act=c.hidden_act,
            post_layernorm_residual=c.post_layernorm_residual,
            layernorm_compute_type=c.dtype("layernorm_dtype"),
            softmax_compute_type=c.dtype("softmax_dtype"),
            param_init_type=pit,
            use_past=c.use_past,
            moe_config=c.moe_config,
            parallel_config=c.parallel_config,
            compute_dtype=c.dtype("compute_dtype"),
        )
        if c.dense_init_std > 0 or c.scaled_residual_init:
            _reinit_dense(self.transformer, c)
        self.layernorm = LayerNorm((c.embedding_size,), param_init_type=c.dtype("layernorm_dtype"))
        if not c.bias:
            _freeze_biases(self.transformer)
            _freeze_biases(self.layernorm)
        self.dropout = nn.Dropout(keep_prob=1.0 - c.dropout_rate)
        self.get_attention_mask = AttentionMask(c.seq_length)
        self.positions = Tensor(np.arange(c.seq_length, dtype=np.int32)[None])
        self.range = Tensor(np.arange(c.seq_length, dtype=np.int32)[None, None])
        self.is_first_iteration = True
        self.use_moe = c.moe_config.expert_num > 1

    def construct(
        self,
        input_ids: Tensor,
        input_mask: Tensor | None = None,
        input_position: Tensor | None = None,
        init_reset: bool = True,
        batch_valid_length: Tensor | None = None,
    ) -> tuple[Any, ...]:
        b, s = input_ids.shape
        if input_position is None:
            if s != self.config.seq_length:
                raise ValueError(
                    f"GPTModel: 'input_ids' must be (batch, seq_length={self.config.seq_length}) "
                    f"without 'input_position', but got {list(input_ids.shape)}."
                )
            input_position = ops.tile(self.positions, (b, 1))
        tok, table = self.word_embedding(input_ids)
        pos, _ = self.position_embedding(input_position)
        x = self.dropout(tok + pos)
        if self.config.use_past and not self.is_first_iteration:
            # one new token per row: it sees every cached position up to its own
            mask = ops.cast(
                ops.less_equal(self.range, ops.reshape(input_position, (-1, 1, 1))), mstype.float32
            )
        else:
            if input_mask is None:
                input_mask = ops.ones((b, s), mstype.float32)
            if s < self.config.seq_length and self.config.use_past:
                mask = self._prompt_mask(input_mask)
            else:
                mask = self.get_attention_mask(input_mask)
        res = self.transformer(
            x, mask, init_reset=init_reset, batch_valid_length=batch_valid_length
        )
        hidden = self.layernorm(res[0])
        if self.use_moe:
            return hidden, res[1], table, res[3]
        return hidden, res[1], table

    def _prompt_mask(self, input_mask: Tensor) -> Tensor:
        """``AttentionMask``'s causal mask for a prompt pass shorter than the window (the
        cache still spans the window): ``(batch, s, s)`` from the ``(batch, s)`` mask."""
        b, s = input_mask.shape
        m = ops.cast(ops.not_equal(input_mask, 0), mstype.float32)
        tril = self.get_attention_mask.lower_triangle_mask[:s, :s]
        return ops.reshape(m, (b, s, 1)) * ops.reshape(m, (b, 1, s)) * ops.expand_dims(tril, 0)


def _reinit_dense(transformer: nn.Cell, c: GPTConfig) -> None:
    """Redraw the blocks' matrices with nanoGPT's scheme (see ``GPTConfig``)."""
    from sporeling.core.initializer import initializer

    std = c.dense_init_std if c.dense_init_std > 0 else 0.01
    for p in transformer.trainable_params():
        if len(p.shape) != 2 or not p.name.endswith("weight"):
            continue
        sigma = std
        if c.scaled_residual_init and p.name.endswith("projection.weight"):
            sigma = std / (2.0 * c.num_layers) ** 0.5
        p.set_data(initializer(_normal(sigma), p.shape, p.dtype))


def _freeze_biases(cell: nn.Cell) -> None:
    """Zero the dense biases and layer-norm betas and take them out of training."""
    for p in cell.get_parameters():
        if p.name.endswith(("bias", "beta")):
            p.set_data(Tensor(np.zeros(p.shape, p.asnumpy().dtype)))
            p.requires_grad = False


def _normal(std: float) -> Any:
    from sporeling.core.initializer import Normal

    return Normal(sigma=std)


class GPT(nn.Cell):
    """Backbone plus the tied head: logits ``(batch * seq, vocab)`` (float32)."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = config
        self.backbone = GPTModel(config)

    def construct(
        self,
        input_ids: Tensor,
        input_mask: Tensor | None = None,
        input_position: Tensor | None = None,
        init_reset: bool = True,
        batch_valid_length: Tensor | None = None,
    ) -> Any:
        out = self.backbone(input_ids, input_mask, input_position, init_reset, batch_valid_length)
        logits = self.head(out[0], out[2])
        if self.backbone.use_moe:
            return logits, out[3]
        return logits

    def head(self, hidden: Tensor, table: Tensor) -> Tensor:
        """The tied head: logits ``(rows, vocab)`` of hidden states ``(..., embedding)``
        (generation applies it to each row's last position only)."""
        h = ops.reshape(hidden, (-1, self.config.embedding_size))
        return ops.matmul(ops.cast(h, table.dtype), ops.transpose(table, (1, 0)))


class GPTWithLoss(nn.Cell):
    """``construct(input_ids)`` with ``input_ids`` (batch, seq_length + 1): predicts each next
    token; positions holding ``eos_token`` are left out of the loss (1.8 suite behaviour)."""

    def __init__(self, network: GPT, loss: CrossEntropyLoss | None = None) -> None:
        super().__init__(auto_prefix=False)  # parameter names stay the GPT's (as in 1.8)
        self.network = network
        self.loss = loss or CrossEntropyLoss(network.config.parallel_config.dp_mp_config)
        self.eos_token = network.config.eos_token

    def construct(self, input_ids: Tensor) -> Tensor:
        tokens = input_ids[:, :-1]
        labels = ops.reshape(input_ids[:, 1:], (-1,))
        if self.eos_token >= 0:
            input_mask = ops.cast(ops.not_equal(tokens, self.eos_token), mstype.float32)
        else:
            input_mask = ops.ones(tokens.shape, mstype.float32)
        out = self.network(tokens, input_mask)
        logits = out[0] if isinstance(out, tuple) else out
        loss = self.loss(logits, labels, ops.reshape(input_mask, (-1,)))
        if isinstance(out, tuple):
            loss = loss + out[1]
        return loss
