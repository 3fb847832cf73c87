"""``conv_bias``: a convolution with its per-channel bias added into the fresh result in place
(with ``relu=True`` also the ReLU, in the same pass: ``nn.Conv2dBnAct`` without BN).

Eager ``conv1d``/``conv2d``/``conv3d`` with a bias (``nn.Conv2d(has_bias=True)``, and the
folded convs of an inference export) bind it instead of ``conv`` then ``add``: the
broadcast add wrote the whole output a second time into a new array (one such add cost
about as much as an eval-mode BatchNorm on a pruned ResNet-20, README of golden stick).
Gradients are the convolution's and, for the bias, the sum of ``g`` over all axes but 1.
Graph mode keeps ``conv`` and ``add`` (the compiler fuses the add with its neighbours).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._backend import is_host
from ..._primitive import Primitive, ShapedArray
from ...tensor import Tensor
from .._core import reshape, sum_to
from ..activation.elementwise import relu_grad_p
from ._common import Pads
from .conv import _conv_abstract, _conv_impl, _conv_vjp

__all__ = ["conv_bias_p"]


def _abstract(
    x: ShapedArray, w: ShapedArray, b: ShapedArray, *, relu: bool = False, **p: Any
) -> ShapedArray:
    if b.shape != (w.shape[0],) or b.dtype != x.dtype:
        raise ValueError(
            f"conv_bias: argument 'bias' expected shape ({w.shape[0]},) and dtype {x.dtype}, "
            f"got shape {b.shape} and dtype {b.dtype}"
        )
    return _conv_abstract(x, w, **p)


def _impl(
    xp: Any,
    x: Any,
    w: Any,
    b: Any,
    *,
    stride: tuple[int, ...],
    pads: Pads,
    dilation: tuple[int, ...],
    groups: int,
    relu: bool = False,
    fast: bool = False,
) -> Any:
    y = _conv_impl(xp, x, w, stride=stride, pads=pads, dilation=dilation, groups=groups, fast=fast)
    if (
        fast
        and is_host(xp)
        and y.flags.c_contiguous
        and y.flags.writeable
        and y.dtype == b.dtype
        and y.dtype in (np.float32, np.float64)
    ):
        from ...kernels.cpu.channel_bias import add_channel_bias

        add_channel_bias(y, b, relu)  # y is the conv's own new array
        return y
    y = y + b.reshape((1, -1) + (1,) * (y.ndim - 2))
    return xp.maximum(y, y.dtype.type(0)) if relu else y


def _vjp(
    g: Tensor, x: Tensor, w: Tensor, b: Tensor, *, out: Tensor, relu: bool = False, **p: Any
) -> tuple[Any, ...]:
    if relu:  # out > 0 exactly where the pre-activation is
        g = relu_grad_p.bind(g, out)
    dx, dw = _conv_vjp(g, x, w, out=out, **p)
    shape = (1, b.shape[0]) + (1,) * (g.ndim - 2)
    return dx, dw, lambda: reshape(sum_to(g, shape), b.shape)


conv_bias_p = Primitive(
    "conv_bias",
    "opaque",
    _abstract,
    impl=_impl,
    cpu=lambda xp, x, w, b, **p: _impl(xp, x, w, b, fast=True, **p),
    vjp=_vjp,
)
