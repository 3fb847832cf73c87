"""T5-style encoder-decoder on the 1.8 ``TransformerEncoder``/``TransformerDecoder``: a shared
token table, learned absolute positions (the 1.8 blocks have no relative position bias), a
final layer norm per stack, and a head tied to the table (scaled by ``hidden_size ** -0.5``
as T5 does). The decoder takes ``use_past``: one pass over the start token fills its caches,
then one token per step; cross-attention reads the encoder output computed once.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from sporeling.core import Tensor, nn, ops
from sporeling.core import dtype as mstype

from ..modules import (
    CrossEntropyLoss,
    TransformerDecoder,
    TransformerEncoder,
    TransformerOpParallelConfig,
    VocabEmbedding,
    default_lambda_func,
)
from ..modules.layers import LayerNorm
from .gpt import DTYPES, _normal

__all__ = ["T5Config", "T5Model", "T5WithLoss"]


@dataclass
class T5Config:
    """The ``model`` section of a T5 run config."""

    vocab_size: int = 32128
    seq_length: int = 128  # encoder (source) length
    max_decode_length: int = 64  # decoder (target) length
    hidden_size: int = 512
    num_layers: int = 6
    num_decoder_layers: int | None = None
    num_heads: int = 8
    d_ff: int = 2048
    hidden_act: str = "relu"
    dropout_rate: float = 0.1
    compute_dtype: str = "float32"
    layernorm_dtype: str = "float32"
    softmax_dtype: str = "float32"
    param_init_type: str = "float32"
    use_past: bool = False
    init_std: float = 0.02
    pad_token_id: int = 0
    eos_token_id: int = 1
    decoder_start_token_id: int = 0

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> T5Config:
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"T5Config: unknown model keys {unknown}; known: {sorted(names)}")
        return cls(**d)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def dtype(self, name: str) -> Any:
        value = getattr(self, name)
        if value not in DTYPES:
            raise ValueError(f"T5Config: '{name}' must be one of {sorted(DTYPES)}, got {value!r}")
        return DTYPES[value]


def _both_stacks(total: int) -> Any:
    """1.8's ``_get_lambda_func(total_layer=...)``: the default per-layer rule with
    ``layers`` the encoder's and decoder's layers together (``offset``: the encoder's for
    the decoder's blocks)."""

    def fn(network: Any, layer_id: int, offset: int, parallel_config: Any, layers: int) -> None:
        default_lambda_func(network, layer_id, offset, parallel_config, total)

    return fn


class T5Model(nn.Cell):
    """``construct(source_ids, source_mask, target_ids, target_mask=None, input_position=None,
    init_reset=True, batch_valid_length=None, encoder_output=None)`` -> logits
    ``(batch * target_len, vocab)``; :meth:`encode` gives the encoder output alone."""

    def __init__(
        self, config: T5Config, parallel_config: TransformerOpParallelConfig | None = None
    ) -> None:
        super().__init__()
        self.config = c = config
        pc = parallel_config or TransformerOpParallelConfig()
        pit = c.dtype("param_init_type")
        init = _normal(c.init_std)
        emb_pc = pc.embedding_dp_mp_config
        self.embedding = VocabEmbedding(c.vocab_size, c.hidden_size, emb_pc, init, pit)
        self.encoder_position = VocabEmbedding(c.seq_length, c.hidden_size, emb_pc, init, pit)
        self.decoder_position = VocabEmbedding(
            c.max_decode_length, c.hidden_size, emb_pc, init, pit
        )
        common = dict(
            attention_dropout_rate=c.dropout_rate,
            hidden_dropout_rate=c.dropout_rate,
            layernorm_compute_type=c.dtype("layernorm_dtype"),
            softmax_compute_type=c.dtype("softmax_dtype"),
            param_init_type=pit,
            hidden_act=c.hidden_act,
            parallel_config=pc,
            compute_dtype=c.dtype("compute_dtype"),
        )
        dec_layers = c.num_decoder_layers or c.num_layers
        # 1.8's Transformer: one stage rule over both stacks (the decoder's layers counted
        # after the encoder's), so the encoder takes the first stages, the decoder the last
        both = _both_stacks(c.num_layers + dec_layers)
        self.encoder = TransformerEncoder(
            None, c.num_layers, c.hidden_size, c.d_ff, c.seq_length, c.num_heads,
            lambda_func=both, **common,
        )  # fmt: skip
        self.decoder = TransformerDecoder(
            dec_layers,
            None,
            c.hidden_size,
            c.d_ff,
            c.seq_length,
            c.max_decode_length,
            c.num_heads,
            use_past=c.use_past,
            lambda_func=both,
            offset=c.num_layers,
            **common,
        )
        self.encoder_layernorm = LayerNorm(
            (c.hidden_size,), param_init_type=c.dtype("layernorm_dtype")
        )
        self.decoder_layernorm = LayerNorm(
            (c.hidden_size,), param_init_type=c.dtype("layernorm_dtype")
        )
        self.dropout = nn.Dropout(keep_prob=1.0 - c.dropout_rate)
        self.enc_positions = Tensor(np.arange(c.seq_length, dtype=np.int32)[None])
        self.dec_positions = Tensor(np.arange(c.max_decode_length, dtype=np.int32)[None])
        self.dec_range = Tensor(np.arange(c.max_decode_length, dtype=np.int32)[None, None])
        self.causal = Tensor(np.tril(np.ones((c.max_decode_length,) * 2, np.float32))[None])
        self.is_first_iteration = True

    def encode(self, source_ids: Tensor, source_mask: Tensor) -> Tensor:
        b, s = source_ids.shape
        if s != self.config.seq_length:
            raise ValueError(
                f"T5Model: 'source_ids' must be (batch, seq_length={self.config.seq_length}), "
                f"but got {list(source_ids.shape)}."
            )
        tok, _ = self.embedding(source_ids)
        pos, _ = self.encoder_position(ops.tile(self.enc_positions, (b, 1)))
        x = self.dropout(tok + pos)
        m = ops.cast(source_mask, mstype.float32)
        mask = ops.tile(ops.reshape(m, (b, 1, s)), (1, s, 1))  # every query sees the real tokens
        out, _ = self.encoder(x, mask)
        return self.encoder_layernorm(out)

    def construct(
        self,
        source_ids: Tensor,
        source_mask: Tensor,
        target_ids: Tensor,
        target_mask: Tensor | None = None,
        input_position: Tensor | None = None,
        init_reset: bool = True,
        batch_valid_length: Tensor | None = None,
        encoder_output: Tensor | None = None,
    ) -> Tensor:
        c = self.config
        if encoder_output is None:
            encoder_output = self.encode(source_ids, source_mask)
        b, t = target_ids.shape
        s = c.seq_length
        incremental = c.use_past and not self.is_first_iteration
        if input_position is None:
            input_position = ops.tile(self.dec_positions[:, :t], (b, 1))
        tok, table = self.embedding(target_ids)
        pos, _ = self.decoder_position(input_position)
        y = self.dropout(tok + pos)
        src = ops.cast(source_mask, mstype.float32)
        if incremental:
            self_mask = ops.cast(
                ops.less_equal(self.dec_range, ops.reshape(input_position, (-1, 1, 1))),
                mstype.float32,
            )
            memory_mask = ops.reshape(src, (b, 1, s))
        else:
            if t != c.max_decode_length:
                raise ValueError(
                    "T5Model: 'target_ids' must be (batch, "
                    f"max_decode_length={c.max_decode_length}), "
                    f"but got {list(target_ids.shape)}."
                )
            tm = (
                ops.ones((b, t), mstype.float32)
                if target_mask is None
                else ops.cast(target_mask, mstype.float32)
            )
            self_mask = self.causal * ops.reshape(tm, (b, 1, t))
            memory_mask = ops.tile(ops.reshape(src, (b, 1, s)), (1, t, 1))
        out, _ = self.decoder(
            y, self_mask, encoder_output, memory_mask, init_reset, batch_valid_length
        )
        h = ops.reshape(self.decoder_layernorm(out), (-1, c.hidden_size))
        h = ops.cast(h, table.dtype) * (c.hidden_size**-0.5)
        return ops.matmul(h, ops.transpose(table, (1, 0)))


class T5WithLoss(nn.Cell):
    """``construct(source_ids, source_mask, target_ids)``: teacher forcing with the target
    shifted right behind ``decoder_start_token_id``; pad positions are out of the loss."""

    def __init__(self, network: T5Model) -> None:
        super().__init__(auto_prefix=False)
        self.network = network
        self.loss = CrossEntropyLoss()
        c = network.config
        self.start = Tensor(np.full((1, 1), c.decoder_start_token_id, np.int32))
        self.pad = c.pad_token_id

    def construct(self, source_ids: Tensor, source_mask: Tensor, target_ids: Tensor) -> Tensor:
        b = target_ids.shape[0]
        labels = ops.cast(target_ids, mstype.int32)
        dec_in = ops.concat((ops.tile(self.start, (b, 1)), labels[:, :-1]), 1)
        label_mask = ops.cast(ops.not_equal(labels, self.pad), mstype.float32)
        # the decoder sees the start token and every real target token before each label
        dec_mask = ops.concat((ops.ones((b, 1), mstype.float32), label_mask[:, :-1]), 1)
        logits = self.network(source_ids, source_mask, dec_in, dec_mask)
        return self.loss(logits, ops.reshape(labels, (-1,)), ops.reshape(label_mask, (-1,)))
