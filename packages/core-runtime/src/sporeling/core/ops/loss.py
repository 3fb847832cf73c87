"""Loss functions (MindSpore's functional losses), mostly compositions of ops.

Class-index losses pick one log-probability per sample with a small primitive pair (pick
and its transpose, put), so ``cross_entropy`` is ``log_softmax`` (a Numba kernel on CPU)
plus a gather, and its gradient is one scatter plus the log-softmax vjp.
``softmax_cross_entropy_with_logits`` is one fused primitive (loss and ``softmax - labels``
in a single pass over each row). Every loss validates shapes, dtypes and ``reduction``
before computing anything.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._backend import is_host
from .._primitive import Primitive, ShapedArray
from ..errors import describe, op_error
from ..tensor import Tensor
from ._compare import maximum, select
from ._core import as_tensor, broadcast_shapes, broadcast_to, cast, reduce_sum, reshape
from ._elementwise import _check_family, float_input, log, neg
from .activation import log_softmax, logsigmoid, softmax

__all__ = [
    "cross_entropy",
    "nll_loss",
    "smooth_l1_loss",
    "binary_cross_entropy_with_logits",
    "binary_cross_entropy",
    "kl_div",
    "mse_loss",
    "l1_loss",
    "softmax_cross_entropy_with_logits",
    "sparse_softmax_cross_entropy_with_logits",
    "margin_ranking_loss",
    "hinge_embedding_loss",
]

_REDUCTIONS = ("none", "mean", "sum")


def _check_reduction(op: str, reduction: Any, allowed: tuple[str, ...] = _REDUCTIONS) -> str:
    if not isinstance(reduction, str):
        raise op_error(op, "reduction", reduction, "a str", TypeError)
    if reduction not in allowed:
        raise op_error(op, "reduction", reduction, " or ".join(repr(r) for r in allowed))
    return reduction


def _mean(t: Tensor) -> Tensor:
    total = reduce_sum(t)
    return total / t.size if t.size else total * float("nan")


def _reduce(t: Tensor, reduction: str) -> Tensor:
    if reduction == "sum":
        return reduce_sum(t)
    if reduction == "mean":
        return _mean(t)
    return t


def _float_tensor(op: str, arg: str, value: Any, like: Tensor | None = None) -> Tensor:
    t = as_tensor(value, op, arg, like)
    if t.dtype.category != 2:
        raise op_error(op, arg, t, "a floating tensor", TypeError)
    return t if like is None else cast(t, like.dtype)


def _same_shape(op: str, names: tuple[str, str], a: Tensor, b: Tensor) -> None:
    if a.shape != b.shape:
        raise ValueError(
            f"{op}: argument '{names[1]}' expected the shape of '{names[0]}' "
            f"{a.shape}, got {describe(b)}"
        )


def _broadcastable(op: str, a: Tensor, b: Tensor) -> None:
    broadcast_shapes(op, a.shape, b.shape)


def _number(op: str, arg: str, value: Any) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise op_error(op, arg, value, "a float", TypeError)
    return float(value)


# ---- pick / put along the class axis ---------------------------------------------------


def _pick_abstract(x: ShapedArray, idx: ShapedArray, *, axis: int, op: str) -> ShapedArray:
    _check_family(op, "inputs", x, "float")
    if idx.dtype.category != 1:
        raise TypeError(f"{op}: argument 'target' expected an integer tensor, got {idx.dtype}")
    want = x.shape[:axis] + x.shape[axis + 1 :]
    if idx.shape != want:
        raise ValueError(f"{op}: argument 'target' expected shape {want}, got {idx.shape}")
    return ShapedArray(want, x.dtype)


def _check_range(xp: Any, idx: Any, n: int, op: str) -> None:
    # Only where it costs no device sync; a CuPy gather clips instead of failing.
    if is_host(xp) and idx.size and (idx.min() < 0 or idx.max() >= n):
        bad = idx[(idx < 0) | (idx >= n)][0]
        raise ValueError(
            f"{op}: argument 'target' expected class indices in [0, {n}) "
            f"(or ignore_index), got {int(bad)}"
        )


def _pick_impl(xp: Any, x: Any, idx: Any, *, axis: int, op: str) -> Any:
    _check_range(xp, idx, x.shape[axis], op)
    taken = xp.take_along_axis(x, xp.expand_dims(idx.astype(np.int64), axis), axis)
    return xp.squeeze(taken, axis)


def _put_abstract(
    g: ShapedArray, idx: ShapedArray, *, axis: int, size: int, op: str
) -> ShapedArray:
    return ShapedArray(g.shape[:axis] + (size,) + g.shape[axis:], g.dtype)


def _put_any(xp: Any, g: Any, idx: Any, *, axis: int, size: int, op: str) -> Any:
    shape = [1] * (g.ndim + 1)
    shape[axis] = size
    hit = xp.arange(size).reshape(shape) == xp.expand_dims(idx, axis)
    return hit * xp.expand_dims(g, axis)


def _put_cpu(xp: Any, g: Any, idx: Any, *, axis: int, size: int, op: str) -> Any:
    out = np.zeros(g.shape[:axis] + (size,) + g.shape[axis:], g.dtype)
    np.put_along_axis(
        out, np.expand_dims(idx.astype(np.int64), axis), np.expand_dims(g, axis), axis
    )
    return out


pick_p = Primitive(
    "class_pick",
    "opaque",
    _pick_abstract,
    impl=_pick_impl,
    vjp=lambda g, x, idx, *, out, axis, op: (
        lambda: put_p.bind(g, idx, axis=axis, size=x.shape[axis], op=op),
        None,
    ),
)
put_p: Primitive = Primitive(
    "class_put",
    "opaque",
    _put_abstract,
    impl=_put_any,
    cpu=_put_cpu,
    vjp=lambda g, v, idx, *, out, axis, size, op: (
        lambda: pick_p.bind(g, idx, axis=axis, op=op),
        None,
    ),
)


# ---- NLL / cross entropy -----------------------------------------------------------------


def _class_axis(x: Tensor) -> int:
    return 0 if x.ndim == 1 else 1


def _index_target(op: str, x: Tensor, target: Tensor, axis: int) -> None:
    want = x.shape[:axis] + x.shape[axis + 1 :]
    if target.shape != want:
        raise ValueError(
            f"{op}: argument 'target' expected class indices of shape {want} "
            f"for inputs of shape {x.shape}, got {describe(target)}"
        )


def _class_weight(op: str, weight: Any, x: Tensor, axis: int) -> Tensor | None:
    if weight is None:
        return None
    w = _float_tensor(op, "weight", weight, x)
    c = x.shape[axis]
    if w.shape != (c,):
        raise op_error(op, "weight", w, f"shape ({c},) (one weight per class)")
    return reshape(w, (c,) + (1,) * (x.ndim - axis - 1))


def _smoothing(op: str, value: Any) -> float:
    ls = _number(op, "label_smoothing", value)
    if not 0 <= ls <= 1:
        raise op_error(op, "label_smoothing", value, "a float in [0.0, 1.0]")
    return ls


def _nll(
    op: str,
    logp: Tensor,
    target: Tensor,
    weight: Tensor | None,
    ignore_index: int | None,
    reduction: str,
    label_smoothing: float,
) -> Tensor:
    axis = _class_axis(logp)
    if ignore_index is None:
        safe, valid = target, None
    else:
        keep = target != ignore_index
        safe = select(keep, target, 0)
        valid = cast(keep, logp.dtype)
    weighted = logp if weight is None else logp * weight
    loss = neg(pick_p.bind(weighted, safe, axis=axis, op=op))
    smooth = neg(reduce_sum(weighted, axis)) if label_smoothing else None
    if weight is not None:
        w_t = pick_p.bind(broadcast_to(weight, logp.shape), safe, axis=axis, op=op)
    else:
        w_t = None
    if valid is not None:
        loss = loss * valid
        smooth = smooth * valid if smooth is not None else None
        w_t = valid if w_t is None else w_t * valid
    if reduction == "none":
        pass
    elif reduction == "sum":
        loss = reduce_sum(loss)
        smooth = reduce_sum(smooth) if smooth is not None else None
    else:
        denom = reduce_sum(w_t) if w_t is not None else float(loss.size)
        loss = reduce_sum(loss) / denom
        if smooth is not None:
            # cross_entropy: PyTorch's definition, both terms divided by the summed weights
            # of the used targets; nll_loss: MindSpore's, the smooth term's plain mean
            smooth = reduce_sum(smooth) / denom if op == "cross_entropy" else _mean(smooth)
    if smooth is None:
        return loss
    return loss * (1 - label_smoothing) + smooth * (label_smoothing / logp.shape[axis])


def _prepare_nll(
    op: str,
    inputs: Any,
    target: Any,
    weight: Any,
    ignore_index: Any,
    reduction: Any,
    label_smoothing: Any,
) -> tuple[Any, ...]:
    x = float_input(op, inputs, "inputs")
    if x.ndim == 0:
        raise op_error(op, "inputs", x, "a tensor of shape (C,), (N, C) or (N, C, d1, ...)")
    t = as_tensor(target, op, "target", x)
    axis = _class_axis(x)
    red = _check_reduction(op, reduction)
    ls = _smoothing(op, label_smoothing)
    if ignore_index is not None and (
        isinstance(ignore_index, (bool, np.bool_))
        or not isinstance(ignore_index, (int, np.integer))
    ):
        raise op_error(op, "ignore_index", ignore_index, "an int", TypeError)
    return x, t, axis, _class_weight(op, weight, x, axis), red, ls


def nll_loss(
    inputs: Any,
    target: Any,
    weight: Any = None,
    ignore_index: int | None = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Negative log-likelihood of class indices ``target`` under log-probabilities ``inputs``
    (class axis 1, or 0 for 1-d inputs): ``l_n = -w[t_n] x[n, t_n]``, 0 where ``t_n`` is
    ``ignore_index``; 'mean' divides by the sum of the used weights."""
    x, t, axis, w, red, ls = _prepare_nll(
        "nll_loss", inputs, target, weight, ignore_index, reduction, label_smoothing
    )
    if t.dtype.category != 1:
        raise op_error("nll_loss", "target", t, "an integer tensor of class indices", TypeError)
    _index_target("nll_loss", x, t, axis)
    return _nll("nll_loss", x, t, w, ignore_index, red, ls)


