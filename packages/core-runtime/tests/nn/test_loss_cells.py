"""Loss cells against NumPy float64 references, gradient checks, reductions, errors."""

import numpy as np
import pytest

from sporeling.core import Tensor, float16, nn
from sporeling_testing import check_grad

RNG = np.random.default_rng(0)
REDUCTIONS = ["none", "mean", "sum"]


def _reduce(x, reduction):
    return {"none": x, "mean": np.mean(x), "sum": np.sum(x)}[reduction]


def _log_softmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    s = x - m
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


def _close(out, ref, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(out.asnumpy(), np.float64), ref, rtol=rtol, atol=atol)


def _pair(shape=(3, 4)):
    return RNG.standard_normal(shape), RNG.standard_normal(shape)


# ---- element-wise losses ----------------------------------------------------------------


def _smooth_l1(d, beta):
    a = np.abs(d)
    return np.where(a < beta, 0.5 * d * d / beta, a - 0.5 * beta)


def _huber(d, delta):
    a = np.abs(d)
    return np.where(a < delta, 0.5 * a * a, delta * (a - 0.5 * delta))


ELEMENTWISE = [
    ("L1Loss", lambda r: nn.L1Loss(r), lambda x, y, r: _reduce(np.abs(x - y), r)),
    ("MAELoss", lambda r: nn.MAELoss(r), lambda x, y, r: _reduce(np.abs(x - y), r)),
    ("MSELoss", lambda r: nn.MSELoss(r), lambda x, y, r: _reduce((x - y) ** 2, r)),
    (
        "SmoothL1Loss",
        lambda r: nn.SmoothL1Loss(0.7, r),
        lambda x, y, r: _reduce(_smooth_l1(x - y, 0.7), r),
    ),
    (
        "HuberLoss",
        lambda r: nn.HuberLoss(r, delta=0.6),
        lambda x, y, r: _reduce(_huber(x - y, 0.6), r),
    ),
    (
        "SoftMarginLoss",
        lambda r: nn.SoftMarginLoss(r),
        lambda x, y, r: _reduce(np.log1p(np.exp(-y * x)), r),
    ),
]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name,make,ref", ELEMENTWISE, ids=[e[0] for e in ELEMENTWISE])
def test_elementwise_forward_and_grad(name, make, ref, reduction):
    x, y = _pair()
    if name == "SoftMarginLoss":
        y = np.sign(y)
    cell = make(reduction)
    for dt in (np.float32, np.float64):
        out = cell(Tensor(x.astype(dt)), Tensor(y.astype(dt)))
        assert out.dtype.np == dt
        _close(out, ref(x, y, reduction), rtol=1e-5 if dt == np.float32 else 1e-12)
    # keep |x - y| away from the kinks (0, beta, delta) for finite differences
    x = y + np.where(RNG.random(x.shape) < 0.5, -1, 1) * RNG.uniform(0.1, 0.5, x.shape) * 3
    wrt = [0] if name == "SoftMarginLoss" else None
    check_grad(lambda a, b: cell(a, b), [x, y], wrt)


def test_get_loss_weights_and_broadcast():
    x, y = _pair((2, 3))
    w = RNG.random((2, 1))

    class Weighted(nn.LossBase):
        def construct(self, logits, labels):
            return self.get_loss((logits - labels) ** 2, Tensor(w))

    for reduction in REDUCTIONS:
        out = Weighted(reduction)(Tensor(x), Tensor(y))
        _close(out, _reduce((x - y) ** 2 * w, reduction), rtol=1e-12)
    # a scalar weight, and broadcasting labels in MSELoss
    base = nn.LossBase("sum")
    _close(base.get_loss(Tensor(x), 0.5), 0.5 * x.sum(), rtol=1e-12)
    out = nn.MSELoss()(Tensor(x), Tensor(y[:1]))
    _close(out, np.mean((x - y[:1]) ** 2), rtol=1e-12)
    assert base.get_axis(Tensor(x)) == (0, 1)


def test_get_loss_float16_reduces_in_float32():
    x = np.full(4096, 1.0, np.float16)
    out = nn.MSELoss("sum")(Tensor(x), Tensor(np.zeros_like(x)))
    assert out.dtype == float16
    assert float(out) == 4096.0  # an fp16 running sum would stall at 2048


def test_rmse():
    x, y = _pair((5,))
    _close(nn.RMSELoss()(Tensor(x), Tensor(y)), np.sqrt(np.mean((x - y) ** 2)), rtol=1e-12)
    check_grad(lambda a, b: nn.RMSELoss()(a, b), [x, y])


# ---- softmax cross entropy ----------------------------------------------------------------


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("sparse", [False, True])
def test_softmax_cross_entropy_with_logits(sparse, reduction):
    x = RNG.standard_normal((4, 5))
    t = RNG.integers(0, 5, 4)
    onehot = np.eye(5)[t]
    dense = RNG.random((4, 5))
    dense /= dense.sum(1, keepdims=True)
    labels = t.astype(np.int32) if sparse else dense
    target = onehot if sparse else dense
    ref = _reduce(-(target * _log_softmax(x, 1)).sum(1), reduction)
    cell = nn.SoftmaxCrossEntropyWithLogits(sparse=sparse, reduction=reduction)
    _close(cell(Tensor(x.astype(np.float32)), Tensor(labels.astype(labels.dtype))), ref)
    _close(cell(Tensor(x), Tensor(labels)), ref, rtol=1e-12)
    check_grad(lambda a, b: cell(a, b), [x, labels], [0])


