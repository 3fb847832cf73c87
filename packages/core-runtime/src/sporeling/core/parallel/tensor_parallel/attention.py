"""ParallelMultiheadAttention: nn.MultiheadAttention with its heads split."""

from __future__ import annotations

import math
from typing import Any

from ... import ops
from ...nn.layers.attention import MultiheadAttention, _mask_to_float
from ...tensor import Tensor
from ._common import _divisible, _ParallelMixin
from .regions import _chunk, copy_to_mp, gather_from_mp, reduce_from_mp

__all__ = [
    "ParallelMultiheadAttention",
]

# ---- attention ----------------------------------------------------------------------------


class ParallelMultiheadAttention(_ParallelMixin, MultiheadAttention):
    """``nn.MultiheadAttention`` with its heads split over the model-parallel group.

    ``ParallelMultiheadAttention(embed_dim, num_heads, dropout=0.0, has_bias=True,
    batch_first=False, group=None)``: each rank holds ``num_heads / p`` heads — its rows of
    the q, k and v blocks of ``in_proj_weight``/``in_proj_bias`` (a column-parallel input
    projection) and the matching columns of ``out_proj.weight`` (a row-parallel output
    projection, whose partial results are all-reduced before the replicated bias is added).
    Inputs, masks and outputs are as in ``MultiheadAttention``; ``attn_weights`` are
    all-gathered over heads when asked for. ``add_bias_kv``, ``add_zero_attn`` and
    ``kdim``/``vdim`` different from ``embed_dim`` are not supported.
    """

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
        group: str | None = None,
    ) -> None:
        cls = "ParallelMultiheadAttention"

        def unsupported(arg: str, value: Any) -> ValueError:
            return ValueError(
                f"{cls}: argument '{arg}'={value!r} is not supported with heads split over "
                "ranks (add_bias_kv, add_zero_attn and kdim/vdim != embed_dim are not); use "
                "nn.MultiheadAttention"
            )

        if add_bias_kv:
            raise unsupported("add_bias_kv", add_bias_kv)
        if add_zero_attn:
            raise unsupported("add_zero_attn", add_zero_attn)
        if kdim not in (None, embed_dim):
            raise unsupported("kdim", kdim)
        if vdim not in (None, embed_dim):
            raise unsupported("vdim", vdim)
        super().__init__(
            embed_dim, num_heads, dropout, has_bias, False, False, None, None, batch_first
        )
        self._init_group(group)
        self.local_heads = _divisible(cls, "num_heads", self.num_heads, self.mp_size)
        # (axis, blocks): the q, k and v blocks of axis 0 are each split over the ranks
        self.tensor_parallel_axes = {"in_proj_weight": (0, 3), "out_proj.weight": 1}
        if self.in_proj_bias is not None:
            self.tensor_parallel_axes["in_proj_bias"] = (0, 3)
        # kdim == vdim == embed_dim (checked above), so the packed q/k/v weight exists
        assert self.in_proj_weight is not None
        self._shard_from(self.in_proj_weight, self.in_proj_bias, self.out_proj.weight)

    def _shard_from(self, w_in: Tensor, b_in: Tensor | None, w_out: Tensor) -> None:
        rank, size = self.mp_rank, self.mp_size
        xp = w_in._device.xp

        def qkv_rows(data: Any) -> Any:
            if size == 1:
                return data.copy()
            return xp.concatenate(
                [_chunk(xp, part, 0, rank, size) for part in xp.split(data, 3, axis=0)], axis=0
            )

        assert self.in_proj_weight is not None
        self.in_proj_weight.set_data(Tensor._wrap(qkv_rows(w_in._data), w_in._device))
        if b_in is not None and self.in_proj_bias is not None:
            self.in_proj_bias.set_data(Tensor._wrap(qkv_rows(b_in._data), b_in._device))
        w = w_out._data if size == 1 else _chunk(xp, w_out._data, 1, rank, size)
        self.out_proj.weight.set_data(Tensor._wrap(w.copy(), w_out._device))

    @classmethod
    def from_dense(
        cls, mha: MultiheadAttention, group: str | None = None
    ) -> ParallelMultiheadAttention:
        """The head-parallel twin of ``mha`` (this rank's heads of its parameters)."""
        if mha.in_proj_weight is None or mha.bias_k is not None or mha.add_zero_attn:
            raise ValueError(
                "ParallelMultiheadAttention.from_dense: argument 'mha' with kdim/vdim != "
                "embed_dim, add_bias_kv or add_zero_attn is not supported (only such attention "
                "can be split by heads)"
            )
        layer = cls(
            mha.embed_dim,
            mha.num_heads,
            mha.dropout,
            mha.has_bias,
            batch_first=mha.batch_first,
            group=group,
        )
        layer._shard_from(mha.in_proj_weight, mha.in_proj_bias, mha.out_proj.weight)
        if mha.out_proj.bias is not None and layer.out_proj.bias is not None:
            layer.out_proj.bias.set_data(mha.out_proj.bias)
        return layer

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
        name = "ParallelMultiheadAttention"
        batched = self._check_qkv(query, key, value)
        dtype = query.dtype
        if not batched:
            query, key, value = (ops.expand_dims(t, 1) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = ops.expand_dims(key_padding_mask, 0)
        elif self.batch_first:
            query, key, value = (ops.swapaxes(t, 0, 1) for t in (query, key, value))
        tgt_len, bsz, _ = query.shape
        src_len = key.shape[0]
        heads, hd, size = self.local_heads, self.head_dim, self.mp_size
        local_e = heads * hd
        assert self.in_proj_weight is not None
        w_q, w_k, w_v = ops.split(self.in_proj_weight, 0, 3)
        b_q = b_k = b_v = None
        if self.in_proj_bias is not None:
            b_q, b_k, b_v = ops.split(self.in_proj_bias, 0, 3)
        group = self.group

        def proj(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
            y = ops.matmul(copy_to_mp(x, group), ops.transpose(w, (1, 0)))
            return y if b is None else y + b

        q, k, v = proj(query, w_q, b_q), proj(key, w_k, b_k), proj(value, w_v, b_v)

        mask = None
        if attn_mask is not None:
            mask = _mask_to_float("attn_mask", attn_mask, dtype, allow_uint8=True)
            if mask.ndim == 2:
                if mask.shape != (tgt_len, src_len):
                    raise ValueError(f"{name}: attn_mask expected shape ({tgt_len}, {src_len})")
                mask = ops.expand_dims(mask, 0)
            elif mask.ndim == 3 and mask.shape == (bsz * self.num_heads, tgt_len, src_len):
                # keep this rank's heads: (N, H, L, S) -> (N, H/p, L, S)
                mask = ops.reshape(mask, (bsz, self.num_heads, tgt_len, src_len))
                start = self.mp_rank * heads
                mask = ops.reshape(mask[:, start : start + heads], (bsz * heads, tgt_len, src_len))
            else:
                raise ValueError(
                    f"{name}: attn_mask expected shape ({tgt_len}, {src_len}) or "
                    f"({bsz * self.num_heads}, {tgt_len}, {src_len}), got {mask.shape}"
                )
        if key_padding_mask is not None:
            kpm = _mask_to_float("key_padding_mask", key_padding_mask, dtype, allow_uint8=False)
            if kpm.shape != (bsz, src_len):
                raise ValueError(f"{name}: key_padding_mask expected shape ({bsz}, {src_len})")
            kpm = ops.reshape(
                ops.broadcast_to(ops.reshape(kpm, (bsz, 1, 1, src_len)), (bsz, heads, 1, src_len)),
                (bsz * heads, 1, src_len),
            )
            mask = kpm if mask is None else mask + kpm

        q = ops.transpose(ops.reshape(q, (tgt_len, bsz * heads, hd)), (1, 0, 2))
        k = ops.transpose(ops.reshape(k, (src_len, bsz * heads, hd)), (1, 0, 2))
        v = ops.transpose(ops.reshape(v, (src_len, bsz * heads, hd)), (1, 0, 2))
        scores = ops.matmul(q * (1.0 / math.sqrt(hd)), ops.transpose(k, (0, 2, 1)))
        if mask is not None:
            scores = scores + mask
        weights = ops.softmax(scores, -1)
        if self.dropout and self.training:
            weights = ops.dropout(weights, self.dropout)[0]
        out = ops.matmul(weights, v)  # (N * heads/p, L, hd)
        out = ops.reshape(ops.transpose(out, (1, 0, 2)), (tgt_len * bsz, local_e))
        w_o = self.out_proj.weight
        out = reduce_from_mp(ops.matmul(out, ops.transpose(w_o, (1, 0))), group)
        if self.out_proj.bias is not None:
            out = out + self.out_proj.bias
        out = ops.reshape(out, (tgt_len, bsz, self.embed_dim))
        if batched and self.batch_first:
            out = ops.swapaxes(out, 0, 1)
        elif not batched:
            out = ops.squeeze(out, 1)
        if not need_weights:
            return out, None
        weights = ops.reshape(weights, (bsz, heads, tgt_len, src_len))
        if size > 1:
            weights = gather_from_mp(weights, 1, group)
        if average_attn_weights:
            weights = ops.reduce_mean(weights, 1)
        if not batched:
            weights = ops.squeeze(weights, 0)
        return out, weights

    def extend_repr(self) -> str:
        return (
            super().extend_repr() + f", local_heads={self.local_heads}, group_size={self.mp_size}"
        )
