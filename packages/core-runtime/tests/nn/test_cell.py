"""Cell: parameter registration and naming, traversal, modes, hooks, containers."""

import numpy as np
import pytest

from sporeling.core import Parameter, Tensor, grad, nn


class Affine(nn.Cell):
    def __init__(self, n=2):
        super().__init__()
        self.weight = Parameter(np.eye(n, dtype=np.float32))
        self.bias = Parameter(np.zeros(n, np.float32), name="b")
        self.scale = 1.0

    def construct(self, x):
        return (x @ self.weight + self.bias) * self.scale


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.first = Affine()
        self.rest = nn.SequentialCell([Affine(), Affine()])

    def construct(self, x):
        return self.rest(self.first(x))


def test_parameter_names_follow_attribute_paths():
    net = Net()
    names = [n for n, _ in net.parameters_and_names()]
    assert names == [
        "first.weight",
        "first.bias",
        "rest.0.weight",
        "rest.0.bias",
        "rest.1.weight",
        "rest.1.bias",
    ]
    assert [p.name for p in net.trainable_params()][:2] == ["first.weight", "first.b"]
    assert list(net.parameters_dict())[0] == "first.weight"


def test_shared_parameters_counted_once():
    a = Affine()
    seq = nn.SequentialCell([a, a])
    assert len(seq.trainable_params()) == 2


def test_cells_and_names_and_modes():
    net = Net()
    assert [n for n, _ in net.cells_and_names()] == ["", "first", "rest", "rest.0", "rest.1"]
    net.set_train()
    assert all(c.training for _, c in net.cells_and_names())
    net.set_train(False)
    assert not net.rest[1].training


def test_untrainable_params():
    net = Affine()
    net.bias.requires_grad = False
    assert [p.name for p in net.untrainable_params()] == ["b"]
    assert len(net.trainable_params()) == 1


def test_call_runs_construct_and_hooks():
    net = Affine()
    calls = []
    h1 = net.register_forward_pre_hook(lambda cell, inputs: calls.append("pre"))
    net.register_forward_hook(lambda cell, inputs, out: out * 10)
    out = net(Tensor(np.ones((1, 2), np.float32)))
    assert calls == ["pre"] and out.tolist() == [[10, 10]]
    h1.remove()
    net(Tensor(np.ones((1, 2), np.float32)))
    assert calls == ["pre"]


def test_gradients_reach_cell_parameters():
    net = Net()
    x = Tensor(np.ones((3, 2), np.float32))
    grads = grad(lambda x: net(x).sum(), grad_position=None, weights=net.trainable_params())(x)
    assert len(grads) == 6
    assert grads[1].tolist() == [3, 3]


def test_errors():
    class Bad(nn.Cell):
        def __init__(self):
            self.w = Parameter(np.ones(1, np.float32))

    with pytest.raises(RuntimeError, match="super"):
        Bad()
    net = Affine()
    with pytest.raises(TypeError, match="weight"):
        net.weight = 3
    with pytest.raises(KeyError, match="child_name"):
        net.insert_child_to_cell("a.b", Affine())
    with pytest.raises(TypeError, match="construct"):
        nn.Cell()(1)


def test_containers():
    cl = nn.CellList([Affine(), Affine()])
    assert len(cl) == 2 and len(cl.trainable_params()) == 4
    cd = nn.CellDict({"a": Affine()})
    cd["b"] = Affine()
    assert list(cd.keys()) == ["a", "b"] and "a" in cd
    with pytest.raises(TypeError, match="Cell"):
        cl.append(3)
    seq = nn.SequentialCell(Affine(), Affine())
    assert len(seq[0:1]) == 1
    assert "SequentialCell" in repr(seq)


def test_plain_attribute_replaced_by_cell_is_not_shadowed():
    class Holder(nn.Cell):
        def __init__(self):
            super().__init__()
            self.head = None

    h = Holder()
    h.head = Affine()
    assert isinstance(h.head, Affine) and len(h.trainable_params()) == 2


def test_plain_call_fast_path_matches_run_construct_and_leaves_it_when_needed():
    """A plain cell's PYNATIVE call runs construct directly; hooks, flags (recompute),
    to_float and a class bprop take _run_construct, and removing them returns to it."""
    net = Net()
    x = Tensor(np.arange(4, dtype=np.float32).reshape(2, 2))
    plain = net(x).asnumpy()
    np.testing.assert_array_equal(plain, net._run_construct(x).asnumpy())
    np.testing.assert_array_equal(plain, x.asnumpy())
    runs = []
    real = nn.Cell._run_construct
    nn.Cell._run_construct = lambda self, *a, **k: runs.append(self) or real(self, *a, **k)
    try:
        net(x)
        assert runs == []  # every cell of the plain net took the fast path
        net.first.register_forward_hook(lambda cell, inputs, out: None)
        net(x)
        assert runs == [net.first]
    finally:
        nn.Cell._run_construct = real
    net = Net()
    g_plain = grad(lambda x: net(x).sum())(x).asnumpy()
    calls = []
    h = net.first.register_forward_pre_hook(lambda cell, inputs: (inputs[0] * 2.0,))
    h2 = net.rest.register_forward_hook(lambda cell, inputs, out: calls.append(out.shape))
    np.testing.assert_array_equal(net(x).asnumpy(), 2 * plain)  # (the net is the identity)
    assert calls and calls[0] == (2, 2)
    h.remove()
    h2.remove()
    np.testing.assert_array_equal(net(x).asnumpy(), plain)
    net.first.recompute()  # a flag: the full path keeps the inputs and replays construct
    np.testing.assert_array_equal(net(x).asnumpy(), plain)
    np.testing.assert_array_equal(grad(lambda x: net(x).sum())(x).asnumpy(), g_plain)

    class WithBprop(Affine):
        def bprop(self, x, out, dout):
            return (dout * 0.0 + 7.0,)

    np.testing.assert_array_equal(
        grad(lambda x: WithBprop()(x).sum())(x).asnumpy(), np.full((2, 2), 7.0)
    )
    half = Affine().to_float(np.float16)
    assert half(x).dtype == np.float16
