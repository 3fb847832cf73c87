"""ops.jet / ops.derivative: higher-order derivatives along a path, against closed forms in
NumPy float64 and against repeated reverse-mode grad (an independent route)."""

import numpy as np
import pytest

from sporeling.core import Tensor, grad, ops

RNG = np.random.default_rng(0)


def T(a):
    return Tensor(np.asarray(a, np.float64))


@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_derivative_of_elementwise_function_matches_closed_form(order):
    x = RNG.uniform(-2, 2, (2, 3))
    out, d = ops.derivative(lambda t: ops.sin(t) + ops.cos(t), T(x), order)
    cycle = [np.sin(x) + np.cos(x), np.cos(x) - np.sin(x)]
    cycle += [-c for c in cycle]  # derivatives of sin + cos repeat every 4
    np.testing.assert_allclose(out.asnumpy(), cycle[0], rtol=1e-12)
    np.testing.assert_allclose(d.asnumpy(), cycle[order % 4], rtol=1e-10, atol=1e-12)


def test_derivative_matches_repeated_grad():
    x = RNG.uniform(0.5, 1.5, (4,))

    def f(t):
        return ops.exp(t) * ops.tanh(t) / (1.0 + t * t)

    g = lambda t: f(t).sum()  # noqa: E731 - elementwise f: grad of the sum is f' per element
    for _ in range(3):
        g = (lambda h: lambda t: grad(h)(t).sum())(g)
    ref = grad(g)(T(x)).asnumpy()  # 4th derivative by reverse mode, four times over
    _, d = ops.derivative(f, T(x), 4)
    np.testing.assert_allclose(d.asnumpy(), ref, rtol=1e-9, atol=1e-10)


def test_jet_polynomial_path_exact():
    x = RNG.standard_normal(3)
    v1, v2, v3 = RNG.standard_normal((3, 3))
    out, series = ops.jet(lambda t: t**3, T(x), T(np.stack([v1, v2, v3])))
    # x(t) = x + v1 t + v2 t^2/2 + v3 t^3/6; y = x(t)^3: its Taylor derivatives by hand
    d1 = 3 * x**2 * v1
    d2 = 6 * x * v1**2 + 3 * x**2 * v2
    d3 = 6 * v1**3 + 18 * x * v1 * v2 + 3 * x**2 * v3
    np.testing.assert_allclose(out.asnumpy(), x**3, rtol=1e-12)
    np.testing.assert_allclose(series.asnumpy(), np.stack([d1, d2, d3]), rtol=1e-10, atol=1e-12)


def test_jet_two_inputs_non_elementwise_against_repeated_grad():
    x, y = RNG.standard_normal(3), RNG.standard_normal((3, 2))
    sx, sy = RNG.standard_normal((3, 3)), RNG.standard_normal((3, 3, 2))

    def f(a, b):
        return ops.tanh(ops.matmul(ops.sin(a)[None], b))[0]  # (2,)

    _, series = ops.jet(f, (T(x), T(y)), (T(sx), T(sy)))
    assert series.shape == (3, 2)

    def along(t, i):
        a = T(x) + T(sx[0]) * t + T(sx[1]) * (t * t / 2) + T(sx[2]) * (t * t * t / 6)
        b = T(y) + T(sy[0]) * t + T(sy[1]) * (t * t / 2) + T(sy[2]) * (t * t * t / 6)
        return f(a, b)[i]

    for i in range(2):
        h = lambda t, i=i: along(t, i)  # noqa: E731
        for k in range(3):
            h = grad(h)
            ref = float(h(T(0.0)).asnumpy())
            np.testing.assert_allclose(series.asnumpy()[k, i], ref, rtol=1e-9, atol=1e-11)


def test_bad_arguments():
    x = T([1.0, 2.0])
    with pytest.raises(ValueError, match="'order'"):
        ops.derivative(ops.sin, x, 0)
    with pytest.raises(ValueError, match="'series' expected shape"):
        ops.jet(ops.sin, x, T([1.0, 2.0]))
    with pytest.raises(ValueError, match="one per primal"):
        ops.jet(lambda a, b: a * b, (x, x), (T([[1.0, 1.0]]),))
    with pytest.raises(TypeError, match="'primals'"):
        ops.jet(ops.sin, [1.0, 2.0], T([[1.0, 1.0]]))
