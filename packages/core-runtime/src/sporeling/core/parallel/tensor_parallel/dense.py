"""ColumnParallelDense and RowParallelDense."""

from __future__ import annotations

from typing import Any

from ... import ops
from ...nn.layers.basic import Dense
from ...tensor import Tensor
from ._common import _copy_from, _divisible, _ParallelMixin, _shard_param
from .regions import copy_to_mp, gather_from_mp, reduce_from_mp, scatter_to_mp

__all__ = [
    "ColumnParallelDense",
    "RowParallelDense",
]

# ---- Dense ----------------------------------------------------------------------------------


class ColumnParallelDense(_ParallelMixin, Dense):
    """``Dense`` with ``weight`` (and ``bias``) split along the output features.

    ``ColumnParallelDense(in_channels, out_channels, weight_init=None, bias_init=None,
    has_bias=True, activation=None, gather_output=True, group=None)``. Each rank holds
    ``out_channels / p`` rows of ``weight``; the input is replicated. With
    ``gather_output=True`` the outputs are all-gathered into the full ``out_channels``;
    with False each rank returns its ``out_channels / p`` slice (feed it to a
    :class:`RowParallelDense` with ``input_is_parallel=True``).

    >>> import numpy as np
    >>> ColumnParallelDense(3, 4)(Tensor(np.ones((2, 3), np.float32))).shape
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
        gather_output: bool = True,
        group: str | None = None,
    ) -> None:
        super().__init__(in_channels, out_channels, weight_init, bias_init, has_bias, activation)
        self._init_group(group)
        self.gather_output = bool(gather_output)
        self.out_channels_per_partition = _divisible(
            "ColumnParallelDense", "out_channels", self.out_channels, self.mp_size
        )
        self.tensor_parallel_axes = {"weight": 0}
        _shard_param(self.weight, 0, self.mp_rank, self.mp_size)
        if self.bias is not None:
            self.tensor_parallel_axes["bias"] = 0
            _shard_param(self.bias, 0, self.mp_rank, self.mp_size)

    @classmethod
    def from_dense(
        cls, dense: Dense, gather_output: bool = True, group: str | None = None
    ) -> ColumnParallelDense:
        """The column-parallel twin of ``dense`` (this rank's slice of its parameters)."""
        layer = cls(
            dense.in_channels,
            dense.out_channels,
            "zeros",
            "zeros",
            dense.has_bias,
            dense.activation,
            gather_output,
            group,
        )
        _copy_from(layer.weight, dense.weight, 0, layer.mp_rank, layer.mp_size)
        if dense.bias is not None and layer.bias is not None:
            _copy_from(layer.bias, dense.bias, 0, layer.mp_rank, layer.mp_size)
        return layer

    def construct(self, x: Tensor) -> Tensor:
        if not isinstance(x, Tensor) or x.ndim < 1 or x.shape[-1] != self.in_channels:
            raise ValueError(
                f"ColumnParallelDense: the input expected a Tensor whose last dimension is "
                f"in_channels={self.in_channels}, got {getattr(x, 'shape', x)!r}"
            )
        y = ops.matmul(copy_to_mp(x, self.group), ops.transpose(self.weight, (1, 0)))
        if self.bias is not None:
            y = y + self.bias
        if self.activation is not None:
            y = self.activation(y)
        if self.gather_output:
            y = gather_from_mp(y, -1, self.group)
        return y

    def extend_repr(self) -> str:
        return (
            super().extend_repr()
            + f", gather_output={self.gather_output}, group_size={self.mp_size}"
        )


class RowParallelDense(_ParallelMixin, Dense):
    """``Dense`` with ``weight`` split along the input features.

    ``RowParallelDense(in_channels, out_channels, weight_init=None, bias_init=None,
    has_bias=True, activation=None, input_is_parallel=False, group=None)``. Each rank holds
    ``in_channels / p`` columns of ``weight`` and the whole ``bias``; partial products are
    all-reduced, then the bias and activation are applied. With ``input_is_parallel=True``
    the input is already this rank's ``in_channels / p`` slice (the output of a
    :class:`ColumnParallelDense` with ``gather_output=False``); otherwise the full input is
    given and sliced here.

    >>> import numpy as np
    >>> RowParallelDense(4, 3)(Tensor(np.ones((2, 4), np.float32))).shape
    (2, 3)
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        weight_init: Any = None,
        bias_init: Any = None,
        has_bias: bool = True,
        activation: Any = None,
        input_is_parallel: bool = False,
        group: str | None = None,
    ) -> None:
        super().__init__(in_channels, out_channels, weight_init, bias_init, has_bias, activation)
        self._init_group(group)
        self.input_is_parallel = bool(input_is_parallel)
        self.in_channels_per_partition = _divisible(
            "RowParallelDense", "in_channels", self.in_channels, self.mp_size
        )
        self.tensor_parallel_axes = {"weight": 1}
        _shard_param(self.weight, 1, self.mp_rank, self.mp_size)

    @classmethod
    def from_dense(
        cls, dense: Dense, input_is_parallel: bool = False, group: str | None = None
    ) -> RowParallelDense:
        """The row-parallel twin of ``dense`` (this rank's slice of its parameters)."""
        layer = cls(
            dense.in_channels,
            dense.out_channels,
            "zeros",
            "zeros",
            dense.has_bias,
            dense.activation,
            input_is_parallel,
            group,
        )
        _copy_from(layer.weight, dense.weight, 1, layer.mp_rank, layer.mp_size)
        if dense.bias is not None and layer.bias is not None:
            _copy_from(layer.bias, dense.bias, None, 0, 1)
        return layer

    def construct(self, x: Tensor) -> Tensor:
        want = self.in_channels_per_partition if self.input_is_parallel else self.in_channels
        if not isinstance(x, Tensor) or x.ndim < 1 or x.shape[-1] != want:
            raise ValueError(
                f"RowParallelDense: the input expected a Tensor whose last dimension is {want} "
                f"(input_is_parallel={self.input_is_parallel}), got {getattr(x, 'shape', x)!r}"
            )
        if not self.input_is_parallel:
            x = scatter_to_mp(x, -1, self.group)
        y = reduce_from_mp(ops.matmul(x, ops.transpose(self.weight, (1, 0))), self.group)
        if self.bias is not None:
            y = y + self.bias
        if self.activation is not None:
            y = self.activation(y)
        return y

    def extend_repr(self) -> str:
        return (
            super().extend_repr()
            + f", input_is_parallel={self.input_is_parallel}, group_size={self.mp_size}"
        )
