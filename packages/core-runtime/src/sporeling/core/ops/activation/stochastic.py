"""Random activations: gumbel_softmax and dropout, with their noise primitives."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import dtype as _dt
from ..._primitive import Primitive, ShapedArray
from ...errors import check_axis, op_error
from ...tensor import Tensor
from .._core import as_tensor, cast, ones_like
from .._elementwise import float_input
from ._common import _number
from .softmax_family import softmax

# ---- gumbel softmax and dropout: random primitives ------------------------------------------


def _noise_abstract(*, shape: tuple[int, ...], dtype: _dt.DType, **params: Any) -> ShapedArray:
    return ShapedArray(shape, dtype)


def _rng(device: Any, seed: int | None) -> Any:
    from ...random_state import generator

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
    # drawn as bools and cast: a recomputed cell keeps the draw (one byte per element) from
    # its forward to its backward, and the compiled backward casts it again
    drawn = bernoulli_mask_p.bind(
        shape=t.shape, dtype=_dt.bool_, device=t._device, keep=keep, seed=seed
    )
    mask = cast(drawn, t.dtype)
    if keep == 0:
        return t * mask, mask
    return t * mask * (1.0 / keep), mask
