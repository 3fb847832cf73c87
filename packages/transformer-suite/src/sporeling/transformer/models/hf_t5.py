"""Hugging Face's T5 architecture (``T5ForConditionalGeneration``), for loading its
checkpoints: the suite's own :class:`T5Model` is built from the 1.8 blocks (learned absolute
positions, LayerNorm with bias), which HF T5 weights do not fit.

What differs from the 1.8 blocks, all written here in the core's ops:

- RMS norm with a weight and no bias or mean subtraction (``T5LayerNorm``), before each
  sub-layer and at the end of each stack;
- no biases anywhere; attention scores are not divided by ``sqrt(d_kv)`` (T5 folds it
  into the initialisation);
- a relative position bias: ``relative_attention_num_buckets`` buckets (half per direction
  in the encoder, past-only in the decoder; exact up to half the buckets, logarithmic up to
  ``relative_attention_max_distance``), one learned scalar per bucket and head, held by the
  first block of each stack and added to every block's self-attention scores;
- feed-forward ``wo(relu(wi x))`` (T5 1.0) or ``wo(gelu_new(wi_0 x) * wi_1 x)``
  (``feed_forward_proj="gated-gelu"``, T5 1.1 and FLAN-T5);
- with tied embeddings the decoder output is scaled by ``d_model ** -0.5`` before the head.

Parameter names are Hugging Face's (``encoder.block.0.layer.0.SelfAttention.q.weight``...),
so a checkpoint maps one to one. ``decode_step`` decodes one position at a time with a
key/value cache (self-attention keys and values appended per step, cross-attention ones
computed once from the encoder output).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from sporeling.core import Parameter, Tensor, nn, ops
from sporeling.core import dtype as mstype
from sporeling.core.initializer import Normal, initializer

__all__ = ["HFT5Config", "HFT5ForConditionalGeneration", "relative_position_bucket"]

_DTYPES = {"float32": mstype.float32, "float64": mstype.float64}


@dataclass
class HFT5Config:
    """The ``config.json`` keys of a Hugging Face T5 that the forward pass uses."""

    vocab_size: int = 32128
    d_model: int = 512
    d_kv: int = 64
    d_ff: int = 2048
    num_layers: int = 6
    num_decoder_layers: int | None = None
    num_heads: int = 8
    relative_attention_num_buckets: int = 32
    relative_attention_max_distance: int = 128
    layer_norm_epsilon: float = 1e-6
    feed_forward_proj: str = "relu"
    tie_word_embeddings: bool = True
    decoder_start_token_id: int = 0
    pad_token_id: int = 0
    eos_token_id: int = 1

    @classmethod
    def from_hf(cls, cfg: dict[str, Any]) -> HFT5Config:
        """Keep the known keys of a ``config.json`` dict (others, e.g. dropout, are unused)."""
        names = {f.name for f in fields(cls)}
        out = cls(**{k: v for k, v in cfg.items() if k in names})
        if out.feed_forward_proj not in ("relu", "gated-gelu"):
            raise ValueError(
                f"HFT5Config: feed_forward_proj expected 'relu' or 'gated-gelu', got "
                f"{out.feed_forward_proj!r}"
            )
        return out

    @property
    def decoder_layers(self) -> int:
        return self.num_layers if self.num_decoder_layers is None else self.num_decoder_layers


def relative_position_bucket(
    relative_position: np.ndarray, bidirectional: bool, num_buckets: int, max_distance: int
) -> np.ndarray:
    """T5's bucket of each ``key_position - query_position`` (NumPy: positions are
    constants of a forward pass)."""
    rel = np.asarray(relative_position, np.int64)
    buckets = np.zeros_like(rel)
    if bidirectional:
        num_buckets //= 2
        buckets += (rel > 0).astype(np.int64) * num_buckets
        rel = np.abs(rel)
    else:
        rel = -np.minimum(rel, 0)
    max_exact = num_buckets // 2
    with np.errstate(divide="ignore"):
        large = max_exact + (
            np.log(np.maximum(rel, 1).astype(np.float32) / max_exact)
            / math.log(max_distance / max_exact)
            * (num_buckets - max_exact)
        ).astype(np.int64)
    large = np.minimum(large, num_buckets - 1)
    return buckets + np.where(rel < max_exact, rel, large)


def _weight(shape: tuple[int, ...], name: str, dtype: Any, std: float = 0.05) -> Parameter:
    return Parameter(initializer(Normal(sigma=std), shape, dtype), name=name)


class Linear(nn.Cell):
    """``x @ weight.T`` with ``weight`` (out, in), no bias (HF's ``nn.Linear(bias=False)``)."""

    def __init__(self, n_in: int, n_out: int, dtype: Any) -> None:
        super().__init__()
        self.weight = _weight((n_out, n_in), "weight", dtype)

    def construct(self, x: Tensor) -> Tensor:
        return ops.matmul(x, ops.transpose(self.weight, (1, 0)))


class Embedding(nn.Cell):
    """A lookup table ``weight`` (rows, dim) in the model's dtype (HF's ``nn.Embedding``)."""

    def __init__(self, rows: int, dim: int, dtype: Any) -> None:
        super().__init__()
        self.weight = _weight((rows, dim), "weight", dtype)

    def construct(self, ids: Tensor) -> Tensor:
        return ops.gather(self.weight, ids, 0)


class RMSNorm(nn.Cell):
    """``weight * x / sqrt(mean(x^2) + eps)`` over the last axis (HF's ``T5LayerNorm``)."""

    def __init__(self, d: int, eps: float, dtype: Any) -> None:
        super().__init__()
        self.weight = Parameter(initializer("ones", (d,), dtype), name="weight")
        self.eps = eps

    def construct(self, x: Tensor) -> Tensor:
        var = ops.reduce_mean(ops.square(x), -1, keep_dims=True)
        return self.weight * (x * ops.rsqrt(var + self.eps))


class Attention(nn.Cell):
    """Multi-head attention without biases or score scaling; ``has_relative_bias`` makes
    this block the holder of its stack's relative position table."""

    def __init__(self, c: HFT5Config, has_relative_bias: bool, dtype: Any) -> None:
        super().__init__()
        inner = c.num_heads * c.d_kv
        self.q = Linear(c.d_model, inner, dtype)
        self.k = Linear(c.d_model, inner, dtype)
        self.v = Linear(c.d_model, inner, dtype)
        self.o = Linear(inner, c.d_model, dtype)
        self.heads, self.d_kv = c.num_heads, c.d_kv
        self.has_relative_bias = has_relative_bias
        if has_relative_bias:
            self.relative_attention_bias = Embedding(
                c.relative_attention_num_buckets, c.num_heads, dtype
            )

    def position_bias(self, buckets: np.ndarray) -> Tensor:
        """``(1, heads, q, k)`` from a bucket matrix ``(q, k)``."""
        values = self.relative_attention_bias(Tensor(buckets.astype(np.int32)))  # (q, k, heads)
        return ops.expand_dims(ops.transpose(values, (2, 0, 1)), 0)

    def _split(self, x: Tensor) -> Tensor:
        b, s, _ = x.shape
        return ops.transpose(ops.reshape(x, (b, s, self.heads, self.d_kv)), (0, 2, 1, 3))

    def keys_values(self, kv: Tensor) -> tuple[Tensor, Tensor]:
        """``kv``'s keys and values, (batch, heads, length, d_kv) each (what a cache holds)."""
        return self._split(self.k(kv)), self._split(self.v(kv))

    def construct(self, x: Tensor, kv: Tensor, bias: Tensor) -> Tensor:
        """``bias`` (broadcast to (batch, heads, q, k)) holds the position bias and the
        mask (large negative where attending is not allowed)."""
        k, v = self.keys_values(kv)
        return self.attend(x, k, v, bias)

    def attend(self, x: Tensor, k: Tensor, v: Tensor, bias: Tensor) -> Tensor:
        """Attention of ``x``'s queries over given keys and values."""
        q = self._split(self.q(x))
        scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))) + bias
        ctx = ops.matmul(ops.softmax(scores, -1), v)
        b, _, s, _ = ctx.shape
        return self.o(ops.reshape(ops.transpose(ctx, (0, 2, 1, 3)), (b, s, -1)))


