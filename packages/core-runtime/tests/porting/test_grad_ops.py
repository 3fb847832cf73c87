"""MindSpore's ``_grad_ops`` classes a bprop calls, the Ascend float-status classes (no-ops
here, documented) and ``P.BatchNorm``'s batch statistics in training, each against NumPy."""

import numpy as np
import pytest

from sporeling.core import Parameter, Tensor, grad, ops
from sporeling.core.ops import operations as P
from sporeling.core.ops.operations import _grad_ops as G
from sporeling_testing.gradcheck import check_grad

rng = np.random.default_rng(0)


def _t(a):
    return Tensor(np.asarray(a, np.float64))


X = rng.standard_normal((3, 4))
DY = rng.standard_normal((3, 4))
Y = rng.uniform(0.2, 0.9, (3, 4))
CASES = [
    (G.ReluGrad, (DY, X), DY * (X > 0)),
    (G.ReLU6Grad, (DY, X * 4), DY * ((X * 4 > 0) & (X * 4 < 6))),
    (G.SigmoidGrad, (Y, DY), DY * Y * (1 - Y)),
    (G.TanhGrad, (Y, DY), DY * (1 - Y**2)),
    (G.SqrtGrad, (Y, DY), DY / (2 * Y)),
    (G.RsqrtGrad, (Y, DY), -0.5 * DY * Y**3),
    (G.ReciprocalGrad, (Y, DY), -DY * Y**2),
    (G.SoftplusGrad, (DY, X), DY / (1 + np.exp(-X))),
    (G.EluGrad, (DY, X), np.where(X > 0, DY, DY * (X + 1))),
]


@pytest.mark.parametrize("cls,inputs,expected", CASES, ids=[c[0].__name__ for c in CASES])
def test_elementwise_grad_ops_match_numpy_and_differentiate(cls, inputs, expected):
    out = cls()(*[_t(a) for a in inputs])
    np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-12, atol=1e-12)
    check_grad(lambda a, b: cls()(a, b), [inputs[0], inputs[1]])


def test_bias_add_grad_sums_all_but_the_channel_axis():
    d = rng.standard_normal((2, 3, 4, 5))
    np.testing.assert_allclose(G.BiasAddGrad()(_t(d)).asnumpy(), d.sum((0, 2, 3)), rtol=1e-12)
    nhwc = G.BiasAddGrad(data_format="NHWC")(_t(d)).asnumpy()
    np.testing.assert_allclose(nhwc, d.sum((0, 1, 2)), rtol=1e-12)
    check_grad(lambda a: G.BiasAddGrad()(a), [d])


def test_maximum_and_minimum_grad_route_and_reduce_broadcasting():
    a, b, dout = (
        rng.standard_normal((2, 3)),
        rng.standard_normal((1, 3)),
        rng.standard_normal((2, 3)),
    )
    dx, dy = G.MaximumGrad()(_t(a), _t(b), _t(dout))
    np.testing.assert_allclose(dx.asnumpy(), np.where(a >= b, dout, 0), rtol=1e-12)
    np.testing.assert_allclose(dy.asnumpy(), np.where(a >= b, 0, dout).sum(0, keepdims=True))
    dx, dy = G.MinimumGrad()(_t(a), _t(b), _t(dout))
    np.testing.assert_allclose(dx.asnumpy(), np.where(a <= b, dout, 0), rtol=1e-12)
    dx, dy = G.MaximumGrad(grad_x=False)(_t(a), _t(b), _t(dout))
    assert not dx.asnumpy().any()


def test_pool_grads_are_the_forward_pools_vjp():
    x = rng.standard_normal((1, 2, 4, 4))
    dout = rng.standard_normal((1, 2, 2, 2))
    out = P.MaxPool(2, 2)(_t(x))
    dx = G.MaxPoolGrad(2, 2)(_t(x), out, _t(dout)).asnumpy()
    expected = np.zeros_like(x)
    for c in range(2):
        for i in range(2):
            for j in range(2):
                win = x[0, c, 2 * i : 2 * i + 2, 2 * j : 2 * j + 2]
                k, m = np.unravel_index(np.argmax(win), (2, 2))
                expected[0, c, 2 * i + k, 2 * j + m] = dout[0, c, i, j]
    np.testing.assert_allclose(dx, expected, rtol=1e-12)
    avg = G.AvgPoolGrad(2, 2)(_t(x), P.AvgPool(2, 2)(_t(x)), _t(dout)).asnumpy()
    np.testing.assert_allclose(avg, np.repeat(np.repeat(dout, 2, 2), 2, 3) / 4, rtol=1e-12)


