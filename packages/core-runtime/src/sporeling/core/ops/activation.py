"""Activation functions, softmax family, normalization functionals and dropout.

Elementwise activations are primitives with an xp impl, a scalar expression for the fuser
(parameters such as ``alpha`` appear in it by name) and a vjp written with ops, so second
derivatives work. ``softmax``/``log_softmax`` and the normalizations have Numba kernels on
the CPU; their "any" impls are the GPU path and the reference the kernels are tested
against. ``layer_norm``/``batch_norm`` backward passes are primitives too (one fused kernel
each); their own derivatives come from differentiating an op-composite of the same formula.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtype as _dt
from .._primitive import Primitive, ShapedArray
from ..errors import check_axis, op_error
from ..tensor import Tensor
from ._compare import select
from ._core import as_tensor, cast, full, ones_like, reduce_sum, reshape
from ._elementwise import _check_family, exp, float_input, neg, unary_op

__all__ = [
    "relu",
    "relu6",
    "leaky_relu",
    "elu",
    "celu",
    "selu",
    "gelu",
    "fast_gelu",
    "sigmoid",
    "hardsigmoid",
    "hard_sigmoid",
    "hardswish",
    "hardshrink",
    "soft_shrink",
    "softsign",
    "softplus",
    "mish",
    "silu",
    "logsigmoid",
    "softmax",
    "log_softmax",
    "gumbel_softmax",
    "prelu",
    "glu",
    "layer_norm",
    "batch_norm",
    "group_norm",
    "dropout",
]

_FAST = (np.float32, np.float64)


def _up(a: Any) -> Any:
    """float16 (and other narrow floats) computed in float32; the result is cast back."""
    return a if a.dtype in _FAST else a.astype(np.float32)


def _number(
    op: str, arg: str, value: Any, *, positive: bool = False, nonneg: bool = False
) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise op_error(op, arg, value, "a float", TypeError)
    v = float(value)
    if math.isnan(v):
        raise op_error(op, arg, value, "a number, not NaN")
    if positive and not v > 0:
        raise op_error(op, arg, value, "a float > 0")
    if nonneg and v < 0:
        raise op_error(op, arg, value, "a float >= 0")
    return v


def _mask(cond: Tensor, like: Tensor) -> Tensor:
    return cast(cond, like.dtype)


def _abs(x: Tensor) -> Tensor:
    return select(x < 0, neg(x), x)


def _tanh(u: Tensor) -> Tensor:
    """tanh written with sigmoid (``2 sigmoid(2u) - 1``), for vjps."""
    return sigmoid(u * 2) * 2 - 1


def _param_op(name: str, impl: Any, vjp: Any, scalar: str) -> Primitive:
    """An elementwise float primitive with static parameters (alpha, lambd...)."""

    def abstract(x: ShapedArray, **params: Any) -> ShapedArray:
        _check_family(name, "x", x, "float")
        return ShapedArray(x.shape, x.dtype)

    return Primitive(name, "elementwise", abstract, impl=impl, vjp=vjp, scalar=scalar)


# ---- ReLU family ---------------------------------------------------------------------

relu_p = unary_op(
    "relu",
    family="numeric",
    scalar="max(x, 0)",
    impl=lambda xp, x: xp.maximum(x, x.dtype.type(0)),
    vjp=lambda g, x, *, out: g * _mask(x > 0, g),
)
relu6_p = unary_op(
    "relu6",
    scalar="min(max(x, 0), 6)",
    impl=lambda xp, x: xp.clip(x, 0, 6),
    vjp=lambda g, x, *, out: g * _mask(x > 0, g) * _mask(x < 6, g),
)
leaky_relu_p = _param_op(
    "leaky_relu",
    lambda xp, x, *, alpha: xp.where(x > 0, x, x * alpha),
    lambda g, x, *, out, alpha: g * select(x > 0, ones_like(x), alpha),
    "where(x > 0, x, x * alpha)",
)


def relu(x: Any) -> Tensor:
    """``max(x, 0)`` elementwise (integers keep their dtype).

    >>> relu(Tensor([-1.0, 2.0])).tolist()
    [0.0, 2.0]
    """
    return relu_p.bind(as_tensor(x, "relu", "x"))


def relu6(x: Any) -> Tensor:
    """``min(max(x, 0), 6)`` elementwise."""
    return relu6_p.bind(float_input("relu6", x))


def leaky_relu(x: Any, alpha: float = 0.2) -> Tensor:
    """``x`` where positive, ``alpha * x`` elsewhere."""
    return leaky_relu_p.bind(
        float_input("leaky_relu", x), alpha=_number("leaky_relu", "alpha", alpha)
    )


# ---- exponential units -----------------------------------------------------------------

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946

elu_p = _param_op(
    "elu",
    lambda xp, x, *, alpha: xp.where(x > 0, x, xp.expm1(xp.minimum(x, 0)) * alpha),
    lambda g, x, *, out, alpha: g * select(x > 0, 1.0, out + alpha),
    "where(x > 0, x, alpha * (exp(x) - 1))",
)
celu_p = _param_op(
    "celu",
    lambda xp, x, *, alpha: xp.where(x > 0, x, xp.expm1(xp.minimum(x, 0) / alpha) * alpha),
    lambda g, x, *, out, alpha: g * select(x > 0, 1.0, out / alpha + 1),
    "where(x > 0, x, alpha * (exp(x / alpha) - 1))",
)
selu_p = unary_op(
    "selu",
    impl=lambda xp, x: xp.where(x > 0, x, xp.expm1(xp.minimum(x, 0)) * _SELU_ALPHA) * _SELU_SCALE,
    vjp=lambda g, x, *, out: g * select(x > 0, _SELU_SCALE, out + _SELU_SCALE * _SELU_ALPHA),
    scalar=f"{_SELU_SCALE} * where(x > 0, x, {_SELU_ALPHA} * (exp(x) - 1))",
)


def elu(input_x: Any, alpha: float = 1.0) -> Tensor:
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere."""
    return elu_p.bind(float_input("elu", input_x, "input_x"), alpha=_number("elu", "alpha", alpha))


