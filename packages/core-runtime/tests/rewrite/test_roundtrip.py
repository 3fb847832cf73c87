"""SymbolTree.create -> get_code/get_network round trips on the core's reference networks:
the regenerated network gives the same outputs and the same gradients."""

import numpy as np
import pytest
import rewrite_nets as nets

from sporeling.core import Tensor, nn, ops, value_and_grad
from sporeling.core.rewrite import NodeType, SymbolTree, TreeNodeHelper

RNG = np.random.default_rng(0)


def _inputs(name):
    if name == "MLP":
        return (Tensor(RNG.standard_normal((2, 6)).astype("f4")),)
    if name == "LeNet5":
        return (Tensor(RNG.standard_normal((2, 1, 32, 32)).astype("f4")),)
    if name == "Block":
        return (Tensor(RNG.standard_normal((2, 4, 6, 6)).astype("f4")),)
    if name == "ResNet":
        return (Tensor(RNG.standard_normal((2, 3, 8, 8)).astype("f4")),)
    if name == "GPT":
        return (Tensor(np.array([[1, 2, 3, 4], [5, 6, 7, 8]], "int32")),)
    raise KeyError(name)


FACTORIES = {
    "MLP": nets.MLP,
    "LeNet5": nets.LeNet5,
    "Block": lambda: nets.Block(4, 8, 2),
    "ResNet": nets.ResNet,
    "GPT": nets.GPT,
}


def _loss_and_grads(net, inputs):
    params = net.trainable_params()

    def loss(*xs):
        out = net(*xs)
        return ops.reduce_sum(out * out)

    value, grads = value_and_grad(loss, None, params)(*inputs)
    return value.asnumpy(), [g.asnumpy() for g in grads]


@pytest.mark.parametrize("name", list(FACTORIES))
def test_round_trip_same_outputs_and_gradients(name):
    net = FACTORIES[name]()
    net.set_train(True)
    inputs = _inputs(name)
    new = SymbolTree.create(net).get_network()
    assert type(new) is not type(net) and isinstance(new, type(net))
    assert [p.name for p in new.trainable_params()] == [p.name for p in net.trainable_params()]
    v0, g0 = _loss_and_grads(net, inputs)
    v1, g1 = _loss_and_grads(new, inputs)
    np.testing.assert_array_equal(v0, v1)
    for a, b in zip(g0, g1):
        np.testing.assert_array_equal(a, b)


def test_nested_calls_become_one_node_each():
    stree = SymbolTree.create(nets.LeNet5())
    kinds = [(n.get_name(), n.get_node_type()) for n in stree.nodes()]
    assert kinds[0] == ("input_x", NodeType.Input)
    assert kinds[-1][1] == NodeType.Output
    calls = [n for n, k in kinds if k == NodeType.CallCell]
    assert calls == ["conv1", "relu", "pool", "conv2", "relu_1", "pool_1", "flatten"] + [
        "fc1",
        "relu_2",
        "fc2",
        "relu_3",
        "fc3",
    ]
    code = stree.get_code()
    assert "class LeNet5Opt(LeNet5):" in code
    assert "conv1 = self.conv1(x)" in code and "relu = self.relu(conv1)" in code


def test_data_flow_inputs_users_prev_next():
    stree = SymbolTree.create(nets.MLP())
    fc1, relu, fc2 = (stree.get_node(n) for n in ("fc1", "relu", "fc2"))
    assert relu.get_inputs() == [fc1]
    assert fc1.get_users() == [relu]
    assert relu.get_next() is fc2 and fc2.get_prev() is relu
    assert [n.get_name() for n in fc2.get_users()] == ["return"]
    assert fc1.get_instance_type().__name__ == "Dense"
    assert [str(a) for a in relu.get_args()] == ["fc1"]
    assert [i.get_name() for i in stree.get_inputs()] == ["input_x"]


def test_sub_networks_are_tree_nodes_with_their_own_trees():
    net = nets.ResNet()
    stree = SymbolTree.create(net)
    layers = stree.get_node("layers")
    assert layers.get_node_type() == NodeType.Tree
    seq = TreeNodeHelper.get_sub_tree(layers)
    blocks = [n for n in seq.nodes() if n.get_node_type() == NodeType.Tree]
    assert len(blocks) == 2
    block_tree = TreeNodeHelper.get_sub_tree(blocks[1])
    names = [n.get_name() for n in block_tree.nodes()]
    assert "down" in names and "add" in names
    assert TreeNodeHelper.get_sub_tree(stree.get_node("conv")) is None
    code = stree.get_code()
    assert "class BlockOpt(Block):" in code and "class SequentialCellOpt" in code


def test_control_flow_over_python_values_is_resolved_and_input_flow_kept():
    net = nets.ControlFlow()
    stree = SymbolTree.create(net)
    code = stree.get_code()
    assert "for " not in code.split("if flag")[0]  # the loops over Python values unrolled
    assert code.count("getattr(self.fcs") == 3
    assert "self.extra(" in code and "* 3.0" not in code  # `if self.use_extra` resolved
    assert "if flag > 0:" in code  # depends on an input: kept as code
    new = stree.get_network()
    x = Tensor(RNG.standard_normal((2, 4)).astype("f4"))
    for flag in (0, 1, 2):
        for a, b in zip(net(x, flag), new(x, flag)):
            np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    other = SymbolTree.create(nets.ControlFlow(use_extra=False)).get_code()
    assert "* 3.0" in other and "self.extra(" not in other


def test_training_flag_is_not_resolved_at_create_time():
    from sporeling.core import nn

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc = nn.Dense(3, 3)

        def construct(self, x):
            if self.training:
                x = x * 2.0
            return self.fc(x)

    net = Net()
    new = SymbolTree.create(net).get_network()
    x = Tensor(np.ones((1, 3), "f4"))
    for mode in (True, False):
        net.set_train(mode)
        new.set_train(mode)
        np.testing.assert_array_equal(net(x).asnumpy(), new(x).asnumpy())


def test_save_network_to_file(tmp_path):
    stree = SymbolTree.create(nets.MLP())
    stree.set_saved_file_name(str(tmp_path / "mlp"))
    path = stree.save_network_to_file()
    assert path.endswith("mlp.py")
    with open(path) as fh:
        assert "class MLPOpt(MLP):" in fh.read()


class _Split(nn.Cell):
    def construct(self, x):
        return x[:, :2], x[:, 2:]


class _Mixed(nn.Cell):
    """Augmented assignment, a cell with two outputs, keyword arguments, tuple returns."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 4)
        self.split = _Split()
        self.act = nn.Tanh()

    def construct(self, x, scale=2.0):
        x += self.fc(x=x)
        a, b = self.split(x)
        y = ops.concat((self.act(a), b * scale), 1)
        return y, a.sum()


def test_round_trip_keywords_multiple_outputs_and_aug_assign():
    net = _Mixed()
    stree = SymbolTree.create(net)
    split = stree.get_node("split")
    assert [str(t) for t in split.get_targets()] == ["a", "b"]
    assert split.get_node_type() == NodeType.Tree
    assert "fc = self.fc(x=x)" in stree.get_code()
    new = stree.get_network()
    x = Tensor(RNG.standard_normal((3, 4)).astype("f4"))
    for scale in (2.0, -1.0):
        for u, v in zip(net(x, scale), new(x, scale)):
            np.testing.assert_array_equal(u.asnumpy(), v.asnumpy())
