"""Layer + BatchNorm + activation in one cell: ``Conv2dBnAct`` and ``DenseBnAct``
(MindSpore 1.8's ``nn.combined``); the parts are the ordinary layers, named ``conv``/
``dense``, ``batchnorm`` and ``activation`` as in MindSpore (checkpoint names match)."""

from __future__ import annotations

from typing import Any

from ...ops.nn.conv import conv2d_relu
from .._recompute import is_recompute
from ..cell import Cell
from ._utils import check_channels, check_input
from .activation import LeakyReLU, ReLU, get_activation
from .basic import Dense
from .conv import Conv2d
from .normalization import BatchNorm1d, BatchNorm2d

__all__ = ["Conv2dBnAct", "DenseBnAct"]


def _activation(cls: str, activation: Any, alpha: float) -> Any:
    if activation is None:
        return None
    if isinstance(activation, str) and activation.lower() == "leakyrelu":
        return LeakyReLU(alpha)
    if isinstance(activation, str):
        return get_activation(activation, cls)
    if isinstance(activation, Cell):
        return activation
    raise TypeError(f"{cls}: argument 'activation' expected a name or a Cell, got {activation!r}")


def _runs_as_is(cell: Cell) -> bool:
    """Whether calling ``cell`` is just its ``construct``: no hooks, no ``to_float`` dtype,
    no recompute mark (the fused path below skips the layers' own calls)."""
    return not (
        cell._forward_pre_hooks
        or cell._forward_hooks
        or cell.__dict__.get("_amp_dtype") is not None
        or is_recompute(cell)
    )


class Conv2dBnAct(Cell):
    """``Conv2d`` then (``has_bn``) ``BatchNorm2d`` then (``activation``) an activation."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        pad_mode: str = "same",
        padding: Any = 0,
        dilation: Any = 1,
        group: int = 1,
        has_bias: bool = False,
        weight_init: Any = None,
        bias_init: Any = None,
        has_bn: bool = False,
        momentum: float = 0.997,
        eps: float = 1e-5,
        activation: Any = None,
        alpha: float = 0.2,
        after_fake: bool = True,
    ) -> None:
        super().__init__()
        self.conv = Conv2d(in_channels, out_channels, kernel_size, stride, pad_mode, padding,
                           dilation, group, has_bias, weight_init, bias_init)  # fmt: skip
        self.has_bn = bool(has_bn)
        self.has_act = activation is not None
        if self.has_bn:
            self.batchnorm = BatchNorm2d(out_channels, eps, momentum)
        act = _activation("Conv2dBnAct", activation, alpha)
        if act is not None:
            self.activation = act

    def construct(self, x: Any) -> Any:
        conv = self.conv
        if (
            not self.has_bn
            and self.has_act
            and type(self.activation) is ReLU
            and type(conv) is Conv2d
            and conv.has_bias
            and _runs_as_is(conv)
            and _runs_as_is(self.activation)
        ):
            # conv, bias and ReLU in one op: in eager mode the bias and the ReLU go into the
            # conv's fresh result in one pass (an inference export's folded Conv+BN+ReLU)
            x = check_input(conv.cls_name, x, (4,), conv.format)
            check_channels(conv.cls_name, x, 1, conv.in_channels, "in_channels")
            return conv._forward(conv2d_relu, x, conv.weight)
        x = conv(x)
        if self.has_bn:
            x = self.batchnorm(x)
        if self.has_act:
            x = self.activation(x)
        return x


class DenseBnAct(Cell):
    """``Dense`` then (``has_bn``) ``BatchNorm1d`` then (``activation``) an activation."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        weight_init: Any = None,
        bias_init: Any = None,
        has_bias: bool = True,
        has_bn: bool = False,
        momentum: float = 0.9,
        eps: float = 1e-5,
        activation: Any = None,
        alpha: float = 0.2,
        after_fake: bool = True,
    ) -> None:
        super().__init__()
        self.dense = Dense(in_channels, out_channels, weight_init, bias_init, has_bias)
        self.has_bn = bool(has_bn)
        self.has_act = activation is not None
        if self.has_bn:
            self.batchnorm = BatchNorm1d(out_channels, eps, momentum)
        act = _activation("DenseBnAct", activation, alpha)
        if act is not None:
            self.activation = act

    def construct(self, x: Any) -> Any:
        x = self.dense(x)
        if self.has_bn:
            x = self.batchnorm(x)
        if self.has_act:
            x = self.activation(x)
        return x
