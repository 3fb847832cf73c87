"""MindSpore's ``ops.operations._grad_ops`` (``G``): the gradient primitives a hand-written
``bprop`` calls, such as ``G.ReluGrad()(dout, x)``.

Each class computes what MindSpore's kernel computes, written with Sporeling ops (so it is
itself differentiable and traceable). The pooling gradients are the vector-Jacobian product
of the forward ``P`` class. Also importable as
``sporeling.core.ops.operations._grad_ops``, MindSpore's path.
"""

from __future__ import annotations

from typing import Any

from .. import ops as F
from ..tensor import Tensor
from .operations import AvgPool, Conv2D, MaxPool, _op

__all__ = [
    "ReluGrad",
    "ReLU6Grad",
    "SigmoidGrad",
    "TanhGrad",
    "SqrtGrad",
    "RsqrtGrad",
    "ReciprocalGrad",
    "SoftplusGrad",
    "EluGrad",
    "BiasAddGrad",
    "MaximumGrad",
    "MinimumGrad",
    "MaxPoolGrad",
    "AvgPoolGrad",
    "LayerNormGrad",
    "BatchNormGrad",
    "Conv2DBackpropInput",
    "Conv2DBackpropFilter",
    "AcosGrad",
    "AsinGrad",
    "AtanGrad",
    "AcoshGrad",
    "AsinhGrad",
    "GeLUGrad",
    "DropoutGrad",
    "SigmoidCrossEntropyWithLogitsGrad",
    "SmoothL1LossGrad",
    "HSwishGrad",
    "HSigmoidGrad",
]


def _relu_grad(self: Any, dy: Tensor, x: Tensor) -> Tensor:
    """dy where x > 0, else 0."""
    return F.select(x > 0, dy, F.zeros_like(dy))


def _relu6_grad(self: Any, dy: Tensor, x: Tensor) -> Tensor:
    """dy where 0 < x < 6, else 0."""
    return F.select(F.logical_and(x > 0, x < 6), dy, F.zeros_like(dy))


def _sigmoid_grad(self: Any, y: Tensor, dy: Tensor) -> Tensor:
    """dy * y * (1 - y), from the forward output y."""
    return dy * y * (1 - y)


def _tanh_grad(self: Any, y: Tensor, dy: Tensor) -> Tensor:
    """dy * (1 - y^2), from the forward output y."""
    return dy * (1 - y * y)


def _sqrt_grad(self: Any, y: Tensor, dy: Tensor) -> Tensor:
    """dy / (2 y), from y = sqrt(x)."""
    return dy / (2 * y)


def _rsqrt_grad(self: Any, y: Tensor, dy: Tensor) -> Tensor:
    """-dy y^3 / 2, from y = 1 / sqrt(x)."""
    return dy * y * y * y * -0.5


def _reciprocal_grad(self: Any, y: Tensor, dy: Tensor) -> Tensor:
    """-dy y^2, from y = 1 / x."""
    return -dy * y * y


def _softplus_grad(self: Any, dy: Tensor, x: Tensor) -> Tensor:
    """dy * sigmoid(x)."""
    return dy * F.sigmoid(x)


def _elu_grad(self: Any, dy: Tensor, y: Tensor) -> Tensor:
    """dy where y > 0, else dy * (y + 1) (alpha 1), from the forward output y."""
    return F.select(y > 0, dy, dy * (y + 1))


def _bias_add_grad(self: Any, dout: Tensor) -> Tensor:
    """dout summed over every axis but the channel axis (1 for NCHW, the last for NHWC)."""
    channel = dout.ndim - 1 if self.data_format == "NHWC" else 1
    axes = tuple(a for a in range(dout.ndim) if a != channel)
    return F.reduce_sum(dout, axes)


def _reduce_to(g: Tensor, shape: tuple[int, ...]) -> Tensor:
    """``g`` summed over the axes broadcasting added or stretched to reach it from ``shape``."""
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, s in enumerate(shape) if s == 1 and g.shape[lead + i] != 1
    )
    out = F.reduce_sum(g, axes, True) if axes else g
    return F.reshape(out, shape)


