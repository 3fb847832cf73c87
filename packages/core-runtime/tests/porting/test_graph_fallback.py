"""GRAPH_MODE compiles a Cell whose construct branches on tensor values (``cond``), and falls
back to eager execution, with one warning saying why, for one it cannot convert (and none
for the cells inside it that fail for the same reason); explicit ``jit`` raises the reason
instead."""

import warnings

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


class Opaque(nn.Cell):
    """Refuses to be traced, as a pipeline over ranks does (MPI messages): runs eagerly."""

    def construct(self, x):
        from sporeling.core._eager import EagerInterpreter
        from sporeling.core._primitive import current_interpreter

        if not isinstance(current_interpreter(), EagerInterpreter):
            raise TracingError("Opaque: runs eagerly only")
        return x * 3.0


class Around(nn.Cell):
    def __init__(self):
        super().__init__()
        self.inner = nn.SequentialCell([Opaque()])

    def construct(self, x):
        return self.inner(x) + 1.0


def test_cells_inside_a_fallen_back_cell_do_not_repeat_its_warning(graph_mode):
    net = Around()
    x = Tensor(np.array([1.0, 2.0], np.float32))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):  # the inner cells fail for the same reason while Around runs
            np.testing.assert_allclose(net(x).asnumpy(), [4.0, 7.0])
        np.testing.assert_allclose(net.inner(x).asnumpy(), [3.0, 6.0])  # fell back already
    assert [str(w.message) for w in caught] == [
        "GRAPH_MODE: Around runs in PYNATIVE mode (eagerly) because it could not be compiled: "
        "Opaque: runs eagerly only"
    ]
    assert net.inner._graph_fallback and net.inner[0]._graph_fallback
    other = Around()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        other.inner(x)  # called on its own, not inside a fallen-back cell: it says so
        other.inner(x)
    assert [str(w.message)[:38] for w in caught] == ["GRAPH_MODE: SequentialCell runs in PYN"]


def test_explicit_jit_raises_the_reason():
    with pytest.raises(TracingError, match="assigns to an attribute"):
        jit(Mutates())(Tensor(np.ones(2, np.float32)) * -1)