def celu(x: Any, alpha: float = 1.0) -> Tensor:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``; ``alpha`` must not be 0."""
    a = _number("celu", "alpha", alpha)
    if a == 0:
        raise op_error("celu", "alpha", alpha, "a non-zero float")
    return celu_p.bind(float_input("celu", x), alpha=a)


def selu(input_x: Any) -> Tensor:
    """Scaled ELU: ``scale * elu(x, alpha)`` with the self-normalizing constants."""
    return selu_p.bind(float_input("selu", input_x, "input_x"))


# ---- sigmoid family ----------------------------------------------------------------------


def _sigmoid_impl(xp: Any, x: Any) -> Any:
    # Stable form with e = exp(-|x|) (never overflows), computed in place: about half the
    # memory passes of the plain expression (benchmarks/bench_chain.py).
    e = xp.abs(x)
    xp.negative(e, out=e)
    xp.exp(e, out=e)
    out = e + 1
    xp.reciprocal(out, out=out)  # 1 / (1 + e): the answer where x >= 0
    xp.multiply(out, e, out=e)  # e / (1 + e): the answer where x < 0
    xp.copyto(out, e, where=x < 0)
    return out


sigmoid_p = unary_op(
    "sigmoid",
    impl=_sigmoid_impl,
    scalar="1 / (1 + exp(-x))",
    vjp=lambda g, x, *, out: g * out * (1 - out),
)


def _logsigmoid_impl(xp: Any, x: Any) -> Any:
    return xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x)))


logsigmoid_p = unary_op(
    "logsigmoid",
    impl=_logsigmoid_impl,
    scalar="min(x, 0) - log(1 + exp(-abs(x)))",
    vjp=lambda g, x, *, out: g * sigmoid(neg(x)),
)


def _softplus_impl(xp: Any, x: Any, *, beta: float, threshold: float) -> Any:
    z = x * beta
    soft = (xp.maximum(z, 0) + xp.log1p(xp.exp(-xp.abs(z)))) / beta
    return xp.where(z > threshold, x, soft)


softplus_p = _param_op(
    "softplus",
    _softplus_impl,
    lambda g, x, *, out, beta, threshold: (
        g * select(x * beta > threshold, ones_like(x), sigmoid(x * beta))
    ),
    "where(x * beta > threshold, x, (max(x * beta, 0) + log(1 + exp(-abs(x * beta)))) / beta)",
)

silu_p = unary_op(
    "silu",
    impl=lambda xp, x: x * _sigmoid_impl(xp, x),
    scalar="x / (1 + exp(-x))",
    vjp=lambda g, x, *, out: (lambda s: g * s * (1 + x * (1 - s)))(sigmoid(x)),
)


def _mish_impl(xp: Any, x: Any) -> Any:
    return x * xp.tanh(xp.maximum(x, 0) + xp.log1p(xp.exp(-xp.abs(x))))


def _mish_vjp(g: Tensor, x: Tensor, *, out: Tensor) -> Tensor:
    t = _tanh(neg(logsigmoid(neg(x))))  # tanh(softplus(x))
    return g * (t + x * (1 - t * t) * sigmoid(x))


mish_p = unary_op(
    "mish",
    impl=_mish_impl,
    vjp=_mish_vjp,
    scalar="x * tanh(max(x, 0) + log(1 + exp(-abs(x))))",
)

hardsigmoid_p = unary_op(
    "hardsigmoid",
    impl=lambda xp, x: xp.clip(x / 6 + 0.5, 0, 1),
    scalar="min(max(x / 6 + 0.5, 0), 1)",
    vjp=lambda g, x, *, out: g * _mask(x > -3, g) * _mask(x < 3, g) / 6,
)
hardswish_p = unary_op(
    "hardswish",
    impl=lambda xp, x: x * xp.clip(x + 3, 0, 6) / 6,
    scalar="x * min(max(x + 3, 0), 6) / 6",
    vjp=lambda g, x, *, out: g * select(x < -3, 0.0, select(x > 3, 1.0, x / 3 + 0.5)),
)


def sigmoid(input_x: Any) -> Tensor:
    """``1 / (1 + exp(-x))``, computed without overflow for large ``|x|``.

    >>> sigmoid(Tensor([0.0])).tolist()
    [0.5]
    """
    return sigmoid_p.bind(float_input("sigmoid", input_x, "input_x"))


def logsigmoid(x: Any) -> Tensor:
    """``log(sigmoid(x))``, stable for large ``|x|``."""
    return logsigmoid_p.bind(float_input("logsigmoid", x))


def softplus(x: Any, beta: float = 1, threshold: float = 20) -> Tensor:
    """``log(1 + exp(beta * x)) / beta``; linear where ``beta * x > threshold``."""
    return softplus_p.bind(
        float_input("softplus", x),
        beta=_number("softplus", "beta", beta, positive=True),
        threshold=_number("softplus", "threshold", threshold),
    )


def silu(x: Any) -> Tensor:
    """``x * sigmoid(x)`` (swish)."""
    return silu_p.bind(float_input("silu", x))


def mish(x: Any) -> Tensor:
    """``x * tanh(softplus(x))``."""
    return mish_p.bind(float_input("mish", x))


def hardsigmoid(input_x: Any) -> Tensor:
    """``relu6(x + 3) / 6``: a piecewise-linear sigmoid."""
    return hardsigmoid_p.bind(float_input("hardsigmoid", input_x, "input_x"))


hard_sigmoid = hardsigmoid


def hardswish(x: Any) -> Tensor:
    """``x * relu6(x + 3) / 6``."""
    return hardswish_p.bind(float_input("hardswish", x))


# ---- GELU ------------------------------------------------------------------------------


def _ndtr_impl(xp: Any, x: Any) -> Any:
    if xp is np:
        from ..kernels.cpu.activation import ndtr

        return ndtr(x)
    from cupyx.scipy.special import ndtr as cupy_ndtr  # pragma: no cover - needs a GPU

    return cupy_ndtr(_up(x))  # pragma: no cover


_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
# The standard normal CDF; private (exact GELU and its derivative use it).
ndtr_p = unary_op(
    "_ndtr",
    impl=_ndtr_impl,
    scalar="0.5 * erfc(-x * 0.7071067811865476)",
    vjp=lambda g, x, *, out: g * exp(x * x * -0.5) * _INV_SQRT_2PI,
)
_GELU_C = math.sqrt(2 / math.pi)


def _gelu_impl(xp: Any, x: Any, *, approximate: str) -> Any:
    if approximate == "tanh":
        return x * 0.5 * (1 + xp.tanh((x + x * x * x * 0.044715) * _GELU_C))
    return x * _ndtr_impl(xp, x)


def _gelu_vjp(g: Tensor, x: Tensor, *, out: Tensor, approximate: str) -> Tensor:
    if approximate == "tanh":
        t = _tanh((x + x * x * x * 0.044715) * _GELU_C)
        inner = (x * x * (3 * 0.044715) + 1) * _GELU_C
        return g * ((t + 1) * 0.5 + x * (1 - t * t) * inner * 0.5)
    return g * (ndtr_p.bind(x) + x * exp(x * x * -0.5) * _INV_SQRT_2PI)


gelu_p = _param_op(
    "gelu",
    _gelu_impl,
    _gelu_vjp,
    "x * 0.5 * (1 + erf(x * 0.7071067811865476))",  # approximate='tanh' is the tanh form
)
fast_gelu_p = unary_op(
    "fast_gelu",
    impl=lambda xp, x: x * _sigmoid_impl(xp, x * 1.702),
    scalar="x / (1 + exp(-1.702 * x))",
    vjp=lambda g, x, *, out: (lambda s: g * (s + x * s * (1 - s) * 1.702))(sigmoid(x * 1.702)),
)


def gelu(input_x: Any, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit ``x * Phi(x)``; ``approximate='tanh'`` uses the tanh form
    ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``."""
    if approximate not in ("none", "tanh"):
        raise op_error("gelu", "approximate", approximate, "'none' or 'tanh'")
    return gelu_p.bind(float_input("gelu", input_x, "input_x"), approximate=approximate)


