"""Prunable channel groups, found from the network's graph (``sporeling.core.rewrite``).

Walking ``construct`` (sub-networks inlined), every Conv2d output starts a channel space;
BatchNorm, activations, pooling and ``ops.mean`` over spatial axes carry it through; an
elementwise ``a + b`` (a residual connection) merges the spaces of both sides, so every
convolution whose output meets at an add is pruned with the same channels. Consumers
(Conv2d inputs, Dense inputs after a global pooling or a Flatten) are recorded with the
space they read. A space that reaches the network's input or output, an unknown op, a
grouped convolution (other than a depthwise one, which carries its input's channels and is
pruned with them) or a concat is frozen (never pruned). Like Torch-Pruning's dependency
graph, this works for any conv network the rewrite tree can parse.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from sporeling.core import nn
from sporeling.core.rewrite import NodeType, SymbolTree, TreeNodeHelper

__all__ = ["ChannelGroup", "find_channel_groups"]

_PASS_CELLS = (
    nn.ReLU,
    nn.ReLU6,
    nn.Sigmoid,
    nn.Tanh,
    nn.GELU,
    nn.LeakyReLU,
    nn.SiLU,
    nn.HSwish,
    nn.HSigmoid,
    nn.Mish,
    nn.ELU,
    nn.MaxPool2d,
    nn.AvgPool2d,
    nn.Dropout,
    nn.Identity,
)
_PASS_FUNCS = {"relu", "relu6", "sigmoid", "tanh", "gelu", "silu", "elu", "mish", "hswish"}
_MEAN_FUNCS = {"mean", "reduce_mean", "ReduceMean", "adaptive_avg_pool2d"}


@dataclass
class ChannelGroup:
    """Channels that must be pruned together: the producers' output channels, the BNs on
    them and the consumers' input channels (Dense ones with ``features per channel``)."""

    channels: int
    producers: list[nn.Cell] = field(default_factory=list)
    norms: list[nn.Cell] = field(default_factory=list)
    conv_consumers: list[nn.Cell] = field(default_factory=list)
    depthwise: list[nn.Cell] = field(default_factory=list)
    dense_consumers: list[tuple[nn.Cell, int]] = field(default_factory=list)
    frozen: bool = False
    reasons: list[str] = field(default_factory=list)

    @property
    def prunable(self) -> bool:
        return not self.frozen and bool(self.producers)


class _Spaces:
    """Union-find over channel spaces."""

    def __init__(self) -> None:
        self.parent: list[int] = []
        self.groups: list[ChannelGroup] = []

    def new(self, channels: int) -> int:
        self.parent.append(len(self.parent))
        self.groups.append(ChannelGroup(channels))
        return len(self.parent) - 1

    def find(self, s: int) -> int:
        while self.parent[s] != s:
            self.parent[s] = self.parent[self.parent[s]]
            s = self.parent[s]
        return s

    def group(self, s: int) -> ChannelGroup:
        return self.groups[self.find(s)]

    def union(self, a: int, b: int) -> int:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return ra
        ga, gb = self.groups[ra], self.groups[rb]
        if ga.channels != gb.channels:
            ga.frozen = gb.frozen = True
            ga.reasons.append("an add of different channel counts")
        self.parent[rb] = ra
        ga.producers += gb.producers
        ga.norms += gb.norms
        ga.conv_consumers += gb.conv_consumers
        ga.depthwise += gb.depthwise
        ga.dense_consumers += gb.dense_consumers
        ga.frozen = ga.frozen or gb.frozen
        ga.reasons += gb.reasons
        return ra

    def freeze(self, s: Any, why: str) -> None:
        if isinstance(s, int):
            g = self.group(s)
            g.frozen = True
            g.reasons.append(why)
        elif isinstance(s, tuple):
            self.freeze(s[1], why)


def _space_of(env: dict[str, Any], value: Any) -> Any:
    return env.get(str(value.value)) if value.is_variable else None