def test_npu_float_status_ops_are_documented_no_ops():
    status = P.NPUAllocFloatStatus()()
    assert status.shape == (8,) and status.asnumpy().dtype == np.float32
    assert not status.asnumpy().any()
    assert P.NPUClearFloatStatus()(status) is status
    with pytest.warns(UserWarning, match="no NPU overflow register"):
        got = P.NPUGetFloatStatus()(status)
    assert got is status


def test_batch_norm_training_returns_batch_statistics_and_updates_moving_ones():
    x = rng.standard_normal((4, 3, 2, 2)).astype(np.float32)
    scale, bias = np.float32([1.0, 2.0, 0.5]), np.float32([0.0, 1.0, -1.0])
    mean = Parameter(Tensor(np.zeros(3, np.float32)), name="mean")
    var = Parameter(Tensor(np.ones(3, np.float32)), name="var")
    bn = P.BatchNorm(is_training=True, epsilon=1e-5, momentum=0.1)
    y, bm, bv, r1, r2 = bn(Tensor(x), Tensor(scale), Tensor(bias), mean, var)
    m, v = x.mean((0, 2, 3)), x.var((0, 2, 3))
    np.testing.assert_allclose(bm.asnumpy(), m, rtol=1e-5)
    np.testing.assert_allclose(bv.asnumpy(), v, rtol=1e-5)
    np.testing.assert_allclose(r1.asnumpy(), m, rtol=1e-5)
    np.testing.assert_allclose(r2.asnumpy(), v, rtol=1e-5)
    ref = (x - m[:, None, None]) / np.sqrt(v[:, None, None] + 1e-5) * scale[:, None, None]
    np.testing.assert_allclose(y.asnumpy(), ref + bias[:, None, None], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(mean.asnumpy(), 0.1 * m, rtol=1e-5)
    n = x.size / 3
    np.testing.assert_allclose(var.asnumpy(), 0.9 + 0.1 * v * n / (n - 1), rtol=1e-5)
    # only y carries gradients, as in MindSpore's bprop
    g = grad(lambda a: ops.reduce_sum(bn(a, Tensor(scale), Tensor(bias), mean, var)[1]))(Tensor(x))
    assert not g.asnumpy().any()
    infer = P.BatchNorm(is_training=False)(Tensor(x), Tensor(scale), Tensor(bias), mean, var)
    assert infer[1] is mean and infer[2] is var


# ---- LayerNormGrad, BatchNormGrad, Conv2DBackprop* (against NumPy float64) ----------


def _np_layer_norm_grad(x, dy, var, mean, gamma, axis):
    axes = tuple(range(axis, x.ndim))
    rstd = 1 / np.sqrt(var + 1e-12)
    xhat = (x - mean) * rstd
    g = dy * gamma
    dx = rstd * (g - g.mean(axes, keepdims=True) - xhat * (g * xhat).mean(axes, keepdims=True))
    return dx, (dy * xhat).sum(0), dy.sum(0)


def test_layer_norm_grad_matches_numpy_and_the_forwards_vjp():
    x, dy = rng.standard_normal((4, 3, 5)), rng.standard_normal((4, 3, 5))
    gamma = rng.standard_normal((3, 5))
    mean = x.mean((1, 2), keepdims=True)
    var = x.var((1, 2), keepdims=True)
    dx, dgamma, dbeta = G.LayerNormGrad(1, 1)(_t(x), _t(dy), _t(var), _t(mean), _t(gamma))
    want = _np_layer_norm_grad(x, dy, var, mean, gamma, 1)
    for got, w in zip((dx, dgamma, dbeta), want, strict=True):
        np.testing.assert_allclose(got.asnumpy(), w, rtol=1e-9, atol=1e-12)
    # the same as differentiating the forward LayerNorm (epsilon 1e-12)
    _, pullback = ops.vjp(
        lambda a, g: P.LayerNorm(1, 1, 1e-12)(a, g, _t(np.zeros((3, 5))))[0], _t(x), _t(gamma)
    )
    fdx, fdg = pullback(_t(dy))
    np.testing.assert_allclose(dx.asnumpy(), fdx.asnumpy(), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(dgamma.asnumpy(), fdg.asnumpy(), rtol=1e-8, atol=1e-10)
    check_grad(
        lambda a, d, g: G.LayerNormGrad(1, 1)(a, d, _t(var), _t(mean), g)[0],
        [x, dy, gamma],
        wrt=[1, 2],
    )


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_grad_matches_numpy(training):
    x, dy = rng.standard_normal((4, 3, 2, 2)), rng.standard_normal((4, 3, 2, 2))
    scale = rng.standard_normal(3)
    mean, var = x.mean((0, 2, 3)), x.var((0, 2, 3))
    op = G.BatchNormGrad(is_training=training, epsilon=1e-5)
    dx, dscale, dbias = op(_t(dy), _t(x), _t(scale), _t(mean), _t(var), _t(var))
    c = (slice(None), None, None)
    rstd = 1 / np.sqrt(var + 1e-5)
    xhat = (x - mean[c]) * rstd[c]
    np.testing.assert_allclose(dbias.asnumpy(), dy.sum((0, 2, 3)), rtol=1e-10)
    np.testing.assert_allclose(dscale.asnumpy(), (dy * xhat).sum((0, 2, 3)), rtol=1e-10)
    if training:
        m = x.size / 3
        want = (
            scale[c]
            * rstd[c]
            / m
            * (m * dy - dy.sum((0, 2, 3))[c] - xhat * (dy * xhat).sum((0, 2, 3))[c])
        )
    else:
        want = dy * scale[c] * rstd[c]
    np.testing.assert_allclose(dx.asnumpy(), want, rtol=1e-9, atol=1e-12)
    check_grad(lambda d, s: op(d, _t(x), s, _t(mean), _t(var))[0], [dy, scale])


def _np_conv_grads(x, w, dout, stride):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    dx, dw = np.zeros_like(x), np.zeros_like(w)
    for i in range(dout.shape[2]):
        for j in range(dout.shape[3]):
            patch = x[:, :, i * stride : i * stride + kh, j * stride : j * stride + kw]
            dx[:, :, i * stride : i * stride + kh, j * stride : j * stride + kw] += np.einsum(
                "no,ocij->ncij", dout[:, :, i, j], w
            )
            dw += np.einsum("no,ncij->ocij", dout[:, :, i, j], patch)
    return dx, dw


def test_conv2d_backprop_input_and_filter_match_numpy():
    x = rng.standard_normal((2, 3, 7, 7))
    w = rng.standard_normal((4, 3, 3, 3))
    dout = rng.standard_normal((2, 4, 3, 3))  # valid, stride 2
    want_dx, want_dw = _np_conv_grads(x, w, dout, 2)
    bi = G.Conv2DBackpropInput(4, 3, "valid", stride=2)
    bf = G.Conv2DBackpropFilter(4, 3, "valid", stride=2)
    dx = bi(_t(dout), _t(w), x.shape)
    dw = bf(_t(dout), _t(x), Tensor(np.array(w.shape)))
    np.testing.assert_allclose(dx.asnumpy(), want_dx, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dw.asnumpy(), want_dw, rtol=1e-10, atol=1e-12)
    check_grad(lambda d, k: bi(d, k, x.shape), [dout, w])
    check_grad(lambda d, a: bf(d, a, w.shape), [dout, x])


def test_conv2d_backprop_with_padding_is_the_forwards_vjp():
    x = rng.standard_normal((1, 2, 5, 5))
    w = rng.standard_normal((3, 2, 3, 3))
    conv = P.Conv2D(3, 3, pad_mode="pad", pad=1)
    out, pullback = ops.vjp(conv, _t(x), _t(w))
    dout = rng.standard_normal(out.shape)
    fdx, fdw = pullback(_t(dout))
    dx = G.Conv2DBackpropInput(3, 3, pad_mode="pad", pad=1)(_t(dout), _t(w), x.shape)
    dw = G.Conv2DBackpropFilter(3, 3, pad_mode="pad", pad=1)(_t(dout), _t(x), w.shape)
    # padded by one: the NumPy reference on the zero-padded input, cropped
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    want_dx, want_dw = _np_conv_grads(xp, w, dout, 1)
    np.testing.assert_allclose(dx.asnumpy(), want_dx[:, :, 1:-1, 1:-1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dw.asnumpy(), want_dw, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dx.asnumpy(), fdx.asnumpy(), rtol=1e-12)
    np.testing.assert_allclose(dw.asnumpy(), fdw.asnumpy(), rtol=1e-12)


# ---- more _grad_ops: inverse trigonometric, GeLU, dropout, losses, hard activations ----------

U = rng.uniform(-0.9, 0.9, (3, 4))
BIG = rng.uniform(1.2, 3.0, (3, 4))
X4 = X * 4
HSWISH = np.where(X4 <= -3, 0, np.where(X4 >= 3, 1, (2 * X4 + 3) / 6))
MORE = [
    (G.AcosGrad, (U, DY), -DY / np.sqrt(1 - U**2)),
    (G.AsinGrad, (U, DY), DY / np.sqrt(1 - U**2)),
    (G.AtanGrad, (X, DY), DY / (1 + X**2)),
    (G.AcoshGrad, (BIG, DY), DY / np.sinh(BIG)),
    (G.AsinhGrad, (X, DY), DY / np.cosh(X)),
    (
        G.HSwishGrad,
        (DY, X * 4),
        DY * np.where(X * 4 <= -3, 0, np.where(X * 4 >= 3, 1, (8 * X + 3) / 6)),
    ),
    (G.HSigmoidGrad, (DY, X * 4), np.where(np.abs(X * 4) < 3, DY / 6, 0)),
]


@pytest.mark.parametrize("cls,inputs,expected", MORE, ids=[c[0].__name__ for c in MORE])
def test_more_elementwise_grad_ops_match_numpy(cls, inputs, expected):
    out = cls()(*[_t(a) for a in inputs])
    np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-12, atol=1e-12)
    if cls not in (G.HSwishGrad, G.HSigmoidGrad):  # (kinks: checked away from them below)
        check_grad(lambda a, b: cls()(a, b), [inputs[0], inputs[1]])
    else:
        check_grad(lambda b: cls()(b, _t(inputs[1])), [inputs[0]])


def test_gelu_grad_is_the_forward_gelus_derivative():
    x = rng.standard_normal((3, 4))
    dx = G.GeLUGrad()(_t(DY), _t(x), P.GeLU()(_t(x))).asnumpy()
    eps = 1e-6
    fwd = lambda a: P.GeLU()(_t(a)).asnumpy()  # noqa: E731
    np.testing.assert_allclose(dx, DY * (fwd(x + eps) - fwd(x - eps)) / (2 * eps), rtol=1e-6)


def test_dropout_sigmoid_ce_and_smooth_l1_grads_match_numpy():
    mask = (rng.random((3, 4)) < 0.7).astype(np.float64)
    out = G.DropoutGrad(keep_prob=0.7)(_t(DY), _t(mask)).asnumpy()
    np.testing.assert_allclose(out, DY * mask / 0.7, rtol=1e-12)
    y = rng.random((3, 4))
    got = G.SigmoidCrossEntropyWithLogitsGrad()(_t(X), _t(y), _t(DY)).asnumpy()
    np.testing.assert_allclose(got, (1 / (1 + np.exp(-X)) - y) * DY, rtol=1e-12)
    check_grad(lambda a: G.SigmoidCrossEntropyWithLogitsGrad()(a, _t(y), _t(DY)), [X])
    t = rng.standard_normal((3, 4))
    d = X - t
    want = DY * np.where(np.abs(d) < 0.5, d / 0.5, np.sign(d))
    got = G.SmoothL1LossGrad(beta=0.5)(_t(X), _t(t), _t(DY)).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-12)
