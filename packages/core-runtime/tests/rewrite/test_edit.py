"""Node operations (insert, erase, replace, set_arg, attributes), patterns and errors."""

from collections import OrderedDict

import numpy as np
import pytest
import rewrite_nets as nets

from sporeling.core import Tensor, nn
from sporeling.core.rewrite import (
    Node,
    NodeType,
    PatternEngine,
    PatternNode,
    Replacement,
    RewriteError,
    ScopedValue,
    SymbolTree,
    TreeNodeHelper,
    ValueType,
    VarNode,
)

X = Tensor(np.random.default_rng(1).standard_normal((3, 6)).astype("f4"))


class Scale(nn.Cell):
    def __init__(self, k):
        super().__init__()
        self.k = k

    def construct(self, x):
        return x * self.k


def test_scoped_value_kinds():
    v = ScopedValue.create_naming_value("mask", "self")
    assert v.type == ValueType.NamingValue and v.to_source() == "self.mask"
    assert ScopedValue.create_variable_value(3).type == ValueType.IntValue
    assert ScopedValue.create_variable_value((1, 2)).to_source() == "(1, 2)"
    assert [s.to_source() for s in ScopedValue.create_name_values(["a", "b"])] == ["a", "b"]
    with pytest.raises(TypeError, match="'name'"):
        ScopedValue.create_naming_value("")


def test_insert_after_changes_output_and_code():
    net = nets.MLP()
    stree = SymbolTree.create(net)
    relu = stree.get_node("relu")
    node = Node.create_call_cell(Scale(2.0), ["scaled"], [relu.get_targets()[0]], name="scale")
    stree.insert(stree.after(relu), node)
    stree.get_node("fc2").set_arg_by_node(0, node)
    code = stree.get_code()
    assert "scaled = self.scale(x_1)" in code and "fc2 = self.fc2(scaled)" in code
    new = stree.get_network()
    ref = net.fc2(net.relu(net.fc1(X)) * 2.0)
    np.testing.assert_allclose(new(X).asnumpy(), ref.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(net(X).asnumpy(), net.fc2(net.relu(net.fc1(X))).asnumpy())
    assert node.get_users() == [stree.get_node("fc2")]
    assert node.get_node_type() == NodeType.CallCell  # an inserted cell is called whole
    assert TreeNodeHelper.get_sub_tree(node) is None


def test_insert_before_and_unique_names():
    stree = SymbolTree.create(nets.MLP())
    fc1 = stree.get_node("fc1")
    a = Node.create_call_cell(nn.ReLU(), ["x"], [ScopedValue.create_naming_value("x")], name="relu")
    stree.insert(stree.before(fc1), a)
    assert a.get_name() != "relu" and a.get_targets()[0].value != "x"
    fc1.set_arg(0, a.get_targets()[0])
    assert stree.nodes().index(a) == stree.nodes().index(fc1) - 1


def test_erase_only_unused_nodes():
    stree = SymbolTree.create(nets.MLP())
    relu = stree.get_node("relu")
    with pytest.raises(RuntimeError, match="still used by"):
        stree.erase_node(relu)
    stree.get_node("fc2").set_arg(0, stree.get_node("fc1").get_targets()[0])
    stree.erase_node(relu)
    assert stree.get_node("relu") is None
    net = stree.get_network()
    orig = stree.get_origin_network()
    np.testing.assert_allclose(net(X).asnumpy(), orig.fc2(orig.fc1(X)).asnumpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="Input"):
        stree.erase_node(stree.get_inputs()[0])


def test_replace_rewires_users():
    net = nets.MLP()
    stree = SymbolTree.create(net)
    relu = stree.get_node("relu")
    tanh = Node.create_call_cell(nn.Tanh(), ["t"], relu.get_args(), name="tanh")
    last = stree.replace(relu, [tanh])
    assert last is tanh and stree.get_node("relu") is None
    out = stree.get_network()(X)
    np.testing.assert_allclose(out.asnumpy(), net.fc2(nn.Tanh()(net.fc1(X))).asnumpy(), rtol=1e-6)


def test_attributes_and_set_output():
    stree = SymbolTree.create(nets.MLP())
    fc1 = stree.get_node("fc1")
    fc1.set_attribute("policy", {"bits": 8})
    assert fc1.get_attribute("policy") == {"bits": 8} and fc1.get_attribute("none") is None
    stree.set_output(0, "fc1")
    assert stree.get_network()(X).shape == (3, 8)
    with pytest.raises(IndexError, match="'index'"):
        stree.set_output(3, "fc1")


def test_dump_lists_every_node(capsys):
    text = SymbolTree.create(nets.MLP()).dump()
    assert "fc1" in text and "CallCell" in text and "self.fc1(x)" in capsys.readouterr().out


class _SwapReluForTanh(Replacement):
    def build(self, pattern, is_chain_pattern, matched):
        relu = matched[pattern.name()]
        return [Node.create_call_cell(nn.Tanh(), ["t"], relu.get_args(), name="tanh")]


def test_tree_pattern_with_var_node():
    root = PatternNode("relu", nn.ReLU, [VarNode()])
    engine = PatternEngine(root, _SwapReluForTanh())
    stree = SymbolTree.create(nets.LeNet5())
    assert engine.apply(stree)
    code = stree.get_code()
    assert "self.relu(" not in code and code.count("self.tanh") == 4


class _FuseConvBnRelu(Replacement):
    def build(self, pattern, is_chain_pattern, matched):
        assert is_chain_pattern and list(matched) == ["Conv2d", "BatchNorm2d", "ReLU"]
        conv, bn, relu = (n.get_instance() for n in matched.values())
        first = next(iter(matched.values()))
        fused = nn.SequentialCell([conv, bn, relu])
        return [Node.create_call_cell(fused, ["fused"], first.get_args(), name="conv_bn_relu")]


def test_chain_pattern_over_sub_trees_keeps_outputs():
    net = nets.ResNet()
    net.set_train(False)
    x = Tensor(np.random.default_rng(2).standard_normal((2, 3, 8, 8)).astype("f4"))
    ref = net(x).asnumpy()
    stree = SymbolTree.create(net)
    engine = PatternEngine([nn.Conv2d, nn.BatchNorm2d, nn.ReLU], _FuseConvBnRelu())
    assert engine.apply(stree)
    code = stree.get_code()
    # the stem and both blocks' first conv are fused; the conv before the add is not
    assert code.count("self.conv_bn_relu(") == 3
    assert "self.conv2(" in code
    new = stree.get_network()
    new.set_train(False)
    np.testing.assert_allclose(new(x).asnumpy(), ref, rtol=1e-5, atol=1e-6)


def test_chain_pattern_skips_a_match_whose_inner_output_is_shared():
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 2, 3)
            self.bn = nn.BatchNorm2d(2)
            self.relu = nn.ReLU()

        def construct(self, x):
            y = self.bn(self.conv(x))
            return self.relu(y) + y

    stree = SymbolTree.create(Net())
    assert not PatternEngine([nn.Conv2d, nn.BatchNorm2d, nn.ReLU], _FuseConvBnRelu()).apply(stree)
    matches = PatternEngine([nn.Conv2d, nn.BatchNorm2d]).match_all(stree)
    assert [list(m) for m in matches] == [["Conv2d", "BatchNorm2d"]]