def _pick_grad(greater: bool) -> Any:
    def rule(self: Any, x1: Tensor, x2: Tensor, dout: Tensor) -> tuple[Tensor, Tensor]:
        """(dout where x1 wins, dout where x2 wins), each summed back to its input's shape."""
        first = x1 >= x2 if greater else x1 <= x2
        zero = F.zeros_like(dout)
        dx1 = F.select(first, dout, zero) if self.grad_x else zero
        dx2 = F.select(first, zero, dout) if self.grad_y else zero
        return _reduce_to(dx1, x1.shape), _reduce_to(dx2, x2.shape)

    return rule


def _pool_grad(forward: type) -> Any:
    def rule(self: Any, x: Tensor, out: Tensor, dout: Tensor) -> Tensor:
        """The vector-Jacobian product of the forward pooling at ``x`` with ``dout``."""
        pool = forward(self.kernel_size, self.strides, self.pad_mode, self.data_format)
        _, pullback = F.vjp(pool, x)
        (dx,) = pullback(dout)
        return dx

    return rule


def _layer_norm_grad(
    self: Any, x: Tensor, dy: Tensor, variance: Tensor, mean: Tensor, gamma: Tensor
) -> tuple[Tensor, Tensor, Tensor]:
    """(dx, dgamma, dbeta) of ``LayerNorm`` from the forward's saved ``mean``/``variance``
    (normalized axes kept as size 1), with MindSpore's kernel epsilon 1e-12:
    ``dx = rstd (g - mean(g) - xhat mean(g xhat))`` with ``g = dy gamma``."""
    norm = tuple(range(_axis(self.begin_norm_axis, x.ndim), x.ndim))
    params = _axis(self.begin_params_axis, x.ndim)
    rstd = F.rsqrt(variance + 1e-12)
    xhat = (x - mean) * rstd
    g = dy * gamma
    dx = rstd * (g - F.reduce_mean(g, norm, True) - xhat * F.reduce_mean(g * xhat, norm, True))
    lead = tuple(range(params))
    dgamma = F.reduce_sum(dy * xhat, lead) if lead else dy * xhat
    dbeta = F.reduce_sum(dy, lead) if lead else dy
    return dx, dgamma, dbeta


def _axis(a: int, ndim: int) -> int:
    return a + ndim if a < 0 else a


def _batch_norm_grad(
    self: Any, dy: Tensor, x: Tensor, scale: Tensor, mean: Tensor, variance: Tensor, *reserve: Any
) -> tuple[Tensor, Tensor, Tensor]:
    """(dx, dscale, dbias) of ``BatchNorm`` from the batch ``mean``/``variance`` it saved
    (its reserve spaces 1 and 2). Training: the statistics depend on ``x``,
    ``dx = scale rstd (dy - mean(dy) - xhat mean(dy xhat))``; inference: they are constants,
    ``dx = dy scale rstd``."""
    channel = x.ndim - 1 if self.data_format == "NHWC" else 1
    axes = tuple(a for a in range(x.ndim) if a != channel)
    shape = tuple(x.shape[a] if a == channel else 1 for a in range(x.ndim))

    def col(t: Tensor) -> Tensor:
        return F.reshape(t, shape)

    rstd = col(F.rsqrt(variance + self.epsilon))
    xhat = (x - col(mean)) * rstd
    dbias = F.reduce_sum(dy, axes)
    dscale = F.reduce_sum(dy * xhat, axes)
    if self.is_training:
        centred = dy - F.reduce_mean(dy, axes, True) - xhat * F.reduce_mean(dy * xhat, axes, True)
        dx = col(scale) * rstd * centred
    else:
        dx = dy * col(scale) * rstd
    return dx, dscale, dbias


def _size(op: str, arg: str, value: Any) -> tuple[int, ...]:
    if isinstance(value, Tensor):
        value = value.asnumpy().tolist()
    try:
        return tuple(int(v) for v in value)
    except TypeError:
        raise TypeError(f"{op}: argument '{arg}' expected a tuple of ints, got {value!r}") from None


