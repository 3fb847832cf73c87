"""grad / value_and_grad / vjp / jvp / vmap / backward semantics, higher order included."""

import numpy as np
import pytest

from sporeling.core import (
    Parameter,
    Tensor,
    grad,
    jvp,
    no_grad,
    ops,
    stop_gradient,
    value_and_grad,
    vjp,
    vmap,
)


def f(x, y):
    return (x * x * y).sum()


X = np.array([1.0, 2.0, 3.0])
Y = np.array([0.5, -1.0, 2.0])


def test_grad_positions():
    x, y = Tensor(X), Tensor(Y)
    np.testing.assert_allclose(grad(f)(x, y).asnumpy(), 2 * X * Y)
    gx, gy = grad(f, grad_position=(0, 1))(x, y)
    np.testing.assert_allclose(gx.asnumpy(), 2 * X * Y)
    np.testing.assert_allclose(gy.asnumpy(), X * X)
    np.testing.assert_allclose(grad(f, grad_position=-1)(x, y).asnumpy(), X * X)


def test_grad_weights_and_positions():
    w = Parameter(np.array([2.0, 3.0]), name="w")

    def loss(x):
        return (x * w).sum()

    gw = grad(loss, grad_position=None, weights=[w])(Tensor([1.0, 4.0]))
    assert isinstance(gw, tuple) and gw[0].tolist() == [1, 4]
    gx, (gw,) = grad(loss, grad_position=0, weights=[w])(Tensor([1.0, 4.0]))
    assert gx.tolist() == [2, 3] and gw.tolist() == [1, 4]


def test_value_and_grad_and_has_aux():
    x = Tensor(X)

    def fn(x):
        return (x * x).sum(), x * 2

    (value, aux), g = value_and_grad(fn, has_aux=True)(x)
    assert value.item() == 14 and aux.tolist() == [2, 4, 6]
    np.testing.assert_allclose(g.asnumpy(), 2 * X)
    g2, aux2 = grad(fn, has_aux=True)(x)
    np.testing.assert_allclose(g2.asnumpy(), 2 * X)
    assert aux2[0].tolist() == [2, 4, 6]


def test_multiple_outputs_are_all_differentiated():
    g = grad(lambda x: (x * 2, x * x))(Tensor(X))
    np.testing.assert_allclose(g.asnumpy(), 2 + 2 * X)


def test_non_scalar_output_uses_ones_sensitivity():
    np.testing.assert_allclose(grad(lambda x: x * x)(Tensor(X)).asnumpy(), 2 * X)


def test_unused_input_gets_zeros():
    gx, gy = grad(lambda x, y: x.sum(), grad_position=(0, 1))(Tensor(X), Tensor(Y))
    assert gy.tolist() == [0, 0, 0]


def test_higher_order():
    x = Tensor(X)
    cube = lambda t: (t * t * t).sum()  # noqa: E731
    np.testing.assert_allclose(grad(grad(cube))(x).asnumpy(), 6 * X)
    np.testing.assert_allclose(grad(grad(grad(cube)))(x).asnumpy(), 6 * np.ones(3))
    # mixed second derivative d/dy (d/dx f) = 2x
    dxdy = grad(lambda x, y: grad(f)(x, y).sum(), grad_position=1)(x, Tensor(Y))
    np.testing.assert_allclose(dxdy.asnumpy(), 2 * X)


def test_vjp_and_jvp():
    x = Tensor(X)
    out, pullback = vjp(lambda t: ops.exp(t) * 2, x)
    (g,) = pullback(Tensor(np.ones(3)))
    np.testing.assert_allclose(g.asnumpy(), 2 * np.exp(X))
    out, tangent = jvp(lambda t: t * t, x, Tensor(np.array([1.0, 0.0, 2.0])))
    np.testing.assert_allclose(out.asnumpy(), X * X)
    np.testing.assert_allclose(tangent.asnumpy(), 2 * X * np.array([1.0, 0.0, 2.0]))
    out, tangents = jvp(
        lambda a, b: a * b, (x, Tensor(Y)), (Tensor(np.ones(3)), Tensor(np.ones(3)))
    )
    np.testing.assert_allclose(tangents.asnumpy(), X + Y)


def test_vmap_matches_mindspore_example():
    x = Tensor(np.array([[1, 2], [3, 4], [5, 6]], np.float32))
    y = Tensor(np.array([[-3, -2, -1], [3, 2, 1]], np.float32))
    z = Tensor(np.array([0, 3], np.float32))
    out = vmap(lambda a, b, c: a + b + c, in_axes=(0, 1, None), out_axes=1)(x, y, z)
    np.testing.assert_array_equal(out.asnumpy(), [[-2, 1, 4], [8, 9, 10]])


def test_grad_of_vmap():
    g = grad(lambda x: vmap(lambda r: (r * r).sum())(x).sum())(Tensor(np.ones((2, 3))))
    np.testing.assert_allclose(g.asnumpy(), 2 * np.ones((2, 3)))


def test_backward_accumulates_into_leaves():
    w = Parameter(np.array([1.0, 2.0]), name="w")
    (w * w).sum().backward()
    (w * 3).sum().backward()
    np.testing.assert_allclose(w.grad.asnumpy(), [2 + 3, 4 + 3])
    with pytest.raises(RuntimeError, match="backward"):
        Tensor([1.0]).backward()


def test_stop_gradient_and_no_grad():
    g = grad(lambda x: (x * stop_gradient(x)).sum())(Tensor(X))
    np.testing.assert_allclose(g.asnumpy(), X)
    w = Parameter(np.array([1.0]), name="w")
    with no_grad():
        y = w * 2
    assert y.is_leaf


def test_grad_argument_errors():
    with pytest.raises(ValueError, match="grad_position"):
        grad(f, grad_position=5)(Tensor(X), Tensor(Y))
    with pytest.raises(ValueError, match="nothing to differentiate"):
        grad(f, grad_position=None)(Tensor(X), Tensor(Y))
    with pytest.raises(ValueError, match="has_aux"):
        grad(lambda x: x.sum(), has_aux=True)(Tensor(X))


def test_graph_is_released():
    import gc
    import weakref

    x = Tensor(np.ones(1000))
    y = grad(lambda t: (ops.exp(t) * t).sum())(x)
    ref = weakref.ref(y)
    del y
    gc.collect()
    assert ref() is None
