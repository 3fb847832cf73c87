"""Multi-head attention in the form of MindSpore 2.x ``nn.MultiheadAttention``.

MindSpore 1.8 only had ``nn.transformer.MultiHeadAttention`` (fixed batch size and sequence
lengths, ``(output, layer_present)`` outputs, parallel configs); this is the 2.x
(PyTorch-compatible) ``nn.MultiheadAttention`` that later MindSpore code uses::

    MultiheadAttention(embed_dim, num_heads, dropout=0.0, has_bias=True, add_bias_kv=False,
                       add_zero_attn=False, kdim=None, vdim=None, batch_first=False)
    construct(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
              average_attn_weights=True) -> (attn_output, attn_weights)

Per head ``softmax(q k^T / sqrt(head_dim) + mask) v``, heads concatenated and projected by
``out_proj``. Masks are bool (True = not attended; uint8 non-zero likewise for
``attn_mask``) or float (added to the scores). ``attn_weights`` is None when
``need_weights=False``.

>>> import numpy as np
>>> from sporeling.core import Tensor, nn
>>> mha = nn.MultiheadAttention(8, 2)
>>> q = Tensor(np.ones((3, 2, 8), np.float32))
>>> out, w = mha(q, q, q)
>>> out.shape, w.shape
((3, 2, 8), (2, 3, 3))
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from ... import dtype as _dt
from ... import ops
from ...errors import check_bool, check_int
from ...initializer import HeUniform, Uniform, XavierNormal, XavierUniform, initializer
from ...tensor import Parameter, Tensor
from ..cell import Cell

__all__ = ["MultiheadAttention"]

_NAME = "MultiheadAttention"


class _Linear(Cell):
    """``out_proj``: ``y = x @ weight.T + bias`` with PyTorch's ``Linear`` init, as
    MindSpore's ``_Linear`` (HeUniform(sqrt(5)) weight, U(±1/sqrt(fan_in)) bias)."""

    def __init__(self, in_channels: int, out_channels: int, has_bias: bool = True) -> None:
        super().__init__()
        self.in_channels, self.out_channels, self.has_bias = in_channels, out_channels, has_bias
        self.weight = Parameter(
            initializer(HeUniform(math.sqrt(5)), (out_channels, in_channels)), name="weight"
        )
        self.bias = (
            Parameter(initializer(Uniform(1 / math.sqrt(in_channels)), (out_channels,)), "bias")
            if has_bias
            else None
        )

    def extend_repr(self) -> str:
        return (
            f"input_channels={self.in_channels}, output_channels={self.out_channels}, "
            f"has_bias={self.has_bias}"
        )

    def construct(self, x: Tensor) -> Tensor:
        return _linear(x, self.weight, self.bias)