def fast_gelu(x: Any) -> Tensor:
    """``x / (1 + exp(-1.702 |x|)) * exp(0.851 (x - |x|))``, i.e. ``x * sigmoid(1.702 x)``."""
    return fast_gelu_p.bind(float_input("fast_gelu", x))


# ---- shrinkage and softsign --------------------------------------------------------------

hardshrink_p = _param_op(
    "hardshrink",
    lambda xp, x, *, lambd: xp.where(xp.abs(x) > lambd, x, 0),
    lambda g, x, *, out, lambd: g * _mask(_abs(x) > lambd, g),
    "where(abs(x) > lambd, x, 0)",
)
soft_shrink_p = _param_op(
    "soft_shrink",
    lambda xp, x, *, lambd: xp.where(x > lambd, x - lambd, xp.where(x < -lambd, x + lambd, 0)),
    lambda g, x, *, out, lambd: g * _mask(_abs(x) > lambd, g),
    "where(x > lambd, x - lambd, where(x < -lambd, x + lambd, 0))",
)
softsign_p = unary_op(
    "softsign",
    impl=lambda xp, x: x / (1 + xp.abs(x)),
    scalar="x / (1 + abs(x))",
    vjp=lambda g, x, *, out: (lambda d: g / (d * d))(_abs(x) + 1),
)


def hardshrink(x: Any, lambd: float = 0.5) -> Tensor:
    """``x`` where ``|x| > lambd``, 0 elsewhere."""
    return hardshrink_p.bind(
        float_input("hardshrink", x), lambd=_number("hardshrink", "lambd", lambd)
    )


def soft_shrink(x: Any, lambd: float = 0.5) -> Tensor:
    """Shrink towards 0 by ``lambd`` (0 inside ``[-lambd, lambd]``); ``lambd >= 0``."""
    return soft_shrink_p.bind(
        float_input("soft_shrink", x), lambd=_number("soft_shrink", "lambd", lambd, nonneg=True)
    )


def softsign(x: Any) -> Tensor:
    """``x / (1 + |x|)``."""
    return softsign_p.bind(float_input("softsign", x))


# ---- softmax family ----------------------------------------------------------------------


def _softmax_any(xp: Any, x: Any, *, axis: tuple[int, ...]) -> Any:
    if x.size == 0:
        return x.copy()
    xf = _up(x)
    e = xp.exp(xf - xp.max(xf, axis=axis, keepdims=True))
    return e / xp.sum(e, axis=axis, keepdims=True)


def _log_softmax_any(xp: Any, x: Any, *, axis: tuple[int, ...]) -> Any:
    if x.size == 0:
        return x.copy()
    xf = _up(x)
    shifted = xf - xp.max(xf, axis=axis, keepdims=True)
    return shifted - xp.log(xp.sum(xp.exp(shifted), axis=axis, keepdims=True))


