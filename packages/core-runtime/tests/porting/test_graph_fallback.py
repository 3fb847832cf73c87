"""GRAPH_MODE compiles a Cell whose construct branches on tensor values (``cond``), and falls
back to eager execution, with one warning saying why, for one it cannot convert; explicit
``jit`` raises the reason instead."""

import numpy as np
import pytest

from sporeling.core import GRAPH_MODE, PYNATIVE_MODE, Tensor, grad, jit, nn, ops, set_context
from sporeling.core.compiler.graph import TracingError


class Branchy(nn.Cell):
    def construct(self, x):
        if ops.reduce_sum(x) > 0:
            return x * 2.0
        return x * x


class Mutates(nn.Cell):
    def construct(self, x):
        for _ in range(5):
            if ops.reduce_sum(x) > 0:
                self.last = x  # an attribute assigned on a tensor condition: not converted
            x = x + 1.0
        return x * x


@pytest.fixture
def graph_mode():
    set_context(mode=GRAPH_MODE)
    yield
    set_context(mode=PYNATIVE_MODE)


def test_branch_on_tensor_value_compiles(graph_mode):
    net = Branchy()
    pos = Tensor(np.array([1.0, 2.0], np.float32))
    neg = Tensor(np.array([-1.0, -2.0], np.float32))
    np.testing.assert_allclose(net(pos).asnumpy(), [2.0, 4.0])  # no warning (errors here)
    np.testing.assert_allclose(net(neg).asnumpy(), [1.0, 4.0])
    assert net._graph_call.compile_count == 1
    g = grad(lambda x: ops.reduce_sum(net(x)))(neg)
    np.testing.assert_allclose(g.asnumpy(), [-2.0, -4.0])


def test_unconvertible_cell_runs_eagerly_with_one_warning(graph_mode):
    net = Mutates()
    neg = Tensor(np.array([-1.0, -2.0], np.float32))
    with pytest.warns(UserWarning, match="Mutates runs in PYNATIVE mode.*attribute"):
        np.testing.assert_allclose(net(neg).asnumpy(), [16.0, 9.0])
    np.testing.assert_allclose(net(neg).asnumpy(), [16.0, 9.0])  # no second warning
    g = grad(lambda x: ops.reduce_sum(net(x)))(neg)
    np.testing.assert_allclose(g.asnumpy(), [8.0, 6.0])


def test_explicit_jit_raises_the_reason():
    with pytest.raises(TracingError, match="assigns to an attribute"):
        jit(Mutates())(Tensor(np.ones(2, np.float32)) * -1)
