"""A Cell's custom bprop(self, *inputs, out, dout) replaces autodiff through construct,
in eager mode, in GRAPH_MODE and under jit (MindSpore's semantics)."""

import numpy as np
import pytest

from sporeling.core import GRAPH_MODE, PYNATIVE_MODE, Tensor, grad, jit, nn, ops, set_context


class ScaledGrad(nn.Cell):
    """Forward x * y; backward deliberately not the true derivative."""

    def construct(self, x, y):
        return x * y

    def bprop(self, x, y, out, dout):
        return dout * 2.0, dout * out


class TwoOut(nn.Cell):
    def construct(self, x):
        return ops.exp(x), x * 3.0

    def bprop(self, x, out, dout):
        return (dout[0] * out[0] + dout[1] * 10.0,)


class Outer(nn.Cell):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.w = nn.Dense(3, 3).weight

    def construct(self, x, y):
        return ops.reduce_sum(self.inner(x, y) * 3.0)


X = np.array([1.0, -2.0, 0.5], np.float32)
Y = np.array([0.5, 4.0, -1.0], np.float32)


@pytest.fixture
def graph_mode():
    set_context(mode=GRAPH_MODE)
    yield
    set_context(mode=PYNATIVE_MODE)


def _expected():
    out = X * Y
    return np.full(3, 6.0), 3.0 * out


def test_eager_grad_uses_bprop():
    net = Outer(ScaledGrad())
    gx, gy = grad(net, grad_position=(0, 1))(Tensor(X), Tensor(Y))
    ex, ey = _expected()
    np.testing.assert_allclose(gx.asnumpy(), ex, rtol=1e-6)
    np.testing.assert_allclose(gy.asnumpy(), ey, rtol=1e-6)


def test_graph_mode_grad_uses_bprop(graph_mode):
    net = Outer(ScaledGrad())
    gx, gy = grad(net, grad_position=(0, 1))(Tensor(X), Tensor(Y))
    ex, ey = _expected()
    np.testing.assert_allclose(gx.asnumpy(), ex, rtol=1e-6)
    np.testing.assert_allclose(gy.asnumpy(), ey, rtol=1e-6)


def test_jit_of_grad_uses_bprop():
    net = Outer(ScaledGrad())
    step = jit(grad(net, grad_position=(0, 1)))
    for _ in range(2):  # second call runs the cached graph
        gx, gy = step(Tensor(X), Tensor(Y))
        ex, ey = _expected()
        np.testing.assert_allclose(gx.asnumpy(), ex, rtol=1e-6)
        np.testing.assert_allclose(gy.asnumpy(), ey, rtol=1e-6)


def test_multiple_outputs_get_tuple_out_and_dout():
    net = TwoOut()

    def f(x):
        a, b = net(x)
        return ops.reduce_sum(a) + ops.reduce_sum(b * 2.0)

    g = grad(f)(Tensor(X))
    np.testing.assert_allclose(g.asnumpy(), np.exp(X) + 20.0, rtol=1e-6)


def test_forward_value_unchanged_and_no_grad_path():
    net = ScaledGrad()
    np.testing.assert_allclose(net(Tensor(X), Tensor(Y)).asnumpy(), X * Y)


def test_wrong_number_of_gradients_is_a_clear_error():
    class Bad(nn.Cell):
        def construct(self, x, y):
            return x + y

        def bprop(self, x, y, out, dout):
            return (dout,)

    with pytest.raises(ValueError, match="expected a tuple of 2 gradients"):
        grad(lambda x, y: ops.reduce_sum(Bad()(x, y)))(Tensor(X), Tensor(Y))
