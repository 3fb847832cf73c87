"""Op-table tests for activations, the softmax family, normalizations and dropout."""

import numpy as np
import pytest
from scipy import special

from sporeling.core import Tensor, ops
from sporeling.core.ops import activation as act
from sporeling.core.random_state import set_seed
from sporeling_testing import (
    OpRecord,
    check_backward,
    check_forward,
    check_grad,
    check_grad_grad,
    records_params,
)

FLOATS = ("float16", "float32", "float64")


def off(*kinks, scale=1.0, gap=0.15):
    """Normal inputs (times ``scale``) pushed at least ``gap`` away from the kink points."""

    def make(rng, shape, dtype):
        x = rng.standard_normal(shape) * scale
        for k in kinks:
            near = np.abs(x - k) < gap
            x = np.where(near, k + np.where(x >= k, gap, -gap) * 2, x)
        return x.astype(dtype)

    return make


def normal(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


SA, SS = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def ref_elu(x, a=1.0):
    return np.where(x > 0, x, a * np.expm1(np.minimum(x, 0) / 1.0))


def ref_softplus(x, beta=1.0, thr=20.0):
    return np.where(beta * x > thr, x, np.logaddexp(0, beta * x) / beta)


def ref_gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def ref_layer_norm(x, g, b, bna, eps):
    axes = tuple(range(bna, x.ndim))
    m = x.mean(axes, keepdims=True)
    v = x.var(axes, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b, m, v


def _chan(a, x):
    """A per-channel vector shaped to broadcast over axis 1 of ``x``."""
    return a.reshape((1, -1) + (1,) * (x.ndim - 2))


def ref_batch_norm(x, w, b, eps=1e-5):
    axes = (0,) + tuple(range(2, x.ndim))
    bs = (1, -1) + (1,) * (x.ndim - 2)
    m = x.mean(axes).reshape(bs)
    v = x.var(axes).reshape(bs)
    return (x - m) / np.sqrt(v + eps) * w.reshape(bs) + b.reshape(bs)


def ref_group_norm(x, groups, w, b, eps=1e-5):
    g = x.reshape(x.shape[0], groups, -1)
    y = (g - g.mean(2, keepdims=True)) / np.sqrt(g.var(2, keepdims=True) + eps)
    bs = (1, -1) + (1,) * (x.ndim - 2)
    return y.reshape(x.shape) * w.reshape(bs) + b.reshape(bs)


def bn_train(x, w, b):
    c = x.shape[1]
    rm = Tensor(np.zeros(c), dtype=x.dtype, device=x.device)
    rv = Tensor(np.ones(c), dtype=x.dtype, device=x.device)
    return ops.batch_norm(x, rm, rv, w, b, training=True)


S2 = [((3, 4),), ((2, 3, 5),)]
S1 = [((3, 4),)]

RECORDS = [
    OpRecord("relu", ops.relu, lambda x: np.maximum(x, 0), S2, FLOATS + ("int32",), off(0)),
    OpRecord("relu6", ops.relu6, lambda x: np.clip(x, 0, 6), S2, FLOATS, off(0, 6, scale=4)),
    OpRecord(
        "leaky_relu",
        lambda x: ops.leaky_relu(x, 0.3),
        lambda x: np.where(x > 0, x, 0.3 * x),
        S1,
        FLOATS,
        off(0),
    ),
    OpRecord("elu", ops.elu, ref_elu, S2, FLOATS, off(0), order=2),
    OpRecord(
        "celu",
        lambda x: ops.celu(x, 2.0),
        lambda x: np.maximum(x, 0) + np.minimum(0, 2 * np.expm1(x / 2)),
        S1,
        FLOATS,
        off(0),
        order=2,
    ),
    OpRecord(
        "selu",
        ops.selu,
        lambda x: SS * np.where(x > 0, x, SA * np.expm1(x)),
        S1,
        FLOATS,
        off(0),
        order=2,
    ),
    OpRecord("gelu", ops.gelu, lambda x: x * special.ndtr(x), S2, FLOATS, order=2),
    OpRecord("gelu_tanh", lambda x: ops.gelu(x, "tanh"), ref_gelu_tanh, S1, FLOATS, order=2),
    OpRecord(
        "fast_gelu", ops.fast_gelu, lambda x: x * special.expit(1.702 * x), S1, FLOATS, order=2
    ),
    OpRecord("sigmoid", ops.sigmoid, special.expit, S2, FLOATS, off(scale=8), order=2),
    OpRecord("logsigmoid", ops.logsigmoid, special.log_expit, S1, FLOATS, off(scale=8), order=2),
    OpRecord("softplus", ops.softplus, ref_softplus, S1, FLOATS, off(scale=5), order=2),
    OpRecord(
        "softplus_beta",
        lambda x: ops.softplus(x, 2.0, 3.0),
        lambda x: ref_softplus(x, 2.0, 3.0),
        S1,
        FLOATS,
        off(1.5, scale=3),
    ),
    OpRecord("silu", ops.silu, lambda x: x * special.expit(x), S1, FLOATS, order=2),
    OpRecord("mish", ops.mish, lambda x: x * np.tanh(np.logaddexp(0, x)), S2, FLOATS, order=2),
    OpRecord(
        "hardsigmoid",
        ops.hardsigmoid,
        lambda x: np.clip(x + 3, 0, 6) / 6,
        S1,
        FLOATS,
        off(-3, 3, scale=4),
    ),
    OpRecord(
        "hardswish",
        ops.hardswish,
        lambda x: x * np.clip(x + 3, 0, 6) / 6,
        S1,
        FLOATS,
        off(-3, 3, scale=4),
    ),
    OpRecord(
        "hardshrink",
        lambda x: ops.hardshrink(x, 0.4),
        lambda x: np.where(np.abs(x) <= 0.4, 0, x),  # PyTorch's form: NaN stays NaN
        S1,
        FLOATS,
        off(-0.4, 0.4),
    ),
    OpRecord(
        "soft_shrink",
        ops.soft_shrink,
        lambda x: np.sign(x) * np.maximum(np.abs(x) - 0.5, 0),
        S1,
        FLOATS,
        off(-0.5, 0.5),
    ),
    OpRecord("softsign", ops.softsign, lambda x: x / (1 + np.abs(x)), S1, FLOATS, off(0)),
    OpRecord(
        "softmax",
        ops.softmax,
        lambda x: special.softmax(x, -1),
        S2 + [((7,),), ((),)],
        FLOATS,
        order=2,
    ),
    OpRecord(
        "softmax_axis0",
        lambda x: ops.softmax(x, 0),
        lambda x: special.softmax(x, 0),
        S2,
        FLOATS,
        order=2,
    ),
    OpRecord(
        "softmax_axes",
        lambda x: ops.softmax(x, (0, 2)),
        lambda x: special.softmax(x, (0, 2)),
        [((2, 3, 4),)],
        FLOATS,
    ),
    OpRecord(
        "softmax_wide",
        lambda x: ops.softmax(x * 30, 1),
        lambda x: special.softmax(x * 30, 1),
        [((2, 9, 3),)],
        ("float32", "float64"),
    ),
    OpRecord(
        "log_softmax", ops.log_softmax, lambda x: special.log_softmax(x, -1), S2, FLOATS, order=2
    ),
    OpRecord(
        "log_softmax_axis1",
        lambda x: ops.log_softmax(x * 50, 1),
        lambda x: special.log_softmax(x * 50, 1),
        [((2, 5, 3),)],
        ("float32", "float64"),
        order=2,
        tol={"float32": (1e-5, 1e-4)},
    ),
    OpRecord(
        "glu", ops.glu, lambda x: x[..., :2] * special.expit(x[..., 2:]), S2[:1], FLOATS, order=2
    ),
    OpRecord(
        "glu_axis0",
        lambda x: ops.glu(x, 0),
        lambda x: x[:2] * special.expit(x[2:]),
        [((4, 3),)],
        ("float32",),
    ),
    OpRecord(
        "prelu",
        ops.prelu,
        lambda x, w: np.where(x > 0, x, x * w.reshape(-1, 1)),
        [((2, 3, 4), (3,))],
        FLOATS,
        [off(0), normal],
    ),
    OpRecord(
        "prelu_shared",
        ops.prelu,
        lambda x, w: np.where(x > 0, x, x * w),
        [((3, 4), (1,))],
        ("float32", "float64"),
        [off(0), normal],
    ),
    OpRecord(
        "layer_norm",
        lambda x, g, b: ops.layer_norm(x, g, b, 1, 1),
        lambda x, g, b: ref_layer_norm(x, g, b, 1, 1e-7),
        [((3, 4), (4,), (4,)), ((2, 3, 5), (3, 5), (3, 5))],
        FLOATS,
        order=2,
    ),
    OpRecord(
        "layer_norm_last",
        lambda x, g, b: ops.layer_norm(x, g, b, -1, -1, 1e-5),
        lambda x, g, b: ref_layer_norm(x, g, b, 2, 1e-5),
        [((2, 3, 5), (5,), (5,))],
        FLOATS,
        order=2,
    ),
    OpRecord(
        "layer_norm_params_after",
        lambda x, g, b: ops.layer_norm(x, g, b, 1, 2),
        lambda x, g, b: ref_layer_norm(x, g, b, 1, 1e-7),
        [((2, 3, 5), (5,), (5,))],
        ("float32", "float64"),
        order=2,
    ),
    OpRecord(
        "layer_norm_params_before",
        lambda x, g, b: ops.layer_norm(x, g, b, 2, 1),
        lambda x, g, b: ref_layer_norm(x, g, b, 2, 1e-7),
        [((2, 3, 5), (3, 5), (3, 5))],
        ("float32", "float64"),
        order=2,
    ),
    OpRecord(
        "batch_norm_train",
        bn_train,
        ref_batch_norm,
        [((4, 3), (3,), (3,)), ((2, 3, 2, 2), (3,), (3,))],
        FLOATS,
        order=2,
    ),
    OpRecord(
        "batch_norm_infer",
        lambda x, m, v, w, b: ops.batch_norm(x, m, v, w, b, False, 0.1, 1e-3),
        lambda x, m, v, w, b: (
            (x - _chan(m, x)) / np.sqrt(_chan(v, x) + 1e-3) * _chan(w, x) + _chan(b, x)
        ),
        [((2, 3, 4), (3,), (3,), (3,), (3,)), ((1, 2), (2,), (2,), (2,), (2,))],
        FLOATS,
        [normal, normal, lambda r, s, d: (r.random(s) + 0.5).astype(d), normal, normal],
        order=2,
    ),
    OpRecord(
        "group_norm",
        lambda x, w, b: ops.group_norm(x, 2, w, b),
        lambda x, w, b: ref_group_norm(x, 2, w, b),
        [((2, 4, 3), (4,), (4,))],
        FLOATS,
        order=2,
    ),
]


@pytest.mark.parametrize("rec,dtype", records_params(RECORDS))
def test_forward(rec, dtype, device):
    check_forward(rec, dtype, device)


@pytest.mark.parametrize("rec", records_params([r for r in RECORDS if r.grad], dtypes=False))
def test_backward(rec, device):
    check_backward(rec, device)


# ---- Numba kernels against the xp impls -------------------------------------------------


@pytest.mark.parametrize("shape", [(1, 1), (7, 13), (5, 1), (1, 33), (64, 2049)])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_kernel_matches_xp(shape, log):
    prim = act.log_softmax_p if log else act.softmax_p
    x = np.random.default_rng(1).standard_normal(shape)
    for dt in (np.float32, np.float64):
        a = x.astype(dt)
        got = prim.impls["cpu"](np, a, axis=(1,))
        want = prim.impls["any"](np, a, axis=(1,))
        np.testing.assert_allclose(
            got,
            want,
            rtol=1e-5 if dt == np.float32 else 1e-12,
            atol=1e-6 if dt == np.float32 else 1e-13,
        )


def test_softmax_kernel_large_inputs():
    x = np.array([[1e4, 1e4 - 1, -1e4], [-1e38, 1e38, 0.0], [-1e30, -1e30, -1e30]], np.float32)
    got = act.softmax_p.impls["cpu"](np, x, axis=(1,))
    np.testing.assert_allclose(got, special.softmax(x.astype(np.float64), 1), atol=1e-7)
    lg = act.log_softmax_p.impls["cpu"](np, x, axis=(1,))
    np.testing.assert_allclose(lg, special.log_softmax(x.astype(np.float64), 1), rtol=1e-6)
    assert np.isfinite(lg[0]).all() and np.isfinite(got).all()
    big = np.array([[1e300, -1e300, 1e300]])
    np.testing.assert_allclose(act.softmax_p.impls["cpu"](np, big, axis=(1,)), [[0.5, 0, 0.5]])


def test_softmax_kernel_nan_and_inf_rows():
    x = np.array([[-np.inf, -np.inf], [np.nan, 1.0], [0.0, -np.inf]])
    got = act.softmax_p.impls["cpu"](np, x, axis=(1,))
    with np.errstate(invalid="ignore"):
        want = act.softmax_p.impls["any"](np, x, axis=(1,))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "shape,bna", [((3, 7), 1), ((2, 3, 5), 1), ((4, 1), 1), ((2, 3, 5), 2), ((1, 9), 0)]
)
def test_layer_norm_kernels_match_xp(shape, bna):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape) * 3 + 1
    g = rng.standard_normal(shape[bna:])
    b = rng.standard_normal(shape[bna:])
    p = {"begin_norm_axis": bna, "begin_params_axis": bna, "epsilon": 1e-5}
    got = act.layer_norm_p.impls["cpu"](np, x, g, b, **p)
    want = act.layer_norm_p.impls["any"](np, x, g, b, **p)
    for o, w in zip(got, want):
        np.testing.assert_allclose(o, w, rtol=1e-12, atol=1e-12)
    gy, gm, gv = (
        rng.standard_normal(shape),
        rng.standard_normal(want[1].shape),
        rng.standard_normal(want[1].shape),
    )
    args = (gy, gm, gv, x, g, want[1], want[2])
    got = act.layer_norm_grad_p.impls["cpu"](np, *args, **p)
    ref = act.layer_norm_grad_p.impls["any"](np, *args, **p)
    for o, w in zip(got, ref):
        assert o.shape == w.shape
        np.testing.assert_allclose(o, w, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("shape", [(4, 3), (2, 5, 3, 3), (7, 1, 2)])
def test_batch_norm_kernels_match_xp(shape):
    rng = np.random.default_rng(3)
    c = shape[1]
    x, w, b = rng.standard_normal(shape), rng.standard_normal(c), rng.standard_normal(c)
    got = act.batch_norm_train_p.impls["cpu"](np, x, w, b, eps=1e-5)
    want = act.batch_norm_train_p.impls["any"](np, x, w, b, eps=1e-5)
    for o, r in zip(got, want):
        np.testing.assert_allclose(o, r, rtol=1e-12, atol=1e-12)
    args = (
        rng.standard_normal(shape),
        rng.standard_normal(c),
        rng.standard_normal(c),
        x,
        w,
        want[1],
        want[2],
    )
    got = act.batch_norm_grad_p.impls["cpu"](np, *args, eps=1e-5)
    ref = act.batch_norm_grad_p.impls["any"](np, *args, eps=1e-5)
    for o, r in zip(got, ref):
        np.testing.assert_allclose(o, r, rtol=1e-10, atol=1e-10)


def test_norm_kernels_large_offset():
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((6, 50)) + 1e4).astype(np.float32)
    ones, zeros = np.ones(50, np.float32), np.zeros(50, np.float32)
    y, m, v = act.layer_norm_p.impls["cpu"](
        np, x, ones, zeros, begin_norm_axis=1, begin_params_axis=1, epsilon=1e-7
    )
    want, wm, wv = ref_layer_norm(x.astype(np.float64), 1.0, 0.0, 1, 1e-7)
    np.testing.assert_allclose(y, want, atol=2e-3)
    np.testing.assert_allclose(v, wv, rtol=1e-3)
    xb = np.ascontiguousarray(x.T.reshape(5, 10, 6))
    yb, _, vb = act.batch_norm_train_p.impls["cpu"](
        np, xb, np.ones(10, np.float32), np.zeros(10, np.float32), eps=1e-5
    )
    np.testing.assert_allclose(
        yb, ref_batch_norm(xb.astype(np.float64), np.ones(10), np.zeros(10)), atol=2e-3
    )


