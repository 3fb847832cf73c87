"""Second-order gradients through a jit-compiled function equal eager mode's (they were
zeros: the compiled backward differentiated detached copies of the inputs)."""

import numpy as np
import pytest

import sporeling.core as sc
from sporeling.core import Parameter, Tensor, ops

X = np.array([0.3, 1.1, -0.4])
Y = np.array([2.0, -1.0, 0.5])


def _second(fn):
    d1 = ops.grad(fn, grad_position=(0, 1))

    def penalty(a, b):
        ga, gb = d1(a, b)
        return ga.sum() + (gb * gb).sum()

    return ops.grad(penalty, grad_position=(0, 1))(Tensor(X), Tensor(Y))


def test_second_order_through_jit_inputs():
    def f(x, y):
        return ops.sin(x) * y

    eager = _second(f)
    compiled = _second(sc.jit(f))
    # d/dx [cos(x) y + sin(x)^2] and d/dy [cos(x) y]
    want_x = -np.sin(X) * Y + 2 * np.sin(X) * np.cos(X)
    want_y = np.cos(X)
    for got in (eager, compiled):
        np.testing.assert_allclose(got[0].asnumpy(), want_x, rtol=1e-12)
        np.testing.assert_allclose(got[1].asnumpy(), want_y, rtol=1e-12)


@pytest.mark.parametrize("wrt", ["input", "weight"])
def test_second_order_through_jit_parameters(wrt):
    w = Parameter(Tensor(np.array([0.5, -0.7, 1.3])), name="w")

    def f(x):
        return ops.sin(x * w).sum()

    def gradient_penalty(fn):
        gw = ops.grad(fn, grad_position=None, weights=[w])
        outer = (0, None) if wrt == "input" else (None, [w])
        return ops.grad(lambda a: (gw(a)[0] ** 2).sum(), grad_position=outer[0], weights=outer[1])(
            Tensor(X)
        )

    eager = gradient_penalty(f)
    compiled = gradient_penalty(sc.jit(f))
    e = eager if wrt == "input" else eager[0]
    c = compiled if wrt == "input" else compiled[0]
    assert np.abs(e.asnumpy()).max() > 0.1
    np.testing.assert_allclose(c.asnumpy(), e.asnumpy(), rtol=1e-12)
