"""layer_norm, group_norm and batch_norm, with fused forward and backward primitives."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..._primitive import Decomposition, Primitive, ShapedArray
from ...errors import check_axis, op_error
from ...tensor import Tensor
from .._core import as_tensor, assign_inplace, cast, full, reduce_sum, reshape, zeros_like
from .._elementwise import _check_family, float_input, sqrt
from ..math import rsqrt
from ._common import _number, _up

# ---- layer norm --------------------------------------------------------------------------


def _vjp_of(composite: Any, cts: Any, inputs: tuple[Tensor, ...]) -> tuple[Any, ...]:
    """The vjp of a fused backward primitive: differentiate its op-composite reference."""
    from ...autograd.functional import vjp

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
    from ...kernels.cpu.norm import layer_norm_forward

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
    from ...kernels.cpu.norm import layer_norm_backward

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
    # rsqrt, not ``** -0.5``: a float pow is a scalar libm call per element (graph mode
    # fuses this; rsqrt's 1 / sqrt vectorises)
    rstd = rsqrt(var + epsilon)
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


def _ln_parts(
    x: Tensor,
    gamma: Tensor,
    beta: Tensor,
    *,
    begin_norm_axis: int,
    begin_params_axis: int,
    epsilon: float,
) -> tuple[Tensor, Tensor, Tensor]:
    """The layer norm written with ops. Statistics in float64, like the hand-written kernel:
    rows with a large common offset keep their variance (a float32 mean would be off by an
    ulp of the offset)."""
    from ... import dtype

    axes = tuple(range(begin_norm_axis, x.ndim))
    inv_n = 1.0 / math.prod(x.shape[begin_norm_axis:])
    x64 = cast(x, dtype.float64)
    mean = reduce_sum(x64, axes, keep_dims=True) * inv_n
    d = x64 - mean
    var = reduce_sum(d * d, axes, keep_dims=True) * inv_n
    y = cast(d * (1.0 / sqrt(var + epsilon)), x.dtype) * gamma + beta
    return y, cast(mean, x.dtype), cast(var, x.dtype)


def _norm_over_last(x_index: int) -> Any:
    """Expanded only over the last axis (parameters too): there the parts fuse into row
    kernels with their neighbours (the GELU before, the bias and scale gradients after)."""

    def when(inputs: Any, params: dict[str, Any]) -> bool:
        last = inputs[x_index].ndim - 1
        return params.get("begin_norm_axis") == last and params.get("begin_params_axis") == last

    return when


_LN_PARAMS = ("begin_norm_axis", "begin_params_axis", "epsilon")

layer_norm_grad_p = Primitive(
    "layer_norm_grad",
    "opaque",
    _ln_grad_abstract,
    impl=_ln_grad_any,
    cpu=_ln_grad_cpu,
    vjp=_ln_grad_vjp,
    multiple_results=True,
    decomposition=Decomposition(_ln_grad_composite, _norm_over_last(3), _LN_PARAMS),
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
    decomposition=Decomposition(_ln_parts, _norm_over_last(0), _LN_PARAMS),
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
    from ...errors import check_int

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
    from ...kernels.cpu.norm import batch_norm_forward

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
    from ...kernels.cpu.norm import batch_norm_backward

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


def _bn_infer_abstract(
    x: ShapedArray, mean: ShapedArray, scale: ShapedArray, bias: ShapedArray
) -> ShapedArray:
    # internal: batch_norm checked the shapes and dtypes of what it binds
    for a in (mean, scale, bias):
        if a.shape != (x.shape[1],) or a.dtype != x.dtype:
            raise TypeError(f"batch_norm_infer: {a} does not match the channels of {x}")
    return ShapedArray(x.shape, x.dtype)


def _bn_infer_any(xp: Any, x: Any, mean: Any, scale: Any, bias: Any) -> Any:
    bs = _bn_bshape(x.ndim, x.shape[1])
    return (x - mean.reshape(bs)) * scale.reshape(bs) + bias.reshape(bs)


def _bn_infer_cpu(xp: Any, x: Any, mean: Any, scale: Any, bias: Any) -> Any:
    if x.dtype not in (np.float32, np.float64):
        return _bn_infer_any(xp, x, mean, scale, bias)
    from ...kernels.cpu.norm import batch_norm_infer

    view = _bn_view(x.shape)
    y = batch_norm_infer(np.ascontiguousarray(x).reshape(view), mean, scale, bias)
    return y.reshape(x.shape)


def _bn_infer_vjp(
    g: Tensor, x: Tensor, mean: Tensor, scale: Tensor, bias: Tensor, *, out: Any
) -> tuple[Any, ...]:
    axes = (0,) + tuple(range(2, x.ndim))
    bs = _bn_bshape(x.ndim, x.shape[1])
    zero = zeros_like(scale)
    return (
        lambda: batch_norm_infer_p.bind(g, zero, scale, zero),  # g * scale, one pass
        lambda: -scale * reduce_sum(g, axes),
        lambda: reduce_sum(g * (x - reshape(mean, bs)), axes),
        lambda: reduce_sum(g, axes),
    )


#: eval-mode batch norm with given statistics, ``(x - mean) * scale + bias`` per channel
#: (axis 1), as one primitive: one Numba pass on the CPU (it was three NumPy ops, a fresh
#: array each: ~1/3 of a float ResNet-20 inference). Its gradient for ``x`` is the same
#: kernel on ``g``; those of the statistics and parameters are op sums, built only when asked.
batch_norm_infer_p = Primitive(
    "batch_norm_infer",
    "opaque",
    _bn_infer_abstract,
    impl=_bn_infer_any,
    cpu=_bn_infer_cpu,
    vjp=_bn_infer_vjp,
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
        return batch_norm_infer_p.bind(x, rm, w * (rv + e) ** -0.5, b)
    cnt = x.size // c
    if cnt < 2:
        raise op_error(op, "input_x", x, "more than one value per channel when training")
    y, mean, var = batch_norm_train_p.bind(x, w, b, eps=e)
    from ...autograd.functional import no_grad

    with no_grad():
        for stat, batch in ((running_mean, mean), (running_var, var * (cnt / (cnt - 1)))):
            if isinstance(stat, Tensor):
                assign_inplace(stat, stat * (1 - m) + cast(batch, stat.dtype) * m)
    return y
