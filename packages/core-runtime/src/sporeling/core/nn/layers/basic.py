"""Basic layers (MindSpore 1.8 ``nn.Dense``, ``nn.Flatten``, ``nn.Dropout``, ``nn.Identity``)."""

from __future__ import annotations

from typing import Any

from ... import dtype as _dt
from ... import ops
from ...tensor import Tensor
from ..cell import Cell
from ._utils import (
    arg_error,
    check_bool,
    check_dtype,
    check_float,
    check_input,
    check_int,
    default_bias_init,
    default_weight_init,
    make_param,
)

__all__ = ["Dense", "Flatten", "Dropout", "Identity"]


class Dense(Cell):
    """Fully connected layer: ``y = activation(x @ weight.T + bias)``.

    ``weight`` has shape ``(out_channels, in_channels)`` and ``bias`` ``(out_channels,)``
    (MindSpore's layout and parameter names). Inputs of more than 2 dims are multiplied along
    their last axis. ``activation`` is a Cell or a name accepted by :func:`get_activation`.

    >>> import numpy as np
    >>> Dense(3, 4)(Tensor(np.ones((2, 3), np.float32))).shape
    (2, 4)
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        weight_init: Any = None,
        bias_init: Any = None,
        has_bias: bool = True,
        activation: Any = None,
    ) -> None:
        super().__init__()
        self.in_channels = check_int("Dense", "in_channels", in_channels, 1)
        self.out_channels = check_int("Dense", "out_channels", out_channels, 1)
        self.has_bias = check_bool("Dense", "has_bias", has_bias)
        shape = (self.out_channels, self.in_channels)
        weight_init = default_weight_init(weight_init)  # MindSpore 2.x defaults
        bias_init = default_bias_init(bias_init, shape)
        self.weight = make_param("Dense", "weight_init", weight_init, shape, "weight")
        self.bias = (
            make_param("Dense", "bias_init", bias_init, (self.out_channels,), "bias")
            if self.has_bias
            else None
        )
        from .activation import get_activation

        if isinstance(activation, str):
            activation = get_activation(activation, "Dense")
        elif activation is not None and not isinstance(activation, Cell):
            raise arg_error(
                "Dense", "activation", activation, "a Cell, an activation name or None", TypeError
            )
        self.activation = activation
        self.activation_flag = activation is not None

    def construct(self, x: Tensor) -> Tensor:
        if not isinstance(x, Tensor) or x.ndim < 1:
            raise TypeError(f"Dense: the input expected a Tensor of at least 1 dim, got {x!r}")
        if x.shape[-1] != self.in_channels:
            raise ValueError(
                f"Dense: the input's last dimension is {x.shape[-1]} (shape {x.shape}), but the "
                f"layer was built with in_channels={self.in_channels}"
            )
        y = ops.dense(x, self.weight, self.bias)
        if self.activation is not None:
            y = self.activation(y)
        return y

    def extend_repr(self) -> str:
        s = f"input_channels={self.in_channels}, output_channels={self.out_channels}"
        if self.has_bias:
            s += f", has_bias={self.has_bias}"
        if self.activation_flag:
            s += f", activation={self.activation}"
        return s


class Flatten(Cell):
    """Flatten every axis but the first: ``(N, ...) -> (N, prod(...))``.

    ``start_dim``/``end_dim`` (MindSpore 2.x keywords) flatten only that range of axes.
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = check_int("Flatten", "start_dim", start_dim)
        self.end_dim = check_int("Flatten", "end_dim", end_dim)

    def construct(self, x: Tensor) -> Tensor:
        if not isinstance(x, Tensor):
            raise TypeError(f"Flatten: the input expected a Tensor, got {type(x).__name__}")
        nd = max(x.ndim, 1)
        s, e = self.start_dim, self.end_dim
        if not (-nd <= s < nd and -nd <= e < nd) or s % nd > e % nd:
            raise ValueError(
                f"Flatten: start_dim={s} and end_dim={e} are not a valid axis range for a "
                f"{x.ndim}-d input of shape {x.shape}"
            )
        if x.ndim == 0:
            return ops.reshape(x, (1,))
        s, e = s % nd, e % nd
        shape = x.shape[:s] + (-1,) + x.shape[e + 1 :]
        return ops.reshape(x, shape)

    def extend_repr(self) -> str:
        if (self.start_dim, self.end_dim) == (1, -1):
            return ""
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Dropout(Cell):
    """Zero each element with probability ``1 - keep_prob`` in training and scale the rest
    by ``1 / keep_prob``; the identity in evaluation (``set_train(False)``).

    MindSpore 1.8 takes ``keep_prob`` (default 0.5, in (0, 1]); ``p`` (the drop probability,
    MindSpore 2.x) is accepted instead. Masks come from the global generator
    (:func:`sporeling.core.set_seed`).
    """

    def __init__(
        self, keep_prob: float | None = None, dtype: Any = _dt.float32, p: float | None = None
    ) -> None:
        super().__init__()
        if keep_prob is not None and p is not None:
            raise ValueError("Dropout: give either 'keep_prob' (MindSpore 1.8) or 'p', not both")
        if p is not None:
            self.p = check_float("Dropout", "p", p, 0.0, 1.0, high_open=True)
            self.keep_prob = 1.0 - self.p
        else:
            kp = 0.5 if keep_prob is None else keep_prob
            self.keep_prob = check_float("Dropout", "keep_prob", kp, 0.0, 1.0, low_open=True)
            self.p = 1.0 - self.keep_prob
        self.dtype = check_dtype("Dropout", "dtype", dtype)

    def construct(self, x: Tensor) -> Tensor:
        x = check_input("Dropout", x, tuple(range(0, 33)), "any shape")
        if not self.training or self.keep_prob == 1.0:
            return x
        out, _ = ops.dropout(x, self.p)
        return out

    def extend_repr(self) -> str:
        return f"keep_prob={self.keep_prob}"


class Identity(Cell):
    """Returns its input unchanged."""

    def construct(self, x: Any) -> Any:
        return x