def test_layer_norm_outputs_and_doc_example():
    y, mean, var = ops.layer_norm(
        Tensor([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]), Tensor([1.0] * 3), Tensor([1.0] * 3)
    )
    np.testing.assert_allclose(y.asnumpy(), [[-0.2247448, 1.0, 2.2247448]] * 2, rtol=1e-6)
    assert mean.shape == var.shape == (2, 1)
    np.testing.assert_allclose(var.asnumpy(), [[2 / 3], [2 / 3]], rtol=1e-6)


# ---- batch norm running statistics ---------------------------------------------------------


def test_batch_norm_updates_running_stats(device):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((8, 3, 2))
    rm = Tensor(np.full(3, 0.5), device=device)
    rv = Tensor(np.full(3, 2.0), device=device)
    ops.batch_norm(Tensor(x, device=device), rm, rv, training=True, momentum=0.2)
    bm, bv = x.mean((0, 2)), x.var((0, 2), ddof=1)
    np.testing.assert_allclose(rm.asnumpy(), 0.8 * 0.5 + 0.2 * bm)
    np.testing.assert_allclose(rv.asnumpy(), 0.8 * 2.0 + 0.2 * bv)
    y = ops.batch_norm(Tensor(x, device=device), rm, rv)  # inference leaves them alone
    np.testing.assert_allclose(rm.asnumpy(), 0.8 * 0.5 + 0.2 * bm)
    np.testing.assert_allclose(
        y.asnumpy(),
        (x - rm.asnumpy()[:, None]) / np.sqrt(rv.asnumpy()[:, None] + 1e-5),
    )


