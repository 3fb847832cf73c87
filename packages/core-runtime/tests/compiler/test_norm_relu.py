"""Batch norm + ReLU fused in graph mode (passes/norm_relu.py, ops/activation/norm_relu.py).

The fused primitives against the two ops they replace (forward bit-equal, gradient within
the kernels' fast-math reassociation; odd shapes, float32 and float64, NaN), a numerical
gradient check through the fused pair, and compiled steps against eager: the rewrites
happen (fused forward, fused gradient, a residual add + ReLU storing one tensor) and the
results stay equal."""

import numpy as np
import pytest

import sporeling.core as ms
from sporeling.core import Tensor, grad, nn, ops, value_and_grad
from sporeling.core.compiler import jit
from sporeling.core.ops.activation.elementwise import relu_grad_p, relu_p
from sporeling.core.ops.activation.norm_relu import batch_norm_relu_grad_p, batch_norm_relu_p
from sporeling.core.ops.activation.normalization import batch_norm_grad_p, batch_norm_train_p


@pytest.fixture(autouse=True)
def _fusion_on():
    before = ms.get_context("enable_graph_kernel")
    ms.set_context(enable_graph_kernel=True)
    yield
    ms.set_context(enable_graph_kernel=before)


def _t(shape, seed, dtype=np.float32, scale=1.0):
    rng = np.random.default_rng(seed)
    return Tensor((rng.standard_normal(shape) * scale + 0.3).astype(dtype))


# the last is large enough for blocks of channels on several threads (kernels/cpu/_jobs.py)
SHAPES = [(2, 3, 5, 7), (1, 4, 3, 3), (6, 5), (2, 3, 2, 3, 2), (16, 16, 32, 32)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_primitives_bit_equal_to_the_pair(shape, dtype):
    c = shape[1]
    x, w, b = _t(shape, 1, dtype), _t((c,), 2, dtype), _t((c,), 3, dtype)
    gz, gm, gv = _t(shape, 4, dtype), _t((c,), 5, dtype), _t((c,), 6, dtype)
    y, mean, var = batch_norm_train_p.bind(x, w, b, eps=1e-5)
    z_ref = relu_p.bind(y)
    z, mean2, var2 = batch_norm_relu_p.bind(x, w, b, eps=1e-5)
    for got, want in ((z, z_ref), (mean2, mean), (var2, var)):
        np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())
    ref = batch_norm_grad_p.bind(relu_grad_p.bind(gz, z_ref), gm, gv, x, w, mean, var, eps=1e-5)
    got = batch_norm_relu_grad_p.bind(gz, gm, gv, x, w, mean, var, z, eps=1e-5)
    # the gradient kernel may reassociate and contract (FASTMATH) differently once the mask
    # is in its loops: float64 results differ in the last bit at most
    tol = {"rtol": 1e-6, "atol": 1e-7} if dtype == np.float32 else {"rtol": 1e-13, "atol": 1e-15}
    for g, r in zip(got, ref, strict=True):
        np.testing.assert_allclose(g.asnumpy(), r.asnumpy(), **tol)


def test_fused_primitives_non_contiguous_and_nan():
    base = _t((4, 3, 6, 8), 7).asnumpy()
    x = Tensor(base[::2, :, ::2, 1:6])  # a strided view: the kernels copy it
    x.asnumpy()  # noqa: B018
    xv = base[::2, :, ::2, 1:6].copy()
    xv[0, 1, 0, 0] = np.nan
    x = Tensor(xv)
    w, b = _t((3,), 8), _t((3,), 9)
    y, mean, var = batch_norm_train_p.bind(x, w, b, eps=1e-3)
    z, _, _ = batch_norm_relu_p.bind(x, w, b, eps=1e-3)
    np.testing.assert_array_equal(z.asnumpy(), relu_p.bind(y).asnumpy())
    assert np.isnan(z.asnumpy()[:, 1]).all() and not np.isnan(z.asnumpy()[:, [0, 2]]).any()
    gz = _t(z.shape, 10)
    got = batch_norm_relu_grad_p.bind(gz, mean, var, x, w, mean, var, z, eps=1e-3)
    ref = batch_norm_grad_p.bind(relu_grad_p.bind(gz, z), mean, var, x, w, mean, var, eps=1e-3)
    for g, r in zip(got, ref, strict=True):
        np.testing.assert_allclose(g.asnumpy(), r.asnumpy(), rtol=1e-6, atol=1e-7)


def _block(x, g1, b1, g2, b2, r):
    """conv-net shape without the convs: BN + ReLU, BN, residual add + ReLU."""
    h = ops.relu(ops.batch_norm(x, None, None, g1, b1, training=True))
    h = ops.relu(ops.batch_norm(h * 1.5, None, None, g2, b2, training=True) + x)
    return ops.reduce_sum(ops.matmul(ops.reshape(h, (h.shape[0], -1)), r))


def test_graph_step_fuses_and_matches_eager():
    x = _t((3, 4, 5, 5), 11)
    g1, b1, g2, b2 = (_t((4,), s) for s in (12, 13, 14, 15))
    r = _t((100, 3), 16)

    def loss(x, g1, b1, g2, b2):
        return _block(x, g1, b1, g2, b2, r)

    eager = value_and_grad(loss, (0, 1, 2, 3, 4))(x, g1, b1, g2, b2)
    step = jit(value_and_grad(loss, (0, 1, 2, 3, 4)))
    graph = step(x, g1, b1, g2, b2)
    np.testing.assert_allclose(graph[0].asnumpy(), eager[0].asnumpy(), rtol=1e-6)
    for g, e in zip(graph[1], eager[1], strict=True):
        np.testing.assert_allclose(g.asnumpy(), e.asnumpy(), rtol=1e-6, atol=1e-6)
    (compiled,) = step._cache.values()
    names = [e.prim.name for e in compiled.graph.eqns]
    assert "batch_norm_relu" in names and "batch_norm_relu_grad" in names, names
    assert "relu" not in names and "batch_norm_grad" in names, names
    # the residual add + ReLU stores only the ReLU's output: its gradient reads that
    (add_relu,) = [e for e in compiled.graph.eqns if e.prim.name.endswith("add,relu]")]
    assert len(add_relu.outputs) == 1, names