def _softmax_cpu_for(log: bool) -> Any:
    fallback = _log_softmax_any if log else _softmax_any

    def impl(xp: Any, x: Any, *, axis: tuple[int, ...]) -> Any:
        if len(axis) != 1 or x.size == 0:
            return fallback(xp, x, axis=axis)
        from ..kernels.cpu.softmax import softmax_lastaxis

        a = axis[0]
        last = a == x.ndim - 1
        xf = _up(x) if last else np.moveaxis(_up(x), a, -1)
        out = softmax_lastaxis(xf, log)
        return out if last else np.moveaxis(out, -1, a)

    return impl


def _axes_abstract(name: str) -> Any:
    def abstract(x: ShapedArray, *, axis: tuple[int, ...]) -> ShapedArray:
        _check_family(name, "x", x, "float")
        return ShapedArray(x.shape, x.dtype)

    return abstract


softmax_p = Primitive(
    "softmax",
    "opaque",
    _axes_abstract("softmax"),
    impl=_softmax_any,
    cpu=_softmax_cpu_for(False),
    vjp=lambda g, x, *, out, axis: out * (g - reduce_sum(g * out, axis, keep_dims=True)),
)
log_softmax_p = Primitive(
    "log_softmax",
    "opaque",
    _axes_abstract("log_softmax"),
    impl=_log_softmax_any,
    cpu=_softmax_cpu_for(True),
    vjp=lambda g, x, *, out, axis: g - exp(out) * reduce_sum(g, axis, keep_dims=True),
)


def _softmax_axes(op: str, axis: Any, ndim: int) -> tuple[int, ...]:
    items = axis if isinstance(axis, (tuple, list)) else (axis,)
    if len(items) == 0:
        raise op_error(op, "axis", axis, "an int or a non-empty tuple of ints")
    axes = tuple(sorted(check_axis(op, a, ndim) for a in items))
    if len(set(axes)) != len(axes):
        raise op_error(op, "axis", axis, "distinct axes")
    return axes


def _softmax_like(op: str, prim: Primitive, x: Any, arg: str, axis: Any) -> Tensor:
    t = float_input(op, x, arg)
    axes = _softmax_axes(op, axis, t.ndim)
    if t.ndim == 0:
        return reshape(prim.bind(reshape(t, (1,)), axis=(0,)), ())
    return prim.bind(t, axis=axes)


def softmax(x: Any, axis: Any = -1) -> Tensor:
    """``exp(x - max) / sum(exp(x - max))`` over ``axis`` (an int or a tuple of ints).

    >>> softmax(Tensor([0.0, 0.0])).tolist()
    [0.5, 0.5]
    """
    return _softmax_like("softmax", softmax_p, x, "x", axis)


def log_softmax(logits: Any, axis: int = -1) -> Tensor:
    """``x - max - log(sum(exp(x - max)))`` over ``axis``: log-probabilities, stably."""
    return _softmax_like("log_softmax", log_softmax_p, logits, "logits", axis)


# ---- gumbel softmax and dropout: random primitives ------------------------------------------


def _noise_abstract(*, shape: tuple[int, ...], dtype: _dt.DType, **params: Any) -> ShapedArray:
    return ShapedArray(shape, dtype)


def _rng(device: Any, seed: int | None) -> Any:
    from ..random_state import generator

    if seed is None:
        return generator(device)
    return device.xp.random.default_rng(seed)


def _gumbel_impl(xp: Any, *, shape: tuple[int, ...], dtype: _dt.DType, device: Any) -> Any:
    e = _rng(device, None).standard_exponential(size=shape)
    return (-xp.log(xp.maximum(e, np.finfo(np.float64).tiny))).astype(dtype.np)


def _bernoulli_impl(
    xp: Any, *, shape: tuple[int, ...], dtype: _dt.DType, device: Any, keep: float, seed: int | None
) -> Any:
    return (_rng(device, seed).random(size=shape) < keep).astype(dtype.np)


gumbel_noise_p = Primitive("_gumbel_noise", "random", _noise_abstract, impl=_gumbel_impl)
bernoulli_mask_p = Primitive("_bernoulli_mask", "random", _noise_abstract, impl=_bernoulli_impl)


def _onehot_argmax_impl(xp: Any, y: Any, *, axis: int) -> Any:
    idx = xp.expand_dims(xp.argmax(y, axis=axis), axis)
    shape = [1] * y.ndim
    shape[axis] = y.shape[axis]
    return (xp.arange(y.shape[axis]).reshape(shape) == idx).astype(y.dtype)


onehot_argmax_p = Primitive(
    "_onehot_argmax",
    "opaque",
    lambda y, *, axis: ShapedArray(y.shape, y.dtype),
    impl=_onehot_argmax_impl,
)


def gumbel_softmax(logits: Any, tau: float = 1, hard: bool = False, dim: int = -1) -> Tensor:
    """Samples ``softmax((logits + g) / tau)`` with Gumbel noise ``g``; ``hard=True`` returns
    one-hot samples whose gradient is the soft sample's (straight-through)."""
    x = float_input("gumbel_softmax", logits, "logits")
    if x.ndim == 0:
        raise op_error("gumbel_softmax", "logits", x, "a tensor with at least one dimension")
    t = _number("gumbel_softmax", "tau", tau, positive=True)
    if not isinstance(hard, (bool, np.bool_)):
        raise op_error("gumbel_softmax", "hard", hard, "a bool", TypeError)
    ax = check_axis("gumbel_softmax", dim, x.ndim, "dim")
    g = gumbel_noise_p.bind(shape=x.shape, dtype=x.dtype, device=x._device)
    y = softmax((x + g) / t, ax)
    if not hard:
        return y
    onehot = onehot_argmax_p.bind(y.detach(), axis=ax)
    return onehot - y.detach() + y


