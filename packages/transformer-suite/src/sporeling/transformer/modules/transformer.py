"""Encoder/decoder blocks and stacks and the encoder-decoder ``Transformer`` of MindSpore 1.8.

Blocks are pre-layernorm (``post_layernorm_residual=False``, the default) with 1.8's names:
``layernorm1 -> attention -> (cross_attention_layernorm -> cross_attention) -> layernorm2
-> output``. Every block returns ``(output, layer_present)`` and, with experts
(``moe_config.expert_num > 1``), the auxiliary loss as a third output; the stacks sum it.

With ``use_past=True`` a block keeps its self-attention key/value cache
(``key_past``/``value_past``): ``init_reset=True`` clears it, the first iteration fills it from
the padded prompt, later iterations add one position each. Cross-attention is recomputed from
``encoder_output`` at every step (that output does not change while decoding).
``compute_dtype`` (a keyword beyond 1.8's signature; 1.8 hard-codes float16) is the dtype of
the products.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sporeling.core import Tensor, nn, ops
from sporeling.core import dtype as mstype

from ._checks import boolean, float_type, non_negative_int, positive_int, rate
from .attention import MultiHeadAttention
from .config import (
    MoEConfig,
    OpParallelConfig,
    TransformerOpParallelConfig,
    default_dpmp_config,
    default_lambda_func,
    default_moe_config,
    default_transformer_config,
)
from .ffn import FeedForward
from .layers import LayerNorm
from .moe import MoE

__all__ = [
    "TransformerEncoderLayer",
    "TransformerEncoder",
    "TransformerDecoderLayer",
    "TransformerDecoder",
    "Transformer",
]


def _common_checks(cls: str, **kw: Any) -> None:
    for name in (
        "hidden_size",
        "ffn_hidden_size",
        "num_heads",
        "seq_length",
        "src_seq_length",
        "tgt_seq_length",
    ):
        if name in kw:
            positive_int(cls, name, kw[name])
    if kw.get("batch_size") is not None:
        positive_int(cls, "batch_size", kw["batch_size"])
    for name in ("attention_dropout_rate", "hidden_dropout_rate"):
        rate(cls, name, kw[name])
    boolean(cls, "post_layernorm_residual", kw["post_layernorm_residual"])
    boolean(cls, "use_past", kw["use_past"])
    for name in ("layernorm_compute_type", "softmax_compute_type", "param_init_type"):
        float_type(cls, name, kw[name])
    if not isinstance(kw["moe_config"], MoEConfig):
        raise TypeError(
            f"For '{cls}', the argument 'moe_config' must be a MoEConfig, but got "
            f"{kw['moe_config']!r}."
        )


def _feed_forward(
    hidden_size: int,
    ffn_hidden_size: int,
    rate_: float,
    act: Any,
    pit: Any,
    moe: MoEConfig,
    pc: OpParallelConfig,
    cd: Any,
) -> nn.Cell:
    if moe.expert_num > 1:
        return MoE(hidden_size, ffn_hidden_size, rate_, act, pit, moe, pc, cd)
    return FeedForward(
        hidden_size,
        ffn_hidden_size,
        rate_,
        act,
        param_init_type=pit,
        parallel_config=pc,
        compute_dtype=cd,
    )


class _CachedBlock(nn.Cell):
    """The key/value cache a ``use_past`` block keeps between calls."""

    def _cache_in(self, init_reset: bool) -> tuple[Tensor | None, Tensor | None]:
        if not self.use_past or init_reset or self.is_first_iteration:
            return None, None
        return self._kv.get("key"), self._kv.get("value")

    def _cache_out(self, present: tuple[Tensor, Tensor]) -> None:
        if self.use_past:
            self._kv["key"], self._kv["value"] = present

    def set_past(self, key: Tensor, value: Tensor) -> None:
        """Replace the cache (a compiled decode step returns the new one as outputs)."""
        self._kv["key"], self._kv["value"] = key, value

    @property
    def key_past(self) -> Tensor | None:
        return self._kv.get("key")

    @property
    def value_past(self) -> Tensor | None:
        return self._kv.get("value")


class TransformerEncoderLayer(_CachedBlock):
    """Self-attention then feed-forward, each with a residual; input (batch, seq, hidden) or
    (batch * seq, hidden);
    ``construct(x, input_mask=None, init_reset=True, batch_valid_length=None)``."""

    def __init__(
        self,
        batch_size: int | None,
        hidden_size: int,
        ffn_hidden_size: int,
        num_heads: int,
        seq_length: int,
        attention_dropout_rate: float = 0.1,
        hidden_dropout_rate: float = 0.1,
        post_layernorm_residual: bool = False,
        layernorm_compute_type: Any = mstype.float32,
        softmax_compute_type: Any = mstype.float32,
        param_init_type: Any = mstype.float32,
        hidden_act: Any = "gelu",
        use_past: bool = False,
        moe_config: MoEConfig = default_moe_config,
        parallel_config: OpParallelConfig = default_dpmp_config,
        compute_dtype: Any = mstype.float16,
    ) -> None:
        super().__init__()
        cls = "TransformerEncoderLayer"
        _common_checks(
            cls, **{k: v for k, v in locals().items() if k not in ("self", "__class__", "cls")}
        )
        if isinstance(parallel_config, TransformerOpParallelConfig):
            parallel_config = parallel_config.dp_mp_config
        self.hidden_size, self.seq_length, self.use_past = hidden_size, seq_length, use_past
        self.post_layernorm_residual = post_layernorm_residual
        self.use_moe = moe_config.expert_num > 1
        self.is_first_iteration = True
        self._kv: dict[str, Tensor] = {}
        self.layernorm1 = LayerNorm((hidden_size,), param_init_type=layernorm_compute_type)
        self.layernorm2 = LayerNorm((hidden_size,), param_init_type=layernorm_compute_type)
        self.attention = MultiHeadAttention(
            batch_size,
            seq_length,
            seq_length,
            hidden_size,
            num_heads,
            hidden_dropout_rate,
            attention_dropout_rate,
            compute_dtype,
            softmax_compute_type,
            param_init_type,
            use_past,
            parallel_config,
        )
        self.output = _feed_forward(
            hidden_size,
            ffn_hidden_size,
            hidden_dropout_rate,
            hidden_act,
            param_init_type,
            moe_config,
            parallel_config,
            compute_dtype,
        )
        self.compute_dtype = compute_dtype

    def construct(
        self,
        x: Tensor,
        input_mask: Tensor | None = None,
        init_reset: bool = True,
        batch_valid_length: Tensor | None = None,
    ) -> tuple[Any, ...]:
        x_shape = x.shape
        x = ops.reshape(x, (-1, self.hidden_size))
        input_x = ops.cast(self.layernorm1(x), self.compute_dtype)
        key_past, value_past = self._cache_in(init_reset)
        attention, layer_present = self.attention(
            input_x, input_x, input_x, input_mask, key_past, value_past, batch_valid_length
        )
        self._cache_out(layer_present)
        x = ops.cast(x, self.compute_dtype)
        x = input_x + attention if self.post_layernorm_residual else x + attention
        output_x = ops.cast(self.layernorm2(x), self.compute_dtype)
        aux = None
        if self.use_moe:
            mlp, aux = self.output(output_x)
        else:
            mlp = self.output(output_x)
        out = output_x + mlp if self.post_layernorm_residual else x + mlp
        out = ops.reshape(out, x_shape)
        return (out, layer_present, aux) if self.use_moe else (out, layer_present)


class TransformerDecoderLayer(_CachedBlock):
    """Masked self-attention, cross-attention over ``encoder_output`` (if given), feed-forward.
    ``construct(hidden_stats, decoder_mask, encoder_output=None, memory_mask=None,
    init_reset=True, batch_valid_length=None)``; ``layer_present`` is
    ``(self_key, self_value, cross_key, cross_value)`` (the last two only with an encoder)."""

    def __init__(
        self,
        hidden_size: int,
        ffn_hidden_size: int,
        num_heads: int,
        batch_size: int | None,
        src_seq_length: int,
        tgt_seq_length: int,
        attention_dropout_rate: float = 0.1,
        hidden_dropout_rate: float = 0.1,
        post_layernorm_residual: bool = False,
        use_past: bool = False,
        layernorm_compute_type: Any = mstype.float32,
        softmax_compute_type: Any = mstype.float32,
        param_init_type: Any = mstype.float32,
        hidden_act: Any = "gelu",
        moe_config: MoEConfig = default_moe_config,
        parallel_config: OpParallelConfig = default_dpmp_config,
        compute_dtype: Any = mstype.float16,
    ) -> None:
        super().__init__()
        _common_checks(
            "TransformerDecoderLayer",
            **{k: v for k, v in locals().items() if k not in ("self", "__class__", "cls")},
        )
        if isinstance(parallel_config, TransformerOpParallelConfig):
            parallel_config = parallel_config.dp_mp_config
        self.hidden_size, self.use_past = hidden_size, use_past
        self.src_seq_length, self.tgt_seq_length = src_seq_length, tgt_seq_length
        self.post_layernorm_residual = post_layernorm_residual
        self.use_moe = moe_config.expert_num > 1
        self.is_first_iteration = True
        self._kv: dict[str, Tensor] = {}
        self.layernorm1 = LayerNorm((hidden_size,), param_init_type=layernorm_compute_type)
        self.cross_attention_layernorm = LayerNorm(
            (hidden_size,), param_init_type=layernorm_compute_type
        )
        self.layernorm2 = LayerNorm((hidden_size,), param_init_type=layernorm_compute_type)
        args = (
            hidden_dropout_rate,
            attention_dropout_rate,
            compute_dtype,
            softmax_compute_type,
            param_init_type,
        )
        self.attention = MultiHeadAttention(
            batch_size,
            tgt_seq_length,
            tgt_seq_length,
            hidden_size,
            num_heads,
            *args,
            use_past,
            parallel_config,
        )
        self.cross_attention = MultiHeadAttention(
            batch_size,
            tgt_seq_length,
            src_seq_length,
            hidden_size,
            num_heads,
            *args,
            False,
            parallel_config,
        )
        self.output = _feed_forward(
            hidden_size,
            ffn_hidden_size,
            hidden_dropout_rate,
            hidden_act,
            param_init_type,
            moe_config,
            parallel_config,
            compute_dtype,
        )
        self.compute_dtype = compute_dtype

    def construct(
        self,
        hidden_stats: Tensor,
        decoder_mask: Tensor | None,
        encoder_output: Tensor | None = None,
        memory_mask: Tensor | None = None,
        init_reset: bool = True,
        batch_valid_length: Tensor | None = None,
    ) -> tuple[Any, ...]:
        x_shape = hidden_stats.shape
        x = ops.reshape(hidden_stats, (-1, self.hidden_size))
        input_x = ops.cast(self.layernorm1(x), self.compute_dtype)
        key_past, value_past = self._cache_in(init_reset)
        attention, layer_present = self.attention(
            input_x, input_x, input_x, decoder_mask, key_past, value_past, batch_valid_length
        )
        self._cache_out(layer_present)
        x = ops.cast(x, self.compute_dtype)
        x = input_x + attention if self.post_layernorm_residual else x + attention
        if encoder_output is not None:
            middle = ops.cast(self.cross_attention_layernorm(x), self.compute_dtype)
            b = x_shape[0] if len(x_shape) == 3 else None
            enc = ops.cast(encoder_output, self.compute_dtype)
            if b is not None and enc.ndim == 2:
                enc = ops.reshape(enc, (b, -1, self.hidden_size))
            q = (
                ops.reshape(middle, (enc.shape[0], -1, self.hidden_size))
                if enc.ndim == 3
                else middle
            )
            cross, cross_present = self.cross_attention(q, enc, enc, memory_mask)
            cross = ops.reshape(cross, (-1, self.hidden_size))
            layer_present = layer_present + cross_present
            x = middle + cross if self.post_layernorm_residual else x + cross
        output_x = ops.cast(self.layernorm2(x), self.compute_dtype)
        aux = None
        if self.use_moe:
            mlp, aux = self.output(output_x)
        else:
            mlp = self.output(output_x)
        out = output_x + mlp if self.post_layernorm_residual else x + mlp
        out = ops.reshape(out, x_shape)
        return (out, layer_present, aux) if self.use_moe else (out, layer_present)


def _stack_checks(
    cls: str, num_layers: int, offset: int, parallel_config: Any, lambda_func: Any
) -> None:
    positive_int(cls, "num_layers", num_layers)
    non_negative_int(cls, "offset", offset)
    if not isinstance(parallel_config, TransformerOpParallelConfig):
        raise TypeError(
            f"For '{cls}', the argument 'parallel_config' must be a TransformerOpParallelConfig, "
            f"but got {type(parallel_config).__name__}."
        )
    if lambda_func is not None and not callable(lambda_func):
        raise TypeError(
            f"For '{cls}', the argument 'lambda_func' must be callable or None, but got "
            f"{lambda_func!r}."
        )


def _run_stack(
    blocks: nn.CellList,
    use_moe: bool,
    x: Tensor,
    call: Callable[[nn.Cell, Tensor], tuple[Any, ...]],
) -> tuple[Any, ...]:
    presents: tuple[Any, ...] = ()
    accum = None
    for blk in blocks:
        res = call(blk, x)
        x, present = res[0], res[1]
        presents = presents + (present,)
        if use_moe:
            accum = res[2] if accum is None else accum + res[2]
    return (x, presents, accum) if use_moe else (x, presents)


class TransformerEncoder(nn.Cell):
    """``num_layers`` encoder blocks in ``self.blocks``; ``lambda_func(block, layer_id, layers,
    offset, parallel_config)`` (default: 1.8's pipeline stage / fusion group / recompute rule)
    runs on each block."""

    def __init__(
        self,
        batch_size: int | None,
        num_layers: int,
        hidden_size: int,
        ffn_hidden_size: int,
        seq_length: int,
        num_heads: int,
        attention_dropout_rate: float = 0.1,
        hidden_dropout_rate: float = 0.1,
        hidden_act: Any = "gelu",
        post_layernorm_residual: bool = False,
        layernorm_compute_type: Any = mstype.float32,
        softmax_compute_type: Any = mstype.float32,
        param_init_type: Any = mstype.float32,
        lambda_func: Callable[..., None] | None = None,
        offset: int = 0,
        use_past: bool = False,
        moe_config: MoEConfig = default_moe_config,
        parallel_config: TransformerOpParallelConfig = default_transformer_config,
        compute_dtype: Any = mstype.float16,
    ) -> None:
        super().__init__()
        _stack_checks("TransformerEncoder", num_layers, offset, parallel_config, lambda_func)
        self.num_layers = num_layers
        self.use_moe = moe_config.expert_num > 1
        fn = lambda_func or default_lambda_func
        blocks = []
        for i in range(num_layers):
            blk = TransformerEncoderLayer(
                batch_size,
                hidden_size,
                ffn_hidden_size,
                num_heads,
                seq_length,
                attention_dropout_rate,
                hidden_dropout_rate,
                post_layernorm_residual,
                layernorm_compute_type,
                softmax_compute_type,
                param_init_type,
                hidden_act,
                use_past,
                moe_config,
                parallel_config.dp_mp_config,
                compute_dtype,
            )
            fn(blk, layer_id=i, layers=num_layers, offset=offset, parallel_config=parallel_config)
            blocks.append(blk)
        self.blocks = nn.CellList(blocks)

    def construct(
        self,
        hidden_states: Tensor,
        attention_mask: Tensor | None,
        init_reset: bool = True,
        batch_valid_length: Tensor | None = None,
    ) -> tuple[Any, ...]:
        return _run_stack(
            self.blocks,
            self.use_moe,
            hidden_states,
            lambda blk, x: blk(x, attention_mask, init_reset, batch_valid_length),
        )


class TransformerDecoder(nn.Cell):
    """``num_layers`` decoder blocks; ``construct(hidden_states, attention_mask,
    encoder_output=None, memory_mask=None, init_reset=True, batch_valid_length=None)``."""

    def __init__(
        self,
        num_layers: int,
        batch_size: int | None,
        hidden_size: int,
        ffn_hidden_size: int,
        src_seq_length: int,
        tgt_seq_length: int,
        num_heads: int,
        attention_dropout_rate: float = 0.1,
        hidden_dropout_rate: float = 0.1,
        post_layernorm_residual: bool = False,
        layernorm_compute_type: Any = mstype.float32,
        softmax_compute_type: Any = mstype.float32,
        param_init_type: Any = mstype.float32,
        hidden_act: Any = "gelu",
        lambda_func: Callable[..., None] | None = None,
        use_past: bool = False,
        offset: int = 0,
        moe_config: MoEConfig = default_moe_config,
        parallel_config: TransformerOpParallelConfig = default_transformer_config,
        compute_dtype: Any = mstype.float16,
    ) -> None:
        super().__init__()
        _stack_checks("TransformerDecoder", num_layers, offset, parallel_config, lambda_func)
        self.num_layers = num_layers
        self.use_moe = moe_config.expert_num > 1
        fn = lambda_func or default_lambda_func
        blocks = []
        for i in range(num_layers):
            blk = TransformerDecoderLayer(
                hidden_size,
                ffn_hidden_size,
                num_heads,
                batch_size,
                src_seq_length,
                tgt_seq_length,
                attention_dropout_rate,
                hidden_dropout_rate,
                post_layernorm_residual,
                use_past,
                layernorm_compute_type,
                softmax_compute_type,
                param_init_type,
                hidden_act,
                moe_config,
                parallel_config.dp_mp_config,
                compute_dtype,
            )
            fn(blk, layer_id=i, layers=num_layers, offset=offset, parallel_config=parallel_config)
            blocks.append(blk)
        self.blocks = nn.CellList(blocks)

    def construct(
        self,
        hidden_states: Tensor,
        attention_mask: Tensor | None,
        encoder_output: Tensor | None = None,
        memory_mask: Tensor | None = None,
        init_reset: bool = True,
        batch_valid_length: Tensor | None = None,
    ) -> tuple[Any, ...]:
        return _run_stack(
            self.blocks,
            self.use_moe,
            hidden_states,
            lambda blk, x: blk(
                x, attention_mask, encoder_output, memory_mask, init_reset, batch_valid_length
            ),
        )


class Transformer(nn.Cell):
    """Encoder-decoder; ``decoder_layers=0`` gives an encoder-only model.
    ``construct(encoder_inputs, encoder_masks, decoder_inputs=None, decoder_masks=None,
    memory_mask=None, init_reset=True, batch_valid_length=None)`` returns
    ``(output, encoder_layer_present, decoder_layer_present)`` (and the summed auxiliary loss
    with experts); ``output`` is the decoder's if there is one."""

    def __init__(
        self,
        hidden_size: int,
        batch_size: int | None,
        ffn_hidden_size: int,
        src_seq_length: int,
        tgt_seq_length: int,
        encoder_layers: int = 3,
        decoder_layers: int = 3,
        num_heads: int = 2,
        attention_dropout_rate: float = 0.1,
        hidden_dropout_rate: float = 0.1,
        hidden_act: Any = "gelu",
        post_layernorm_residual: bool = False,
        layernorm_compute_type: Any = mstype.float32,
        softmax_compute_type: Any = mstype.float32,
        param_init_type: Any = mstype.float32,
        lambda_func: Callable[..., None] | None = None,
        use_past: bool = False,
        moe_config: MoEConfig = default_moe_config,
        parallel_config: TransformerOpParallelConfig = default_transformer_config,
        compute_dtype: Any = mstype.float16,
    ) -> None:
        super().__init__()
        non_negative_int("Transformer", "encoder_layers", encoder_layers)
        non_negative_int("Transformer", "decoder_layers", decoder_layers)
        if encoder_layers <= 0 < decoder_layers:
            raise ValueError(
                f"Transformer doest support encoder layer {encoder_layers} and decoder layer "
                f"{decoder_layers}, "
                "please use TransformerDecoder"
            )
        if encoder_layers == 0:
            raise ValueError("For 'Transformer', 'encoder_layers' must be positive, but got 0.")
        self.use_moe = moe_config.expert_num > 1
        common = (attention_dropout_rate, hidden_dropout_rate)
        self.encoder = TransformerEncoder(
            batch_size,
            encoder_layers,
            hidden_size,
            ffn_hidden_size,
            src_seq_length,
            num_heads,
            *common,
            hidden_act,
            post_layernorm_residual,
            layernorm_compute_type,
            softmax_compute_type,
            param_init_type,
            lambda_func,
            0,
            use_past,
            moe_config,
            parallel_config,
            compute_dtype,
        )
        self.decoder = None
        if decoder_layers > 0:
            self.decoder = TransformerDecoder(
                decoder_layers,
                batch_size,
                hidden_size,
                ffn_hidden_size,
                src_seq_length,
                tgt_seq_length,
                num_heads,
                *common,
                post_layernorm_residual,
                layernorm_compute_type,
                softmax_compute_type,
                param_init_type,
                hidden_act,
                lambda_func,
                use_past,
                encoder_layers,
                moe_config,
                parallel_config,
                compute_dtype,
            )

    def construct(
        self,
        encoder_inputs: Tensor,
        encoder_masks: Tensor | None,
        decoder_inputs: Tensor | None = None,
        decoder_masks: Tensor | None = None,
        memory_mask: Tensor | None = None,
        init_reset: bool = True,
        batch_valid_length: Tensor | None = None,
    ) -> tuple[Any, ...]:
        enc = self.encoder(encoder_inputs, encoder_masks, init_reset, batch_valid_length)
        output, enc_present = enc[0], enc[1]
        accum = enc[2] if self.use_moe else None
        dec_present = None
        if self.decoder is not None and decoder_inputs is not None:
            dec = self.decoder(
                decoder_inputs, decoder_masks, output, memory_mask, init_reset, batch_valid_length
            )
            output, dec_present = dec[0], dec[1]
            if self.use_moe:
                accum = accum + dec[2]
        if self.use_moe:
            return output, enc_present, dec_present, accum
        return output, enc_present, dec_present
