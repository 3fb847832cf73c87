"""``AttentionMask`` and ``MultiHeadAttention`` as MindSpore 1.8 defines them, including the
``use_past`` key/value cache.

The cache is fixed-length and stored as 1.8 stores it: keys transposed
``(batch, heads, size_per_head, seq)``, values ``(batch, heads, seq, size_per_head)``. On the
first iteration (``is_first_iteration=True``) the whole padded prompt goes in and the keys
and values past each row's ``batch_valid_length`` are zeroed (beyond 1.8: a shorter prompt
window with ``batch_valid_length`` is accepted too, its cache padded with zeros to the
window's length, so the cache shape stays fixed); on later iterations one token
goes in, its key and value are tiled over the sequence, kept only at the row's current
position (the count of nonzero cache entries) and added into the past.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sporeling.core import Parameter, Tensor, nn, ops
from sporeling.core import dtype as mstype

from ._checks import boolean, float_type, multiple, positive_int, rate
from .config import OpParallelConfig, default_dpmp_config
from .layers import Linear

__all__ = ["AttentionMask", "MultiHeadAttention", "add_flags_recursive"]

MASK_ADDER = -10000.0  # 1.8 adds (1 - mask) * -10000 to the scores


def add_flags_recursive(cell: nn.Cell, **flags: Any) -> nn.Cell:
    """``Cell.add_flags_recursive`` of 1.8: set each flag on the cell and all its children
    (``is_first_iteration=True|False`` switches the ``use_past`` phase); the core's method
    when the Cell has it, so ``net.add_flags_recursive(...)`` works the same."""
    method = getattr(cell, "add_flags_recursive", None)
    if callable(method):
        method(**flags)
        return cell
    for _, sub in cell.cells_and_names():
        for k, v in flags.items():
            object.__setattr__(sub, k, v)
    return cell


def _shape_error(
    cls: str, name: str, got: tuple[int, ...], expected: list[list[Any]]
) -> ValueError:
    return ValueError(
        f"For '{cls}', the shape of the input '{name}' must be one of {expected}, but got "
        f"{list(got)}."
    )


class AttentionMask(nn.Cell):
    """``(batch, seq)`` input mask (nonzero = token) to the ``(batch, seq, seq)`` causal
    attention mask ``mask[b, i, j] = m[b, i] * m[b, j] * (j <= i)``."""

    def __init__(
        self, seq_length: int, parallel_config: OpParallelConfig = default_dpmp_config
    ) -> None:
        super().__init__()
        self.seq_length = positive_int("AttentionMask", "seq_length", seq_length)
        if not isinstance(parallel_config, OpParallelConfig):
            raise TypeError(
                f"For 'AttentionMask', the argument 'parallel_config' must be an OpParallelConfig, "
                f"but got {type(parallel_config).__name__}."
            )
        self.parallel_config = parallel_config
        self.lower_triangle_mask = Tensor(np.tril(np.ones((seq_length, seq_length), np.float32)))

    def construct(self, input_mask: Tensor) -> Tensor:
        if input_mask.ndim != 2 or input_mask.shape[1] != self.seq_length:
            raise _shape_error(
                "AttentionMask", "input_mask", input_mask.shape, [["batch_size", self.seq_length]]
            )
        m = ops.cast(ops.not_equal(input_mask, 0), mstype.float32)
        b, s = m.shape
        mask = ops.reshape(m, (b, s, 1)) * ops.reshape(m, (b, 1, s))
        return mask * ops.expand_dims(self.lower_triangle_mask, 0)


class MultiHeadAttention(nn.Cell):
    """Scaled dot-product attention over ``num_heads`` heads with q/k/v projections
    ``dense1``/``dense2``/``dense3`` and the output ``projection``.

    ``construct(query, key, value, attention_mask, key_past=None, value_past=None,
    batch_valid_length=None)`` returns ``(output, (key, value))``; ``attention_mask`` is
    ``(batch, src_seq, tgt_seq)`` with 1 where attention is allowed (``None``: no mask).
    ``batch_size=None`` accepts any batch (MindSpore 2.x's form).
    """

    def __init__(
        self,
        batch_size: int | None,
        src_seq_length: int,
        tgt_seq_length: int,
        hidden_size: int,
        num_heads: int,
        hidden_dropout_rate: float = 0.1,
        attention_dropout_rate: float = 0.1,
        compute_dtype: Any = mstype.float16,
        softmax_compute_type: Any = mstype.float32,
        param_init_type: Any = mstype.float32,
        use_past: bool = False,
        parallel_config: OpParallelConfig = default_dpmp_config,
    ) -> None:
        super().__init__()
        cls = "MultiHeadAttention"
        if batch_size is not None:
            positive_int(cls, "batch_size", batch_size)
        self.batch_size = batch_size
        self.src_seq_length = positive_int(cls, "src_seq_length", src_seq_length)
        self.tgt_seq_length = positive_int(cls, "tgt_seq_length", tgt_seq_length)
        self.hidden_size = positive_int(cls, "hidden_size", hidden_size)
        self.num_heads = positive_int(cls, "num_heads", num_heads)
        rate(cls, "hidden_dropout_rate", hidden_dropout_rate)
        rate(cls, "attention_dropout_rate", attention_dropout_rate)
        float_type(cls, "compute_dtype", compute_dtype)
        float_type(cls, "softmax_compute_type", softmax_compute_type)
        float_type(cls, "param_init_type", param_init_type)
        self.use_past = boolean(cls, "use_past", use_past)
        if not isinstance(parallel_config, OpParallelConfig):
            raise TypeError(
                f"For '{cls}', the argument 'parallel_config' must be an OpParallelConfig, "
                f"but got {type(parallel_config).__name__}."
            )
        multiple(cls, "hidden_size", hidden_size, "num_heads", num_heads)
        multiple(
            cls,
            "num_heads",
            num_heads,
            "parallel_config.model_parallel",
            parallel_config.model_parallel,
        )
        multiple(
            cls,
            "hidden_size",
            hidden_size,
            "parallel_config.model_parallel",
            parallel_config.model_parallel,
        )
        if batch_size is not None:
            multiple(
                cls,
                "batch_size",
                batch_size,
                "parallel_config.data_parallel",
                parallel_config.data_parallel,
            )
        self.parallel_config = parallel_config
        self.size_per_head = hidden_size // num_heads
        self.local_heads = num_heads  # heads held by this rank (fewer under tensor parallelism)
        self.compute_dtype, self.softmax_dtype = compute_dtype, softmax_compute_type
        self.is_first_iteration = True
        kw = {"param_init_type": param_init_type, "compute_dtype": compute_dtype}
        self.projection = Linear(hidden_size, hidden_size, **kw)
        self.dense1 = Linear(hidden_size, hidden_size, **kw)
        self.dense2 = Linear(hidden_size, hidden_size, **kw)
        self.dense3 = Linear(hidden_size, hidden_size, **kw)
        self.dropout = nn.Dropout(keep_prob=1.0 - hidden_dropout_rate)
        self.prob_dropout = nn.Dropout(keep_prob=1.0 - attention_dropout_rate)
        self.range = Tensor(np.arange(tgt_seq_length, dtype=np.int32).reshape(1, 1, -1))

    # -- shapes -------------------------------------------------------------------------

    def _batch_and_check(
        self, query: Tensor, key: Tensor, value: Tensor, bvl: Tensor | None = None
    ) -> tuple[int, int]:
        h = self.hidden_size
        incremental = not self.is_first_iteration  # one query position per step
        src = 1 if incremental else self.src_seq_length
        if self.use_past and not incremental and bvl is not None and bvl.ndim == 1:
            # the prompt pass may be shorter than the window (a bucket that holds the longest
            # prompt); the cache it fills keeps the window's length
            rows = query.shape[0] * (query.shape[1] if query.ndim == 3 else 1)
            n = query.shape[1] if query.ndim == 3 else rows // max(bvl.shape[0], 1)
            if 1 <= n < src and rows == bvl.shape[0] * n:
                src = n
        if query.ndim == 3:
            b = query.shape[0]
            ok = query.shape[1:] == (src, h)
        elif query.ndim == 2:
            b = query.shape[0] // src
            ok = query.shape[1] == h and query.shape[0] % src == 0
        else:
            ok, b = False, 0
        if self.batch_size is not None and b != self.batch_size:
            ok = False
        bs: Any = self.batch_size if self.batch_size is not None else "batch_size"
        if not ok:
            raise _shape_error(
                "MultiHeadAttention",
                "query_tensor",
                query.shape,
                [[bs, src, h], [f"{bs} * {src}", h]],
            )
        for name, t in (("key_tensor", key), ("value_tensor", value)):
            tgt = t.shape[1] if t.ndim == 3 else t.shape[0] // max(b, 1)
            if (
                t.shape[-1] != h
                or (t.ndim == 3 and t.shape[0] != b)
                or (t.ndim == 2 and t.shape[0] != b * tgt)
            ):
                raise _shape_error(
                    "MultiHeadAttention", name, t.shape, [[bs, "seq", h], [f"{bs} * seq", h]]
                )
        return b, src

    # -- forward ------------------------------------------------------------------------

    def construct(
        self,
        query_tensor: Tensor,
        key_tensor: Tensor,
        value_tensor: Tensor,
        attention_mask: Tensor | None,
        key_past: Tensor | None = None,
        value_past: Tensor | None = None,
        batch_valid_length: Tensor | None = None,
    ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        b, _ = self._batch_and_check(query_tensor, key_tensor, value_tensor, batch_valid_length)
        ori_shape = query_tensor.shape
        h, nh, d = self.hidden_size, self.local_heads, self.size_per_head
        q = self.dense1(ops.reshape(query_tensor, (-1, h)))
        k = self.dense2(ops.reshape(key_tensor, (-1, h)))
        v = self.dense3(ops.reshape(value_tensor, (-1, h)))
        q = ops.transpose(ops.reshape(q, (b, -1, nh, d)), (0, 2, 1, 3))
        k = ops.transpose(ops.reshape(k, (b, -1, nh, d)), (0, 2, 3, 1))  # (b, heads, d, seq)
        v = ops.transpose(ops.reshape(v, (b, -1, nh, d)), (0, 2, 1, 3))
        if self.use_past:
            k, v, layer_present = self._use_past(k, v, key_past, value_past, batch_valid_length)
        else:
            layer_present = (k, v)
        out = self._attn(q, k, v, attention_mask)
        out = self.dropout(self.projection(out))
        return ops.reshape(out, ori_shape), layer_present

    def _use_past(
        self,
        key: Tensor,
        value: Tensor,
        key_past: Tensor | None,
        value_past: Tensor | None,
        bvl: Tensor | None,
    ) -> tuple[Tensor, Tensor, tuple[Tensor, Tensor]]:
        """Keys and values to attend over, and the cache ``(key, value)`` to keep."""
        dt = key.dtype
        if self.is_first_iteration:
            if bvl is None:
                return key, value, (key, value)
            n = key.shape[3]
            rng = self.range if n == self.tgt_seq_length else self.range[:, :, :n]
            valid = ops.cast(ops.less(rng, ops.reshape(bvl, (-1, 1, 1))), dt)  # (b, 1, n)
            key, value = key * ops.expand_dims(valid, 2), value * ops.expand_dims(valid, 3)
            if n == self.tgt_seq_length:
                return key, value, (key, value)
            # a prompt pass shorter than the window: the cache still spans the window (zeros
            # after the prompt, as the full-window pass leaves it), its shape fixed
            pad = self.tgt_seq_length - n
            b, nh, d = key.shape[0], key.shape[1], key.shape[2]
            present = (
                ops.concat((key, ops.zeros((b, nh, d, pad), dt)), 3),
                ops.concat((value, ops.zeros((b, nh, pad, d), dt)), 2),
            )
            return key, value, present
        if key_past is None or value_past is None:
            raise ValueError(
                "For 'MultiHeadAttention', incremental inference (use_past=True, "
                "is_first_iteration=False) needs 'key_past' and 'value_past', but got None."
            )
        seq = self.tgt_seq_length
        first = ops.reshape(key_past[:, 0:1, 0:1, :], (key.shape[0], seq))
        valid_length = ops.reduce_sum(ops.cast(ops.not_equal(first, 0), mstype.float32), 1)
        valid_length = ops.cast(ops.reshape(valid_length, (-1, 1, 1)), mstype.int32)
        if isinstance(key_past, Parameter) and isinstance(value_past, Parameter):
            present = self._write_past(key, value, key_past, value_past, valid_length)
            return ops.cast(present[0], dt), ops.cast(present[1], dt), present
        pos = ops.cast(ops.equal(valid_length, self.range), dt)  # (b, 1, seq)
        # 1.8 tiles the new key/value over the window before the product; broadcasting the
        # (b, heads, d, 1) key against the (b, 1, 1, seq) one-hot gives the same values
        # without the tiled copy
        cur_k = key * ops.expand_dims(pos, 2)
        cur_v = value * ops.expand_dims(pos, 3)
        present = (ops.cast(key_past, dt) + cur_k, ops.cast(value_past, dt) + cur_v)
        return present[0], present[1], present

    def _write_past(
        self, key: Tensor, value: Tensor, key_past: Parameter, value_past: Parameter, at: Tensor
    ) -> tuple[Tensor, Tensor]:
        """Add the new key/value into cache Parameters at each row's position ``at`` (b, 1, 1)
        in place (``scatter_nd_add``: in a graph an effect on the Parameters' buffers, so a
        decode step writes one position instead of a new cache). The same values as the
        one-hot add: a full cache (``at == seq``) takes nothing."""
        b, nh, d = key.shape[0], key.shape[1], key.shape[2]
        seq = self.tgt_seq_length
        room = ops.cast(ops.less(at, seq), key.dtype)  # (b, 1, 1)
        at = ops.minimum(at, seq - 1)
        grid = np.indices((b, nh, d), dtype=np.int32)  # (3, b, nh, d)
        pos_k = ops.broadcast_to(ops.reshape(at, (b, 1, 1, 1)), (b, nh, d, 1))
        idx_k = ops.concat((Tensor(np.moveaxis(grid, 0, -1)), pos_k), -1)  # (b, nh, d, 4)
        pos_v = ops.broadcast_to(ops.reshape(at, (b, 1, 1)), (b, nh, 1))
        idx_v = ops.concat((Tensor(np.moveaxis(grid[:2, :, :, 0], 0, -1)), pos_v), -1)
        upd_k = ops.reshape(key, (b, nh, d)) * room
        upd_v = ops.reshape(value, (b, nh, d)) * room
        ops.scatter_nd_add(key_past, idx_k, ops.cast(upd_k, key_past.dtype))
        ops.scatter_nd_add(value_past, idx_v, ops.cast(upd_v, value_past.dtype))
        return key_past, value_past

    def _attn(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None) -> Tensor:
        score = ops.matmul(q, k) * (1.0 / math.sqrt(self.size_per_head))
        score = ops.cast(score, self.softmax_dtype)
        if mask is not None:
            m = ops.cast(mask, self.softmax_dtype)
            if m.ndim == 3:
                m = ops.expand_dims(m, 1)
            score = score + (1.0 - m) * MASK_ADDER
        probs = ops.cast(ops.softmax(score, -1), self.compute_dtype)
        probs = self.prob_dropout(probs)
        ctx = ops.matmul(probs, v)  # (b, heads, q, d)
        ctx = ops.transpose(ctx, (0, 2, 1, 3))
        return ops.reshape(ctx, (-1, self.local_heads * self.size_per_head))