# ---- random ops ----------------------------------------------------------------------------


def test_dropout(device):
    x = Tensor(np.ones((200, 100), np.float32), device=device)
    out, mask = ops.dropout(x, p=0.3)
    m = mask.asnumpy()
    assert out.dtype == mask.dtype == x.dtype and set(np.unique(m)) <= {0.0, 1.0}
    assert abs(m.mean() - 0.7) < 0.02
    np.testing.assert_allclose(out.asnumpy(), m / 0.7, rtol=1e-6)
    a, _ = ops.dropout(x, 0.3, seed0=3, seed1=4)
    b, _ = ops.dropout(x, 0.3, seed0=3, seed1=4)
    c, _ = ops.dropout(x, 0.3, seed0=3, seed1=5)
    assert np.array_equal(a.asnumpy(), b.asnumpy()) and not np.array_equal(a.asnumpy(), c.asnumpy())
    same, ones = ops.dropout(x, 0.3, training=False)
    assert same is x and ones.asnumpy().min() == 1
    zero, _ = ops.dropout(x, 1.0)
    assert not zero.asnumpy().any()


def test_dropout_seeded_by_set_seed_and_gradient(device):
    x = Tensor(np.random.default_rng(0).standard_normal((4, 5)), device=device)
    set_seed(7)
    a, ma = ops.dropout(x, 0.5)
    set_seed(7)
    b, _ = ops.dropout(x, 0.5)
    assert np.array_equal(a.asnumpy(), b.asnumpy())
    g = ops.grad(lambda t: ops.dropout(t, 0.5, 1, 1)[0].sum())(x)
    _, mask = ops.dropout(x, 0.5, 1, 1)
    np.testing.assert_allclose(g.asnumpy(), mask.asnumpy() * 2)
    assert ma.shape == x.shape