def test_softmax_cross_entropy_errors():
    with pytest.raises(TypeError, match="SoftmaxCrossEntropyWithLogits.*sparse"):
        nn.SoftmaxCrossEntropyWithLogits(sparse=1)
    with pytest.raises(ValueError, match="reduction.*'none' or 'mean' or 'sum'"):
        nn.SoftmaxCrossEntropyWithLogits(reduction="avg")
    with pytest.raises(TypeError, match="labels"):
        nn.SoftmaxCrossEntropyWithLogits(sparse=True)(Tensor(np.zeros((2, 3))), Tensor([0.0, 1]))
    with pytest.raises(TypeError, match="labels"):
        nn.SoftmaxCrossEntropyWithLogits()(Tensor(np.zeros((2, 3))), Tensor([0, 1]))


# ---- class-index losses -------------------------------------------------------------------


def _ref_nll(logp, t, w=None, ignore=-100, reduction="mean", ls=0.0, torch=False):
    """MindSpore's nll_loss: the smoothing term is averaged over all samples; with ``torch``,
    PyTorch's cross_entropy: it is divided by the used targets' summed weights."""
    c = logp.shape[1]
    lp = np.moveaxis(logp, 1, -1)
    w = np.ones(c) if w is None else w
    valid = t != ignore
    ts = np.where(valid, t, 0)
    picked = np.take_along_axis(lp, ts[..., None], -1)[..., 0]
    loss = -w[ts] * picked * valid
    smooth = -(lp * w).sum(-1) * valid
    if reduction == "sum":
        loss, smooth = loss.sum(), smooth.sum()
    elif reduction == "mean":
        used = (w[ts] * valid).sum()
        loss, smooth = loss.sum() / used, smooth.sum() / used if torch else smooth.mean()
    return (1 - ls) * loss + ls / c * smooth


CE_CASES = [
    dict(),
    dict(weight=True),
    dict(ignore_index=2),
    dict(label_smoothing=0.2),
    dict(weight=True, ignore_index=1, label_smoothing=0.1),
]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", CE_CASES, ids=lambda c: "-".join(c) or "plain")
@pytest.mark.parametrize("shape", [(6, 4), (3, 4, 2)])
def test_cross_entropy_and_nll(case, reduction, shape):
    x = RNG.standard_normal(shape)
    t = RNG.integers(0, 4, (shape[0],) + shape[2:])
    t.flat[0] = case.get("ignore_index", 0)  # make sure an ignored sample occurs
    w = RNG.random(4) + 0.5 if case.get("weight") else None
    kw = dict(
        weight=None if w is None else Tensor(w),
        ignore_index=case.get("ignore_index", -100),
        reduction=reduction,
    )
    ls = case.get("label_smoothing", 0.0)
    ref = _ref_nll(_log_softmax(x, 1), t, w, kw["ignore_index"], reduction, ls, torch=True)
    ce = nn.CrossEntropyLoss(label_smoothing=ls, **kw)
    _close(ce(Tensor(x), Tensor(t)), ref, rtol=1e-10, atol=1e-12)
    check_grad(lambda a, b: ce(a, b), [x, t], [0])
    if ls == 0.0:
        nll = nn.NLLLoss(**kw)
        logp = _log_softmax(x, 1)
        _close(nll(Tensor(logp), Tensor(t)), _ref_nll(logp, t, w, kw["ignore_index"], reduction))
        check_grad(lambda a, b: nll(a, b), [logp, t], [0])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_probability_targets(reduction):
    x = RNG.standard_normal((5, 3))
    p = RNG.random((5, 3))
    p /= p.sum(1, keepdims=True)
    w = RNG.random(3) + 0.5
    ls = 0.3
    q = p * (1 - ls) + ls / 3
    per = -(_log_softmax(x, 1) * q * w).sum(1)
    ref = {"none": per, "sum": per.sum(), "mean": per.sum() / 5}[reduction]
    ce = nn.CrossEntropyLoss(weight=Tensor(w), reduction=reduction, label_smoothing=ls)
    _close(ce(Tensor(x), Tensor(p)), ref, rtol=1e-12)
    check_grad(lambda a, b: ce(a, b), [x, p])


