"""Random sampling ops (MindSpore 1.8's ``standard_normal``, ``uniform``, ``gamma``...).

Every op draws its noise from a small set of ``"random"`` primitives that take no data
inputs (standard uniform, normal and Laplace noise) or only the distribution's shape
parameters (gamma, Poisson, categorical). Location/scale transforms are written with ops
(``mean + stddev * z``), so ``normal``, ``laplace`` and ``uniform`` have the standard
reparameterized gradient w.r.t. their tensor parameters; the other samplers have none.

Seeding rule (MindSpore's global seed + operator seed):

* An op called without a seed (``seed=None`` or ``0``, ``seed=seed2=0``, ``seed=-1`` for
  ``bernoulli``) draws from :func:`sporeling.core.random_state.generator` of its device, so
  ``random_state.set_seed(n)`` makes the whole run reproducible.
* An op called with a seed draws from its own stream, seeded from
  ``(global seed or 0, seed, seed2)``. Successive calls with the same seeds continue that
  stream (as a seeded MindSpore kernel does); ``set_seed`` restarts every stream. The
  values do not depend on how much of the global stream other ops consumed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtype as _dt
from .. import random_state as _rs
from .._backend import Device, get_device
from .._primitive import Primitive, ShapedArray
from ..errors import describe, op_error
from ..tensor import Tensor
from ._core import as_tensor, broadcast_shapes, broadcast_to, cast, reshape

__all__ = [
    "standard_normal",
    "standard_laplace",
    "uniform",
    "normal",
    "laplace",
    "gamma",
    "random_gamma",
    "poisson",
    "multinomial",
    "random_categorical",
    "bernoulli",
]

SeedKey = tuple[int, int] | None

# ---- seeds and generators -----------------------------------------------------------


def _check_seed(op: str, arg: str, value: Any, allow_none: bool = True, minimum: int = 0) -> int:
    """A seed argument as an int (None -> 0); TypeError/ValueError naming op and argument."""
    if value is None and allow_none:
        return 0
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise op_error(
            op, arg, value, "an int seed" + (" or None" if allow_none else ""), TypeError
        )
    if value < minimum:
        raise op_error(op, arg, value, f"a seed >= {minimum}")
    return int(value)


def _key(seed: int, seed2: int = 0) -> SeedKey:
    """The stream key: None (the device's global generator) unless an op seed is set."""
    return None if seed == 0 and seed2 == 0 else (seed, seed2)


def _generator(device: Device, key: SeedKey) -> Any:
    """The generator an op draws from (see the module docstring for the rule).

    Op streams live in ``random_state``'s generator table, so ``set_seed`` (which clears it)
    restarts them too.
    """
    if key is None:
        return _rs.generator(device)
    kind = device.kind if not device.standin else "gpu-standin"
    global_seed = _rs.get_seed()
    slot = ("op-stream", kind, global_seed, key)
    gen = _rs._GENERATORS.get(slot)  # noqa: SLF001 - shared table, cleared by set_seed
    if gen is None:
        entropy = [0 if global_seed is None else int(global_seed), key[0], key[1]]
        seed = int(np.random.SeedSequence(entropy).generate_state(1, np.uint64)[0])
        gen = device.xp.random.default_rng(seed)
        _rs._GENERATORS[slot] = gen  # noqa: SLF001
    return gen


def _device_for(*values: Any) -> Device:
    """The device of the first Tensor among ``values`` (the context's device otherwise)."""
    for v in values:
        if isinstance(v, Tensor):
            return v._device
    return get_device(None)


def _shape_arg(op: str, shape: Any, arg: str = "shape", positive: bool = False) -> tuple[int, ...]:
    """A shape given as a tuple/list of ints or a 1-D integer Tensor."""
    if isinstance(shape, Tensor):
        if shape.dtype.category != 1 or shape.ndim > 1:
            raise op_error(op, arg, shape, "a tuple of ints or a 1-D integer Tensor", TypeError)
        shape = shape.asnumpy().reshape(-1).tolist()
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, (bool, np.bool_)):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)):
        raise op_error(op, arg, shape, "a tuple of ints or a 1-D integer Tensor", TypeError)
    dims = []
    for d in shape:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
            raise op_error(op, arg, tuple(shape), "a tuple of ints", TypeError)
        if d < (1 if positive else 0):
            raise op_error(op, arg, tuple(shape), "positive sizes" if positive else "sizes >= 0")
        dims.append(int(d))
    return tuple(dims)


