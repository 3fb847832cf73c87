"""Op-table tests for the loss functions (float64 NumPy/SciPy references)."""

import numpy as np
import pytest
from scipy import special

from sporeling.core import Tensor, ops
from sporeling.core.ops import loss as loss_mod
from sporeling_testing import OpRecord, check_backward, check_forward, check_grad, records_params

FLOATS = ("float16", "float32", "float64")
TOL16 = {"float16": (2e-2, 2e-2)}
T4 = np.array([1, 0, 4, 2])
T4_IGN = np.array([1, -100, 4, 2])
T7 = np.array([12, 0, 5, 5, 3, 12, 7])
T3D = np.array([[0, 2, 1], [3, 3, -1]])  # for (2, 4, 3) inputs, ignore_index=-1
W5 = np.array([0.5, 1.0, 2.0, 1.5, 0.25])


def probs(rng, shape, dtype):
    p = rng.random(shape) + 0.05
    return (p / p.sum(-1, keepdims=True)).astype(dtype)


def unit(rng, shape, dtype):
    return (rng.random(shape) * 0.9 + 0.05).astype(dtype)


def normal(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


def ref_nll(logp, t, w=None, ignore=-100, reduction="mean", ls=0.0, axis=1, torch=False):
    """MindSpore's nll_loss semantics (label smoothing: the mean of the smooth term); with
    ``torch``, PyTorch's cross_entropy (the smooth term divided by the used weights' sum)."""
    c = logp.shape[axis]
    valid = t != ignore
    safe = np.where(valid, t, 0)
    wv = np.ones(c) if w is None else w
    shape = [1] * logp.ndim
    shape[axis] = c
    weighted = logp * wv.reshape(shape)
    picked = np.squeeze(np.take_along_axis(weighted, np.expand_dims(safe, axis), axis), axis)
    loss = -picked * valid
    smooth = -weighted.sum(axis) * valid
    wt = wv[safe] * valid
    if reduction == "sum":
        loss, smooth = loss.sum(), smooth.sum()
    elif reduction == "mean":
        loss, smooth = loss.sum() / wt.sum(), smooth.sum() / wt.sum() if torch else smooth.mean()
    return (1 - ls) * loss + ls / c * smooth if ls else loss


def ref_ce_probs(x, t, w=None, reduction="mean", ls=0.0):
    c = x.shape[1]
    lp = special.log_softmax(x, 1)
    t = t * (1 - ls) + ls / c if ls else t
    prod = lp * t * (1 if w is None else w)
    if reduction == "none":
        return -prod.sum(1)
    total = -prod.sum()
    return total if reduction == "sum" else total / (x.size / c)


def ref_bce_logits(x, y, w=None, pw=None):
    p = special.expit(x)
    pw = 1 if pw is None else pw
    loss = -(pw * y * np.log(p) + (1 - y) * np.log1p(-p))
    return (loss * (1 if w is None else w)).mean()


def on(a, x):
    """``a`` as a Tensor on ``x``'s device."""
    return Tensor(a, device=x.device)


RECORDS = [
    OpRecord(
        "cross_entropy",
        lambda x: ops.cross_entropy(x, on(T4, x)),
        lambda x: ref_nll(special.log_softmax(x, 1), T4),
        [((4, 5),)],
        FLOATS,
        order=2,
        tol=TOL16,
    ),
    OpRecord(
        "cross_entropy_weight_ignore_sum",
        lambda x: ops.cross_entropy(x, on(T4_IGN, x), on(W5, x), reduction="sum"),
        lambda x: ref_nll(special.log_softmax(x, 1), T4_IGN, W5, reduction="sum"),
        [((4, 5),)],
        FLOATS,
        tol={"float16": (2e-2, 5e-2)},
    ),
    OpRecord(
        "cross_entropy_weight_mean_smooth",
        lambda x: ops.cross_entropy(x, on(T4_IGN, x), on(W5, x), label_smoothing=0.2),
        lambda x: ref_nll(special.log_softmax(x, 1), T4_IGN, W5, ls=0.2, torch=True),
        [((4, 5),)],
        ("float32", "float64"),
        order=2,
    ),
    OpRecord(
        "cross_entropy_none_3d",
        lambda x: ops.cross_entropy(x, on(T3D, x), ignore_index=-1, reduction="none"),
        lambda x: ref_nll(special.log_softmax(x, 1), T3D, ignore=-1, reduction="none"),
        [((2, 4, 3),)],
        FLOATS,
        tol=TOL16,
    ),
    OpRecord(
        "cross_entropy_1d",
        lambda x: ops.cross_entropy(x, on(np.array(2), x)),
        lambda x: -special.log_softmax(x)[2],
        [((5,),)],
        ("float32", "float64"),
    ),
    OpRecord(
        "cross_entropy_probs",
        lambda x, t: ops.cross_entropy(x, t),
        lambda x, t: ref_ce_probs(x, t),
        [((4, 5), (4, 5))],
        FLOATS,
        [normal, probs],
        order=2,
        tol=TOL16,
    ),
    OpRecord(
        "cross_entropy_probs_weight_smooth_none",
        lambda x, t: ops.cross_entropy(x, t, on(W5, x), reduction="none", label_smoothing=0.1),
        lambda x, t: ref_ce_probs(x, t, W5, "none", 0.1),
        [((4, 5), (4, 5))],
        ("float32", "float64"),
        [normal, probs],
    ),
    OpRecord(
        "nll_loss",
        lambda x: ops.nll_loss(x, on(T4, x)),
        lambda x: ref_nll(x, T4),
        [((4, 5),)],
        FLOATS,
    ),
    OpRecord(
        "nll_loss_weight_none",
        lambda x: ops.nll_loss(x, on(T4_IGN, x), on(W5, x), reduction="none"),
        lambda x: ref_nll(x, T4_IGN, W5, reduction="none"),
        [((4, 5),)],
        FLOATS,
    ),
    OpRecord(
        "nll_loss_smooth_sum",
        lambda x: ops.nll_loss(x, on(T4, x), reduction="sum", label_smoothing=0.3),
        lambda x: ref_nll(x, T4, reduction="sum", ls=0.3),
        [((4, 5),)],
        ("float64",),
    ),
    OpRecord(
        "softmax_cross_entropy_with_logits",
        ops.softmax_cross_entropy_with_logits,
        lambda x, t: (-(special.log_softmax(x, -1) * t).sum(-1), special.softmax(x, -1) - t),
        [((4, 5), (4, 5)), ((2, 3, 7), (2, 3, 7))],
        FLOATS,
        [normal, probs],
        order=2,
        tol=TOL16,
    ),
    OpRecord(
        "sparse_softmax_cross_entropy_with_logits",
        lambda x: ops.sparse_softmax_cross_entropy_with_logits(x, on(T4, x)),
        lambda x: ref_nll(special.log_softmax(x, 1), T4),
        [((4, 5),)],
        FLOATS,
        order=2,
        tol=TOL16,
    ),
    OpRecord(
        "sparse_softmax_cross_entropy_grad",
        lambda x: ops.sparse_softmax_cross_entropy_with_logits(x, on(T4, x), True),
        lambda x: (special.softmax(x, 1) - np.eye(5)[T4]) / 4,
        [((4, 5),)],
        ("float32", "float64"),
        order=2,
    ),
    # the fused primitives on odd shapes: one row, one class, a repeated class, 7x13
    OpRecord(
        "sparse_softmax_cross_entropy_with_logits_1x3",
        lambda x: ops.sparse_softmax_cross_entropy_with_logits(x, on(np.array([2]), x)),
        lambda x: ref_nll(special.log_softmax(x, 1), np.array([2])),
        [((1, 3),)],
        FLOATS,
        order=2,
        tol=TOL16,
    ),
    OpRecord(
        "sparse_softmax_cross_entropy_with_logits_3x1",
        lambda x: ops.sparse_softmax_cross_entropy_with_logits(x, on(np.zeros(3, int), x)),
        lambda x: ref_nll(special.log_softmax(x, 1), np.zeros(3, int)),
        [((3, 1),)],
        ("float32", "float64"),
        order=2,
    ),
    OpRecord(
        "sparse_softmax_cross_entropy_with_logits_7x13",
        lambda x: ops.sparse_softmax_cross_entropy_with_logits(x, on(T7, x)),
        lambda x: ref_nll(special.log_softmax(x, 1), T7),
        [((7, 13),)],
        ("float32", "float64"),
        order=2,
    ),
    OpRecord(
        "sparse_softmax_cross_entropy_grad_7x13",
        lambda x: ops.sparse_softmax_cross_entropy_with_logits(x, on(T7, x), True),
        lambda x: (special.softmax(x, 1) - np.eye(13)[T7]) / 7,
        [((7, 13),)],
        ("float32", "float64"),
        order=2,
    ),
    OpRecord(
        "smooth_l1_loss",
        ops.smooth_l1_loss,
        lambda x, y: np.where(np.abs(x - y) < 1, 0.5 * (x - y) ** 2, np.abs(x - y) - 0.5),
        [((3, 4), (3, 4))],
        FLOATS,
    ),
    OpRecord(
        "smooth_l1_loss_beta_mean",
        lambda x, y: ops.smooth_l1_loss(x, y, 0.5, "mean"),
        lambda x, y: np.where(np.abs(x - y) < 0.5, (x - y) ** 2, np.abs(x - y) - 0.25).mean(),
        [((3, 4), (3, 4))],
        FLOATS,
        tol=TOL16,
    ),
    OpRecord(
        "mse_loss",
        ops.mse_loss,
        lambda x, y: ((x - y) ** 2).mean(),
        [((3, 4), (3, 4)), ((3, 4), (4,))],
        FLOATS,
        order=2,
    ),
    OpRecord(
        "mse_loss_none",
        lambda x, y: ops.mse_loss(x, y, "none"),
        lambda x, y: (x - y) ** 2,
        [((3, 4), (3, 4))],
        ("float32",),
    ),
    OpRecord(
        "l1_loss_sum",
        lambda x, y: ops.l1_loss(x, y, "sum"),
        lambda x, y: np.abs(x - y).sum(),
        [((3, 4), (3, 4))],
        FLOATS,
        tol={"float16": (2e-2, 1e-1)},
    ),
    OpRecord(
        "bce_with_logits",
        ops.binary_cross_entropy_with_logits,
        ref_bce_logits,
        [((3, 4), (3, 4))],
        FLOATS,
        [normal, unit],
        order=2,
        tol=TOL16,
    ),
    OpRecord(
        "bce_with_logits_weights",
        lambda x, y, w, pw: ops.binary_cross_entropy_with_logits(x, y, w, pw),
        ref_bce_logits,
        [((3, 4), (3, 4), (4,), (4,))],
        ("float32", "float64"),
        [normal, unit, unit, unit],
        order=2,
    ),
    OpRecord(
        "bce_with_logits_large",
        lambda x, y: ops.binary_cross_entropy_with_logits(x * 200, y, reduction="sum"),
        lambda x, y: (
            np.maximum(200 * x, 0) - 200 * x * y + np.log1p(np.exp(-np.abs(200 * x)))
        ).sum(),
        [((3, 4), (3, 4))],
        ("float32", "float64"),
        [normal, unit],
        grad=False,
    ),
    OpRecord(
        "binary_cross_entropy",
        ops.binary_cross_entropy,
        lambda p, y: -(y * np.log(p) + (1 - y) * np.log1p(-p)).mean(),
        [((3, 4), (3, 4))],
        FLOATS,
        unit,
        order=2,
        tol=TOL16,
    ),
    OpRecord(
        "binary_cross_entropy_weight_none",
        lambda p, y, w: ops.binary_cross_entropy(p, y, w, "none"),
        lambda p, y, w: -w * (y * np.log(p) + (1 - y) * np.log1p(-p)),
        [((3, 4), (3, 4), (3, 4))],
        ("float32", "float64"),
        unit,
    ),
    OpRecord(
        "kl_div",
        ops.kl_div,
        lambda x, y: (special.xlogy(y, y) - y * x).mean(),
        [((3, 4), (3, 4))],
        FLOATS,
        [normal, probs],
        order=2,
        tol=TOL16,
    ),
    OpRecord(
        "kl_div_batchmean",
        lambda x, y: ops.kl_div(x, y, "batchmean"),
        lambda x, y: (special.xlogy(y, y) - y * x).sum() / 3,
        [((3, 4), (3, 4))],
        ("float32", "float64"),
        [normal, probs],
    ),
    OpRecord(
        "margin_ranking_loss",
        lambda a, b: ops.margin_ranking_loss(a, b, on(np.array([1.0, -1, 1, -1]), a), 0.1),
        lambda a, b: np.maximum(0, -np.array([1, -1, 1, -1]) * (a - b) + 0.1).mean(),
        [((4,), (4,))],
        ("float32", "float64"),
    ),
    OpRecord(
        "hinge_embedding_loss",
        lambda x: ops.hinge_embedding_loss(x, on(np.array([1.0, -1, -1, 1]), x), 0.5, "sum"),
        lambda x: np.where(np.array([1, -1, -1, 1]) == 1, x, np.maximum(0, 0.5 - x)).sum(),
        [((3, 4),)],
        ("float32", "float64"),
    ),
]


@pytest.mark.parametrize("rec,dtype", records_params(RECORDS))
def test_forward(rec, dtype, device):
    check_forward(rec, dtype, device)


@pytest.mark.parametrize("rec", records_params([r for r in RECORDS if r.grad], dtypes=False))
def test_backward(rec, device):
    check_backward(rec, device)


def test_cross_entropy_matches_softmax_xent_and_doc_example():
    x = np.random.default_rng(0).standard_normal((6, 3))
    t = np.array([0, 2, 1, 1, 0, 2])
    a = ops.cross_entropy(Tensor(x), Tensor(t), reduction="none").asnumpy()
    b = ops.softmax_cross_entropy_with_logits(Tensor(x), Tensor(np.eye(3)[t]))[0].asnumpy()
    np.testing.assert_allclose(a, b, rtol=1e-12)
    assert (
        round(float(ops.kl_div(Tensor([0.2, 0.7, 0.1]), Tensor([0.0, 1.0, 0.0]))), 6) == -0.233333
    )


def test_softmax_xent_kernel_matches_xp_and_large_inputs():
    rng = np.random.default_rng(1)
    for shape in [(1, 1), (5, 7), (3, 129)]:
        x = rng.standard_normal(shape) * 10
        lab = probs(rng, shape, "float64")
        got = loss_mod.softmax_xent_p.impls["cpu"](np, x, lab)
        want = loss_mod.softmax_xent_p.impls["any"](np, x, lab)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    x = np.array([[-1e30, -1e30, -1e30], [1e4, -1e4, 0.0]], np.float32)
    lab = np.array([[1, 0, 0], [0, 1, 0]], np.float32)
    loss, bp = loss_mod.softmax_xent_p.impls["cpu"](np, x, lab)
    np.testing.assert_allclose(loss, [np.log(3), 2e4], rtol=1e-6)
    np.testing.assert_allclose(bp, [[1 / 3 - 1, 1 / 3, 1 / 3], [1, -1, 0]], atol=1e-6)


def test_cross_entropy_weight_and_smoothing_follow_pytorch():
    # Uniform logits give a closed form of PyTorch's definition: the nll term is log C and
    # the smooth term sum_c w_c log C per used sample, both over the used targets' weights.
    c, ls = 5, 0.2
    x = Tensor(np.zeros((4, c)))
    got = float(ops.cross_entropy(x, Tensor(T4_IGN), Tensor(W5), label_smoothing=ls))
    used = W5[T4_IGN[T4_IGN != -100]].sum()
    smooth = 3 * W5.sum() * np.log(c) / used
    assert got == pytest.approx((1 - ls) * np.log(c) + ls / c * smooth, rel=1e-12)


def test_cross_entropy_gradient_with_class_weights():
    x = np.random.default_rng(2).standard_normal((4, 5))
    check_grad(lambda a, w: ops.cross_entropy(a, Tensor(T4_IGN), w), [x, W5])


# ---- errors -------------------------------------------------------------------------------

X = Tensor(np.zeros((4, 5), np.float32))
T = Tensor(T4)


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda: ops.cross_entropy(X, T, reduction="avg"), ValueError, "cross_entropy.*reduction"),
        (lambda: ops.cross_entropy(X, T, reduction=None), TypeError, "cross_entropy.*reduction"),
        (lambda: ops.cross_entropy(X, Tensor([1, 2])), ValueError, "cross_entropy.*target"),
        (
            lambda: ops.cross_entropy(X, Tensor(np.ones((4, 4)))),
            ValueError,
            "cross_entropy.*target",
        ),
        (lambda: ops.cross_entropy(X, Tensor([True] * 4)), TypeError, "cross_entropy.*target"),
        (lambda: ops.cross_entropy(X, T, Tensor(np.ones(4))), ValueError, "cross_entropy.*weight"),
        (
            lambda: ops.cross_entropy(X, T, label_smoothing=1.5),
            ValueError,
            "cross_entropy.*label_smoothing",
        ),
        (
            lambda: ops.cross_entropy(X, T, ignore_index=1.0),
            TypeError,
            "cross_entropy.*ignore_index",
        ),
        (lambda: ops.cross_entropy(Tensor(1.0), T), ValueError, "cross_entropy.*inputs"),
        (lambda: ops.nll_loss(X, Tensor([1, 0, 5, 2])), ValueError, "nll_loss.*target.*0, 5"),
        (lambda: ops.nll_loss(X, Tensor([1, -7, 2, 2])), ValueError, "nll_loss.*target"),
        (lambda: ops.nll_loss(X, Tensor(np.zeros(4))), TypeError, "nll_loss.*target"),
        (lambda: ops.smooth_l1_loss(X, X, beta=0), ValueError, "smooth_l1_loss.*beta"),
        (lambda: ops.smooth_l1_loss(X, Tensor(np.zeros(5))), ValueError, "smooth_l1_loss.*labels"),
        (
            lambda: ops.smooth_l1_loss(X, X, reduction="max"),
            ValueError,
            "smooth_l1_loss.*reduction",
        ),
        (lambda: ops.mse_loss(X, Tensor(np.zeros(3))), ValueError, "mse_loss"),
        (lambda: ops.l1_loss(X, "a"), TypeError, "l1_loss.*target"),
        (lambda: ops.kl_div(X, X, "batch"), ValueError, "kl_div.*reduction"),
        (
            lambda: ops.binary_cross_entropy_with_logits(X, X, Tensor(np.ones(3))),
            ValueError,
            "binary_cross_entropy_with_logits",
        ),
        (
            lambda: ops.binary_cross_entropy_with_logits(X, Tensor(np.ones(5))),
            ValueError,
            "binary_cross_entropy_with_logits.*label",
        ),
        (
            lambda: ops.binary_cross_entropy(X, Tensor(np.ones(5)), reduction="x"),
            ValueError,
            "binary_cross_entropy.*labels",
        ),
        (
            lambda: ops.softmax_cross_entropy_with_logits(X, Tensor(np.ones((4, 4)))),
            ValueError,
            "softmax_cross_entropy_with_logits.*labels",
        ),
        (
            lambda: ops.sparse_softmax_cross_entropy_with_logits(X, Tensor(np.zeros(4))),
            TypeError,
            "sparse_softmax_cross_entropy_with_logits.*labels",
        ),
        (
            lambda: ops.sparse_softmax_cross_entropy_with_logits(X, Tensor([1, 0, 5, 2])),
            ValueError,
            "sparse_softmax_cross_entropy_with_logits.*target.*0, 5",
        ),
        (
            lambda: ops.sparse_softmax_cross_entropy_with_logits(X, T, is_grad=1),
            TypeError,
            "sparse_softmax_cross_entropy_with_logits.*is_grad",
        ),
        (
            lambda: ops.margin_ranking_loss(X, X, Tensor(np.ones(3))),
            ValueError,
            "margin_ranking_loss.*target",
        ),
    ],
)
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_sparse_softmax_cross_entropy_extreme_logits_and_a_train_step():
    """Large logits stay finite (the row maximum is subtracted); the loss cell's mean path
    (one fused op) gives the same loss and gradients as log_softmax + nll_loss."""
    from sporeling.core import Parameter, nn, value_and_grad

    x = np.array([[1e4, -1e4, 0.0], [50.0, 50.0, 50.0]], np.float32)
    t = np.array([1, 2])
    got = ops.sparse_softmax_cross_entropy_with_logits(Tensor(x), Tensor(t)).asnumpy()
    want = ref_nll(special.log_softmax(x.astype(np.float64), 1), t)
    np.testing.assert_allclose(got, want, rtol=1e-6)

    rng = np.random.default_rng(7)
    w = Parameter(rng.standard_normal((6, 4)).astype(np.float32), name="w")
    xs = Tensor(rng.standard_normal((5, 6)).astype(np.float32))
    ts = Tensor(np.array([0, 3, 3, 1, 2], np.int32))
    cell = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    v1, (g1,) = value_and_grad(lambda: cell(ops.matmul(xs, w), ts), None, [w])()
    v2, (g2,) = value_and_grad(
        lambda: ops.nll_loss(ops.log_softmax(ops.matmul(xs, w), 1), ts), None, [w]
    )()
    np.testing.assert_allclose(v1.asnumpy(), v2.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(g1.asnumpy(), g2.asnumpy(), rtol=1e-5, atol=1e-7)