def _conv(self: Any) -> Any:
    pad = self.pad_list if self.pad_mode == "pad" and self.pad_list else self.pad
    return Conv2D(
        self.out_channel, self.kernel_size, self.mode, self.pad_mode, pad, self.stride,
        self.dilation, self.group, self.data_format,
    )  # fmt: skip


def _conv_backprop_input(self: Any, dout: Tensor, weight: Tensor, input_size: Any) -> Tensor:
    """The gradient of ``Conv2D`` with respect to its input (of shape ``input_size``): the
    vjp of the forward convolution with ``dout`` (the transposed convolution)."""
    shape = _size("Conv2DBackpropInput", "input_size", input_size)
    conv = _conv(self)
    _, pullback = F.vjp(lambda x: conv(x, weight), F.zeros(shape, dout.dtype))
    (dx,) = pullback(dout)
    return dx


def _conv_backprop_filter(self: Any, dout: Tensor, x: Tensor, filter_size: Any) -> Tensor:
    """The gradient of ``Conv2D`` with respect to its weight (of shape ``filter_size``)."""
    shape = _size("Conv2DBackpropFilter", "filter_size", filter_size)
    conv = _conv(self)
    _, pullback = F.vjp(lambda w: conv(x, w), F.zeros(shape, dout.dtype))
    (dw,) = pullback(dout)
    return dw


def _acos_grad(self: Any, x: Tensor, dout: Tensor) -> Tensor:
    """-dout / sqrt(1 - x^2)."""
    return -dout * F.rsqrt(1 - x * x)


def _asin_grad(self: Any, x: Tensor, dout: Tensor) -> Tensor:
    """dout / sqrt(1 - x^2)."""
    return dout * F.rsqrt(1 - x * x)


def _atan_grad(self: Any, x: Tensor, dout: Tensor) -> Tensor:
    """dout / (1 + x^2)."""
    return dout / (1 + x * x)


def _acosh_grad(self: Any, y: Tensor, dy: Tensor) -> Tensor:
    """dy / sinh(y), from the forward output y = acosh(x)."""
    return dy / F.sinh(y)


def _asinh_grad(self: Any, y: Tensor, dy: Tensor) -> Tensor:
    """dy / cosh(y), from the forward output y = asinh(x)."""
    return dy / F.cosh(y)


def _gelu_grad(self: Any, dy: Tensor, x: Tensor, y: Tensor) -> Tensor:
    """The vector-Jacobian product of ``P.GeLU`` at ``x`` with ``dy`` (y is unused)."""
    from .operations import GeLU

    _, pullback = F.vjp(GeLU(), x)
    (dx,) = pullback(dy)
    return dx


def _dropout_grad(self: Any, dy: Tensor, mask: Tensor) -> Tensor:
    """dy * mask / keep_prob."""
    return dy * F.cast(mask, dy.dtype) * (1.0 / self.keep_prob)


def _sigmoid_ce_grad(self: Any, x: Tensor, y: Tensor, dout: Tensor) -> Tensor:
    """(sigmoid(x) - y) * dout."""
    return (F.sigmoid(x) - y) * dout


def _smooth_l1_grad(self: Any, prediction: Tensor, target: Tensor, dloss: Tensor) -> Tensor:
    """dloss * (diff / beta where |diff| < beta, else sign(diff)), diff = prediction - target."""
    diff = prediction - target
    inner = F.abs(diff) < self.beta
    return dloss * F.select(inner, diff / self.beta, F.sign(diff))


def _hswish_grad(self: Any, dy: Tensor, x: Tensor) -> Tensor:
    """dy * (0 for x <= -3, (2x + 3) / 6 between, 1 for x >= 3)."""
    mid = (2 * x + 3) / 6
    return dy * F.select(x <= -3, F.zeros_like(x), F.select(x >= 3, F.ones_like(x), mid))


def _hsigmoid_grad(self: Any, dy: Tensor, x: Tensor) -> Tensor:
    """dy / 6 where -3 < x < 3, else 0."""
    inside = F.logical_and(x > -3, x < 3)
    return F.select(inside, dy / 6, F.zeros_like(dy))