def _float_dtype(op: str, dtype: Any, arg: str = "dtype") -> _dt.DType:
    try:
        dt = _dt.to_dtype(dtype)
    except (TypeError, ValueError):
        raise op_error(op, arg, dtype, "a floating dtype", TypeError) from None
    if dt.category != 2:
        raise op_error(op, arg, dt, "a floating dtype (float16, float32, float64)", TypeError)
    return dt


def _param(op: str, arg: str, value: Any, like: Tensor | None) -> Tensor:
    """A distribution parameter as a floating Tensor (numbers become float32)."""
    if isinstance(value, (bool, np.bool_)):
        raise op_error(op, arg, value, "a Tensor or a number", TypeError)
    t = as_tensor(value, op, arg, like)
    if t.dtype.category == 0:
        raise op_error(op, arg, t, "a numeric Tensor or a number", TypeError)
    return t if t.dtype.category == 2 else cast(t, _dt.float32)


def _check_values(op: str, arg: str, t: Tensor, ok: Any, expected: str) -> None:
    """A data check on a parameter tensor (``ok(array) -> bool array``)."""
    data = t.asnumpy()
    if data.size and not bool(np.all(ok(data))):
        bad = data[~ok(data)].reshape(-1)[0].item()
        raise ValueError(f"{op}: argument '{arg}' expected {expected}, got a value {bad!r}")


# ---- noise primitives ---------------------------------------------------------------


def _noise_abstract(
    *, shape: tuple[int, ...], dtype: _dt.DType, device: Device, key: SeedKey
) -> ShapedArray:
    return ShapedArray(shape, dtype)


def _np_float(dtype: _dt.DType) -> Any:
    # NumPy's and CuPy's generators produce float32/float64 only; float16 is cast afterwards
    return np.float64 if dtype.np == np.float64 else np.float32


def _uniform_impl(
    xp: Any, *, shape: tuple[int, ...], dtype: _dt.DType, device: Device, key: SeedKey
) -> Any:
    return _generator(device, key).random(shape, dtype=_np_float(dtype))


def _normal_impl(
    xp: Any, *, shape: tuple[int, ...], dtype: _dt.DType, device: Device, key: SeedKey
) -> Any:
    return _generator(device, key).standard_normal(shape, dtype=_np_float(dtype))


def _laplace_impl(
    xp: Any, *, shape: tuple[int, ...], dtype: _dt.DType, device: Device, key: SeedKey
) -> Any:
    # The difference of two unit exponentials is standard Laplace; no log of a possible 0.
    gen = _generator(device, key)
    return gen.standard_exponential(shape) - gen.standard_exponential(shape)


uniform_noise_p = Primitive("random_uniform", "random", _noise_abstract, impl=_uniform_impl)
normal_noise_p = Primitive("random_standard_normal", "random", _noise_abstract, impl=_normal_impl)
laplace_noise_p = Primitive(
    "random_standard_laplace", "random", _noise_abstract, impl=_laplace_impl
)


def _noise(
    prim: Primitive, shape: tuple[int, ...], dtype: _dt.DType, device: Device, key: SeedKey
) -> Tensor:
    return prim.bind(shape=shape, dtype=dtype, device=device, key=key)


def _param_sampler_abstract(
    p: ShapedArray, *, device: Device, key: SeedKey, out: _dt.DType | None = None
) -> ShapedArray:
    return ShapedArray(p.shape, out or p.dtype)


def _gamma_impl(xp: Any, alpha: Any, *, device: Device, key: SeedKey, out: Any = None) -> Any:
    return _generator(device, key).standard_gamma(alpha.astype(np.float64))


def _poisson_impl(xp: Any, lam: Any, *, device: Device, key: SeedKey, out: Any = None) -> Any:
    return _generator(device, key).poisson(lam.astype(np.float64))


standard_gamma_p = Primitive(
    "random_standard_gamma", "random", _param_sampler_abstract, impl=_gamma_impl
)
poisson_p = Primitive("random_poisson", "random", _param_sampler_abstract, impl=_poisson_impl)


def _categorical_abstract(
    probs: ShapedArray,
    *,
    num_sample: int,
    replacement: bool,
    dtype: _dt.DType,
    device: Device,
    key: SeedKey,
) -> ShapedArray:
    return ShapedArray((probs.shape[0], num_sample), dtype)


