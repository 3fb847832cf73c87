"""GRAPH_MODE falls back to eager execution, with one warning saying why, for a Cell whose
construct branches on tensor values (it raised before); explicit ``jit`` still raises."""

import numpy as np
import pytest

from sporeling.core import GRAPH_MODE, PYNATIVE_MODE, Tensor, grad, jit, nn, ops, set_context
from sporeling.core.compiler.graph import TracingError


class Branchy(nn.Cell):
    def construct(self, x):
        if ops.reduce_sum(x) > 0:
            return x * 2.0
        return x * x


@pytest.fixture
def graph_mode():
    set_context(mode=GRAPH_MODE)
    yield
    set_context(mode=PYNATIVE_MODE)


def test_branch_on_tensor_value_runs_eagerly_with_one_warning(graph_mode):
    net = Branchy()
    pos = Tensor(np.array([1.0, 2.0], np.float32))
    neg = Tensor(np.array([-1.0, -2.0], np.float32))
    with pytest.warns(UserWarning, match="Branchy runs in PYNATIVE mode.*traced tensor"):
        np.testing.assert_allclose(net(pos).asnumpy(), [2.0, 4.0])
    np.testing.assert_allclose(net(neg).asnumpy(), [1.0, 4.0])  # no second warning
    g = grad(lambda x: ops.reduce_sum(net(x)))(neg)
    np.testing.assert_allclose(g.asnumpy(), [-2.0, -4.0])


def test_explicit_jit_still_raises():
    with pytest.raises(TracingError):
        jit(Branchy())(Tensor(np.ones(2, np.float32)))
