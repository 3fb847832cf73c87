"""softmax and log_softmax: primitives with a Numba CPU kernel and an xp reference."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._primitive import _STATE, Decomposition, Primitive, ShapedArray, StaticParams
from ...errors import check_axis, op_error
from ...kernels.cpu.softmax import softmax_lastaxis, softmax_lastaxis_small
from ...tensor import Tensor
from .._batch_rules import axis_rule
from .._core import reduce_sum, reshape
from .._elementwise import _check_family, exp, float_input
from ._common import _FAST, _up

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

        a = axis[0]
        last = a == x.ndim - 1
        xf = _up(x) if last else np.moveaxis(_up(x), a, -1)
        out = softmax_lastaxis(xf, log)
        return out if last else np.moveaxis(out, -1, a)

    return impl


def _softmax_parts(x: Tensor, *, axis: tuple[int, ...]) -> tuple[Tensor, ...]:
    from ..reduction import reduce_max_p

    e = exp(x - reduce_max_p.bind(x, axis=axis, keep_dims=True))
    return (e / reduce_sum(e, axis, keep_dims=True),)


def _log_softmax_parts(x: Tensor, *, axis: tuple[int, ...]) -> tuple[Tensor, ...]:
    from .._elementwise import log
    from ..reduction import reduce_max_p

    d = x - reduce_max_p.bind(x, axis=axis, keep_dims=True)
    return (d - log(reduce_sum(exp(d), axis, keep_dims=True)),)


def _over_last_axis(inputs: Any, params: dict[str, Any]) -> bool:
    """Expanded only over the last axis: there the parts fuse into one row kernel."""
    return bool(params.get("axis") == (inputs[0].ndim - 1,))


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
    decomposition=Decomposition(_softmax_parts, _over_last_axis, ("axis",)),
    batch_rule=axis_rule,
)
log_softmax_p = Primitive(
    "log_softmax",
    "opaque",
    _axes_abstract("log_softmax"),
    impl=_log_softmax_any,
    cpu=_softmax_cpu_for(True),
    vjp=lambda g, x, *, out, axis: g - exp(out) * reduce_sum(g, axis, keep_dims=True),
    decomposition=Decomposition(_log_softmax_parts, _over_last_axis, ("axis",)),
    batch_rule=axis_rule,
)


def _softmax_specialize_for(log: bool) -> Any:
    def specialize(impl: Any, arrays: list[Any], params: dict[str, Any]) -> Any:
        """A tiny float32/float64 softmax over the last axis: the row kernel for its shape."""
        x = arrays[0]
        prim = log_softmax_p if log else softmax_p
        if (
            impl is not prim.impls.get("cpu")
            or type(x) is not np.ndarray
            or x.dtype.type not in _FAST
            or params["axis"] != (x.ndim - 1,)
        ):
            return None
        return softmax_lastaxis_small(x.shape, log)

    return specialize


softmax_p.eager_specialize = _softmax_specialize_for(False)
log_softmax_p.eager_specialize = _softmax_specialize_for(True)


def _softmax_axes(op: str, axis: Any, ndim: int) -> tuple[int, ...]:
    if type(axis) is int:  # one axis, the common case (hot path)
        return (check_axis(op, axis, ndim),)
    items = axis if isinstance(axis, (tuple, list)) else (axis,)
    if len(items) == 0:
        raise op_error(op, "axis", axis, "an int or a non-empty tuple of ints")
    axes = tuple(sorted(check_axis(op, a, ndim) for a in items))
    if len(set(axes)) != len(axes):
        raise op_error(op, "axis", axis, "distinct axes")
    return axes


#: (int axis, ndim) -> the checked axis as StaticParams (the hot path: no axis check, no
#: bind packing, no hashing of the params per call)
_AXIS_PARAMS: dict[tuple[int, int], StaticParams] = {}


def _softmax_like(op: str, prim: Primitive, x: Any, arg: str, axis: Any) -> Tensor:
    t = float_input(op, x, arg)
    if type(axis) is int:
        params = _AXIS_PARAMS.get((axis, t._data.ndim))
        if params is not None:
            return _STATE[-1].process(prim, (t,), params)
    axes = _softmax_axes(op, axis, t.ndim)
    if t.ndim == 0:
        return reshape(prim.bind(reshape(t, (1,)), axis=(0,)), ())
    if type(axis) is int and len(_AXIS_PARAMS) < 1024:
        _AXIS_PARAMS[(axis, t.ndim)] = StaticParams(axis=axes)
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
