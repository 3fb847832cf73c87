"""``MoE``: a top-k routed mixture of ``FeedForward`` experts with a capacity limit and the
Switch-Transformer load-balancing loss (MindSpore 1.8's ``nn.transformer.moe``).

Tokens are split into groups of ``expert_group_size`` (all tokens: one group). Each expert
takes at most ``capacity = ceil(tokens_per_group * capacity_factor * k / expert_num)``
tokens per group; tokens past it are dropped for that expert (their output is zero from it).
The auxiliary loss is ``aux_loss_factor * E^2 * mean_e(f_e * P_e)`` with ``f_e`` the share of
tokens whose first choice is ``e`` and ``P_e`` the mean router probability of ``e``.
"""

from __future__ import annotations

import math
from typing import Any

from sporeling.core import Tensor, nn, ops
from sporeling.core import dtype as mstype

from .config import MoEConfig, OpParallelConfig, default_dpmp_config, default_moe_config
from .ffn import FeedForward
from .layers import Linear

__all__ = ["MoE"]


class MoE(nn.Cell):
    """``construct(x) -> (output, aux_loss)``, ``x`` (batch, seq, hidden) or (tokens, hidden)."""

    def __init__(
        self,
        hidden_size: int,
        ffn_hidden_size: int,
        dropout_rate: float,
        hidden_act: Any = "gelu",
        param_init_type: Any = mstype.float32,
        moe_config: MoEConfig = default_moe_config,
        parallel_config: OpParallelConfig = default_dpmp_config,
        compute_dtype: Any = mstype.float16,
    ) -> None:
        super().__init__()
        if not isinstance(moe_config, MoEConfig):
            raise TypeError(
                f"For 'MoE', the argument 'moe_config' must be a MoEConfig, but got {moe_config!r}."
            )
        if moe_config.expert_num < 2:
            raise ValueError(
                f"For 'MoE', 'moe_config.expert_num' must be > 1, but got {moe_config.expert_num}."
            )
        self.hidden_size = hidden_size
        self.expert_num = moe_config.expert_num
        self.k = moe_config.num_experts_chosen
        self.capacity_factor = moe_config.capacity_factor
        self.aux_loss_factor = moe_config.aux_loss_factor
        self.group_size = moe_config.expert_group_size
        self.compute_dtype = compute_dtype
        self.ffn = FeedForward(
            hidden_size,
            ffn_hidden_size,
            dropout_rate,
            hidden_act,
            expert_num=self.expert_num,
            param_init_type=param_init_type,
            parallel_config=parallel_config,
            compute_dtype=compute_dtype,
        )
        self.router = Router(hidden_size, self.expert_num, param_init_type)

    def capacity(self, tokens_per_group: int) -> int:
        return max(1, math.ceil(tokens_per_group * self.capacity_factor * self.k / self.expert_num))

    def construct(self, x: Tensor) -> tuple[Tensor, Tensor]:
        shape = x.shape
        h, E = self.hidden_size, self.expert_num
        flat = ops.reshape(x, (-1, h))
        tokens = flat.shape[0]
        gs = self.group_size or tokens
        if tokens % gs != 0:
            raise ValueError(
                f"For 'MoE', the number of tokens {tokens} must be a multiple of "
                f"'expert_group_size' {gs}."
            )
        g = tokens // gs
        cap = self.capacity(gs)
        grouped = ops.reshape(flat, (g, gs, h))
        probs = self.router(grouped)  # (g, t, E) float32
        dispatch, combine, aux = self._route(probs, cap)
        dispatch = ops.cast(dispatch, self.compute_dtype)
        xin = ops.cast(grouped, self.compute_dtype)
        expert_in = ops.matmul(ops.transpose(dispatch, (0, 2, 1)), xin)  # (g, E*C, h)
        expert_in = ops.transpose(ops.reshape(expert_in, (g, E, cap, h)), (1, 0, 2, 3))
        expert_out = self.ffn(ops.reshape(expert_in, (E, g * cap, h)))
        expert_out = ops.reshape(
            ops.transpose(ops.reshape(expert_out, (E, g, cap, h)), (1, 0, 2, 3)), (g, E * cap, h)
        )
        out = ops.matmul(ops.cast(combine, self.compute_dtype), expert_out)  # (g, t, h)
        return ops.reshape(out, shape), aux

    def _route(self, probs: Tensor, cap: int) -> tuple[Tensor, Tensor, Tensor]:
        g, t, E = probs.shape
        remaining = probs
        filled = None  # tokens already placed per (group, expert)
        dispatch_sum, gate_sum = None, None
        one, zero = Tensor(1.0, probs.dtype), Tensor(0.0, probs.dtype)
        gates = []
        masks = []
        for choice in range(self.k):
            idx = ops.argmax(ops.stop_gradient(remaining), -1)
            mask = ops.one_hot(idx, E, one, zero)  # (g, t, E)
            if choice == 0:
                density = ops.reduce_mean(mask, 1)
                proxy = ops.reduce_mean(probs, 1)
                aux = ops.reduce_mean(density * proxy) * float(E * E) * self.aux_loss_factor
            pos = ops.cumsum(mask, 1) * mask - mask  # 0-based position inside the expert
            if filled is not None:
                pos = pos + ops.expand_dims(filled, 1) * mask
            keep = mask * ops.cast(ops.less(pos, float(cap)), probs.dtype)
            filled = ops.reduce_sum(keep, 1) + (filled if filled is not None else 0.0)
            gate = ops.reduce_sum(probs * keep, -1)  # (g, t)
            slot = ops.one_hot(
                ops.cast(ops.reduce_sum(pos * keep, -1), mstype.int32), cap, one, zero
            )
            d = ops.expand_dims(keep, 3) * ops.expand_dims(slot, 2)  # (g, t, E, C)
            gates.append(gate)
            masks.append(d)
            remaining = remaining * (1.0 - mask)
        total = gates[0]
        for gt in gates[1:]:
            total = total + gt
        denom = total + 1e-9 if self.k > 1 else None
        for gt, d in zip(gates, masks):
            w = gt / denom if denom is not None else gt
            c = ops.expand_dims(ops.expand_dims(w, 2), 3) * d
            dispatch_sum = d if dispatch_sum is None else dispatch_sum + d
            gate_sum = c if gate_sum is None else gate_sum + c
        return (
            ops.reshape(dispatch_sum, (g, t, E * cap)),
            ops.reshape(gate_sum, (g, t, E * cap)),
            aux,
        )


class Router(nn.Cell):
    """Softmax over a bias-free projection to the experts (float32)."""

    def __init__(self, hidden_size: int, expert_num: int, param_init_type: Any) -> None:
        super().__init__()
        # routing runs in float32 (float64 when the parameters are float64)
        self.dtype = mstype.float64 if param_init_type == mstype.float64 else mstype.float32
        self.dense = Linear(
            hidden_size,
            expert_num,
            has_bias=False,
            param_init_type=param_init_type,
            compute_dtype=self.dtype,
        )

    def construct(self, x: Tensor) -> Tensor:
        return ops.softmax(self.dense(ops.cast(x, self.dtype)), -1)