def _categorical_impl(
    xp: Any,
    probs: Any,
    *,
    num_sample: int,
    replacement: bool,
    dtype: _dt.DType,
    device: Device,
    key: SeedKey,
) -> Any:
    """Rows of non-negative weights -> sampled column indices.

    With replacement: inverse-CDF sampling, counting the CDF entries <= u (the CDF is
    normalised so its last entry is exactly 1 > u). Without replacement: the Gumbel-top-k
    trick (Efraimidis-Spirakis keys u**(1/p)), taken as the k largest of log(u)/p.
    """
    gen = _generator(device, key)
    p = probs.astype(np.float64)
    rows, cats = p.shape
    if replacement:
        cdf = xp.cumsum(p, axis=1)
        cdf = cdf / cdf[:, -1:]
        u = gen.random((rows, num_sample))
        return xp.sum(cdf[:, None, :] <= u[:, :, None], axis=2)
    u = gen.random((rows, cats))
    u = xp.maximum(u, np.finfo(np.float64).tiny)  # keep log(u) finite
    safe = xp.where(p > 0, p, 1.0)
    keys = xp.where(p > 0, xp.log(u) / safe, -np.inf)
    order = xp.argsort(-keys, axis=1, kind="stable")
    return order[:, :num_sample]


categorical_p = Primitive(
    "random_categorical", "random", _categorical_abstract, impl=_categorical_impl
)

# ---- public ops -------------------------------------------------------------------------


def standard_normal(shape: Any, seed: int = 0, seed2: int = 0) -> Tensor:
    """Standard normal samples N(0, 1) of ``shape`` (float32).

    >>> standard_normal((2, 3)).shape
    (2, 3)
    """
    dims = _shape_arg("standard_normal", shape)
    key = _key(
        _check_seed("standard_normal", "seed", seed, False),
        _check_seed("standard_normal", "seed2", seed2, False),
    )
    return _noise(normal_noise_p, dims, _dt.float32, _device_for(shape), key)


def standard_laplace(shape: Any, seed: int = 0, seed2: int = 0) -> Tensor:
    """Standard Laplace samples, density ``exp(-|x|) / 2`` (float32).

    >>> standard_laplace((4,)).shape
    (4,)
    """
    dims = _shape_arg("standard_laplace", shape)
    key = _key(
        _check_seed("standard_laplace", "seed", seed, False),
        _check_seed("standard_laplace", "seed2", seed2, False),
    )
    return _noise(laplace_noise_p, dims, _dt.float32, _device_for(shape), key)


def uniform(
    shape: Any, minval: Any, maxval: Any, seed: int | None = None, dtype: Any = _dt.float32
) -> Tensor:
    """Uniform samples in ``[minval, maxval)``; shape = broadcast(shape, minval, maxval).

    A floating ``dtype`` samples ``minval + (maxval - minval) * u`` (differentiable w.r.t.
    ``minval``/``maxval``); an integer ``dtype`` samples integers, and then ``minval`` and
    ``maxval`` must be single numbers.

    >>> uniform((2, 2), Tensor(1.0), Tensor(2.0)).shape
    (2, 2)
    """
    op = "uniform"
    dims = _shape_arg(op, shape)
    key = _key(_check_seed(op, "seed", seed))
    try:
        dt = _dt.to_dtype(dtype)
    except (TypeError, ValueError):
        raise op_error(op, "dtype", dtype, "int32, int64 or a floating dtype", TypeError) from None
    device = _device_for(minval, maxval)
    if dt.category == 1:
        lo = _int_bound(op, "minval", minval)
        hi = _int_bound(op, "maxval", maxval)
        if lo >= hi:
            raise ValueError(f"uniform: argument 'minval' ({lo}) must be less than 'maxval' ({hi})")
        if dt.np not in (np.int32, np.int64):
            raise op_error(op, "dtype", dt, "int32, int64 or a floating dtype", TypeError)
        return uniform_int_p.bind(shape=dims, low=lo, high=hi, dtype=dt, device=device, key=key)
    if dt.category != 2:
        raise op_error(op, "dtype", dt, "int32, int64 or a floating dtype", TypeError)
    like = minval if isinstance(minval, Tensor) else maxval if isinstance(maxval, Tensor) else None
    lo_t = _param(op, "minval", minval, like)
    hi_t = _param(op, "maxval", maxval, like)
    out_shape = broadcast_shapes(op, dims, lo_t.shape, hi_t.shape)
    lo_b = broadcast_to(lo_t, out_shape).asnumpy()
    hi_b = broadcast_to(hi_t, out_shape).asnumpy()
    if lo_b.size and not bool(np.all(lo_b < hi_b)):
        raise ValueError("uniform: argument 'minval' must be less than 'maxval' everywhere")
    u = _noise(uniform_noise_p, out_shape, dt, device, key)
    return cast(lo_t, dt) + (cast(hi_t, dt) - cast(lo_t, dt)) * u