class DenseReluDense(nn.Cell):
    def __init__(self, c: HFT5Config, dtype: Any) -> None:
        super().__init__()
        self.gated = c.feed_forward_proj == "gated-gelu"
        if self.gated:
            self.wi_0 = Linear(c.d_model, c.d_ff, dtype)
            self.wi_1 = Linear(c.d_model, c.d_ff, dtype)
        else:
            self.wi = Linear(c.d_model, c.d_ff, dtype)
        self.wo = Linear(c.d_ff, c.d_model, dtype)

    def construct(self, x: Tensor) -> Tensor:
        if self.gated:
            h = self.wi_0(x)
            gelu = 0.5 * h * (1.0 + ops.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * h**3)))
            return self.wo(gelu * self.wi_1(x))
        return self.wo(ops.relu(self.wi(x)))


class _SelfAttentionLayer(nn.Cell):
    def __init__(self, c: HFT5Config, has_bias: bool, dtype: Any) -> None:
        super().__init__()
        self.SelfAttention = Attention(c, has_bias, dtype)  # noqa: N815 (HF's name)
        self.layer_norm = RMSNorm(c.d_model, c.layer_norm_epsilon, dtype)

    def construct(self, x: Tensor, bias: Tensor) -> Tensor:
        h = self.layer_norm(x)
        return x + self.SelfAttention(h, h, bias)


