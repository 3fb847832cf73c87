"""Second-order gradients through a ``while`` loop on tensor values in graph mode: the
vjp of ``while_loop_grad`` differentiates the loop's gradient written with ``while_loop``
primitives (trip count, then each iteration's carry recomputed), checked against the
eager Python loop and against finite differences of the gradient."""

import numpy as np

from sporeling.core import GRAPH_MODE, PYNATIVE_MODE, Tensor, grad, nn, ops, set_context
from sporeling.core.compiler import jit
from sporeling_testing.gradcheck import check_grad_grad

X = np.array([0.2, -0.1, 0.3])
W = np.array([1.1, 0.9, 1.3])
U = Tensor(np.array([1.0, 2.0, 3.0]))


def loop(x, w, limit):
    while ops.reduce_sum(x * x) < limit:  # a trip count that depends on x and w
        x = ops.tanh(x * w) + x
    return x * w


def _second_order(fn):
    def loss(x, w):
        return ops.reduce_sum(fn(x, w, Tensor(5.0)) ** 2)

    def of_grads(x, w):
        gx, gw = grad(loss, grad_position=(0, 1))(x, w)
        return ops.reduce_sum(gx * U) + ops.reduce_sum(gw * gw)

    return grad(of_grads, grad_position=(0, 1))


def test_grad_of_grad_through_a_compiled_loop_matches_the_python_loop():
    want = _second_order(loop)(Tensor(X), Tensor(W))
    compiled_loop = _second_order(jit(loop))(Tensor(X), Tensor(W))
    whole_graph = jit(_second_order(loop))(Tensor(X), Tensor(W))  # one graph, loops inside
    for got in (compiled_loop, whole_graph):
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g.asnumpy(), w.asnumpy(), rtol=1e-10)


def test_second_order_gradients_match_finite_differences():
    check_grad_grad(jit(loop), [X, W, np.array(5.0)], wrt=[0, 1])


def test_a_loop_that_runs_no_iteration_has_the_identity_second_order():
    # limit 0: no iteration, x * w: d2/dx dw of sum((x w)^2) is 4 x w
    def h(x, w):
        gx = grad(lambda a: ops.reduce_sum(jit(loop)(a, w, Tensor(0.0)) ** 2))(x)
        return ops.reduce_sum(gx)

    gw = grad(h, grad_position=1)(Tensor(X), Tensor(W))
    np.testing.assert_allclose(gw.asnumpy(), 4 * X * W, rtol=1e-12)


class Grow(nn.Cell):
    def construct(self, x, w):
        n = ops.zeros((), "float64")
        while n < 3:
            x = ops.sin(x) * w + x
            n = n + 1
        return ops.reduce_sum(x * x)


def test_cell_in_graph_mode_second_order():
    net = Grow()

    def g2(x, w):
        gx = grad(net, grad_position=0)(x, w)
        return ops.reduce_sum(gx * gx)

    set_context(mode=GRAPH_MODE)
    try:
        got = grad(g2, grad_position=(0, 1))(Tensor(X), Tensor(W))
    finally:
        set_context(mode=PYNATIVE_MODE)
    want = grad(g2, grad_position=(0, 1))(Tensor(X), Tensor(W))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.asnumpy(), w.asnumpy(), rtol=1e-10)