def cross_entropy(
    inputs: Any,
    target: Any,
    weight: Any = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Cross entropy between logits ``inputs`` (class axis 1, or 0 for 1-d) and ``target``:
    class indices (an integer tensor, as :func:`nll_loss` of ``log_softmax``) or class
    probabilities (a float tensor of the inputs' shape; 'mean' divides by the sample count).

    >>> round(float(cross_entropy(Tensor([[0.0, 0.0]]), Tensor([1]))), 4)
    0.6931
    """
    op = "cross_entropy"
    x, t, axis, w, red, ls = _prepare_nll(
        op, inputs, target, weight, ignore_index, reduction, label_smoothing
    )
    logp = log_softmax(x, axis)
    if t.dtype.category == 1:
        _index_target(op, x, t, axis)
        return _nll(op, logp, t, w, ignore_index, red, ls)
    if t.dtype.category != 2:
        raise op_error(
            op, "target", t, "class indices (integer) or probabilities (float)", TypeError
        )
    if t.shape != x.shape:
        raise ValueError(
            f"{op}: argument 'target' holds probabilities, so it needs the shape "
            f"of 'inputs' {x.shape}; got {describe(t)}"
        )
    t = cast(t, x.dtype)
    c = x.shape[axis]
    if ls > 0:
        t = t * (1 - ls) + ls / c
    prod = logp * t if w is None else logp * t * w
    if red == "none":
        return neg(reduce_sum(prod, axis))
    total = neg(reduce_sum(prod))
    return total if red == "sum" else total / (x.size / c)


# ---- fused softmax cross entropy (dense labels) -----------------------------------------


def _xent_abstract(x: ShapedArray, lab: ShapedArray) -> tuple[ShapedArray, ShapedArray]:
    _check_family("softmax_cross_entropy_with_logits", "logits", x, "float")
    return ShapedArray(x.shape[:-1], x.dtype), ShapedArray(x.shape, x.dtype)


def _xent_any(xp: Any, x: Any, lab: Any) -> tuple[Any, Any]:
    xf = x if x.dtype in (np.float32, np.float64) else x.astype(np.float32)
    shifted = xf - xp.max(xf, axis=-1, keepdims=True)
    lsm = shifted - xp.log(xp.sum(xp.exp(shifted), axis=-1, keepdims=True))
    labf = lab.astype(xf.dtype)
    loss = -xp.sum(xp.where(labf != 0, labf * lsm, 0), axis=-1)
    return loss, xp.exp(lsm) - labf


def _xent_cpu(xp: Any, x: Any, lab: Any) -> tuple[Any, Any]:
    from ..kernels.cpu.softmax import softmax_xent_lastaxis

    xf = x if x.dtype in (np.float32, np.float64) else x.astype(np.float32)
    return softmax_xent_lastaxis(xf, lab)


def _xent_vjp(cts: Any, x: Tensor, lab: Tensor, *, out: Any) -> tuple[Any, Any]:
    gl, gb = cts
    p = out[1] + lab  # softmax(x), linked to this node so second derivatives flow
    glc = reshape(gl, gl.shape + (1,))

    def dx() -> Tensor:
        s = reduce_sum(lab, -1, keep_dims=True)
        return glc * (s * p - lab) + p * (gb - reduce_sum(gb * p, -1, keep_dims=True))

    def dlab() -> Tensor:
        return neg(glc * log_softmax(x, -1)) - gb

    return dx, dlab


softmax_xent_p = Primitive(
    "softmax_cross_entropy_with_logits",
    "opaque",
    _xent_abstract,
    impl=_xent_any,
    cpu=_xent_cpu,
    vjp=_xent_vjp,
    multiple_results=True,
)


def softmax_cross_entropy_with_logits(logits: Any, labels: Any) -> tuple[Tensor, Tensor]:
    """Per-sample ``-sum(labels * log_softmax(logits))`` over the last axis, and
    ``softmax(logits) - labels`` (MindSpore's ``SoftmaxCrossEntropyWithLogits`` outputs)."""
    op = "softmax_cross_entropy_with_logits"
    x = float_input(op, logits, "logits")
    if x.ndim == 0:
        raise op_error(op, "logits", x, "a tensor of shape (N, C)")
    lab = _float_tensor(op, "labels", labels, x)
    _same_shape(op, ("logits", "labels"), x, lab)
    return softmax_xent_p.bind(x, lab)


# ---- fused mean cross entropy (class indices) --------------------------------------------


def _sxent_abstract(x: ShapedArray, idx: ShapedArray) -> ShapedArray:
    return ShapedArray((), _pick_abstract(x, idx, axis=1, op=_SXENT).dtype)


def _sxent_impl(xp: Any, x: Any, idx: Any) -> Any:
    """The mean over rows of ``logsumexp(x[i]) - x[i, idx[i]]`` (the batch mean of
    ``-log_softmax(x)[i, idx[i]]``), with no (N, C) log-probabilities kept."""
    _check_range(xp, idx, x.shape[1], _SXENT)
    xf = x if x.dtype in (np.float32, np.float64) else x.astype(np.float32)
    m = xp.max(xf, axis=1, keepdims=True) if xf.size else xp.zeros((len(xf), 1), xf.dtype)
    lse = xp.log(xp.sum(xp.exp(xf - m), axis=1)) + m[:, 0]
    picked = xp.take_along_axis(xf, idx.astype(np.int64)[:, None], 1)[:, 0]
    n = xf.shape[0]
    return xp.sum(lse - picked) / n if n else xp.asarray(np.nan, xf.dtype)


def _sxent_grad_impl(xp: Any, x: Any, idx: Any) -> Any:
    """``(softmax(x) - one_hot(idx)) / N``: the mean loss's gradient for its logits."""
    xf = x if x.dtype in (np.float32, np.float64) else x.astype(np.float32)
    m = xp.max(xf, axis=1, keepdims=True) if xf.size else xp.zeros((len(xf), 1), xf.dtype)
    e = xp.exp(xf - m)
    inv_n = 1.0 / max(xf.shape[0], 1)
    e *= (inv_n / xp.sum(e, axis=1, keepdims=True)).astype(e.dtype)
    rows = xp.arange(xf.shape[0])
    e[rows, idx.astype(np.int64)] -= e.dtype.type(inv_n)
    return e


def _sxent_cpu(xp: Any, x: Any, idx: Any) -> Any:
    """:func:`_sxent_impl` as one fused row kernel (one read of the logits, threads)."""
    from ..kernels.cpu.softmax import sparse_xent_mean

    _check_range(xp, idx, x.shape[1], _SXENT)
    return sparse_xent_mean(x if x.dtype in (np.float32, np.float64) else x.astype(np.float32), idx)


def _sxent_grad_cpu(xp: Any, x: Any, idx: Any) -> Any:
    """:func:`_sxent_grad_impl` as one fused row kernel (exp, scale and the one-hot at once)."""
    from ..kernels.cpu.softmax import sparse_xent_grad

    _check_range(xp, idx, x.shape[1], _SXENT)
    return sparse_xent_grad(x if x.dtype in (np.float32, np.float64) else x.astype(np.float32), idx)


def _sxent_grad_vjp(g: Tensor, x: Tensor, idx: Tensor, *, out: Tensor) -> tuple[Any, Any]:
    # d/dx of softmax(x)/N applied to g: p * (g - sum(g * p)) / N, p = softmax(x)
    def dx() -> Tensor:
        p = softmax(x, 1)
        return p * (g - reduce_sum(g * p, 1, keep_dims=True)) * (1.0 / max(x.shape[0], 1))

    return dx, None


_SXENT = "sparse_softmax_cross_entropy_with_logits"
#: the gradient of :data:`sparse_xent_p`, one op (its own vjp, for second order, in ops)
sparse_xent_grad_p = Primitive(
    "sparse_softmax_cross_entropy_grad",
    "opaque",
    lambda x, idx: ShapedArray(x.shape, _pick_abstract(x, idx, axis=1, op=_SXENT).dtype),
    impl=_sxent_grad_impl,
    cpu=_sxent_grad_cpu,
    vjp=_sxent_grad_vjp,
)
#: the batch mean of the cross entropy of logits (N, C) and class indices (N,) as one op:
#: forward one pass of NumPy reductions, backward one op (a 128x10 MLP loss was 14
#: primitive calls, ~0.3 ms; PyTorch's ~0.03 ms)
sparse_xent_p = Primitive(
    "sparse_softmax_cross_entropy",
    "opaque",
    _sxent_abstract,
    impl=_sxent_impl,
    cpu=_sxent_cpu,
    vjp=lambda g, x, idx, *, out: (lambda: sparse_xent_grad_p.bind(x, idx) * g, None),
)


def sparse_softmax_cross_entropy_with_logits(
    logits: Any, labels: Any, is_grad: bool = False
) -> Tensor:
    """MindSpore's ``SparseSoftmaxCrossEntropyWithLogits``: the mean cross entropy of
    ``logits`` (N, C) and class indices ``labels`` (N,); with ``is_grad=True``, its gradient
    with respect to ``logits``, ``(softmax(logits) - one_hot(labels)) / N``."""
    op = "sparse_softmax_cross_entropy_with_logits"
    x = float_input(op, logits, "logits")
    if x.ndim != 2:
        raise op_error(op, "logits", x, "a tensor of shape (N, C)")
    t = as_tensor(labels, op, "labels", x)
    if t.dtype.category != 1:
        raise op_error(op, "labels", t, "an integer tensor of class indices", TypeError)
    if t.shape != x.shape[:1]:
        raise op_error(op, "labels", t, f"shape {x.shape[:1]}")
    if not isinstance(is_grad, (bool, np.bool_)):
        raise op_error(op, "is_grad", is_grad, "a bool", TypeError)
    if not is_grad:
        return sparse_xent_p.bind(x, t)
    return sparse_xent_grad_p.bind(x, t)


# ---- regression and binary losses --------------------------------------------------------


def _pair(op: str, a: Any, b: Any, names: tuple[str, str], same: bool) -> tuple[Tensor, Tensor]:
    x = float_input(op, a, names[0])
    y = _float_tensor(op, names[1], b, x)
    if same:
        _same_shape(op, names, x, y)
    else:
        _broadcastable(op, x, y)
    return x, y


def _abs(x: Tensor) -> Tensor:
    return select(x < 0, neg(x), x)


def smooth_l1_loss(logits: Any, labels: Any, beta: float = 1.0, reduction: str = "none") -> Tensor:
    """``0.5 d^2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta`` (``d = logits -
    labels``); ``beta > 0``."""
    op = "smooth_l1_loss"
    x, y = _pair(op, logits, labels, ("logits", "labels"), True)
    b = _number(op, "beta", beta)
    if not b > 0:
        raise op_error(op, "beta", beta, "a float > 0")
    red = _check_reduction(op, reduction)
    d = x - y
    ad = _abs(d)
    return _reduce(select(ad < b, d * d * (0.5 / b), ad - 0.5 * b), red)


def mse_loss(input: Any, target: Any, reduction: str = "mean") -> Tensor:  # noqa: A002
    """Squared error ``(input - target)^2`` (broadcasting), reduced."""
    x, y = _pair("mse_loss", input, target, ("input", "target"), False)
    red = _check_reduction("mse_loss", reduction)
    d = x - y
    return _reduce(d * d, red)


def l1_loss(input: Any, target: Any, reduction: str = "mean") -> Tensor:  # noqa: A002
    """Absolute error ``|input - target|`` (broadcasting), reduced."""
    x, y = _pair("l1_loss", input, target, ("input", "target"), False)
    red = _check_reduction("l1_loss", reduction)
    return _reduce(_abs(x - y), red)


def _optional_weight(op: str, arg: str, value: Any, x: Tensor) -> Tensor | None:
    if value is None:
        return None
    w = _float_tensor(op, arg, value, x)
    if broadcast_shapes(op, x.shape, w.shape) != x.shape:
        raise op_error(op, arg, w, f"a shape that broadcasts to {x.shape}")
    return w


def binary_cross_entropy_with_logits(
    logits: Any, label: Any, weight: Any = None, pos_weight: Any = None, reduction: str = "mean"
) -> Tensor:
    """Binary cross entropy of ``sigmoid(logits)`` and ``label``, computed stably as
    ``(1 - y) x - (1 + (pos_weight - 1) y) log_sigmoid(x)``, times ``weight``."""
    op = "binary_cross_entropy_with_logits"
    x, y = _pair(op, logits, label, ("logits", "label"), True)
    w = _optional_weight(op, "weight", weight, x)
    pw = _optional_weight(op, "pos_weight", pos_weight, x)
    red = _check_reduction(op, reduction)
    coef = 1.0 if pw is None else (pw - 1) * y + 1
    loss = (1 - y) * x - logsigmoid(x) * coef
    return _reduce(loss if w is None else loss * w, red)


def binary_cross_entropy(
    logits: Any, labels: Any, weight: Any = None, reduction: str = "mean"
) -> Tensor:
    """``-w (y log(p) + (1 - y) log(1 - p))`` for probabilities ``p = logits``; each log is
    clamped at -100 so that ``p`` of exactly 0 or 1 stays finite."""
    op = "binary_cross_entropy"
    p, y = _pair(op, logits, labels, ("logits", "labels"), True)
    w = _optional_weight(op, "weight", weight, p)
    red = _check_reduction(op, reduction)
    tiny = math.exp(-100)
    # clamp before the log, so p of 0 or 1 never produces -inf (or a NumPy warning)
    lp = maximum(log(maximum(p, tiny)), -100.0)
    lq = maximum(log(maximum(1 - p, tiny)), -100.0)
    loss = neg(y * lp + (1 - y) * lq)
    return _reduce(loss if w is None else loss * w, red)


def kl_div(logits: Any, labels: Any, reduction: str = "mean") -> Tensor:
    """``labels * (log(labels) - logits)`` (0 where ``labels`` is 0), for log-probabilities
    ``logits``; 'batchmean' divides the sum by the batch size (the true KL divergence)."""
    op = "kl_div"
    x, y = _pair(op, logits, labels, ("logits", "labels"), True)
    red = _check_reduction(op, reduction, ("none", "mean", "sum", "batchmean"))
    pos = y > 0
    loss = select(pos, y * log(select(pos, y, 1.0)), 0.0) - y * x
    if red == "batchmean":
        total = reduce_sum(loss)
        return total / x.shape[0] if x.ndim else total
    return _reduce(loss, red)


# ---- margin losses -----------------------------------------------------------------------


def margin_ranking_loss(
    input1: Any, input2: Any, target: Any, margin: float = 0.0, reduction: str = "mean"
) -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)`` with ``target`` in {1, -1}."""
    op = "margin_ranking_loss"
    x1, x2 = _pair(op, input1, input2, ("input1", "input2"), True)
    t = _float_tensor(op, "target", target, x1)
    _same_shape(op, ("input1", "target"), x1, t)
    m = _number(op, "margin", margin)
    red = _check_reduction(op, reduction)
    return _reduce(maximum(neg(t) * (x1 - x2) + m, 0.0), red)


def hinge_embedding_loss(
    inputs: Any, targets: Any, margin: float = 1.0, reduction: str = "mean"
) -> Tensor:
    """``x`` where ``targets`` is 1 and ``max(0, margin - x)`` where it is -1."""
    op = "hinge_embedding_loss"
    x, t = _pair(op, inputs, targets, ("inputs", "targets"), False)
    m = _number(op, "margin", margin)
    red = _check_reduction(op, reduction)
    shape = broadcast_shapes(op, x.shape, t.shape)
    xb = broadcast_to(x, shape)
    return _reduce(select(t == 1, xb, maximum(neg(xb) + m, 0.0)), red)