class _CrossAttentionLayer(nn.Cell):
    def __init__(self, c: HFT5Config, dtype: Any) -> None:
        super().__init__()
        self.EncDecAttention = Attention(c, False, dtype)  # noqa: N815 (HF's name)
        self.layer_norm = RMSNorm(c.d_model, c.layer_norm_epsilon, dtype)

    def construct(self, x: Tensor, memory: Tensor, bias: Tensor) -> Tensor:
        return x + self.EncDecAttention(self.layer_norm(x), memory, bias)


class _FFLayer(nn.Cell):
    def __init__(self, c: HFT5Config, dtype: Any) -> None:
        super().__init__()
        self.DenseReluDense = DenseReluDense(c, dtype)  # noqa: N815 (HF's name)
        self.layer_norm = RMSNorm(c.d_model, c.layer_norm_epsilon, dtype)

    def construct(self, x: Tensor) -> Tensor:
        return x + self.DenseReluDense(self.layer_norm(x))


class _Block(nn.Cell):
    def __init__(self, c: HFT5Config, first: bool, decoder: bool, dtype: Any) -> None:
        super().__init__()
        cells = [_SelfAttentionLayer(c, first, dtype)]
        if decoder:
            cells.append(_CrossAttentionLayer(c, dtype))
        cells.append(_FFLayer(c, dtype))
        self.layer = nn.CellList(cells)
        self.decoder = decoder

    def construct(self, x: Tensor, self_bias: Tensor, memory: Any, cross_bias: Any) -> Tensor:
        x = self.layer[0](x, self_bias)
        if self.decoder:
            x = self.layer[1](x, memory, cross_bias)
        return self.layer[-1](x)


class _Stack(nn.Cell):
    def __init__(self, c: HFT5Config, layers: int, decoder: bool, dtype: Any) -> None:
        super().__init__()
        self.block = nn.CellList([_Block(c, i == 0, decoder, dtype) for i in range(layers)])
        self.final_layer_norm = RMSNorm(c.d_model, c.layer_norm_epsilon, dtype)
        self.config, self.decoder = c, decoder

    def construct(self, x: Tensor, mask_bias: Tensor, memory: Any, cross_bias: Any) -> Tensor:
        s = x.shape[1]
        rel = np.arange(s)[None, :] - np.arange(s)[:, None]
        buckets = relative_position_bucket(rel, not self.decoder,
                                           self.config.relative_attention_num_buckets,
                                           self.config.relative_attention_max_distance)  # fmt: skip
        bias = self.block[0].layer[0].SelfAttention.position_bias(buckets) + mask_bias
        for blk in self.block:
            x = blk(x, bias, memory, cross_bias)
        return self.final_layer_norm(x)