_CONV = (
    ("out_channel", None), ("kernel_size", None), ("pad_mode", "valid"), ("pad", 0),
    ("pad_list", None), ("mode", 1), ("stride", 1), ("dilation", 1), ("group", 1),
    ("data_format", "NCHW"),
)  # fmt: skip

_POOL = (("kernel_size", 1), ("strides", 1), ("pad_mode", "VALID"), ("data_format", "NCHW"))

ReluGrad = _op("ReluGrad", None, (), _relu_grad)
ReLU6Grad = _op("ReLU6Grad", None, (), _relu6_grad)
SigmoidGrad = _op("SigmoidGrad", None, (), _sigmoid_grad)
TanhGrad = _op("TanhGrad", None, (), _tanh_grad)
SqrtGrad = _op("SqrtGrad", None, (), _sqrt_grad)
RsqrtGrad = _op("RsqrtGrad", None, (), _rsqrt_grad)
ReciprocalGrad = _op("ReciprocalGrad", None, (), _reciprocal_grad)
SoftplusGrad = _op("SoftplusGrad", None, (), _softplus_grad)
EluGrad = _op("EluGrad", None, (), _elu_grad)
BiasAddGrad = _op("BiasAddGrad", None, (("data_format", "NCHW"),), _bias_add_grad)
MaximumGrad = _op("MaximumGrad", None, (("grad_x", True), ("grad_y", True)), _pick_grad(True))
MinimumGrad = _op("MinimumGrad", None, (("grad_x", True), ("grad_y", True)), _pick_grad(False))
LayerNormGrad = _op(
    "LayerNormGrad", None, (("begin_norm_axis", 1), ("begin_params_axis", 1)), _layer_norm_grad
)
BatchNormGrad = _op(
    "BatchNormGrad",
    None,
    (("is_training", False), ("epsilon", 1e-5), ("data_format", "NCHW")),
    _batch_norm_grad,
)
Conv2DBackpropInput = _op("Conv2DBackpropInput", None, _CONV, _conv_backprop_input)
Conv2DBackpropFilter = _op("Conv2DBackpropFilter", None, _CONV, _conv_backprop_filter)
AcosGrad = _op("AcosGrad", None, (), _acos_grad)
AsinGrad = _op("AsinGrad", None, (), _asin_grad)
AtanGrad = _op("AtanGrad", None, (), _atan_grad)
AcoshGrad = _op("AcoshGrad", None, (), _acosh_grad)
AsinhGrad = _op("AsinhGrad", None, (), _asinh_grad)
GeLUGrad = _op("GeLUGrad", None, (), _gelu_grad)
DropoutGrad = _op("DropoutGrad", None, (("keep_prob", 0.5),), _dropout_grad)
SigmoidCrossEntropyWithLogitsGrad = _op(
    "SigmoidCrossEntropyWithLogitsGrad", None, (), _sigmoid_ce_grad
)
SmoothL1LossGrad = _op(
    "SmoothL1LossGrad", None, (("beta", 1.0), ("reduction", "none")), _smooth_l1_grad
)
HSwishGrad = _op("HSwishGrad", None, (), _hswish_grad)
HSigmoidGrad = _op("HSigmoidGrad", None, (), _hsigmoid_grad)
MaxPoolGrad = _op("MaxPoolGrad", None, _POOL, _pool_grad(MaxPool))
AvgPoolGrad = _op("AvgPoolGrad", None, _POOL, _pool_grad(AvgPool))
for _cls in (
    ReluGrad, ReLU6Grad, SigmoidGrad, TanhGrad, SqrtGrad, RsqrtGrad, ReciprocalGrad,
    SoftplusGrad, EluGrad, BiasAddGrad, MaximumGrad, MinimumGrad, MaxPoolGrad, AvgPoolGrad,
    LayerNormGrad, BatchNormGrad, Conv2DBackpropInput, Conv2DBackpropFilter, AcosGrad,
    AsinGrad, AtanGrad, AcoshGrad, AsinhGrad, GeLUGrad, DropoutGrad,
    SigmoidCrossEntropyWithLogitsGrad, SmoothL1LossGrad, HSwishGrad, HSigmoidGrad,
):  # fmt: skip
    _cls.__module__ = __name__
