"""Elementwise activations: ReLU, exponential units, sigmoid family, GELU, shrinkage, PReLU, GLU."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..._backend import is_host
from ..._primitive import _STATE, Decomposition, Primitive, ShapedArray
from ...errors import check_axis, op_error
from ...kernels.cpu import relu_add as _relu_add
from ...tensor import Tensor
from .._compare import select
from .._core import as_tensor, cast, ones_like, reshape
from .._elementwise import exp, float_input, neg, unary_op
from ._common import _abs, _mask, _number, _param_op, _up


def _tanh(u: Tensor) -> Tensor:
    """tanh written with sigmoid (``2 sigmoid(2u) - 1``), for vjps."""
    return sigmoid(u * 2) * 2 - 1


# ---- ReLU family ---------------------------------------------------------------------

#: dtype -> its zero as a NumPy scalar, made once (building one per call cost ~0.25 us of a
#: 4x4 relu's ~1.4 us, benchmarks/bench_dispatch.py)
_ZEROS: dict[Any, Any] = {}


def _zero(dtype: Any) -> Any:
    z = _ZEROS.get(dtype)
    if z is None:
        z = _ZEROS[dtype] = dtype.type(0)
    return z


def _relu_impl(xp: Any, x: Any) -> Any:
    return xp.maximum(x, _zero(x.dtype))


def _relu_cpu(xp: Any, x: Any) -> Any:
    """Large contiguous float inputs on one Numba loop or row blocks of several threads
    (bit-equal to NumPy's maximum, kernels/cpu/relu_add.py), the rest in NumPy."""
    if x.size >= _relu_add.RELU_MIN:
        out = _relu_add.relu(x)
        if out is not None:
            return out
    return xp.maximum(x, _zero(x.dtype))


def _relu_specialize(impl: Any, arrays: list[Any], params: dict[str, Any]) -> Any:
    """The eager plan's kernel: NumPy's maximum with the dtype's zero bound (for shapes the
    row-block kernel may take, the CPU impl, which checks contiguity per call)."""
    if impl not in (_relu_impl, _relu_cpu) or type(arrays[0]) is not np.ndarray:
        return None
    if impl is _relu_cpu and _relu_add.applies_relu(arrays[0].shape, arrays[0].dtype):
        return lambda x: _relu_cpu(np, x)
    zero, maximum = _zero(arrays[0].dtype), np.maximum
    return lambda x: maximum(x, zero)


relu_p = unary_op(
    "relu",
    family="numeric",
    scalar="max(x, 0)",
    impl=_relu_impl,
    vjp=lambda g, x, *, out: relu_grad_p.bind(g, x),
)
relu_p.def_impl("cpu")(_relu_cpu)
relu_p.eager_specialize = _relu_specialize


def _relu_grad_abstract(g: ShapedArray, x: ShapedArray) -> ShapedArray:
    if g.dtype != x.dtype or g.shape != x.shape:  # internal: made by relu's vjp only
        raise TypeError(f"relu_grad: g {g.shape} {g.dtype} and x {x.shape} {x.dtype} differ")
    return ShapedArray(g.shape, g.dtype)


def _relu_grad_cpu(xp: Any, g: Any, x: Any) -> Any:
    from ...kernels.cpu.relu_grad import relu_grad

    out = relu_grad(g, x)
    return xp.where(x > 0, g, _zero(g.dtype)) if out is None else out


#: ``g`` where ``x > 0``, else 0: ReLU's gradient as one op (it was ``g * cast(x > 0)``:
#: three passes and two temporaries; one Numba pass on the CPU, kernels/cpu/relu_grad.py).
#: Linear in g; exact zeros where x <= 0, also for an infinite or NaN g.
relu_grad_p = Primitive(
    "relu_grad",
    "elementwise",
    _relu_grad_abstract,
    impl=lambda xp, g, x: xp.where(x > 0, g, _zero(g.dtype)),
    cpu=_relu_grad_cpu,
    vjp=lambda c, g, x, *, out: (lambda: relu_grad_p.bind(c, x), None),
    scalar="where(y > 0, x, 0)",
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
    if type(x) is not Tensor:
        x = as_tensor(x, "relu", "x")
    return _STATE[-1].process(relu_p, (x,), {})  # (bind's packing costs ~0.1 us here)


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
    if is_host(xp) and x.dtype == np.float32:  # one vectorised Numba pass
        from ...kernels.cpu.activation import sigmoid32

        return sigmoid32(x)
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
    scalar="f32(1 / (1 + exp(-x)))",  # float32 arithmetic, as sigmoid32 (eager) does
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
    if is_host(xp):
        from ...kernels.cpu.activation import ndtr

        return ndtr(x)
    from cupyx.scipy.special import ndtr as cupy_ndtr  # pragma: no cover - needs a GPU

    return cupy_ndtr(_up(x))  # pragma: no cover


_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
# The standard normal CDF; private (exact GELU and its derivative use it).
ndtr_p = unary_op(
    "_ndtr",
    impl=_ndtr_impl,
    scalar="ndtr(x)",  # float32 CPU kernels: vecmath.vndtr; elsewhere 0.5 * erfc(-x/sqrt(2))
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


def _gelu_parts(x: Tensor) -> tuple[Tensor, ...]:
    """``x * Phi(x)`` as eager mode computes it: in a training graph the gradient's
    ``Phi(x)`` then merges with the forward's (CSE), so the forward kernel stores it and the
    backward kernel reads it instead of evaluating erfc again (the costliest part of a GELU
    gradient)."""
    return (x * ndtr_p.bind(x),)


_GELU_ERF_SCALAR = "x * 0.5 * (1 + erf(x * 0.7071067811865476))"
#: the tanh approximation (nn.GELU's default), so it fuses too; float32 arithmetic in
#: float32 kernels, as eager mode's NumPy expression (float64 made the kernel 1.6x slower,
#: and ``1 + tanh(u)`` near -1 is exact either way: tanh's float32 result sets the error)
_GELU_TANH_SCALAR = "f32(x * 0.5 * (1 + tanh((x + 0.044715 * x * x * x) * 0.7978845608028654)))"

gelu_p = _param_op(
    "gelu",
    _gelu_impl,
    _gelu_vjp,
    _GELU_ERF_SCALAR,
    scalar_rule=lambda p: _GELU_TANH_SCALAR if p.get("approximate") == "tanh" else _GELU_ERF_SCALAR,
    decomposition=Decomposition(_gelu_parts, lambda inputs, p: p.get("approximate") == "none"),
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
    lambda xp, x, *, lambd: xp.where(xp.abs(x) > lambd, x, x * 0),  # x * 0: NaN stays NaN
    lambda g, x, *, out, lambd: g * _mask(_abs(x) > lambd, g),
    "where(abs(x) > lambd, x, x * 0)",
)
soft_shrink_p = _param_op(
    "soft_shrink",
    lambda xp, x, *, lambd: xp.where(
        x > lambd, x - lambd, xp.where(x < -lambd, x + lambd, x * 0)
    ),  # x * 0: a NaN input stays NaN (it compares False with both bounds)
    lambda g, x, *, out, lambd: g * _mask(_abs(x) > lambd, g),
    "where(x > lambd, x - lambd, where(x < -lambd, x + lambd, x * 0))",
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
    from .._join import split

    t = float_input("glu", x)
    ax = check_axis("glu", axis, t.ndim)
    if t.ndim == 0 or t.shape[ax] % 2:
        raise op_error("glu", "x", t, f"an even size along axis {axis}")
    a, b = split(t, ax, 2)
    return a * sigmoid(b)