class HFT5ForConditionalGeneration(nn.Cell):
    """``construct(input_ids, decoder_input_ids, attention_mask=None) -> logits``
    ``(batch, target_length, vocab_size)``; ``attention_mask`` (batch, source_length) is 1 on
    real tokens, 0 on padding. ``encode`` and ``decode`` are the two halves."""

    def __init__(self, config: HFT5Config, dtype: str = "float32") -> None:
        super().__init__()
        if dtype not in _DTYPES:
            raise ValueError(f"HFT5ForConditionalGeneration: dtype expected one of "
                             f"{sorted(_DTYPES)}, got {dtype!r}")  # fmt: skip
        dt = _DTYPES[dtype]
        c = self.config = config
        self.shared = Embedding(c.vocab_size, c.d_model, dt)
        self.encoder = _Stack(c, c.num_layers, False, dt)
        self.decoder = _Stack(c, c.decoder_layers, True, dt)
        if not c.tie_word_embeddings:
            self.lm_head = Linear(c.d_model, c.vocab_size, dt)
        self.neg = float(np.finfo(np.float32 if dtype == "float32" else np.float64).min)

    def _mask_bias(self, mask: Tensor) -> Tensor:
        """(batch, k) 1/0 -> (batch, 1, 1, k) 0/very negative (HF's extended mask)."""
        m = ops.cast(mask, self.shared.weight.dtype)
        return ops.reshape((1.0 - m) * self.neg, (m.shape[0], 1, 1, m.shape[1]))

    def encode(self, input_ids: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        if attention_mask is None:
            attention_mask = ops.ones(input_ids.shape, mstype.float32)
        x = self.shared(input_ids)
        return self.encoder(x, self._mask_bias(attention_mask), None, None)

    def decode(
        self, decoder_input_ids: Tensor, memory: Tensor, attention_mask: Tensor | None = None
    ) -> Tensor:
        b, t = decoder_input_ids.shape
        if attention_mask is None:
            attention_mask = ops.ones((b, memory.shape[1]), mstype.float32)
        causal = np.where(np.tril(np.ones((t, t))) > 0, 0.0, self.neg)[None, None]
        causal_t = Tensor(causal.astype(self.shared.weight.asnumpy().dtype))
        x = self.shared(decoder_input_ids)
        h = self.decoder(x, causal_t, memory, self._mask_bias(attention_mask))
        if self.config.tie_word_embeddings:
            h = h * (self.config.d_model**-0.5)
            return ops.matmul(h, ops.transpose(self.shared.weight, (1, 0)))
        return self.lm_head(h)

    def construct(
        self,
        input_ids: Tensor,
        decoder_input_ids: Tensor,
        attention_mask: Tensor | None = None,
    ) -> Tensor:
        return self.decode(decoder_input_ids, self.encode(input_ids, attention_mask),
                           attention_mask)  # fmt: skip

    def start_cache(self, memory: Tensor) -> dict[str, Any]:
        """A decoding cache: every decoder block's cross-attention keys and values of
        ``memory`` (computed once) and its self-attention keys and values so far (none)."""
        cross = [blk.layer[1].EncDecAttention.keys_values(memory) for blk in self.decoder.block]
        return {"cross": cross, "self": [None] * len(cross), "length": 0}

    def decode_step(
        self, token: Tensor, cache: dict[str, Any], attention_mask: Tensor | None = None
    ) -> Tensor:
        """Logits ``(batch, 1, vocab)`` of one new decoder position (``token`` (batch, 1)) given
        the earlier ones in ``cache`` (updated in place): equal to ``decode`` on the whole
        prefix, without recomputing it."""
        c = self.config
        t = cache["length"]
        b = token.shape[0]
        if attention_mask is None:
            mem_len = cache["cross"][0][0].shape[2]
            attention_mask = ops.ones((b, mem_len), mstype.float32)
        cross_bias = self._mask_bias(attention_mask)
        # the new query (position t) against keys 0..t: past-only buckets, no mask needed
        buckets = relative_position_bucket(np.arange(t + 1)[None, :] - t, False,
                                           c.relative_attention_num_buckets,
                                           c.relative_attention_max_distance)  # fmt: skip
        dec = self.decoder
        bias = dec.block[0].layer[0].SelfAttention.position_bias(buckets)
        x = self.shared(token)
        for i, blk in enumerate(dec.block):
            sa = blk.layer[0]
            h = sa.layer_norm(x)
            k, v = sa.SelfAttention.keys_values(h)
            if cache["self"][i] is not None:
                k = ops.concat((cache["self"][i][0], k), 2)
                v = ops.concat((cache["self"][i][1], v), 2)
            cache["self"][i] = (k, v)
            x = x + sa.SelfAttention.attend(h, k, v, bias)
            ca = blk.layer[1]
            ck, cv = cache["cross"][i]
            x = x + ca.EncDecAttention.attend(ca.layer_norm(x), ck, cv, cross_bias)
            x = blk.layer[2](x)
        cache["length"] = t + 1
        h = dec.final_layer_norm(x)
        if c.tie_word_embeddings:
            return ops.matmul(h * (c.d_model**-0.5), ops.transpose(self.shared.weight, (1, 0)))
        return self.lm_head(h)

    def generate_greedy(
        self,
        input_ids: Tensor,
        max_new_tokens: int,
        attention_mask: Tensor | None = None,
        use_cache: bool = True,
    ) -> np.ndarray:
        """Greedy decoding (``generation.generate_hf_t5`` samples too) from
        ``decoder_start_token_id``, with the key/value cache
        (:meth:`decode_step`) or rerunning the decoder on the whole prefix each step;
        rows stop growing after ``eos_token_id``. Returns (batch, <= max_new_tokens) token
        ids, ``pad_token_id`` after a row's end."""
        from ..generation import generate_hf_t5

        return generate_hf_t5(self, input_ids, max_new_tokens, attention_mask, use_cache=use_cache)