def test_gumbel_softmax(device):
    set_seed(11)
    logits = Tensor(np.log(np.array([[0.7, 0.2, 0.1]] * 2000)), device=device)
    y = ops.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(y.asnumpy().sum(1), 1, rtol=1e-6)
    hard = ops.gumbel_softmax(logits, hard=True)
    h = hard.asnumpy()
    assert set(np.unique(h)) <= {0.0, 1.0} and (h.sum(1) == 1).all()
    np.testing.assert_allclose(h.mean(0), [0.7, 0.2, 0.1], atol=0.04)  # Gumbel-max sampling
    g = ops.grad(
        lambda t: (
            ops.gumbel_softmax(t, hard=True, dim=0) * Tensor(np.arange(3.0), device=device)
        ).sum()
    )(Tensor(np.zeros(3), device=device))
    assert g.shape == (3,) and np.abs(g.asnumpy()).sum() > 0  # straight-through gradient


# ---- dtypes and second order -------------------------------------------------------------


def test_relu_keeps_integer_dtype_and_float16():
    assert ops.relu(Tensor([-1, 2], dtype="int32")).tolist() == [0, 2]
    assert ops.relu(Tensor([-1, 2], dtype="int32")).dtype == "int32"
    assert ops.sigmoid(Tensor([1, 2])).dtype == "float32"
    assert ops.softmax(Tensor([1.0, 2.0], dtype="float16")).dtype == "float16"


