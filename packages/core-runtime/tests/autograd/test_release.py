"""grad/value_and_grad free the function's tape as the backward sweep passes it.

The nodes the differentiated function recorded drop their inputs and outputs once their
vjp has run, so an activation is gone before the sweep reaches the first layers (peak
memory: activations or gradients, not both). Nodes recorded before the call and nested
differentiation keep theirs.
"""

import gc
import weakref

import numpy as np

from sporeling.core import Parameter, Tensor, grad, ops, value_and_grad
from sporeling.core.ops._elementwise import exp_p


def test_an_activation_is_freed_before_the_sweep_reaches_the_first_layer(monkeypatch):
    w = Parameter(np.array([0.1, 0.2, -0.3]), name="w")
    refs = []

    def loss(x):
        a = ops.exp(x * w)  # exp #1
        c = a * 3.0
        refs.append(weakref.ref(c._data))  # nobody but the tape keeps c
        return ops.exp(c).sum()  # exp #2

    alive_at_first_exp = []
    real_vjp = exp_p.vjp

    def spy(ct, x, *, out):
        alive_at_first_exp.append(refs[-1]() is not None)
        return real_vjp(ct, x, out=out)

    monkeypatch.setattr(exp_p, "vjp", spy)
    x = Tensor(np.array([0.5, -1.0, 2.0]))
    value, (gw,) = value_and_grad(loss, None, [w])(x)
    # exp #2's vjp ran first (c still alive: it is exp #2's input), then exp #1's: by then
    # exp #2 and the product were released, so c's array was already freed
    assert alive_at_first_exp == [True, False]
    xv, wv = x.asnumpy(), w.asnumpy()
    a = np.exp(xv * wv)
    np.testing.assert_allclose(value.asnumpy(), np.exp(3 * a).sum())
    np.testing.assert_allclose(gw.asnumpy(), np.exp(3 * a) * 3 * a * xv)


def test_a_tensor_from_an_earlier_grad_call_is_a_constant_to_later_ones():
    """As in MindSpore (gradients flow only through the differentiated function): a state
    kept from the last step, say, stops the sweep instead of reaching into the old graph."""
    w = Parameter(np.array([1.0, 2.0]), name="w")
    kept = []

    def loss():
        h = w * w
        kept.append(h)  # leaks a tensor of the released graph
        return h.sum()

    np.testing.assert_allclose(grad(loss, None, [w])()[0].asnumpy(), [2.0, 4.0])
    # d/dw of (h_old * w).sum() with h_old constant: h_old = w * w
    (gw,) = grad(lambda: (kept[0] * w).sum(), None, [w])()
    np.testing.assert_allclose(gw.asnumpy(), [1.0, 4.0])
    (gw,) = grad(lambda: (kept[0] * 3.0).sum(), None, [w])()  # no path left to w
    np.testing.assert_allclose(gw.asnumpy(), [0.0, 0.0])


def test_nodes_recorded_before_the_call_survive_and_can_be_differentiated_again():
    w = Parameter(np.array([1.0, -2.0]), name="w")
    h = ops.exp(w)  # recorded outside: not the function's own graph
    for scale in (1.0, 2.0):  # two sweeps through h's node
        (gw,) = grad(lambda s=scale: (h * s).sum(), None, [w])()
        np.testing.assert_allclose(gw.asnumpy(), scale * np.exp([1.0, -2.0]))
    assert h._node.inputs is not None


def test_second_order_keeps_the_inner_graph():
    def f(x):
        return (x * x * x).sum()

    x = Tensor(np.array([1.0, 2.0, -0.5]))
    g2 = grad(lambda v: grad(f)(v).sum())(x)
    np.testing.assert_allclose(g2.asnumpy(), 6 * x.asnumpy())


def test_released_nodes_hold_nothing():
    w = Parameter(np.ones((3, 3)), name="w")
    nodes, arrays = [], []

    def loss(x):
        h = ops.relu(ops.matmul(x, w))
        nodes.append(h._node)
        arrays.append(weakref.ref(h._data))
        return (h * h).sum()

    value_and_grad(loss, None, [w])(Tensor(np.eye(3)))
    gc.collect()
    node = nodes[0]  # kept alive here, but it no longer keeps its inputs or outputs
    assert node.inputs is None and node.out_data is None and node.params is None
    assert arrays[0]() is None
