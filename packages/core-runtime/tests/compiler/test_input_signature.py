"""``Tensor(shape=[None, 3], dtype=...)`` placeholders as ``jit`` input signatures and
``Cell.set_inputs``: calls are checked against them, free sizes recompile without a budget
warning, and a placeholder used as a value says what it is."""

import numpy as np
import pytest

from sporeling.core import GRAPH_MODE, PYNATIVE_MODE, Tensor, nn, ops, set_context
from sporeling.core import dtype as mstype
from sporeling.core.compiler import jit


def test_placeholder_tensor_has_a_free_shape_and_no_data():
    p = Tensor(shape=[None, 3], dtype=mstype.float32)
    assert p.shape == (-1, 3) and p.dtype == mstype.float32
    assert repr(p) == "Tensor(shape=[-1, 3], dtype=Float32)"
    with pytest.raises(TypeError, match="placeholder without data"):
        p.asnumpy()
    with pytest.raises(ValueError, match="sizes >= 0, -1 or None"):
        Tensor(shape=[None, -3], dtype=mstype.float32)


def test_jit_checks_calls_against_the_signature(monkeypatch):
    monkeypatch.setenv("SPORELING_RECOMPILE_BUDGET", "1")
    sig = (Tensor(shape=[None, 3], dtype=mstype.float32),)
    f = jit(lambda x: ops.reduce_sum(x * 2, 1), input_signature=sig)
    for n in (1, 2, 5, 7):  # free sizes: no recompile-budget warning (warnings are errors)
        x = np.arange(3 * n, dtype=np.float32).reshape(n, 3)
        np.testing.assert_allclose(f(Tensor(x)).asnumpy(), (x * 2).sum(1))
    with pytest.raises(ValueError, match=r"argument 0 has size 4 on axis 1 .*expected 3"):
        f(Tensor(np.zeros((2, 4), np.float32)))
    with pytest.raises(ValueError, match="rank 1"):
        f(Tensor(np.zeros(3, np.float32)))
    with pytest.raises(ValueError, match="dtype float64, expected float32"):
        f(Tensor(np.zeros((2, 3))))
    with pytest.raises(TypeError, match="declares 1 tensors, got 2"):
        f(Tensor(np.zeros((2, 3), np.float32)), 1)


def test_without_a_signature_the_same_sizes_warn(monkeypatch):
    monkeypatch.setenv("SPORELING_RECOMPILE_BUDGET", "1")
    f = jit(lambda x: ops.reduce_sum(x * 2, 1))
    f(Tensor(np.ones((1, 3), np.float32)))
    with pytest.warns(RuntimeWarning, match="recompile budget"):
        f(Tensor(np.ones((2, 3), np.float32)))


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(3, 2)

    def construct(self, x):
        return self.dense(x)


def test_cell_set_inputs_in_graph_mode():
    net = Net()
    net.set_inputs(Tensor(shape=[None, 3], dtype=mstype.float32))
    assert net.get_inputs()[0].shape == (-1, 3)
    set_context(mode=GRAPH_MODE)
    try:
        for n in (2, 4):
            x = Tensor(np.ones((n, 3), np.float32))
            assert net(x).shape == (n, 2)
        with pytest.raises(ValueError, match="size 5 on axis 1"):
            net(Tensor(np.ones((2, 5), np.float32)))
    finally:
        set_context(mode=PYNATIVE_MODE)
    with pytest.raises(TypeError, match="input 0 expected a Tensor"):
        net.set_inputs([None, 3])