class _Walker:
    def __init__(self) -> None:
        self.sp = _Spaces()
        self.seen_producers: set[int] = set()

    def tree(self, stree: SymbolTree, inputs: list[Any]) -> list[Any]:
        env: dict[str, Any] = {}
        outputs: list[Any] = []
        for node in stree.nodes():
            kind = node.get_node_type()
            targets = [str(t.value) for t in node.get_targets()]
            args = [_space_of(env, a) for a in node.get_args()]
            args += [_space_of(env, v) for v in node.get_kwargs().values()]
            if kind == NodeType.Input:
                pos = node.get_attribute("position") or 0
                env[targets[0]] = inputs[pos] if pos < len(inputs) else None
                continue
            if kind == NodeType.Output:
                outputs = args
                continue
            if kind == NodeType.Tree:
                sub = TreeNodeHelper.get_sub_tree(node)
                assert sub is not None
                outs = self.tree(sub, args)
                for t, o in zip(targets, outs):
                    env[t] = o
                continue
            if kind == NodeType.CallCell:
                out = self.cell(node.get_instance(), args)
            elif kind == NodeType.Python:
                out = self.python(node, env, args)
            else:
                out = self.function(node, args)
            if targets:
                env[targets[0]] = out
                for t in targets[1:]:
                    env[t] = None
                if len(targets) > 1:
                    self.sp.freeze(out, "a multi-output op")
        return outputs

    def cell(self, cell: nn.Cell, args: list[Any]) -> Any:
        x = args[0] if args else None
        for other in args[1:]:
            self.sp.freeze(other, f"an extra input of {type(cell).__name__}")
        if isinstance(cell, nn.Conv2d):
            if isinstance(x, tuple):
                self.sp.freeze(x, "a flattened tensor into a conv")
                x = None
            depthwise = cell.group == cell.in_channels == cell.out_channels
            if depthwise and cell.group > 1 and isinstance(x, int):
                # one filter per channel: its output channels are its input channels
                if id(cell) in self.seen_producers:
                    self.sp.freeze(x, "a convolution called twice")
                self.seen_producers.add(id(cell))
                self.sp.group(x).depthwise.append(cell)
                return x
            if cell.group != 1:
                self.sp.freeze(x, "a grouped convolution")
                s = self.sp.new(cell.out_channels)
                self.sp.freeze(s, "a grouped convolution")
                return s
            if isinstance(x, int):
                self.sp.group(x).conv_consumers.append(cell)
            s = self.sp.new(cell.out_channels)
            self.sp.group(s).producers.append(cell)
            if id(cell) in self.seen_producers:
                self.sp.freeze(s, "a convolution called twice")
            self.seen_producers.add(id(cell))
            return s
        if isinstance(cell, (nn.BatchNorm2d, nn.BatchNorm1d)):
            if isinstance(x, int):
                self.sp.group(x).norms.append(cell)
            else:
                self.sp.freeze(x, "a BatchNorm on a flattened tensor")
                return None
            return x
        if isinstance(cell, _PASS_CELLS):
            return x
        if isinstance(cell, nn.Flatten):
            return ("flat", x) if isinstance(x, int) else None
        if isinstance(cell, nn.Dense):
            if isinstance(x, tuple):
                g = self.sp.group(x[1])
                per = cell.in_channels // g.channels
                if per * g.channels != cell.in_channels:
                    self.sp.freeze(x, "a Dense whose inputs are not whole channels")
                else:
                    g.dense_consumers.append((cell, per))
            elif isinstance(x, int):
                self.sp.group(x).dense_consumers.append((cell, 1))
            return None
        self.sp.freeze(x, f"an unknown cell {type(cell).__name__}")
        return None

    def function(self, node: Any, args: list[Any]) -> Any:
        func = node.get_func()
        name = str(func).rsplit(".", 1)[-1] if func is not None else ""
        x = args[0] if args else None
        consts = [a for a in node.get_args()[1:] if not a.is_variable]
        if name in _PASS_FUNCS and len(args) == 1:
            return x
        if name in _MEAN_FUNCS and isinstance(x, int) and consts:
            axes = consts[0].value
            axes = (axes,) if isinstance(axes, int) else tuple(axes or ())
            if set(axes) == {2, 3} or set(axes) == {-1, -2}:
                return x
        if name == "flatten" and isinstance(x, int):
            return ("flat", x)
        for a in args:
            self.sp.freeze(a, f"an unknown function {name}")
        return None

    def python(self, node: Any, env: dict[str, Any], args: list[Any]) -> Any:
        lines = node.to_source()
        stmt = ast.parse("\n".join(lines)).body if lines else []
        if len(stmt) == 1 and isinstance(stmt[0], ast.Assign):
            value = stmt[0].value
            if isinstance(value, ast.BinOp) and isinstance(value.op, (ast.Add, ast.Sub, ast.Mult)):
                sides = [
                    env.get(v.id) if isinstance(v, ast.Name) else None
                    for v in (value.left, value.right)
                ]
                consts = [isinstance(v, ast.Constant) for v in (value.left, value.right)]
                if all(isinstance(s, int) for s in sides):
                    return self.sp.union(sides[0], sides[1])
                for s, c in zip(sides, consts[::-1]):
                    if isinstance(s, int) and c:
                        return s  # a channel tensor with a scalar
        for a in args:
            self.sp.freeze(a, "Python code")
        return None


def find_channel_groups(network: nn.Cell) -> list[ChannelGroup]:
    """The channel groups of ``network`` (each union of coupled spaces once)."""
    walker = _Walker()
    stree = SymbolTree.create(network)
    inputs = [n for n in stree.nodes() if n.get_node_type() == NodeType.Input]
    outs = walker.tree(stree, [None] * len(inputs))
    for o in outs:
        walker.sp.freeze(o, "the network's output")
    roots = sorted({walker.sp.find(i) for i in range(len(walker.sp.parent))})
    return [walker.sp.groups[r] for r in roots]