def test_pattern_from_node_and_bad_arguments():
    stree = SymbolTree.create(nets.MLP())
    pattern = PatternNode.create_pattern_from_node(stree.get_node("fc2"))
    assert pattern.type().__name__ == "Dense"
    assert [p.type().__name__ for p in pattern.get_inputs()] == ["ReLU"]
    assert len(PatternEngine(pattern).match_all(stree)) == 1
    with pytest.raises(TypeError, match="'pattern'"):
        PatternEngine("Conv2d")
    with pytest.raises(ValueError, match="no replacement"):
        PatternEngine([nn.Dense]).apply(stree)
    assert isinstance(OrderedDict(), dict)


def _bad_nets():
    class WhileNet(nn.Cell):
        def construct(self, x):
            while x.sum() > 0:
                x = x - 1
            return x

    class ReturnInIf(nn.Cell):
        def construct(self, x, flag):
            if flag:
                return x
            return -x

    class VarArgs(nn.Cell):
        def construct(self, *xs):
            return xs[0]

    return [
        (WhileNet, "while loop"),
        (ReturnInIf, "return inside control flow"),
        (VarArgs, "plain positional"),
    ]


@pytest.mark.parametrize("cls,why", _bad_nets(), ids=lambda v: getattr(v, "__name__", v))
def test_unrepresentable_construct_names_the_line(cls, why):
    with pytest.raises(RewriteError, match=why) as info:
        SymbolTree.create(cls())
    assert "test_edit.py:" in str(info.value)


def test_create_rejects_non_cells_and_cells_without_construct():
    with pytest.raises(TypeError, match="'network'"):
        SymbolTree.create(object())
    with pytest.raises(RewriteError, match="no construct"):
        SymbolTree.create(nn.CellList([nn.ReLU()]))
