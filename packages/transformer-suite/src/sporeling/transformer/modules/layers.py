"""The two leaf layers every 1.8 transformer block is made of: ``_LayerNorm`` (epsilon 1e-5,
computed in ``layernorm_compute_type``) and ``_Linear`` (weight ``(in, out)`` unless
``transpose_b``, optional per-expert weights), with 1.8's parameter names."""

from __future__ import annotations

from typing import Any

from sporeling.core import Parameter, Tensor, nn, ops
from sporeling.core import dtype as mstype
from sporeling.core.initializer import initializer
from sporeling.core.parallel.tensor_parallel import copy_to_mp, reduce_from_mp

__all__ = ["LayerNorm", "Linear", "make_param"]


def make_param(init: Any, shape: tuple[int, ...], dtype: Any, name: str) -> Parameter:
    return Parameter(initializer(init, shape, dtype), name=name)


class LayerNorm(nn.Cell):
    """``(x - mean) / sqrt(var + eps) * gamma + beta`` over the last axis, computed in
    ``param_init_type``."""

    def __init__(
        self,
        normalized_shape: tuple[int, ...],
        eps: float = 1e-5,
        param_init_type: Any = mstype.float32,
    ) -> None:
        super().__init__()
        self.gamma = make_param("ones", tuple(normalized_shape), param_init_type, "gamma")
        self.beta = make_param("zeros", tuple(normalized_shape), param_init_type, "beta")
        self.eps = eps

    def construct(self, x: Tensor) -> Tensor:
        dt = x.dtype
        if dt != self.gamma.dtype:
            x = ops.cast(x, self.gamma.dtype)
        y, _, _ = ops.layer_norm(x, self.gamma, self.beta, -1, -1, self.eps)
        return ops.cast(y, dt) if dt != self.gamma.dtype else y


class Linear(nn.Cell):
    """``x @ W + b`` with 1.8's ``_Linear`` layout: ``weight`` is ``(out, in)`` when
    ``transpose_b`` (the default), ``(in, out)`` otherwise; with ``expert_num > 1`` it is
    ``(expert_num, in, out)`` and the input ``(expert_num, tokens, in)``."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        weight_init: Any = "normal",
        bias_init: Any = "zeros",
        has_bias: bool = True,
        activation: Any = None,
        transpose_b: bool = True,
        expert_num: int = 1,
        param_init_type: Any = mstype.float32,
        compute_dtype: Any = mstype.float16,
    ) -> None:
        super().__init__()
        self.in_channels, self.out_channels = in_channels, out_channels
        self.transpose_b = transpose_b
        self.expert_num = expert_num
        if expert_num > 1:
            shape: tuple[int, ...] = (expert_num, in_channels, out_channels)
            self.transpose_b = False
        else:
            shape = (out_channels, in_channels) if transpose_b else (in_channels, out_channels)
        self.weight = make_param(weight_init, shape, param_init_type, "weight")
        self.has_bias = has_bias
        if has_bias:
            bshape = (expert_num, 1, out_channels) if expert_num > 1 else (out_channels,)
            self.bias = make_param(bias_init, bshape, param_init_type, "bias")
        else:
            self.bias = None
        self.activation = activation_cell(activation) if isinstance(activation, str) else activation
        self.compute_dtype = compute_dtype
        # tensor parallelism (set by sporeling.transformer.parallel.shard_model):
        # "column" = output features split, "row" = input features split and summed
        self.mp_mode: str | None = None
        self.mp_group: str | None = None

    def construct(self, x: Tensor) -> Tensor:
        cd = self.compute_dtype
        x = ops.cast(x, cd) if x.dtype != cd else x
        if self.mp_mode == "column":
            x = copy_to_mp(x, self.mp_group)
        w = ops.cast(self.weight, cd) if self.weight.dtype != cd else self.weight
        b = self.bias
        if b is not None and b.dtype != cd:
            b = ops.cast(b, cd)
        if self.expert_num == 1 and self.transpose_b:
            # one product with the bias added inside (``ops.dense``: no transposed view of
            # the weight, no second pass over the result; a one-token decode step is
            # mostly such calls); a row-parallel product adds it after the reduction
            row = self.mp_mode == "row"
            y = ops.dense(x, w, None if row else b)
            if row:
                y = reduce_from_mp(y, self.mp_group)
                if b is not None:
                    y = y + b
        else:
            y = ops.matmul(x, w)
            if self.mp_mode == "row":
                y = reduce_from_mp(y, self.mp_group)
            if b is not None:
                y = y + b
        if self.activation is not None:
            y = self.activation(y)
        return y


_ACTIVATIONS = {
    "gelu": lambda: nn.GELU(approximate=True),
    "fast_gelu": nn.FastGelu,
    "relu": nn.ReLU,
    "sigmoid": nn.Sigmoid,
    "tanh": nn.Tanh,
    "silu": nn.SiLU,
    "gelu_exact": lambda: nn.GELU(approximate=False),
    "gelu_new": lambda: nn.GELU(approximate=True),
}


def activation_cell(name: str, owner: str = "FeedForward") -> nn.Cell:
    """``hidden_act`` by name (1.8's names plus ``gelu_exact`` for erf-GELU)."""
    key = name.lower()
    if key not in _ACTIVATIONS:
        raise ValueError(
            f"For '{owner}', the argument 'hidden_act' must be one of {sorted(_ACTIVATIONS)}, but "
            f"got {name!r}."
        )
    return _ACTIVATIONS[key]()