def _int_bound(op: str, arg: str, value: Any) -> int:
    if isinstance(value, Tensor):
        if value.size != 1 or value.dtype.category != 1:
            raise op_error(op, arg, value, "a single integer for an integer dtype", TypeError)
        return int(value.item())
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise op_error(op, arg, value, "a single integer for an integer dtype", TypeError)
    return int(value)


def _uniform_int_abstract(
    *, shape: tuple[int, ...], low: int, high: int, dtype: _dt.DType, device: Device, key: SeedKey
) -> ShapedArray:
    return ShapedArray(shape, dtype)


uniform_int_p = Primitive(
    "random_uniform_int",
    "random",
    _uniform_int_abstract,
    impl=lambda xp, *, shape, low, high, dtype, device, key: _generator(device, key).integers(
        low, high, size=shape, dtype=dtype.np
    ),
)


def _loc_scale(
    op: str, shape: Any, loc: Any, scale: Any, names: tuple[str, str], seed: Any, prim: Primitive
) -> Tensor:
    dims = _shape_arg(op, shape)
    key = _key(_check_seed(op, "seed", seed))
    like = loc if isinstance(loc, Tensor) else scale if isinstance(scale, Tensor) else None
    loc_t = _param(op, names[0], loc, like)
    scale_t = _param(op, names[1], scale, like)
    _check_values(op, names[1], scale_t, lambda a: a >= 0, "non-negative values")
    dt = _dt.promote_types(loc_t.dtype, scale_t.dtype)
    out_shape = broadcast_shapes(op, dims, loc_t.shape, scale_t.shape)
    z = _noise(prim, out_shape, dt, _device_for(loc, scale), key)
    return cast(loc_t, dt) + cast(scale_t, dt) * z


def normal(shape: Any, mean: Any, stddev: Any, seed: int | None = None) -> Tensor:
    """Normal samples ``mean + stddev * z`` with z ~ N(0, 1); shape = broadcast(shape, mean,
    stddev). Differentiable w.r.t. ``mean`` and ``stddev`` (reparameterization).

    >>> normal((3, 1, 2), Tensor([[3.0, 4.0], [5.0, 6.0]]), Tensor(1.0), seed=5).shape
    (3, 2, 2)
    """
    return _loc_scale("normal", shape, mean, stddev, ("mean", "stddev"), seed, normal_noise_p)


def laplace(shape: Any, mean: Any, lambda_param: Any, seed: int | None = None) -> Tensor:
    """Laplace samples, density ``exp(-|x - mean| / lambda) / (2 lambda)``, drawn as
    ``mean + lambda_param * l`` (l standard Laplace; differentiable w.r.t. both).

    >>> laplace((2, 3), Tensor(1.0), Tensor(1.0), seed=5).shape
    (2, 3)
    """
    return _loc_scale(
        "laplace", shape, mean, lambda_param, ("mean", "lambda_param"), seed, laplace_noise_p
    )


def _positive_param(op: str, arg: str, value: Any, like: Tensor | None) -> Tensor:
    t = _param(op, arg, value, like)
    _check_values(op, arg, t, lambda a: a > 0, "positive values")
    return t


def gamma(shape: Any, alpha: Any, beta: Any, seed: int | None = None) -> Tensor:
    """Gamma samples with density ``x**(alpha-1) exp(-x/beta) / (beta**alpha Gamma(alpha))``
    (``beta`` scales the samples, as in MindSpore's formula and examples); shape =
    broadcast(shape, alpha, beta). Not differentiable.

    >>> gamma((3, 1, 2), Tensor([[3.0, 4.0], [5.0, 6.0]]), Tensor([1.0]), seed=5).shape
    (3, 2, 2)
    """
    op = "gamma"
    dims = _shape_arg(op, shape)
    key = _key(_check_seed(op, "seed", seed))
    like = alpha if isinstance(alpha, Tensor) else beta if isinstance(beta, Tensor) else None
    a = _positive_param(op, "alpha", alpha, like)
    b = _positive_param(op, "beta", beta, like)
    dt = _dt.promote_types(a.dtype, b.dtype)
    out_shape = broadcast_shapes(op, dims, a.shape, b.shape)
    a_full = broadcast_to(cast(a, dt), out_shape)
    g = standard_gamma_p.bind(_no_grad_value(a_full), device=a_full._device, key=key)
    return g * _no_grad_value(broadcast_to(cast(b, dt), out_shape))


