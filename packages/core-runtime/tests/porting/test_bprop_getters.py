"""``bprop_getters.register`` gives a user primitive class its hand-written gradient, in
eager mode and under jit, as MindSpore's ``ops._grad.grad_base.bprop_getters`` does."""

import numpy as np
import pytest

from sporeling.core import Tensor, grad, jit, ops
from sporeling.core.ops import operations as P
from sporeling.core.ops._grad.grad_base import bprop_getters
from sporeling_testing.gradcheck import check_grad


class CubeScaled(P.PrimitiveWithInfer):
    """y = a * x^3 (a is an attribute)."""

    @P.prim_attr_register
    def __init__(self, a=1.0):
        pass

    def infer_shape(self, x):
        return x

    def __call__(self, x):
        return ops.mul(ops.mul(x, ops.mul(x, x)), self.a)


class Marked(P.PrimitiveWithInfer):
    @P.prim_attr_register
    def __init__(self):
        pass

    def __call__(self, x, y):
        return x * y


@bprop_getters.register(CubeScaled)
def _get_cube_bprop(self):
    def bprop(x, out, dout):
        return (dout * 3 * self.a * x * x,)

    return bprop


@bprop_getters.register("Marked")  # by name: a deliberately different rule, so its use shows
def _get_marked_bprop(self):
    def bprop(x, y, out, dout):
        return dout * 10, None

    return bprop


def test_registered_bprop_is_the_gradient_in_eager_and_jit():
    op = CubeScaled(a=2.0)
    x = np.array([0.5, -1.0, 2.0])
    g = grad(lambda t: ops.reduce_sum(op(t)))(Tensor(x))
    np.testing.assert_allclose(g.asnumpy(), 6 * x * x, rtol=1e-12)
    check_grad(lambda t: op(t), [x])
    gj = jit(grad(lambda t: ops.reduce_sum(op(t))))(Tensor(x))
    np.testing.assert_allclose(gj.asnumpy(), 6 * x * x, rtol=1e-12)


def test_registration_by_name_replaces_autodiff():
    x, y = Tensor(np.array([1.0, 2.0])), Tensor(np.array([3.0, 4.0]))
    gx, gy = grad(lambda a, b: ops.reduce_sum(Marked()(a, b)), grad_position=(0, 1))(x, y)
    np.testing.assert_allclose(gx.asnumpy(), [10.0, 10.0])
    assert not gy.asnumpy().any()  # None: no gradient
    assert Marked in bprop_getters or "Marked" in bprop_getters


def test_a_bprop_with_the_wrong_arity_is_a_clear_error():
    class Bad(P.PrimitiveWithInfer):
        def __call__(self, x):
            return x * 2

    @bprop_getters.register(Bad)
    def _get(self):
        return lambda x, out, dout: (dout, dout)

    with pytest.raises(ValueError, match=r"expected a tuple of 1 gradients"):
        grad(lambda t: ops.reduce_sum(Bad()(t)))(Tensor(np.ones(2)))