def test_softmax_grad_grad_other_axis():
    x = np.random.default_rng(6).standard_normal((3, 4, 2))
    check_grad_grad(lambda t: ops.softmax(t, (0, 2)), [x])
    check_grad(lambda t: ops.log_softmax(t, 0), [x])


# ---- errors -------------------------------------------------------------------------------


X = Tensor(np.ones((2, 4), np.float32))


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda: ops.relu("a"), TypeError, "relu.*'x'"),
        (lambda: ops.relu(Tensor([True])), TypeError, "relu.*'x'"),
        (lambda: ops.gelu(X, "erf"), ValueError, "gelu.*approximate"),
        (lambda: ops.leaky_relu(X, "a"), TypeError, "leaky_relu.*alpha"),
        (lambda: ops.elu(X, None), TypeError, "elu.*alpha"),
        (lambda: ops.celu(X, 0.0), ValueError, "celu.*alpha"),
        (lambda: ops.soft_shrink(X, -1.0), ValueError, "soft_shrink.*lambd"),
        (lambda: ops.hardshrink(X, float("nan")), ValueError, "hardshrink.*lambd"),
        (lambda: ops.softplus(X, beta=0), ValueError, "softplus.*beta"),
        (lambda: ops.softmax(X, 2), ValueError, "softmax.*axis"),
        (lambda: ops.softmax(X, (0, 0)), ValueError, "softmax.*axis"),
        (lambda: ops.softmax(X, 1.5), TypeError, "softmax.*axis"),
        (lambda: ops.log_softmax(X, -3), ValueError, "log_softmax.*axis"),
        (lambda: ops.gumbel_softmax(X, tau=0), ValueError, "gumbel_softmax.*tau"),
        (lambda: ops.gumbel_softmax(X, hard=1), TypeError, "gumbel_softmax.*hard"),
        (lambda: ops.gumbel_softmax(X, dim=2), ValueError, "gumbel_softmax.*dim"),
        (lambda: ops.dropout(X, 1.5), ValueError, "dropout.*'p'"),
        (lambda: ops.dropout(X, 0.5, -1), TypeError, "dropout.*seed0"),
        (lambda: ops.dropout(Tensor([1, 2]), 0.5), TypeError, "dropout.*'x'"),
        (lambda: ops.prelu(X, Tensor([1.0, 2.0, 3.0])), ValueError, "prelu.*weight"),
        (lambda: ops.glu(Tensor(np.ones((2, 3))), -1), ValueError, "glu.*'x'"),
        (lambda: ops.layer_norm(X, Tensor(np.ones(3))), ValueError, "layer_norm.*gamma"),
        (lambda: ops.layer_norm(X, None, Tensor(np.ones((2, 4)))), ValueError, "layer_norm.*beta"),
        (lambda: ops.layer_norm(X, begin_norm_axis=2), ValueError, "layer_norm.*begin_norm_axis"),
        (lambda: ops.layer_norm(X, epsilon=-1), ValueError, "layer_norm.*epsilon"),
        (
            lambda: ops.layer_norm(Tensor(np.ones((2, 0))), begin_norm_axis=1),
            ValueError,
            "layer_norm.*input_x",
        ),
        (
            lambda: ops.batch_norm(X, Tensor(np.zeros(3)), Tensor(np.ones(4))),
            ValueError,
            "batch_norm.*running_mean",
        ),
        (lambda: ops.batch_norm(X, None, None, momentum=2.0), ValueError, "batch_norm.*momentum"),
        (lambda: ops.batch_norm(Tensor(np.ones(4)), None, None), ValueError, "batch_norm.*input_x"),
        (
            lambda: ops.batch_norm(Tensor(np.ones((1, 4))), None, None, training=True),
            ValueError,
            "batch_norm.*input_x",
        ),
        (lambda: ops.batch_norm(X, None, None, training="yes"), TypeError, "batch_norm.*training"),
        (
            lambda: ops.group_norm(Tensor(np.ones((2, 4, 3))), 3),
            ValueError,
            "group_norm.*num_groups",
        ),
        (
            lambda: ops.group_norm(Tensor(np.ones((2, 4, 3))), 2, Tensor(np.ones(3))),
            ValueError,
            "group_norm.*weight",
        ),
    ],
)
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