def _linear(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    if w.dtype != x.dtype:
        w = ops.cast(w, x.dtype)
    y = ops.matmul(x, ops.transpose(w, (1, 0)))
    if b is not None:
        y = y + (ops.cast(b, x.dtype) if b.dtype != x.dtype else b)
    return y


def _check_int(name: str, value: Any) -> int:
    return check_int(_NAME, name, value, 1)


def _check_bool(name: str, value: Any) -> bool:
    return check_bool(_NAME, name, value)


def _mask_to_float(name: str, mask: Any, dtype: _dt.DType, allow_uint8: bool) -> Tensor:
    """Bool (True = masked) or uint8 (non-zero = masked) -> 0 / -inf; floats pass through."""
    if not isinstance(mask, Tensor):
        raise TypeError(f"{_NAME}: input '{name}' expected a Tensor, got {type(mask).__name__}")
    if mask.dtype == _dt.uint8 and allow_uint8:
        mask = ops.cast(mask, _dt.bool_)
    if mask.dtype == _dt.bool_:
        return ops.select(mask, float("-inf"), _zeros(mask.shape, dtype, mask))
    if mask.dtype.category != 2:
        kinds = "bool, uint8 or floating" if allow_uint8 else "bool or floating"
        raise TypeError(f"{_NAME}: input '{name}' expected a {kinds} Tensor, got {mask.dtype}")
    return ops.cast(mask, dtype) if mask.dtype != dtype else mask


class MultiheadAttention(Cell):
    r"""Multi-head attention (MindSpore 2.x ``nn.MultiheadAttention``; see the module doc).

    Parameters: ``in_proj_weight`` ``(3 * embed_dim, embed_dim)`` when ``kdim == vdim ==
    embed_dim``, else ``q_proj_weight`` ``(embed_dim, embed_dim)``, ``k_proj_weight``
    ``(embed_dim, kdim)``, ``v_proj_weight`` ``(embed_dim, vdim)`` (all Xavier-uniform);
    ``in_proj_bias`` ``(3 * embed_dim,)`` (zeros) and ``out_proj.weight``/``out_proj.bias``
    when ``has_bias``; ``bias_k``/``bias_v`` ``(1, 1, embed_dim)`` (Xavier-normal) with
    ``add_bias_kv``.

    Inputs are ``(L, N, E)`` (``(N, L, E)`` with ``batch_first``) or unbatched ``(L, E)``;
    ``key_padding_mask`` is ``(N, S)`` (``(S,)`` unbatched); ``attn_mask`` is ``(L, S)`` or
    ``(N * num_heads, L, S)`` (``(num_heads, L, S)`` unbatched). ``attn_weights`` is
    ``(N, L, S)`` averaged over heads, or ``(N, num_heads, L, S)``. ``dropout`` applies to the
    attention weights in training mode (the returned weights are the dropped-out ones, as in
    MindSpore/PyTorch). A query whose keys are all masked gets NaN, as in MindSpore/PyTorch.
    """

    dropout: float
    has_bias: bool
    add_zero_attn: bool
    batch_first: bool
    kdim: int
    vdim: int
    head_dim: int
    _qkv_same_embed_dim: bool
    in_proj_weight: Parameter | None
    q_proj_weight: Parameter | None
    k_proj_weight: Parameter | None
    v_proj_weight: Parameter | None
    in_proj_bias: Parameter | None
    bias_k: Parameter | None
    bias_v: Parameter | None
    out_proj: _Linear

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        has_bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
    ) -> None:
        super().__init__()
        self.embed_dim = _check_int("embed_dim", embed_dim)
        self.num_heads = _check_int("num_heads", num_heads)
        if self.embed_dim % self.num_heads:
            raise ValueError(
                f"{_NAME}: argument 'embed_dim' ({embed_dim}) must be divisible by num_heads "
                f"({num_heads})"
            )
        if isinstance(dropout, bool) or not isinstance(dropout, numbers.Real):
            raise TypeError(
                f"{_NAME}: argument 'dropout' expected a float in [0, 1), got "
                f"{type(dropout).__name__} {dropout!r}"
            )
        if not 0 <= dropout < 1:
            raise ValueError(
                f"{_NAME}: argument 'dropout' expected a float in [0, 1), got {dropout}"
            )
        self.dropout = float(dropout)
        self.has_bias = _check_bool("has_bias", has_bias)
        self.add_zero_attn = _check_bool("add_zero_attn", add_zero_attn)
        self.batch_first = _check_bool("batch_first", batch_first)
        _check_bool("add_bias_kv", add_bias_kv)
        self.kdim = self.embed_dim if kdim is None else _check_int("kdim", kdim)
        self.vdim = self.embed_dim if vdim is None else _check_int("vdim", vdim)
        self.head_dim = self.embed_dim // self.num_heads
        self._qkv_same_embed_dim = self.kdim == self.embed_dim and self.vdim == self.embed_dim
        e = self.embed_dim
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(
                initializer(XavierUniform(), (3 * e, e)), name="in_proj_weight"
            )
            self.q_proj_weight = self.k_proj_weight = self.v_proj_weight = None
        else:
            self.in_proj_weight = None
            self.q_proj_weight = Parameter(initializer(XavierUniform(), (e, e)), "q_proj_weight")
            self.k_proj_weight = Parameter(
                initializer(XavierUniform(), (e, self.kdim)), "k_proj_weight"
            )
            self.v_proj_weight = Parameter(
                initializer(XavierUniform(), (e, self.vdim)), "v_proj_weight"
            )
        self.in_proj_bias = (
            Parameter(initializer("zeros", (3 * e,)), "in_proj_bias") if self.has_bias else None
        )
        self.out_proj = _Linear(e, e, has_bias=self.has_bias)
        if add_bias_kv:
            self.bias_k = Parameter(initializer(XavierNormal(), (1, 1, e)), "bias_k")
            self.bias_v = Parameter(initializer(XavierNormal(), (1, 1, e)), "bias_v")
        else:
            self.bias_k = self.bias_v = None

    def extend_repr(self) -> str:
        return (
            f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, dropout={self.dropout}, "
            f"has_bias={self.has_bias}, add_bias_kv={self.bias_k is not None}, "
            f"add_zero_attn={self.add_zero_attn}, kdim={self.kdim}, vdim={self.vdim}, "
            f"batch_first={self.batch_first}"
        )

    # ---- input checks --------------------------------------------------------------------
    def _check_qkv(self, query: Any, key: Any, value: Any) -> bool:
        for name, t, dim in (
            ("query", query, self.embed_dim),
            ("key", key, self.kdim),
            ("value", value, self.vdim),
        ):
            if not isinstance(t, Tensor):
                raise TypeError(
                    f"{_NAME}: input '{name}' expected a Tensor, got {type(t).__name__}"
                )
            if t.dtype.category != 2:
                raise TypeError(
                    f"{_NAME}: input '{name}' expected a floating Tensor, got {t.dtype}"
                )
            if t.ndim not in (2, 3):
                raise ValueError(
                    f"{_NAME}: input '{name}' expected a 2-d (unbatched) or 3-d Tensor, got "
                    f"shape {t.shape}"
                )
            if t.shape[-1] != dim:
                raise ValueError(
                    f"{_NAME}: input '{name}' expected {dim} features in its last dimension, got "
                    f"shape {t.shape}"
                )
            if t.dtype != query.dtype:
                raise TypeError(
                    f"{_NAME}: input '{name}' has dtype {t.dtype}, query has {query.dtype}"
                )
        if not query.ndim == key.ndim == value.ndim:
            raise ValueError(
                f"{_NAME}: query, key and value must all be batched (3-d) or all unbatched (2-d), "
                f"got shapes {query.shape}, {key.shape}, {value.shape}"
            )
        batched = query.ndim == 3
        if key.shape[:-1] != value.shape[:-1]:
            raise ValueError(
                f"{_NAME}: key and value must have the same sequence length and batch size, got "
                f"shapes {key.shape} and {value.shape}"
            )
        if batched:
            b = 0 if self.batch_first else 1
            if query.shape[b] != key.shape[b]:
                raise ValueError(
                    f"{_NAME}: query and key must have the same batch size (dimension {b}), got "
                    f"shapes {query.shape} and {key.shape}"
                )
        return batched

    # ---- forward ------------------------------------------------------------------------
    def construct(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
    ) -> tuple[Tensor, Tensor | None]:
        batched = self._check_qkv(query, key, value)
        dtype = query.dtype
        if not batched:
            query, key, value = (ops.expand_dims(t, 1) for t in (query, key, value))
            if key_padding_mask is not None:
                if not isinstance(key_padding_mask, Tensor):
                    raise TypeError(f"{_NAME}: input 'key_padding_mask' expected a Tensor")
                if key_padding_mask.ndim != 1:
                    raise ValueError(
                        f"{_NAME}: input 'key_padding_mask' expected shape (S,) for unbatched "
                        f"inputs, got {key_padding_mask.shape}"
                    )
                key_padding_mask = ops.expand_dims(key_padding_mask, 0)
        elif self.batch_first:
            query, key, value = (ops.swapaxes(t, 0, 1) for t in (query, key, value))
        tgt_len, bsz, e = query.shape
        src_len = key.shape[0]
        heads, hd = self.num_heads, self.head_dim

        # projections
        if self.in_proj_weight is not None:
            w_q, w_k, w_v = ops.split(self.in_proj_weight, 0, 3)
        elif (
            self.q_proj_weight is not None
            and self.k_proj_weight is not None
            and self.v_proj_weight is not None
        ):
            w_q, w_k, w_v = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        else:
            raise RuntimeError(f"{_NAME}: the input projection weights were set to None")
        b_q = b_k = b_v = None
        if self.in_proj_bias is not None:
            b_q, b_k, b_v = ops.split(self.in_proj_bias, 0, 3)
        q = _linear(query, w_q, b_q)
        k = _linear(key, w_k, b_k)
        v = _linear(value, w_v, b_v)

        # masks as additive floats
        if attn_mask is not None:
            attn_mask = _mask_to_float("attn_mask", attn_mask, dtype, allow_uint8=True)
            if attn_mask.ndim == 2:
                if attn_mask.shape != (tgt_len, src_len):
                    raise ValueError(
                        f"{_NAME}: input 'attn_mask' expected shape ({tgt_len}, {src_len}) "
                        f"(L, S), got {attn_mask.shape}"
                    )
                attn_mask = ops.expand_dims(attn_mask, 0)
            elif attn_mask.ndim == 3:
                want = (bsz * heads, tgt_len, src_len)
                if attn_mask.shape != want:
                    raise ValueError(
                        f"{_NAME}: input 'attn_mask' expected shape {want} (N * num_heads, L, S), "
                        f"got {attn_mask.shape}"
                    )
            else:
                raise ValueError(
                    f"{_NAME}: input 'attn_mask' expected a 2-d or 3-d Tensor, got shape "
                    f"{attn_mask.shape}"
                )
        if key_padding_mask is not None:
            key_padding_mask = _mask_to_float(
                "key_padding_mask", key_padding_mask, dtype, allow_uint8=False
            )
            if key_padding_mask.shape != (bsz, src_len):
                raise ValueError(
                    f"{_NAME}: input 'key_padding_mask' expected shape ({bsz}, {src_len}) (N, S), "
                    f"got {key_padding_mask.shape}"
                )

        # learned bias row on keys/values: one more source position
        if self.bias_k is not None and self.bias_v is not None:
            k = ops.concat((k, ops.broadcast_to(ops.cast(self.bias_k, dtype), (1, bsz, e))), 0)
            v = ops.concat((v, ops.broadcast_to(ops.cast(self.bias_v, dtype), (1, bsz, e))), 0)
            attn_mask = _pad_last(attn_mask)
            key_padding_mask = _pad_last(key_padding_mask)

        # heads: (len, N, E) -> (N * heads, len, head_dim)
        q = ops.transpose(ops.reshape(q, (tgt_len, bsz * heads, hd)), (1, 0, 2))
        k = ops.transpose(ops.reshape(k, (k.shape[0], bsz * heads, hd)), (1, 0, 2))
        v = ops.transpose(ops.reshape(v, (v.shape[0], bsz * heads, hd)), (1, 0, 2))
        if self.add_zero_attn:
            zeros = _zeros((bsz * heads, 1, hd), dtype, k)
            k = ops.concat((k, zeros), 1)
            v = ops.concat((v, zeros), 1)
            attn_mask = _pad_last(attn_mask)
            key_padding_mask = _pad_last(key_padding_mask)
        s = k.shape[1]

        scores = ops.matmul(q * (1.0 / math.sqrt(hd)), ops.transpose(k, (0, 2, 1)))
        if key_padding_mask is not None:
            kpm = ops.reshape(key_padding_mask, (bsz, 1, 1, s))
            kpm = ops.reshape(ops.broadcast_to(kpm, (bsz, heads, 1, s)), (bsz * heads, 1, s))
            attn_mask = kpm if attn_mask is None else attn_mask + kpm
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = ops.softmax(scores, -1)
        if self.dropout and self.training:
            weights = ops.dropout(weights, self.dropout)[0]
        out = ops.matmul(weights, v)  # (N * heads, L, hd)
        out = ops.reshape(ops.transpose(out, (1, 0, 2)), (tgt_len * bsz, e))
        out = ops.reshape(self.out_proj(out), (tgt_len, bsz, e))

        if batched and self.batch_first:
            out = ops.swapaxes(out, 0, 1)
        elif not batched:
            out = ops.squeeze(out, 1)
        if not need_weights:
            return out, None
        weights = ops.reshape(weights, (bsz, heads, tgt_len, s))
        if average_attn_weights:
            weights = ops.reduce_mean(weights, 1)
        if not batched:
            weights = ops.squeeze(weights, 0)
        return out, weights


def _zeros(shape: tuple[int, ...], dtype: _dt.DType, like: Tensor) -> Tensor:
    z = ops.zeros(shape, dtype)
    return z if z.device == like.device else z.to(like.device)


def _pad_last(mask: Tensor | None) -> Tensor | None:
    """Append one zero (attend) column to a float mask's last axis."""
    if mask is None:
        return None
    pad = _zeros(mask.shape[:-1] + (1,), mask.dtype, mask)
    return ops.concat((mask, pad), mask.ndim - 1)