def test_class_loss_errors():
    with pytest.raises(TypeError, match="CrossEntropyLoss.*ignore_index"):
        nn.CrossEntropyLoss(ignore_index=1.5)
    with pytest.raises(ValueError, match="CrossEntropyLoss.*label_smoothing"):
        nn.CrossEntropyLoss(label_smoothing=1.5)
    with pytest.raises(ValueError, match="NLLLoss.*weight"):
        nn.NLLLoss(weight=Tensor(np.ones((2, 2), np.float32)))
    with pytest.raises(TypeError, match="NLLLoss.*weight"):
        nn.NLLLoss(weight=[1.0, 2.0])
    with pytest.raises(TypeError, match="CrossEntropyLoss: argument 'logits'"):
        nn.CrossEntropyLoss()(np.zeros((2, 3)), Tensor([0, 1]))
    with pytest.raises(ValueError, match="target"):
        nn.CrossEntropyLoss()(Tensor(np.zeros((2, 3))), Tensor([0, 7]))


# ---- KL and binary losses -----------------------------------------------------------------


@pytest.mark.parametrize("reduction", REDUCTIONS + ["batchmean"])
def test_kl_div(reduction):
    x = _log_softmax(RNG.standard_normal((4, 3)), 1)
    y = RNG.random((4, 3))
    y[0, 0] = 0.0
    el = np.where(y > 0, y * np.log(np.where(y > 0, y, 1)), 0) - y * x
    ref = el.sum() / 4 if reduction == "batchmean" else _reduce(el, reduction)
    cell = nn.KLDivLoss(reduction)
    _close(cell(Tensor(x), Tensor(y)), ref, rtol=1e-12)
    check_grad(lambda a, b: cell(a, b), [x, y], [0])
    with pytest.raises(ValueError, match="KLDivLoss"):
        nn.KLDivLoss("avg")


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_bce(reduction, weighted):
    p = RNG.uniform(0.05, 0.95, (3, 4))
    y = RNG.integers(0, 2, (3, 4)).astype(np.float64)
    w = RNG.random((3, 4)) if weighted else np.ones((3, 4))
    ref = _reduce(-w * (y * np.log(p) + (1 - y) * np.log(1 - p)), reduction)
    cell = nn.BCELoss(Tensor(w) if weighted else None, reduction)
    _close(cell(Tensor(p), Tensor(y)), ref, rtol=1e-12)
    check_grad(lambda a, b: cell(a, b), [p, y], [0])


def test_bce_default_reduction_is_none():
    assert nn.BCELoss().reduction == "none"
    assert nn.SmoothL1Loss().reduction == "none"
    assert nn.SoftmaxCrossEntropyWithLogits().reduction == "none"
    assert nn.BCEWithLogitsLoss().reduction == "mean"


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weights", ["none", "weight", "pos_weight", "both"])
def test_bce_with_logits(reduction, weights):
    x = RNG.standard_normal((3, 4)) * 3
    y = RNG.random((3, 4))
    w = RNG.random((3, 4)) if weights in ("weight", "both") else None
    pw = RNG.random(4) + 0.5 if weights in ("pos_weight", "both") else None
    ls = -np.logaddexp(0, -x)  # log sigmoid
    lq = -np.logaddexp(0, x)  # log(1 - sigmoid)
    el = -((1 if pw is None else pw) * y * ls + (1 - y) * lq) * (1 if w is None else w)
    cell = nn.BCEWithLogitsLoss(
        reduction, None if w is None else Tensor(w), None if pw is None else Tensor(pw)
    )
    _close(cell(Tensor(x), Tensor(y)), _reduce(el, reduction), rtol=1e-12)
    check_grad(lambda a, b: cell(a, b), [x, y])


# ---- construction errors and display ------------------------------------------------------


def test_reduction_and_argument_errors():
    with pytest.raises(ValueError, match="MSELoss: argument 'reduction'"):
        nn.MSELoss("avg")
    with pytest.raises(TypeError, match="L1Loss: argument 'reduction' expected a str"):
        nn.L1Loss(None)
    with pytest.raises(ValueError, match="SmoothL1Loss: argument 'beta'"):
        nn.SmoothL1Loss(beta=0.0)
    with pytest.raises(ValueError, match="HuberLoss: argument 'delta'"):
        nn.HuberLoss(delta=-1.0)
    with pytest.raises(TypeError, match="MSELoss: argument 'logits' expected a Tensor"):
        nn.MSELoss()([1.0], Tensor([1.0]))
    with pytest.raises(ValueError, match="MSELoss.*do not broadcast"):
        nn.MSELoss()(Tensor(np.zeros(3)), Tensor(np.zeros(4)))
    with pytest.raises(ValueError, match="get_loss: argument 'weights'"):
        nn.LossBase().get_loss(Tensor(np.zeros((2, 3))), Tensor(np.ones(4)))
    with pytest.raises(TypeError, match="get_loss: argument 'weights'"):
        nn.LossBase().get_loss(Tensor(np.zeros((2, 3))), "1")
    with pytest.raises(NotImplementedError):
        nn.LossBase()(Tensor([1.0]), Tensor([1.0]))


def test_repr():
    assert repr(nn.MSELoss()) == "MSELoss<reduction=mean>"
    assert repr(nn.SmoothL1Loss(2.0)) == "SmoothL1Loss<beta=2.0, reduction=none>"
    assert "ignore_index=-100" in repr(nn.CrossEntropyLoss())
    assert nn.MSELoss().trainable_params() == []