def _no_grad_value(t: Tensor) -> Tensor:
    """``t``'s data as a fresh leaf (samplers without gradients must not record any)."""
    return Tensor._wrap(t._data, t._device)


def random_gamma(shape: Any, alpha: Any, seed: int = 0, seed2: int = 0) -> Tensor:
    """Gamma(alpha, 1) samples of shape ``shape + alpha.shape`` with alpha's dtype.

    >>> random_gamma(Tensor([7, 5]), Tensor([0.5, 1.5]), seed=5).shape
    (7, 5, 2)
    """
    op = "random_gamma"
    dims = _shape_arg(op, shape)
    key = _key(_check_seed(op, "seed", seed, False), _check_seed(op, "seed2", seed2, False))
    if not isinstance(alpha, Tensor):
        raise op_error(op, "alpha", alpha, "a Tensor", TypeError)
    if alpha.dtype.category != 2:
        raise op_error(op, "alpha", alpha, "a float16, float32 or float64 Tensor", TypeError)
    _check_values(op, "alpha", alpha, lambda a: a > 0, "positive values")
    a = _no_grad_value(alpha)
    full = broadcast_to(a, dims + alpha.shape) if dims else a
    return standard_gamma_p.bind(_no_grad_value(full), device=a._device, key=key)


def poisson(shape: Any, mean: Any, seed: int | None = None) -> Tensor:
    """Poisson samples ``P(i | mu) = exp(-mu) mu**i / i!`` as float32; shape =
    broadcast(shape, mean).

    >>> poisson((4, 1), Tensor([5.0, 10.0]), seed=5).shape
    (4, 2)
    """
    op = "poisson"
    dims = _shape_arg(op, shape)
    key = _key(_check_seed(op, "seed", seed))
    m = _positive_param(op, "mean", mean, None)
    out_shape = broadcast_shapes(op, dims, m.shape)
    full = _no_grad_value(broadcast_to(m, out_shape))
    return poisson_p.bind(full, device=full._device, key=key, out=_dt.float32)


def multinomial(
    inputs: Any, num_sample: int, replacement: bool = True, seed: int | None = None
) -> Tensor:
    """Sample ``num_sample`` category indices (int32) per row of non-negative weights
    ``inputs`` (1-D or 2-D; rows need not sum to 1). Without replacement the indices of a
    row are distinct, so ``num_sample`` may not exceed the number of categories.

    >>> multinomial(Tensor([0.0, 9.0, 4.0, 0.0]), 2, replacement=False).shape
    (2,)
    """
    op = "multinomial"
    if not isinstance(inputs, Tensor):
        raise op_error(op, "inputs", inputs, "a Tensor", TypeError)
    if inputs.ndim not in (1, 2):
        raise op_error(op, "inputs", inputs, "a 1-D or 2-D Tensor")
    if inputs.dtype.category != 2:
        raise op_error(op, "inputs", inputs, "a floating Tensor of weights", TypeError)
    if isinstance(num_sample, (bool, np.bool_)) or not isinstance(num_sample, (int, np.integer)):
        raise op_error(op, "num_sample", num_sample, "an int", TypeError)
    if num_sample < 1:
        raise op_error(op, "num_sample", num_sample, "an int >= 1")
    if not isinstance(replacement, (bool, np.bool_)):
        raise op_error(op, "replacement", replacement, "a bool", TypeError)
    key = _key(_check_seed(op, "seed", seed))
    probs = inputs if inputs.ndim == 2 else reshape(inputs, (1, inputs.shape[0]))
    data = probs.asnumpy()
    if not np.all(np.isfinite(data)) or np.any(data < 0):
        raise op_error(op, "inputs", inputs, "finite, non-negative weights")
    positive = (data > 0).sum(axis=1)
    if np.any(positive == 0):
        raise op_error(op, "inputs", inputs, "rows with a positive sum")
    if not replacement and num_sample > int(positive.min()):
        raise ValueError(
            f"multinomial: argument 'num_sample' is {num_sample}, but without replacement it "
            f"cannot exceed the number of categories with positive weight ({int(positive.min())})"
        )
    out = categorical_p.bind(
        _no_grad_value(probs),
        num_sample=int(num_sample),
        replacement=bool(replacement),
        dtype=_dt.int32,
        device=probs._device,
        key=key,
    )
    return out if inputs.ndim == 2 else reshape(out, (int(num_sample),))


