"""Reductions and cumulative ops: max/min (values and indices), mean, prod, logsumexp, norm,
std/var, all/any, cumsum/cumprod/cummax/cummin and sparse_segment_mean.

Gradient conventions (all vjps are written with ops, so they differentiate again):

* ``amax``/``amin``/``max``/``min``: the gradient is split evenly between tied extremes
  (each of ``k`` tied entries gets ``g / k``), matching ``maximum``/``minimum``.
* ``prod``: ``g * prod_{j != i} x_j`` from exclusive cumulative products (no division, so
  zeros are exact).
* ``logsumexp``: max-shifted forward; the backward is the softmax-weighted cotangent.
* ``cumsum``: reversed cumsum. ``cumprod``: a division-free recurrence, exact with zeros
  (first order only). ``cummax``/``cummin``: the cotangent goes to the index recorded for
  each position.
* ``norm``: ``g * sign(x) |x|^(p-1) / max(norm, epsilon)^(p-1)``; zero at ``x = 0``
  (a subgradient), and zero for ``p = 0``.
* ``argmax``/``argmin``/``all``/``any``: integer/bool outputs, no gradient.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtype as _dt
from .._primitive import _STATE, Primitive, ShapedArray
from ..errors import check_axis, check_int, op_error
from ..errors import check_bool as _check_bool
from ..tensor import Parameter, Tensor
from ._batch_rules import axis_rule
from ._compare import equal, greater, less, maximum, select
from ._core import (
    as_tensor,
    broadcast_to,
    cast,
    full,
    normalize_axes,
    reduce_params,
    reduce_sum,
    reduce_sum_p,
    reshape,
    transpose,
    zeros_like,
)
from ._elementwise import div_p, exp, log, pow, sqrt, square
from ._join import concat
from .complex_numbers import SUPPORTED as COMPLEX_OPS
from .complex_numbers import conjugate

__all__ = [
    "amax",
    "amin",
    "argmax",
    "argmin",
    "max",
    "min",
    "mean",
    "prod",
    "logsumexp",
    "norm",
    "std",
    "var",
    "all",
    "any",
    "cumsum",
    "cumprod",
    "cummax",
    "cummin",
    "sparse_segment_mean",
    "reduce_max",
    "reduce_min",
    "reduce_mean",
    "reduce_prod",
    "reduce_all",
    "reduce_any",
]

# ---- helpers ----------


def _tensor(op: str, arg: str, value: Any) -> Tensor:
    if not isinstance(value, Tensor):
        raise op_error(op, arg, value, "a Tensor", TypeError)
    return value


def _no_complex(op: str, arg: str, dtype: Any) -> None:
    raise TypeError(
        f"{op}: argument '{arg}' expected a real dtype, got {dtype} (complex numbers have no "
        f"order; the ops that take complex tensors: {COMPLEX_OPS})"
    )


def _numeric(op: str, arg: str, x: Tensor) -> None:
    if x.dtype.category == 0:
        raise TypeError(f"{op}: argument '{arg}' expected a numeric dtype, got {x.dtype}")


def _reduced_shape(shape: tuple[int, ...], axis: tuple[int, ...], keep: bool) -> tuple[int, ...]:
    return tuple((1 if i in axis else d) for i, d in enumerate(shape) if keep or i not in axis)


def _nonempty(op: str, x: ShapedArray, axis: tuple[int, ...]) -> None:
    for a in axis:
        if x.shape[a] == 0:
            raise ValueError(
                f"{op}: argument 'axis' reduces dimension {a} of size 0 in shape {x.shape}; "
                "this reduction has no identity"
            )


def _keep(t: Tensor, shape: tuple[int, ...], axis: tuple[int, ...], keep_dims: bool) -> Tensor:
    """A reduced tensor reshaped so that it broadcasts against the input ``shape``."""
    if keep_dims:
        return t
    return reshape(t, tuple(1 if i in axis else d for i, d in enumerate(shape)))


def _abs(x: Tensor) -> Tensor:
    return select(less(x, 0), -x, x)


def _sign(x: Tensor) -> Tensor:
    return cast(greater(x, 0), x.dtype) - cast(less(x, 0), x.dtype)


def _reduce_abstract(
    name: str,
    out_dtype: Any = None,
    numeric: bool = True,
    nonempty: bool = True,
    complex_ok: bool = False,
) -> Any:
    def abstract(x: ShapedArray, *, axis: tuple[int, ...], keep_dims: bool) -> ShapedArray:
        if numeric and x.dtype.category == 0:
            raise TypeError(f"{name}: argument 'x' expected a numeric dtype, got {x.dtype}")
        if x.dtype.category == 3 and not complex_ok:
            _no_complex(name, "x", x.dtype)
        if nonempty:
            _nonempty(name, x, axis)
        dt = out_dtype(x.dtype) if callable(out_dtype) else (out_dtype or x.dtype)
        return ShapedArray(_reduced_shape(x.shape, axis, keep_dims), dt)

    return abstract


# ---- amax / amin ----------


def _extreme_vjp(
    g: Tensor, x: Tensor, *, out: Tensor, axis: tuple[int, ...], keep_dims: bool
) -> Any:
    # Ties share the gradient evenly: each of the k tied entries receives g / k.
    best = broadcast_to(_keep(out, x.shape, axis, keep_dims), x.shape)
    mask = cast(equal(x, best), x.dtype)
    count = reduce_sum(mask, axis, keep_dims=True)
    return _keep(g, x.shape, axis, keep_dims) * mask / count


reduce_max_p = Primitive(
    "reduce_max",
    "reduce",
    _reduce_abstract("amax"),
    impl=lambda xp, x, *, axis, keep_dims: xp.max(x, axis=axis, keepdims=keep_dims),
    vjp=_extreme_vjp,
    fresh=True,
    reduction="max",
)
reduce_min_p = Primitive(
    "reduce_min",
    "reduce",
    _reduce_abstract("amin"),
    impl=lambda xp, x, *, axis, keep_dims: xp.min(x, axis=axis, keepdims=keep_dims),
    vjp=_extreme_vjp,
    fresh=True,
    reduction="min",
)


def _reduce(prim: Primitive, op: str, x: Any, axis: Any, keep_dims: Any, arg: str = "x") -> Tensor:
    t = _tensor(op, arg, x)
    keep = _check_bool(op, "keep_dims", keep_dims)
    axes = normalize_axes(op, axis, t.ndim)
    return prim.bind(t, axis=axes, keep_dims=keep)


def amax(x: Tensor, axis: Any = (), keep_dims: bool = False) -> Tensor:
    """Maximum over ``axis`` (all axes when empty); tied maxima share the gradient evenly.

    >>> amax(Tensor([[1.0, 5.0], [3.0, 2.0]]), 1).tolist()
    [5.0, 3.0]
    """
    return _reduce(reduce_max_p, "amax", x, axis, keep_dims)


def amin(x: Tensor, axis: Any = (), keep_dims: bool = False) -> Tensor:
    """Minimum over ``axis`` (all axes when empty); tied minima share the gradient evenly.

    >>> amin(Tensor([[1.0, 5.0], [3.0, 2.0]]), 0).tolist()
    [1.0, 2.0]
    """
    return _reduce(reduce_min_p, "amin", x, axis, keep_dims)


# ---- argmax / argmin and the (index, value) forms ------------------------------------------------


def _arg_abstract(name: str) -> Any:
    def abstract(x: ShapedArray, *, axis: int | None, keepdims: bool) -> ShapedArray:
        if x.dtype.category == 0:
            raise TypeError(f"{name}: argument 'x' expected a numeric dtype, got {x.dtype}")
        if x.dtype.category == 3:
            _no_complex(name, "x", x.dtype)
        axes = tuple(range(x.ndim)) if axis is None else (axis,)
        _nonempty(name, x, axes)
        return ShapedArray(_reduced_shape(x.shape, axes, keepdims), _dt.int32)

    return abstract


def _arg_impl(fn: str) -> Any:
    def impl(xp: Any, x: Any, *, axis: int | None, keepdims: bool) -> Any:
        out = getattr(xp, fn)(x, axis=axis)
        if keepdims:
            shape = (1,) * x.ndim if axis is None else x.shape[:axis] + (1,) + x.shape[axis + 1 :]
            out = out.reshape(shape)
        return out.astype(np.int32)

    return impl


argmax_p = Primitive("argmax", "reduce", _arg_abstract("argmax"), impl=_arg_impl("argmax"))
argmin_p = Primitive("argmin", "reduce", _arg_abstract("argmin"), impl=_arg_impl("argmin"))


def _arg(prim: Primitive, op: str, x: Any, axis: Any, keepdims: Any) -> Tensor:
    t = _tensor(op, "x", x)
    keep = _check_bool(op, "keepdims", keepdims)
    ax = None if axis is None else check_axis(op, axis, t.ndim)
    if t.ndim == 0:
        ax = None
    return prim.bind(t, axis=ax, keepdims=keep)


def argmax(x: Tensor, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """Index (int32) of the first maximum along ``axis`` (of the flattened input if None).

    >>> argmax(Tensor([[1.0, 5.0], [3.0, 2.0]]), 1).tolist()
    [1, 0]
    """
    return _arg(argmax_p, "argmax", x, axis, keepdims)


def argmin(x: Tensor, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """Index (int32) of the first minimum along ``axis`` (of the flattened input if None).

    >>> argmin(Tensor([[1.0, 5.0], [3.0, 2.0]]), 1).tolist()
    [0, 1]
    """
    return _arg(argmin_p, "argmin", x, axis, keepdims)


def _with_value(op: str, x: Any, axis: Any, keep_dims: Any, arg: Primitive, red: Primitive) -> Any:
    t = _tensor(op, "x", x)
    keep = _check_bool(op, "keep_dims", keep_dims)
    ax = check_axis(op, axis, t.ndim)
    if t.ndim == 0:
        return Tensor(np.int32(0), device=t._device), t
    index = arg.bind(t, axis=ax, keepdims=keep)
    values = red.bind(t, axis=(ax,), keep_dims=keep)
    return index, values


def max(x: Tensor, axis: int = 0, keep_dims: bool = False) -> tuple[Tensor, Tensor]:  # noqa: A001
    """``(index, values)`` of the maximum along ``axis``, in MindSpore 1.8's order.

    The index (int32) is the first maximum's; the values' gradient is split evenly between
    tied maxima (as in :func:`amax`).

    >>> index, values = max(Tensor([0.0, 0.4, 0.6, 0.7, 0.1]))
    >>> index.item(), round(values.item(), 4)
    (3, 0.7)
    """
    return _with_value("max", x, axis, keep_dims, argmax_p, reduce_max_p)


def min(x: Tensor, axis: int = 0, keep_dims: bool = False) -> tuple[Tensor, Tensor]:  # noqa: A001
    """``(index, values)`` of the minimum along ``axis``, in MindSpore 1.8's order.

    >>> index, values = min(Tensor([0.3, 0.1, 0.6]))
    >>> index.item(), round(values.item(), 4)
    (1, 0.1)
    """
    return _with_value("min", x, axis, keep_dims, argmin_p, reduce_min_p)


# ---- mean / prod ----------


#: (device, dtype, n) -> 0-d Tensor n of that dtype, the divisor of mean's fast path (never
#: written to: it is an input of the division only, and needs no gradient)
_COUNTS: dict[Any, Tensor] = {}


def _count(device: Any, dtype: Any, n: int) -> Tensor:
    key = (device, dtype, n)
    t = _COUNTS.get(key)
    if t is None:
        t = Tensor._wrap(device.xp.asarray(float(n), dtype), device)
        if len(_COUNTS) < 1024:
            _COUNTS[key] = t
    return t


def mean(x: Tensor, axis: Any = (), keep_dims: bool = False) -> Tensor:
    """Arithmetic mean over ``axis`` (all axes when empty); integers average as float32.

    >>> mean(Tensor([[1.0, 2.0], [3.0, 5.0]]), 1).tolist()
    [1.5, 4.0]
    """
    if ((tx := type(x)) is Tensor or tx is Parameter) and type(keep_dims) is bool:
        d = x._data  # float32/float64, the common case (hot path: the sum and the division,
        if d.dtype.kind == "f" and d.dtype.itemsize >= 4:  # without the general checks)
            axes = normalize_axes("mean", axis, d.ndim)
            n = 1
            for a in axes:
                n *= d.shape[a]
            if n:  # sum / n, with n a weak scalar of x's dtype, as div(sum, float(n)) makes it
                state = _STATE[-1]  # (straight to the interpreter: no bind packing)
                total = state.process(reduce_sum_p, (x,), reduce_params(axes, keep_dims))
                return state.process(div_p, (total, _count(x._device, d.dtype, n)), {})
    t = _tensor("mean", "x", x)
    keep = _check_bool("mean", "keep_dims", keep_dims)
    axes = normalize_axes("mean", axis, t.ndim)
    _numeric("mean", "x", t)
    low = t.dtype.category == 2 and t.dtype.bits < 32
    if t.dtype.category < 2 or low:
        # half floats accumulate in float32 (as NumPy and PyTorch do): a float16 sum of
        # 4 x 60000 overflows to inf although the mean is representable
        t = cast(t, _dt.float32)
    n = 1
    for a in axes:
        n *= t.shape[a]
    out = reduce_sum(t, axes, keep) / float(n) if n else reduce_sum(t, axes, keep) * float("nan")
    return cast(out, x.dtype) if low else out


def _exclusive_cumprod(t: Tensor, reverse: bool) -> Tensor:
    """Products of the elements strictly before (after, if ``reverse``) along the last axis."""
    ones = full(t.shape[:-1] + (1,), 1, t.dtype, t._device)
    if reverse:
        shifted = concat((t[..., 1:], ones), -1)
        return cumprod(shifted[..., ::-1], -1)[..., ::-1]
    return cumprod(concat((ones, t[..., :-1]), -1), -1)


def _prod_vjp(g: Tensor, x: Tensor, *, out: Tensor, axis: tuple[int, ...], keep_dims: bool) -> Any:
    # d prod / d x_i = prod_{j != i} x_j = (exclusive cumprod from the left) * (from the
    # right), computed on the reduced axes flattened into one: exact when x has zeros.
    rest = tuple(i for i in range(x.ndim) if i not in axis)
    perm = rest + axis
    xt = transpose(x, perm)
    n = 1
    for a in axis:
        n *= x.shape[a]
    if n == 0:
        return zeros_like(x)
    lead = tuple(x.shape[i] for i in rest)
    flat = reshape(xt, lead + (n,))
    others = _exclusive_cumprod(flat, False) * _exclusive_cumprod(flat, True)
    gk = reshape(g, lead + (1,))
    grad = reshape(conjugate(others) * gk, xt.shape)
    inv = tuple(int(i) for i in np.argsort(perm))
    return transpose(grad, inv)


def _prod_impl(xp: Any, x: Any, *, axis: tuple[int, ...], keep_dims: bool) -> Any:
    dtype = None if x.dtype.kind in "fc" else np.int64
    return xp.prod(x, axis=axis, keepdims=keep_dims, dtype=dtype)


reduce_prod_p = Primitive(
    "reduce_prod",
    "reduce",
    _reduce_abstract(
        "prod", lambda d: d if d.category >= 2 else _dt.int64, nonempty=False, complex_ok=True
    ),
    impl=_prod_impl,
    vjp=_prod_vjp,
)


def prod(x: Tensor, axis: Any = (), keep_dims: bool = False) -> Tensor:
    """Product over ``axis`` (all axes when empty); integers multiply as int64.

    The gradient ``prod_{j != i} x_j`` is computed without division, so zeros are exact.

    >>> prod(Tensor([[1.0, 2.0], [3.0, 4.0]]), 1).tolist()
    [2.0, 12.0]
    """
    return _reduce(reduce_prod_p, "prod", x, axis, keep_dims)


# ---- logsumexp ----------


def logsumexp(x: Tensor, axis: Any, keep_dims: bool = False) -> Tensor:
    """``log(sum(exp(x)))`` over ``axis``, computed as ``m + log(sum(exp(x - m)))`` with
    ``m`` the (gradient-free) maximum, so large inputs do not overflow.

    The gradient is ``g * softmax(x)`` along the reduced axes (from the composition).

    >>> round(logsumexp(Tensor([1000.0, 1000.0]), 0).item(), 2)
    1000.69
    """
    t = _tensor("logsumexp", "x", x)
    keep = _check_bool("logsumexp", "keep_dims", keep_dims)
    axes = normalize_axes("logsumexp", axis, t.ndim)
    _numeric("logsumexp", "x", t)
    if t.dtype.category == 3:
        _no_complex("logsumexp", "x", t.dtype)
    if t.dtype.category != 2:
        t = cast(t, _dt.float32)
    _nonempty("logsumexp", ShapedArray(t.shape, t.dtype), axes)
    m = reduce_max_p.bind(t.detach(), axis=axes, keep_dims=True)
    # an all -inf (or +inf) slice would give inf - inf = nan: shift by 0 there instead
    m = select(equal(m, float("inf")), zeros_like(m), m)
    m = select(equal(m, float("-inf")), zeros_like(m), m)
    s = log(reduce_sum(exp(t - m), axes, keep_dims=True)) + m
    return s if keep else reshape(s, _reduced_shape(t.shape, axes, False))


# ---- norm ----------


def _norm_abstract(
    x: ShapedArray, *, axis: tuple[int, ...], p: float, keep_dims: bool, epsilon: float
) -> ShapedArray:
    if x.dtype.category != 2:
        raise TypeError(f"norm: argument 'input_x' expected a floating dtype, got {x.dtype}")
    return ShapedArray(_reduced_shape(x.shape, axis, keep_dims), x.dtype)


def _norm_impl(
    xp: Any, x: Any, *, axis: tuple[int, ...], p: float, keep_dims: bool, epsilon: float
) -> Any:
    a = xp.abs(x.astype(np.float32) if x.dtype == np.float16 else x)
    if p == 0:
        return xp.sum(a != 0, axis=axis, keepdims=keep_dims).astype(a.dtype)
    if p == 1:
        return xp.sum(a, axis=axis, keepdims=keep_dims)
    if p == 2:
        return xp.sqrt(xp.sum(a * a, axis=axis, keepdims=keep_dims))
    return xp.sum(a**p, axis=axis, keepdims=keep_dims) ** (1.0 / p)


def _norm_vjp(
    g: Tensor,
    x: Tensor,
    *,
    out: Tensor,
    axis: tuple[int, ...],
    p: float,
    keep_dims: bool,
    epsilon: float,
) -> Any:
    if p == 0:  # piecewise constant: zero gradient everywhere
        return zeros_like(x)
    gk = _keep(g, x.shape, axis, keep_dims)
    if p == 1:
        return gk * _sign(x)
    # max(norm, epsilon) keeps x = 0 finite: the gradient there is 0 (a subgradient)
    ok = maximum(_keep(out, x.shape, axis, keep_dims), epsilon)
    if p == 2:
        return gk * x / ok
    return gk * _sign(x) * pow(_abs(x), p - 1) / pow(ok, p - 1)


lp_norm_p = Primitive("lp_norm", "reduce", _norm_abstract, impl=_norm_impl, vjp=_norm_vjp)


def _lp_norm(op: str, x: Tensor, axes: tuple[int, ...], p: float, keep: bool, eps: float) -> Tensor:
    if p == float("inf"):
        return reduce_max_p.bind(_abs(x), axis=axes, keep_dims=keep)
    return lp_norm_p.bind(x, axis=axes, p=float(p), keep_dims=keep, epsilon=float(eps))


def norm(
    input_x: Tensor, axis: Any, p: int = 2, keep_dims: bool = False, epsilon: float = 1e-12
) -> Tensor:
    """The vector p-norm ``(sum |x|^p)^(1/p)`` over ``axis`` (one axis or several taken
    together; p = 0 counts non-zeros). ``epsilon`` bounds the norm from below in the
    gradient, which is therefore 0 (a subgradient) at ``x = 0``.

    >>> norm(Tensor([[3.0, 4.0], [6.0, 8.0]]), 1).tolist()
    [5.0, 10.0]
    """
    t = _tensor("norm", "input_x", input_x)
    if isinstance(axis, (tuple, list)) and len(axis) == 0:
        raise op_error("norm", "axis", axis, "an int or a non-empty tuple/list of ints")
    axes = normalize_axes("norm", axis, t.ndim)
    pp = check_int("norm", "p", p, minimum=0)
    keep = _check_bool("norm", "keep_dims", keep_dims)
    if not isinstance(epsilon, (float, int)) or isinstance(epsilon, bool):
        raise op_error("norm", "epsilon", epsilon, "a float", TypeError)
    return _lp_norm("norm", t, axes, pp, keep, float(epsilon))


# ---- std / var ----------


def _moments(op: str, x: Any, axis: Any, ddof: int, keep: bool, arg: str) -> tuple[Tensor, Tensor]:
    t = _tensor(op, arg, x)
    _numeric(op, arg, t)
    if t.dtype.category == 3:
        _no_complex(op, arg, t.dtype)
    if t.dtype.category != 2:
        t = cast(t, _dt.float32)
    axes = normalize_axes(op, axis, t.ndim)
    n = 1
    for a in axes:
        n *= t.shape[a]
    if n - ddof <= 0:
        raise ValueError(
            f"{op}: {n} elements per reduction leave no degrees of freedom with ddof={ddof}"
        )
    mu = reduce_sum(t, axes, keep_dims=True) / float(n)
    v = reduce_sum(square(t - mu), axes, keep) / float(n - ddof)
    return v, mu if keep else reshape(mu, _reduced_shape(t.shape, axes, False))


def std(
    input_x: Tensor, axis: Any = (), unbiased: bool = True, keep_dims: bool = False
) -> tuple[Tensor, Tensor]:
    """``(std, mean)`` over ``axis``, as MindSpore's ``ops.std`` returns them; ``unbiased``
    applies Bessel's correction (divides by ``N - 1``).

    >>> s, m = std(Tensor([[1.0, 2.0, 3.0], [-1.0, 1.0, 4.0]]), 1)
    >>> [round(v, 4) for v in s.tolist()], [round(v, 4) for v in m.tolist()]
    ([1.0, 2.5166], [2.0, 1.3333])
    """
    ub = _check_bool("std", "unbiased", unbiased)
    keep = _check_bool("std", "keep_dims", keep_dims)
    v, mu = _moments("std", input_x, axis, int(ub), keep, "input_x")
    return sqrt(v), mu


def var(x: Tensor, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> Tensor:
    """Variance ``sum((x - mean)^2) / (N - ddof)`` over ``axis`` (all axes when None), as
    MindSpore 1.8's ``Tensor.var``; ``ddof`` may also be a bool (True = 1).

    >>> var(Tensor([1.0, 2.0, 3.0, 4.0])).item()
    1.25
    """
    if isinstance(ddof, (bool, np.bool_)):
        ddof = int(ddof)
    d = check_int("var", "ddof", ddof, minimum=0)
    keep = _check_bool("var", "keepdims", keepdims)
    return _moments("var", x, axis, d, keep, "x")[0]


# ---- all / any ----------

reduce_all_p = Primitive(
    "reduce_all",
    "reduce",
    _reduce_abstract("all", _dt.bool_, numeric=False, nonempty=False),
    impl=lambda xp, x, *, axis, keep_dims: xp.all(x, axis=axis, keepdims=keep_dims),
)
reduce_any_p = Primitive(
    "reduce_any",
    "reduce",
    _reduce_abstract("any", _dt.bool_, numeric=False, nonempty=False),
    impl=lambda xp, x, *, axis, keep_dims: xp.any(x, axis=axis, keepdims=keep_dims),
)


def all(x: Tensor, axis: Any = (), keep_dims: bool = False) -> Tensor:  # noqa: A001
    """Logical AND over ``axis`` (non-zero is True); a bool tensor.

    >>> all(Tensor([[True, False], [True, True]]), 1).tolist()
    [False, True]
    """
    return _reduce(reduce_all_p, "all", x, axis, keep_dims)


def any(x: Tensor, axis: Any = (), keep_dims: bool = False) -> Tensor:  # noqa: A001
    """Logical OR over ``axis`` (non-zero is True); a bool tensor.

    >>> any(Tensor([[True, False], [False, False]]), 1).tolist()
    [True, False]
    """
    return _reduce(reduce_any_p, "any", x, axis, keep_dims)


# ---- cumulative ops ----------


def _cum_abstract(name: str, int64: bool = True) -> Any:
    def abstract(x: ShapedArray, *, axis: int, **params: Any) -> ShapedArray:
        dt = x.dtype if x.dtype.category >= 2 or not int64 else _dt.int64
        return ShapedArray(x.shape, dt)

    return abstract


def _xp_cumsum(xp: Any, x: Any, *, axis: int, reverse: bool) -> Any:
    dtype = None if x.dtype.kind in "fc" else np.int64
    if reverse:
        return xp.flip(xp.cumsum(xp.flip(x, axis), axis=axis, dtype=dtype), axis)
    return xp.cumsum(x, axis=axis, dtype=dtype)


def _cpu_cumsum(xp: Any, x: Any, *, axis: int, reverse: bool) -> Any:
    from ..kernels.cpu import cumulative

    return cumulative.cumsum(x, axis, reverse)


cumsum_p: Primitive = Primitive(
    "cumsum",
    "opaque",
    _cum_abstract("cumsum"),
    impl=_xp_cumsum,
    cpu=_cpu_cumsum,
    vjp=lambda g, x, *, out, axis, reverse: cumsum_p.bind(g, axis=axis, reverse=not reverse),
    batch_rule=axis_rule,
)


def _xp_cumprod(xp: Any, x: Any, *, axis: int) -> Any:
    return xp.cumprod(x, axis=axis, dtype=None if x.dtype.kind in "fc" else np.int64)


def _cpu_cumprod(xp: Any, x: Any, *, axis: int) -> Any:
    from ..kernels.cpu import cumulative

    return cumulative.cumprod(x, axis)


def _xp_cumprod_grad(xp: Any, g: Any, x: Any, *, axis: int) -> Any:
    # the recurrence of kernels.cpu.cumulative._cumprod_grad_kernel, vectorized over the
    # other axes (a loop over the cumulative axis only)
    gm = xp.moveaxis(g, axis, 0)
    xm = xp.moveaxis(x, axis, 0)
    n = xm.shape[0]
    out = xp.empty_like(xm)
    acc = gm[n - 1].copy()
    out[n - 1] = acc
    for j in range(n - 2, -1, -1):
        acc = gm[j] + xm[j + 1] * acc
        out[j] = acc
    left = xp.ones_like(xm[0])
    for j in range(n):
        out[j] = out[j] * left
        left = left * xm[j]
    return xp.moveaxis(out, 0, axis)


def _cpu_cumprod_grad(xp: Any, g: Any, x: Any, *, axis: int) -> Any:
    from ..kernels.cpu import cumulative

    return cumulative.cumprod_grad(g, x, axis)


def _cumprod_grad_vjp(gg: Tensor, g: Tensor, x: Tensor, *, out: Tensor, axis: int) -> Any:
    raise RuntimeError(
        "cumprod: second-order gradients of cumprod are not supported (its first-order "
        "gradient is an exact, division-free recurrence without a derivative rule of its own)"
    )


cumprod_grad_p = Primitive(
    "cumprod_grad",
    "opaque",
    lambda g, x, *, axis: ShapedArray(x.shape, x.dtype),
    impl=_xp_cumprod_grad,
    cpu=_cpu_cumprod_grad,
    vjp=_cumprod_grad_vjp,
)
cumprod_p = Primitive(
    "cumprod",
    "opaque",
    _cum_abstract("cumprod"),
    impl=_xp_cumprod,
    cpu=_cpu_cumprod,
    # complex: conj(J^T conj(g)), the conjugate convention through the same recurrence
    vjp=lambda g, x, *, out, axis: conjugate(cumprod_grad_p.bind(conjugate(g), x, axis=axis)),
    batch_rule=axis_rule,
)


def _cumulative(op: str, x: Any, axis: Any, dtype: Any) -> tuple[Tensor, int, tuple[int, ...]]:
    t = as_tensor(x, op, "x")
    shape = t.shape
    if t.ndim == 0:
        t = reshape(t, (1,))
    ax = check_axis(op, axis, t.ndim)
    if dtype is not None:
        t = cast(t, _dt.to_dtype(dtype))
    return t, ax, shape


def cumsum(x: Tensor, axis: int, dtype: Any = None) -> Tensor:
    """Inclusive cumulative sum along ``axis`` (ints and bools sum as int64); its gradient
    is the reversed cumulative sum of the cotangent.

    >>> cumsum(Tensor([1.0, 2.0, 3.0]), 0).tolist()
    [1.0, 3.0, 6.0]
    """
    t, ax, shape = _cumulative("cumsum", x, axis, dtype)
    return reshape(cumsum_p.bind(t, axis=ax, reverse=False), shape)


def cumprod(x: Tensor, axis: int, dtype: Any = None) -> Tensor:
    """Inclusive cumulative product along ``axis`` (ints multiply as int64).

    The gradient is an exact division-free recurrence (correct with zeros in ``x``); it
    is first order only.

    >>> cumprod(Tensor([1.0, 2.0, 3.0]), 0).tolist()
    [1.0, 2.0, 6.0]
    """
    t, ax, shape = _cumulative("cumprod", x, axis, dtype)
    return reshape(cumprod_p.bind(t, axis=ax), shape)


def _cumextreme_abstract(x: ShapedArray, *, axis: int, want_max: bool) -> tuple[ShapedArray, ...]:
    if x.dtype.category in (0, 3):
        name = "cummax" if want_max else "cummin"
        if x.dtype.category == 3:
            _no_complex(name, "x", x.dtype)
        raise TypeError(f"{name}: argument 'x' expected a numeric dtype, got {x.dtype}")
    return ShapedArray(x.shape, x.dtype), ShapedArray(x.shape, _dt.int64)


def _xp_cumextreme(xp: Any, x: Any, *, axis: int, want_max: bool) -> tuple[Any, Any]:
    # same rule as the Numba kernel: ties move the index forward, the first NaN sticks
    xm = xp.moveaxis(x, axis, 0)
    n = xm.shape[0]
    vals = xp.empty_like(xm)
    idx = xp.empty(xm.shape, np.int64)
    best = xm[0].copy()
    bi = xp.zeros(best.shape, np.int64)
    for j in range(n):
        v = xm[j]
        better = (v >= best) if want_max else (v <= best)
        take = (better | xp.isnan(v)) & ~xp.isnan(best) if xm.dtype.kind == "f" else better
        best = xp.where(take, v, best)
        bi = xp.where(take, j, bi)
        vals[j] = best
        idx[j] = bi
    return xp.moveaxis(vals, 0, axis), xp.moveaxis(idx, 0, axis)


def _cpu_cumextreme(xp: Any, x: Any, *, axis: int, want_max: bool) -> tuple[Any, Any]:
    from ..kernels.cpu import cumulative

    return cumulative.cumextreme(x, axis, want_max)


def _scatter_axis_impl(xp: Any, g: Any, idx: Any, *, axis: int) -> Any:
    gm = xp.moveaxis(g, axis, -1)
    im = xp.moveaxis(idx, axis, -1)
    n = gm.shape[-1]
    g2 = gm.reshape(-1, n)
    i2 = im.reshape(-1, n)
    out = xp.zeros_like(g2)
    rows = xp.arange(g2.shape[0])[:, None]
    xp.add.at(out, (rows, i2), g2)
    return xp.moveaxis(out.reshape(gm.shape), -1, axis)


def _take_axis_impl(xp: Any, x: Any, idx: Any, *, axis: int) -> Any:
    return xp.take_along_axis(x, idx, axis=axis)


# scatter-add of a cotangent to the recorded indices along an axis, and its transpose
scatter_axis_p = Primitive(
    "scatter_along_axis",
    "opaque",
    lambda g, idx, *, axis: ShapedArray(g.shape, g.dtype),
    impl=_scatter_axis_impl,
    vjp=lambda gg, g, idx, *, out, axis: (take_axis_p.bind(gg, idx, axis=axis), None),
)
take_axis_p: Primitive = Primitive(
    "take_along_axis",
    "opaque",
    lambda x, idx, *, axis: ShapedArray(idx.shape, x.dtype),
    impl=_take_axis_impl,
    vjp=lambda g, x, idx, *, out, axis: (scatter_axis_p.bind(g, idx, axis=axis), None),
)


def _cumextreme_vjp(cts: Any, x: Tensor, *, out: Any, axis: int, want_max: bool) -> Any:
    return scatter_axis_p.bind(cts[0], out[1].detach(), axis=axis)


cumextreme_p = Primitive(
    "cumextreme",
    "opaque",
    _cumextreme_abstract,
    impl=_xp_cumextreme,
    cpu=_cpu_cumextreme,
    vjp=_cumextreme_vjp,
    multiple_results=True,
)


def _cumextreme(op: str, x: Any, axis: Any, want_max: bool) -> tuple[Tensor, Tensor]:
    t = _tensor(op, "x", x)
    shape = t.shape
    if t.ndim == 0:
        t = reshape(t, (1,))
    ax = check_axis(op, axis, t.ndim)
    if t.shape[ax] == 0:
        return t, zeros_like(t, _dt.int64)
    values, indices = cumextreme_p.bind(t, axis=ax, want_max=want_max)
    return reshape(values, shape), reshape(indices, shape)


def cummax(x: Tensor, axis: int) -> tuple[Tensor, Tensor]:
    """``(values, indices)``: the running maximum along ``axis`` and where (int64) it was
    taken; on ties the index moves to the latest position. The gradient goes to those
    indices.

    >>> v, i = cummax(Tensor([1.0, 3.0, 2.0, 3.0]), 0)
    >>> v.tolist(), i.tolist()
    ([1.0, 3.0, 3.0, 3.0], [0, 1, 1, 3])
    """
    return _cumextreme("cummax", x, axis, True)


def cummin(x: Tensor, axis: int) -> tuple[Tensor, Tensor]:
    """``(values, indices)``: the running minimum along ``axis`` and where (int64) it was
    taken; on ties the index moves to the latest position.

    >>> v, i = cummin(Tensor([3.0, 1.0, 2.0]), 0)
    >>> v.tolist(), i.tolist()
    ([3.0, 1.0, 1.0], [0, 1, 1])
    """
    return _cumextreme("cummin", x, axis, False)


# ---- sparse_segment_mean ----------


def sparse_segment_mean(x: Tensor, indices: Tensor, segment_ids: Tensor) -> Tensor:
    """``out[s] = mean(x[indices[j]] for j with segment_ids[j] == s)`` (0 for empty
    segments); ``segment_ids`` must be sorted, and ``out`` has ``segment_ids[-1] + 1`` rows.

    >>> x = Tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    >>> sparse_segment_mean(x, Tensor([0, 2, 1]), Tensor([0, 0, 1])).tolist()
    [[3.0, 4.0], [3.0, 4.0]]
    """
    from ._indexing import getitem, getitem_grad_p

    op = "sparse_segment_mean"
    t = _tensor(op, "x", x)
    idx = _tensor(op, "indices", indices)
    seg = _tensor(op, "segment_ids", segment_ids)
    if t.dtype.category != 2:
        raise op_error(op, "x", t, "a floating tensor", TypeError)
    if t.ndim < 1:
        raise op_error(op, "x", t, "a tensor of rank >= 1")
    for name, v in (("indices", idx), ("segment_ids", seg)):
        if v.dtype.category != 1:
            raise op_error(op, name, v, "an integer tensor", TypeError)
        if v.ndim != 1:
            raise op_error(op, name, v, "a 1-d tensor")
    if idx.shape != seg.shape:
        raise ValueError(
            f"{op}: 'indices' has shape {idx.shape} but 'segment_ids' has shape {seg.shape}; "
            "they must match"
        )
    ids = seg.asnumpy()
    rows = idx.asnumpy()
    if ids.size and (ids[0] < 0 or np.any(np.diff(ids) < 0)):
        raise op_error(op, "segment_ids", ids.tolist(), "sorted non-negative ids")
    if rows.size and (rows.min() < 0 or rows.max() >= t.shape[0]):
        raise op_error(op, "indices", rows.tolist(), f"row indices in [0, {t.shape[0]})")
    num = int(ids[-1]) + 1 if ids.size else 0
    idx64 = cast(idx, _dt.int64)
    seg64 = cast(seg, _dt.int64)
    template = (("t", 0),)
    picked = getitem(t, idx64)
    out_shape = (num,) + t.shape[1:]
    sums = getitem_grad_p.bind(picked, seg64, template=template, shape=out_shape)
    ones = full((ids.size,), 1, t.dtype, t._device)
    counts = getitem_grad_p.bind(ones, seg64, template=template, shape=(num,))
    counts = reshape(maximum(counts, 1), (num,) + (1,) * (t.ndim - 1))
    return sums / counts


# ---- functional names of the Reduce* primitives -------------------------------------------------


def reduce_max(x: Tensor, axis: Any = (), keep_dims: bool = False) -> Tensor:
    """Same as :func:`amax` (MindSpore's ``ReduceMax`` as a function)."""
    return _reduce(reduce_max_p, "reduce_max", x, axis, keep_dims)


def reduce_min(x: Tensor, axis: Any = (), keep_dims: bool = False) -> Tensor:
    """Same as :func:`amin` (MindSpore's ``ReduceMin`` as a function)."""
    return _reduce(reduce_min_p, "reduce_min", x, axis, keep_dims)


def reduce_mean(x: Tensor, axis: Any = (), keep_dims: bool = False) -> Tensor:
    """Same as :func:`mean` (MindSpore's ``ReduceMean`` as a function)."""
    return mean(x, axis, keep_dims)


def reduce_prod(x: Tensor, axis: Any = (), keep_dims: bool = False) -> Tensor:
    """Same as :func:`prod` (MindSpore's ``ReduceProd`` as a function)."""
    return _reduce(reduce_prod_p, "reduce_prod", x, axis, keep_dims)


def reduce_all(x: Tensor, axis: Any = (), keep_dims: bool = False) -> Tensor:
    """Same as :func:`all` (MindSpore's ``ReduceAll`` as a function)."""
    return _reduce(reduce_all_p, "reduce_all", x, axis, keep_dims)


def reduce_any(x: Tensor, axis: Any = (), keep_dims: bool = False) -> Tensor:
    """Same as :func:`any` (MindSpore's ``ReduceAny`` as a function)."""
    return _reduce(reduce_any_p, "reduce_any", x, axis, keep_dims)
