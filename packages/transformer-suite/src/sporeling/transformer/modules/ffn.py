"""``FeedForward``: ``projection(dropout(act(mapping(x))))`` with 1.8's ``(in, out)`` weights,
optionally one weight per expert (``expert_num > 1``, input ``(expert_num, tokens, hidden)``)."""

from __future__ import annotations

from typing import Any

from sporeling.core import Tensor, nn, ops
from sporeling.core import dtype as mstype

from ._checks import float_type, multiple, positive_int, rate
from .config import OpParallelConfig, default_dpmp_config
from .layers import Linear, activation_cell

__all__ = ["FeedForward"]


class FeedForward(nn.Cell):
    """The position-wise MLP of a transformer block (``hidden_act`` a name or a Cell class)."""

    def __init__(
        self,
        hidden_size: int,
        ffn_hidden_size: int,
        dropout_rate: float,
        hidden_act: Any = "gelu",
        expert_num: int = 1,
        expert_group_size: int | None = None,
        param_init_type: Any = mstype.float32,
        parallel_config: OpParallelConfig = default_dpmp_config,
        compute_dtype: Any = mstype.float16,
    ) -> None:
        super().__init__()
        cls = "FeedForward"
        positive_int(cls, "hidden_size", hidden_size)
        positive_int(cls, "ffn_hidden_size", ffn_hidden_size)
        rate(cls, "dropout_rate", dropout_rate)
        positive_int(cls, "expert_num", expert_num)
        float_type(cls, "param_init_type", param_init_type)
        if not isinstance(parallel_config, OpParallelConfig):
            raise TypeError(
                f"For '{cls}', the argument 'parallel_config' must be an OpParallelConfig, "
                f"but got {type(parallel_config).__name__}."
            )
        multiple(
            cls,
            "ffn_hidden_size",
            ffn_hidden_size,
            "parallel_config.model_parallel",
            parallel_config.model_parallel,
        )
        if isinstance(hidden_act, str):
            act = activation_cell(hidden_act, cls)
        elif isinstance(hidden_act, type) and issubclass(hidden_act, nn.Cell):
            act = hidden_act()
        else:
            raise TypeError(
                f"For '{cls}', the argument 'hidden_act' must be a str or a subclass of Cell, but "
                f"got {hidden_act!r}."
            )
        self.hidden_size, self.ffn_hidden_size = hidden_size, ffn_hidden_size
        self.expert_num, self.expert_group_size = expert_num, expert_group_size
        self.parallel_config = parallel_config
        kw = {
            "transpose_b": False,
            "expert_num": expert_num,
            "param_init_type": param_init_type,
            "compute_dtype": compute_dtype,
        }
        self.mapping = Linear(hidden_size, ffn_hidden_size, activation=act, **kw)
        self.projection = Linear(ffn_hidden_size, hidden_size, **kw)
        self.dropout = nn.Dropout(keep_prob=1.0 - dropout_rate)

    def construct(self, x: Tensor) -> Tensor:
        if x.shape[-1] != self.hidden_size or x.ndim not in (2, 3):
            raise ValueError(
                "For 'FeedForward', the shape of the input 'x' must be (batch, seq, "
                f"{self.hidden_size}) or "
                f"(tokens, {self.hidden_size}), but got {list(x.shape)}."
            )
        if self.expert_num > 1 and (x.ndim != 3 or x.shape[0] != self.expert_num):
            raise ValueError(
                f"For 'FeedForward', with expert_num={self.expert_num} the input 'x' must be "
                f"(expert_num, tokens, {self.hidden_size}), but got {list(x.shape)}."
            )
        shape = x.shape
        if self.expert_num == 1:
            x = ops.reshape(x, (-1, self.hidden_size))
        y = self.dropout(self.projection(self.mapping(x)))
        return ops.reshape(y, shape)