def random_categorical(
    logits: Any, num_sample: int, seed: int = 0, dtype: Any = _dt.int64
) -> Tensor:
    """Sample ``num_sample`` class indices per row of ``logits`` (batch, num_classes) from
    ``softmax(logits)``; output (batch, num_sample) of ``dtype`` (int16/int32/int64).

    >>> random_categorical(Tensor(np.zeros((10, 5), np.float32)), 8).shape
    (10, 8)
    """
    op = "random_categorical"
    if not isinstance(logits, Tensor):
        raise op_error(op, "logits", logits, "a Tensor", TypeError)
    if logits.ndim != 2:
        raise op_error(op, "logits", logits, "a 2-D Tensor (batch_size, num_classes)")
    if logits.dtype.category != 2:
        raise op_error(op, "logits", logits, "a floating Tensor", TypeError)
    if isinstance(num_sample, (bool, np.bool_)) or not isinstance(num_sample, (int, np.integer)):
        raise op_error(op, "num_sample", num_sample, "an int", TypeError)
    if num_sample < 1:
        raise op_error(op, "num_sample", num_sample, "an int >= 1")
    key = _key(_check_seed(op, "seed", seed, False))
    try:
        dt = _dt.to_dtype(dtype)
    except (TypeError, ValueError):
        dt = None
    if dt is None or dt.np not in (np.int16, np.int32, np.int64):
        raise op_error(op, "dtype", dtype, "int16, int32 or int64", TypeError)
    data = logits.asnumpy().astype(np.float64)
    if np.any(np.isnan(data)) or np.any(data == np.inf):
        raise op_error(op, "logits", logits, "logits without NaN or +inf")
    top = data.max(axis=1, keepdims=True)
    if np.any(top == -np.inf):
        raise op_error(op, "logits", logits, "rows with at least one finite logit")
    weights = Tensor(np.exp(data - top), device=logits._device)  # softmax up to a row scale
    return categorical_p.bind(
        weights,
        num_sample=int(num_sample),
        replacement=True,
        dtype=dt,
        device=logits._device,
        key=key,
    )


def bernoulli(x: Any, p: Any = 0.5, seed: int = -1) -> Tensor:
    """Bernoulli(p) samples (0 or 1) with ``x``'s shape and dtype; ``p`` (a number or a
    Tensor broadcastable to ``x``) is the probability of a 1. ``seed=-1`` is unseeded.

    >>> bernoulli(Tensor([1, 2, 3]), p=1.0).tolist()
    [1, 1, 1]
    """
    op = "bernoulli"
    if not isinstance(x, Tensor):
        raise op_error(op, "x", x, "a Tensor", TypeError)
    seed = _check_seed(op, "seed", seed, False, minimum=-1)
    key = None if seed == -1 else (seed, 1)  # seed 0 is a real seed here, unlike other ops
    if isinstance(p, (bool, np.bool_)):
        raise op_error(op, "p", p, "a float or a float Tensor", TypeError)
    if isinstance(p, Tensor):
        if p.dtype.category != 2:
            raise op_error(op, "p", p, "a float32 or float64 Tensor", TypeError)
        p_t = p
    elif isinstance(p, (int, float, np.integer, np.floating)):
        p_t = Tensor(float(p), dtype=_dt.float32, device=x._device)
    else:
        raise op_error(op, "p", p, "a float or a float Tensor", TypeError)
    _check_values(op, "p", p_t, lambda a: (a >= 0) & (a <= 1), "probabilities in [0, 1]")
    if p_t.ndim > x.ndim or any(d not in (1, s) for d, s in zip(p_t.shape[::-1], x.shape[::-1])):
        raise op_error(op, "p", p_t, f"a shape that broadcasts to x's shape {x.shape}")
    u = _noise(uniform_noise_p, x.shape, p_t.dtype, x._device, key)
    return cast(u < _no_grad_value(p_t), x.dtype)


_ = describe