def dropout(
    x: Any, p: float = 0.5, seed0: int = 0, seed1: int = 0, *, training: bool = True
) -> tuple[Tensor, Tensor]:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``.

    Returns ``(output, mask)`` as MindSpore 1.8 does; ``mask`` (x's dtype) is 1 where kept.
    Seeds of 0 draw from the global generator (:func:`sporeling.core.set_seed`); other
    seeds give a fixed mask. ``training=False`` returns ``x`` unchanged and a mask of ones.
    """
    t = as_tensor(x, "dropout", "x")
    if t.dtype.category != 2:
        raise op_error("dropout", "x", t, "a floating tensor", TypeError)
    rate = _number("dropout", "p", p)
    if not 0 <= rate <= 1:
        raise op_error("dropout", "p", p, "a probability in [0, 1]")
    for name, s in (("seed0", seed0), ("seed1", seed1)):
        if isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer)) or s < 0:
            raise op_error("dropout", name, s, "a non-negative int", TypeError)
    if not training or rate == 0:
        return t, ones_like(t)
    keep = 1.0 - rate
    seed = None if seed0 == 0 and seed1 == 0 else (int(seed0) << 32) | int(seed1)
    mask = bernoulli_mask_p.bind(
        shape=t.shape, dtype=t.dtype, device=t._device, keep=keep, seed=seed
    )
    if keep == 0:
        return t * mask, mask
    return t * mask * (1.0 / keep), mask


# ---- PReLU, GLU --------------------------------------------------------------------------


def prelu(x: Any, weight: Any) -> Tensor:
    """``x`` where positive, ``weight * x`` elsewhere; ``weight`` has one value per channel
    (axis 1) or a single value shared by all."""
    t = float_input("prelu", x)
    w = as_tensor(weight, "prelu", "weight", t)
    if w.dtype.category != 2:
        raise op_error("prelu", "weight", w, "a floating tensor", TypeError)
    w = cast(w, t.dtype)
    if w.size == 1:
        wb = reshape(w, ())
    elif w.ndim == 1 and t.ndim >= 2 and w.shape[0] == t.shape[1]:
        wb = reshape(w, (w.shape[0],) + (1,) * (t.ndim - 2))
    else:
        channels = t.shape[1] if t.ndim >= 2 else 1
        raise op_error(
            "prelu", "weight", w, f"shape ({channels},) or (1,) for x of shape {t.shape}"
        )
    return select(t > 0, t, t * wb)


def glu(x: Any, axis: int = -1) -> Tensor:
    """Gated linear unit: split ``x`` in halves ``a, b`` along ``axis``; ``a * sigmoid(b)``."""
    from ._join import split

    t = float_input("glu", x)
    ax = check_axis("glu", axis, t.ndim)
    if t.ndim == 0 or t.shape[ax] % 2:
        raise op_error("glu", "x", t, f"an even size along axis {axis}")
    a, b = split(t, ax, 2)
    return a * sigmoid(b)


# ---- layer norm --------------------------------------------------------------------------


def _vjp_of(composite: Any, cts: Any, inputs: tuple[Tensor, ...]) -> tuple[Any, ...]:
    """The vjp of a fused backward primitive: differentiate its op-composite reference."""
    from ..autograd.functional import vjp

    _, pullback = vjp(composite, *inputs)
    return pullback(*cts)


def _stat_shape(shape: tuple[int, ...], bna: int) -> tuple[int, ...]:
    return shape[:bna] + (1,) * (len(shape) - bna)


def _ln_abstract(
    x: ShapedArray,
    gamma: ShapedArray,
    beta: ShapedArray,
    *,
    begin_norm_axis: int,
    begin_params_axis: int,
    epsilon: float,
) -> tuple[ShapedArray, ...]:
    for arg, a in (("input_x", x), ("gamma", gamma), ("beta", beta)):
        _check_family("layer_norm", arg, a, "float")
    want = x.shape[begin_params_axis:]
    for arg, a in (("gamma", gamma), ("beta", beta)):
        if a.shape != want:
            raise ValueError(
                f"layer_norm: argument '{arg}' expected shape {want} "
                f"(input_x.shape[begin_params_axis:]), got {a.shape}"
            )
    if math.prod(x.shape[begin_norm_axis:]) == 0:
        raise ValueError(
            f"layer_norm: argument 'input_x' of shape {x.shape} has no elements "
            f"to normalize from axis {begin_norm_axis}"
        )
    stat = ShapedArray(_stat_shape(x.shape, begin_norm_axis), x.dtype)
    return ShapedArray(x.shape, x.dtype), stat, stat


def _ln_any(
    xp: Any,
    x: Any,
    gamma: Any,
    beta: Any,
    *,
    begin_norm_axis: int,
    begin_params_axis: int,
    epsilon: float,
) -> tuple[Any, Any, Any]:
    xf = _up(x)
    axes = tuple(range(begin_norm_axis, x.ndim))
    mean = xf.mean(axis=axes, keepdims=True)
    d = xf - mean
    var = (d * d).mean(axis=axes, keepdims=True)
    y = d / xp.sqrt(var + epsilon) * _up(gamma) + _up(beta)
    return y, mean, var


def _ln_cpu(
    xp: Any,
    x: Any,
    gamma: Any,
    beta: Any,
    *,
    begin_norm_axis: int,
    begin_params_axis: int,
    epsilon: float,
) -> tuple[Any, Any, Any]:
    if begin_params_axis < begin_norm_axis:
        return _ln_any(
            xp,
            x,
            gamma,
            beta,
            begin_norm_axis=begin_norm_axis,
            begin_params_axis=begin_params_axis,
            epsilon=epsilon,
        )
    from ..kernels.cpu.norm import layer_norm_forward

    xf = np.ascontiguousarray(_up(x))
    rows = x.shape[begin_norm_axis:]
    n = math.prod(rows)
    g = np.ascontiguousarray(np.broadcast_to(gamma.astype(xf.dtype), rows)).reshape(n)
    b = np.ascontiguousarray(np.broadcast_to(beta.astype(xf.dtype), rows)).reshape(n)
    y, mean, var = layer_norm_forward(xf.reshape(-1, n), g, b, epsilon)
    stat = _stat_shape(x.shape, begin_norm_axis)
    return y.reshape(x.shape), mean.reshape(stat), var.reshape(stat)


def _ln_grad_abstract(
    gy: ShapedArray,
    gmean: ShapedArray,
    gvar: ShapedArray,
    x: ShapedArray,
    gamma: ShapedArray,
    mean: ShapedArray,
    var: ShapedArray,
    **params: Any,
) -> tuple[ShapedArray, ...]:
    return ShapedArray(x.shape, x.dtype), gamma, gamma


def _ln_grad_any(
    xp: Any,
    gy: Any,
    gmean: Any,
    gvar: Any,
    x: Any,
    gamma: Any,
    mean: Any,
    var: Any,
    *,
    begin_norm_axis: int,
    begin_params_axis: int,
    epsilon: float,
) -> tuple[Any, Any, Any]:
    gy, gmean, gvar, x, gamma, mean, var = (_up(a) for a in (gy, gmean, gvar, x, gamma, mean, var))
    axes = tuple(range(begin_norm_axis, x.ndim))
    n = math.prod(x.shape[begin_norm_axis:])
    rstd = 1 / xp.sqrt(var + epsilon)
    d = x - mean
    xhat = d * rstd
    dxh = gy * gamma
    a = dxh.mean(axis=axes, keepdims=True)
    b = (dxh * xhat).mean(axis=axes, keepdims=True)
    dx = rstd * (dxh - a - xhat * b) + gmean / n + gvar * (2 / n) * d
    lead = tuple(range(begin_params_axis))
    return dx, (gy * xhat).sum(axis=lead), gy.sum(axis=lead)


def _ln_grad_cpu(
    xp: Any,
    gy: Any,
    gmean: Any,
    gvar: Any,
    x: Any,
    gamma: Any,
    mean: Any,
    var: Any,
    *,
    begin_norm_axis: int,
    begin_params_axis: int,
    epsilon: float,
) -> tuple[Any, Any, Any]:
    if begin_params_axis < begin_norm_axis:
        return _ln_grad_any(
            xp,
            gy,
            gmean,
            gvar,
            x,
            gamma,
            mean,
            var,
            begin_norm_axis=begin_norm_axis,
            begin_params_axis=begin_params_axis,
            epsilon=epsilon,
        )
    from ..kernels.cpu.norm import layer_norm_backward

    xf = np.ascontiguousarray(_up(x))
    dt = xf.dtype
    rows = x.shape[begin_norm_axis:]
    n = math.prod(rows)
    g = np.ascontiguousarray(np.broadcast_to(gamma.astype(dt), rows)).reshape(n)
    dx, dg, db = layer_norm_backward(
        np.ascontiguousarray(gy, dt).reshape(-1, n),
        np.ascontiguousarray(gmean, dt).reshape(-1),
        np.ascontiguousarray(gvar, dt).reshape(-1),
        xf.reshape(-1, n),
        g,
        np.ascontiguousarray(mean, dt).reshape(-1),
        np.ascontiguousarray(var, dt).reshape(-1),
        epsilon,
    )
    lead = tuple(range(len(rows) - gamma.ndim))  # row axes that gamma broadcasts over
    return (dx.reshape(x.shape), dg.reshape(rows).sum(axis=lead), db.reshape(rows).sum(axis=lead))


def _ln_grad_composite(
    gy: Tensor,
    gmean: Tensor,
    gvar: Tensor,
    x: Tensor,
    gamma: Tensor,
    mean: Tensor,
    var: Tensor,
    *,
    begin_norm_axis: int,
    begin_params_axis: int,
    epsilon: float,
) -> tuple[Tensor, Tensor, Tensor]:
    """The layer-norm backward written with ops (reference for the second derivative)."""
    axes = tuple(range(begin_norm_axis, x.ndim))
    n = math.prod(x.shape[begin_norm_axis:])
    rstd = (var + epsilon) ** -0.5
    d = x - mean
    xhat = d * rstd
    dxh = gy * gamma
    a = reduce_sum(dxh, axes, keep_dims=True) / n
    b = reduce_sum(dxh * xhat, axes, keep_dims=True) / n
    dx = rstd * (dxh - a - xhat * b) + gmean / n + gvar * d * (2 / n)
    lead = tuple(range(begin_params_axis))
    return dx, reduce_sum(gy * xhat, lead), reduce_sum(gy, lead)


def _ln_grad_vjp(cts: Any, *inputs: Tensor, out: Any, **params: Any) -> tuple[Any, ...]:
    return _vjp_of(lambda *ins: _ln_grad_composite(*ins, **params), cts, inputs)


layer_norm_grad_p = Primitive(
    "layer_norm_grad",
    "opaque",
    _ln_grad_abstract,
    impl=_ln_grad_any,
    cpu=_ln_grad_cpu,
    vjp=_ln_grad_vjp,
    multiple_results=True,
)


def _ln_vjp(
    cts: Any, x: Tensor, gamma: Tensor, beta: Tensor, *, out: Any, **params: Any
) -> tuple[Tensor, ...]:
    gy, gmean, gvar = cts
    _, mean, var = out
    return layer_norm_grad_p.bind(gy, gmean, gvar, x, gamma, mean, var, **params)


layer_norm_p = Primitive(
    "layer_norm",
    "opaque",
    _ln_abstract,
    impl=_ln_any,
    cpu=_ln_cpu,
    vjp=_ln_vjp,
    multiple_results=True,
)


def _param_like(
    op: str, arg: str, value: Any, x: Tensor, shape: tuple[int, ...], fill: float
) -> Tensor:
    if value is None:
        return full(shape, fill, x.dtype, x._device)
    t = as_tensor(value, op, arg, x)
    if t.dtype.category != 2:
        raise op_error(op, arg, t, "a floating tensor", TypeError)
    return cast(t, x.dtype)


def layer_norm(
    input_x: Any,
    gamma: Any = None,
    beta: Any = None,
    begin_norm_axis: int = 1,
    begin_params_axis: int = 1,
    epsilon: float = 1e-7,
) -> tuple[Tensor, Tensor, Tensor]:
    """Layer normalization over axes ``begin_norm_axis:`` (MindSpore's ``LayerNorm``).

    ``y = (x - mean) / sqrt(var + epsilon) * gamma + beta`` with ``gamma``/``beta`` of shape
    ``input_x.shape[begin_params_axis:]`` (ones/zeros when None). Returns ``(y, mean, var)``;
    ``mean``/``var`` (biased) keep the normalized axes as size 1.

    >>> y, mean, var = layer_norm(Tensor([[1.0, 2.0, 3.0]]))
    >>> mean.tolist()
    [[2.0]]
    """
    x = float_input("layer_norm", input_x, "input_x")
    if x.ndim == 0:
        raise op_error("layer_norm", "input_x", x, "a tensor with at least one dimension")
    bna = check_axis("layer_norm", begin_norm_axis, x.ndim, "begin_norm_axis")
    bpa = check_axis("layer_norm", begin_params_axis, x.ndim, "begin_params_axis")
    eps = _number("layer_norm", "epsilon", epsilon, nonneg=True)
    pshape = x.shape[bpa:]
    g = _param_like("layer_norm", "gamma", gamma, x, pshape, 1.0)
    b = _param_like("layer_norm", "beta", beta, x, pshape, 0.0)
    return layer_norm_p.bind(x, g, b, begin_norm_axis=bna, begin_params_axis=bpa, epsilon=eps)


def group_norm(
    input: Any,
    num_groups: int,
    weight: Any = None,
    bias: Any = None,  # noqa: A002
    eps: float = 1e-5,
) -> Tensor:
    """Normalize each sample over groups of ``C / num_groups`` channels (axis 1), then
    scale and shift per channel by ``weight``/``bias`` (ones/zeros when None)."""
    from ..errors import check_int

    x = float_input("group_norm", input, "input")
    if x.ndim < 2:
        raise op_error("group_norm", "input", x, "a tensor of shape (N, C, ...)")
    groups = check_int("group_norm", "num_groups", num_groups, 1)
    n, c = x.shape[0], x.shape[1]
    if c % groups:
        raise op_error("group_norm", "num_groups", num_groups, f"a divisor of C={c}")
    w = _param_like("group_norm", "weight", weight, x, (c,), 1.0)
    b = _param_like("group_norm", "bias", bias, x, (c,), 0.0)
    for arg, t in (("weight", w), ("bias", b)):
        if t.shape != (c,):
            raise op_error("group_norm", arg, t, f"shape ({c},)")
    grouped = reshape(x, (n, groups, -1))
    y, _, _ = layer_norm(grouped, None, None, 2, 2, _number("group_norm", "eps", eps, nonneg=True))
    cshape = (c,) + (1,) * (x.ndim - 2)
    return reshape(y, x.shape) * reshape(w, cshape) + reshape(b, cshape)


# ---- batch norm --------------------------------------------------------------------------


def _bn_view(shape: tuple[int, ...]) -> tuple[int, int, int]:
    return shape[0], shape[1], math.prod(shape[2:])


def _bn_abstract(
    x: ShapedArray, w: ShapedArray, b: ShapedArray, *, eps: float
) -> tuple[ShapedArray, ...]:
    for arg, a in (("input_x", x), ("weight", w), ("bias", b)):
        _check_family("batch_norm", arg, a, "float")
    stat = ShapedArray((x.shape[1],), x.dtype)
    return ShapedArray(x.shape, x.dtype), stat, stat


def _bn_bshape(ndim: int, c: int) -> tuple[int, ...]:
    return (1, c) + (1,) * (ndim - 2)


def _bn_any(xp: Any, x: Any, w: Any, b: Any, *, eps: float) -> tuple[Any, Any, Any]:
    xf = _up(x)
    axes = (0,) + tuple(range(2, x.ndim))
    bs = _bn_bshape(x.ndim, x.shape[1])
    mean = xf.mean(axis=axes)
    d = xf - mean.reshape(bs)
    var = (d * d).mean(axis=axes)
    scale = (_up(w) / xp.sqrt(var + eps)).reshape(bs)
    return d * scale + _up(b).reshape(bs), mean, var


def _bn_cpu(xp: Any, x: Any, w: Any, b: Any, *, eps: float) -> tuple[Any, Any, Any]:
    from ..kernels.cpu.norm import batch_norm_forward

    xf = np.ascontiguousarray(_up(x))
    dt = xf.dtype
    y, mean, var = batch_norm_forward(
        xf.reshape(_bn_view(x.shape)), w.astype(dt), b.astype(dt), eps
    )
    return y.reshape(x.shape), mean, var


def _bn_grad_any(
    xp: Any, gy: Any, gmean: Any, gvar: Any, x: Any, w: Any, mean: Any, var: Any, *, eps: float
) -> tuple[Any, Any, Any]:
    gy, gmean, gvar, x, w, mean, var = (_up(a) for a in (gy, gmean, gvar, x, w, mean, var))
    axes = (0,) + tuple(range(2, x.ndim))
    bs = _bn_bshape(x.ndim, x.shape[1])
    cnt = x.size // x.shape[1]
    rstd = (1 / xp.sqrt(var + eps)).reshape(bs)
    d = x - mean.reshape(bs)
    xhat = d * rstd
    sg = gy.sum(axis=axes)
    sgx = (gy * xhat).sum(axis=axes)
    dx = (
        w.reshape(bs) * rstd * (gy - (sg / cnt).reshape(bs) - xhat * (sgx / cnt).reshape(bs))
        + (gmean / cnt).reshape(bs)
        + (gvar * (2 / cnt)).reshape(bs) * d
    )
    return dx, sgx, sg


def _bn_grad_cpu(
    xp: Any, gy: Any, gmean: Any, gvar: Any, x: Any, w: Any, mean: Any, var: Any, *, eps: float
) -> tuple[Any, Any, Any]:
    from ..kernels.cpu.norm import batch_norm_backward

    xf = np.ascontiguousarray(_up(x))
    dt = xf.dtype
    view = _bn_view(x.shape)
    dx, dw, db = batch_norm_backward(
        np.ascontiguousarray(gy, dt).reshape(view),
        gmean.astype(dt),
        gvar.astype(dt),
        xf.reshape(view),
        w.astype(dt),
        mean.astype(dt),
        var.astype(dt),
        eps,
    )
    return dx.reshape(x.shape), dw, db


def _bn_grad_composite(
    gy: Tensor,
    gmean: Tensor,
    gvar: Tensor,
    x: Tensor,
    w: Tensor,
    mean: Tensor,
    var: Tensor,
    *,
    eps: float,
) -> tuple[Tensor, Tensor, Tensor]:
    """The batch-norm backward written with ops (reference for the second derivative)."""
    axes = (0,) + tuple(range(2, x.ndim))
    bs = _bn_bshape(x.ndim, x.shape[1])
    cnt = x.size // x.shape[1]
    rstd = reshape((var + eps) ** -0.5, bs)
    d = x - reshape(mean, bs)
    xhat = d * rstd
    sg = reduce_sum(gy, axes)
    sgx = reduce_sum(gy * xhat, axes)
    dx = (
        reshape(w, bs) * rstd * (gy - reshape(sg / cnt, bs) - xhat * reshape(sgx / cnt, bs))
        + reshape(gmean / cnt, bs)
        + reshape(gvar * (2 / cnt), bs) * d
    )
    return dx, sgx, sg


batch_norm_grad_p = Primitive(
    "batch_norm_grad",
    "opaque",
    lambda gy, gm, gv, x, w, m, v, *, eps: (ShapedArray(x.shape, x.dtype), w, w),
    impl=_bn_grad_any,
    cpu=_bn_grad_cpu,
    multiple_results=True,
    vjp=lambda cts, *ins, out, eps: _vjp_of(lambda *a: _bn_grad_composite(*a, eps=eps), cts, ins),
)


def _bn_vjp(
    cts: Any, x: Tensor, w: Tensor, b: Tensor, *, out: Any, eps: float
) -> tuple[Tensor, ...]:
    gy, gmean, gvar = cts
    _, mean, var = out
    return batch_norm_grad_p.bind(gy, gmean, gvar, x, w, mean, var, eps=eps)


batch_norm_train_p = Primitive(
    "batch_norm_train",
    "opaque",
    _bn_abstract,
    impl=_bn_any,
    cpu=_bn_cpu,
    vjp=_bn_vjp,
    multiple_results=True,
)


def batch_norm(
    input_x: Any,
    running_mean: Tensor,
    running_var: Tensor,
    weight: Any = None,
    bias: Any = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Batch normalization over every axis but the channel axis 1.

    Training uses the batch statistics and updates ``running_mean``/``running_var`` in place:
    ``running = (1 - momentum) * running + momentum * batch`` (the unbiased variance for
    ``running_var``). Inference uses the running statistics.
    ``y = (x - mean) / sqrt(var + eps) * weight + bias``.
    """
    op = "batch_norm"
    x = float_input(op, input_x, "input_x")
    if x.ndim < 2:
        raise op_error(op, "input_x", x, "a tensor of shape (N, C, ...)")
    c = x.shape[1]
    w = _param_like(op, "weight", weight, x, (c,), 1.0)
    b = _param_like(op, "bias", bias, x, (c,), 0.0)
    rm = _param_like(op, "running_mean", running_mean, x, (c,), 0.0)
    rv = _param_like(op, "running_var", running_var, x, (c,), 1.0)
    for arg, t in (("weight", w), ("bias", b), ("running_mean", rm), ("running_var", rv)):
        if t.shape != (c,):
            raise op_error(op, arg, t, f"shape ({c},) (the channels of input_x, axis 1)")
    if not isinstance(training, (bool, np.bool_)):
        raise op_error(op, "training", training, "a bool", TypeError)
    m = _number(op, "momentum", momentum)
    if not 0 <= m <= 1:
        raise op_error(op, "momentum", momentum, "a float in [0, 1]")
    e = _number(op, "eps", eps, nonneg=True)
    if not training:
        bs = _bn_bshape(x.ndim, c)
        scale = reshape(w * (rv + e) ** -0.5, bs)
        return (x - reshape(rm, bs)) * scale + reshape(b, bs)
    cnt = x.size // c
    if cnt < 2:
        raise op_error(op, "input_x", x, "more than one value per channel when training")
    y, mean, var = batch_norm_train_p.bind(x, w, b, eps=e)
    from ..autograd.functional import no_grad

    with no_grad():
        for stat, batch in ((running_mean, mean), (running_var, var * (cnt / (cnt - 1)))):
            if isinstance(stat, Tensor):
                stat.assign_value(cast(stat * (1 - m) + cast(batch, stat.dtype) * m, stat.dtype))
    return y