def test_fusion_off_keeps_the_ops():
    ms.set_context(enable_graph_kernel=False)
    x = _t((2, 3, 4, 4), 17)
    g, b = _t((3,), 18), _t((3,), 19)

    def f(x, g, b):
        return ops.reduce_sum(ops.relu(ops.batch_norm(x, None, None, g, b, training=True)))

    step = jit(value_and_grad(f, (0, 1, 2)))
    step(x, g, b)
    (compiled,) = step._cache.values()
    names = [e.prim.name for e in compiled.graph.eqns]
    assert "batch_norm_relu" not in names and "batch_norm_relu_grad" not in names, names
    assert {"batch_norm_train", "relu", "relu_grad", "batch_norm_grad"} <= set(names), names


def test_numerical_gradient_through_the_fused_pair():
    """float64 central differences of the compiled function against its compiled gradient."""
    x = _t((2, 3, 3, 2), 20, np.float64, 2.0)
    g, b = _t((3,), 21, np.float64), _t((3,), 22, np.float64)
    r = _t((2, 3, 3, 2), 23, np.float64)

    def f(x, g, b):
        h = ops.relu(ops.batch_norm(x, None, None, g, b, training=True))
        return ops.reduce_sum(h * r)

    fj = jit(f)
    grads = jit(grad(f, (0, 1, 2)))(x, g, b)
    args = [x.asnumpy().copy(), g.asnumpy().copy(), b.asnumpy().copy()]
    eps = 1e-6
    for k, analytic in enumerate(grads):
        num = np.zeros_like(args[k])
        for idx in np.ndindex(args[k].shape):
            vals = []
            for sgn in (1, -1):
                a = [v.copy() for v in args]
                a[k][idx] += sgn * eps
                vals.append(float(fj(*(Tensor(v) for v in a)).asnumpy()))
            num[idx] = (vals[0] - vals[1]) / (2 * eps)
        np.testing.assert_allclose(analytic.asnumpy(), num, rtol=1e-5, atol=1e-6)


def test_resnet_style_cells_graph_step_matches_eager():
    """A Cell with Conv2d/BatchNorm2d/ReLU and a residual add, one Momentum step under jit
    against the same step eagerly (same initial weights)."""

    class Blk(nn.Cell):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(3, 3, 3, pad_mode="same", has_bias=False)
            self.b1 = nn.BatchNorm2d(3)
            self.c2 = nn.Conv2d(3, 3, 3, pad_mode="same", has_bias=False)
            self.b2 = nn.BatchNorm2d(3)
            self.relu = nn.ReLU()
            self.fc = nn.Dense(3 * 6 * 6, 4)

        def construct(self, x):
            h = self.relu(self.b1(self.c1(x)))
            h = self.relu(self.b2(self.c2(h)) + x)
            return self.fc(ops.reshape(h, (x.shape[0], -1)))

    def make():
        ms.set_seed(5)
        net = Blk()
        loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        opt = nn.Momentum(net.trainable_params(), 0.05, 0.9)
        cell = nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt)
        cell.set_train()
        return net, cell

    x = _t((2, 3, 6, 6), 24)
    y = Tensor(np.array([1, 3], np.int32))
    net_e, cell_e = make()
    net_g, cell_g = make()
    step = jit(cell_g)
    for _ in range(2):
        le, lg = cell_e(x, y), step(x, y)
        np.testing.assert_allclose(lg.asnumpy(), le.asnumpy(), rtol=1e-6)
    for pe, pg in zip(net_e.get_parameters(), net_g.get_parameters(), strict=True):
        np.testing.assert_allclose(pg.asnumpy(), pe.asnumpy(), rtol=1e-5, atol=1e-6)
    (compiled,) = step._cache.values()
    names = [e.prim.name for e in compiled.graph.eqns]
    assert "batch_norm_relu" in names and "batch_norm_relu_grad" in names, names


def test_fused_primitives_differentiate_like_the_pair():
    """Eager gradients through ``batch_norm_relu`` (its vjp binds the fused gradient) and a
    second derivative through ``batch_norm_relu_grad`` (its vjp differentiates the pair),
    against the same through batch_norm_train + relu."""
    x, w, b = _t((3, 2, 4), 30, np.float64), _t((2,), 31, np.float64), _t((2,), 32, np.float64)
    r = _t((3, 2, 4), 33, np.float64)

    def fused(x, w, b):
        return ops.reduce_sum(batch_norm_relu_p.bind(x, w, b, eps=1e-5)[0] * r)

    def pair(x, w, b):
        return ops.reduce_sum(relu_p.bind(batch_norm_train_p.bind(x, w, b, eps=1e-5)[0]) * r)

    for got, want in zip(grad(fused, (0, 1, 2))(x, w, b), grad(pair, (0, 1, 2))(x, w, b)):
        np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-12, atol=1e-14)

    def second(f):
        return grad(lambda x, w, b: ops.reduce_sum(grad(f, 1)(x, w, b) ** 2), 0)(x, w, b)

    np.testing.assert_allclose(
        second(fused).asnumpy(), second(pair).asnumpy(), rtol=1e-9, atol=1e-12
    )
