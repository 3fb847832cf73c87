"""Prunable channel groups, found from the network's graph (``sporeling.core.rewrite``).

Walking ``construct`` (sub-networks inlined), every Conv2d output starts a channel space;
BatchNorm, activations, pooling and ``ops.mean`` over spatial axes carry it through; an
elementwise ``a + b`` (a residual connection) merges the spaces of both sides, so every
convolution whose output meets at an add is pruned with the same channels. Consumers
(Conv2d inputs, Dense inputs after a global pooling or a Flatten) are recorded with the
space they read. A depthwise conv carries its input's channels and is pruned with them; a
grouped conv (1 < group < channels) is a producer and a consumer like any conv, but the
spaces it touches are pruned by blocks (``ChannelGroup.blocks``: the same count kept in
each of its groups). A concat along channels makes a derived space (its parts, each
pruned as its own group): convs, BNs, Dense layers (after a spatial mean: a column per
channel; after a Flatten: a block of h*w columns per channel) and pass-through ops after
it are sliced with the parts' kept channels (``ChannelGroup.cat_uses``); a depthwise conv
carries the concat; a grouped conv reading it needs each part to span whole conv groups;
an add of two concats whose parts line up merges the parts pairwise. A space that reaches
the network's input or output, an unknown op, a concat added to a single group or to a
concat cut differently, or a grouped conv whose groups straddle the parts is frozen
(never pruned), with the reason in ``ChannelGroup.reasons``. Like Torch-Pruning's dependency
graph, this works for any conv network the rewrite tree can parse.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field
from typing import Any

from sporeling.core import nn
from sporeling.core.rewrite import NodeType, SymbolTree, TreeNodeHelper

__all__ = ["CatUse", "ChannelGroup", "find_channel_groups"]

_PASS_CELLS = (
    nn.ReLU,
    nn.ReLU6,
    nn.Tanh,
    nn.GELU,
    nn.LeakyReLU,
    nn.SiLU,
    nn.HSwish,
    nn.Mish,
    nn.ELU,
    nn.MaxPool2d,
    nn.AvgPool2d,
    nn.Dropout,
    nn.Identity,
)
# each maps 0 to 0, so a pruned channel's zeros stay zeros through it (a sigmoid's 0.5
# would reach the next layer, which the pruned network no longer has: it freezes)
_PASS_FUNCS = {"relu", "relu6", "tanh", "gelu", "silu", "elu", "mish", "hswish"}
_NONZERO_AT_ZERO = (nn.Sigmoid, nn.HSigmoid)
_SHIFTED = "{} (a removed channel's 0 would become a value the next layer reads)"
_MEAN_FUNCS = {"mean", "reduce_mean", "ReduceMean", "adaptive_avg_pool2d"}
_CAT_FUNCS = {"concat", "cat", "Concat", "concatenate"}


@dataclass
class CatUse:
    """A layer reading a concat of channel groups, ``parts`` in order. ``kind``: "conv" (a
    conv's input channels), "grouped" (a grouped conv's inputs, each part spanning whole
    conv groups), "depthwise" (a depthwise conv: inputs = outputs = groups), "norm" (a
    BN's features) or "dense" (a Dense's input columns, ``per`` of them for each channel:
    1 after a mean over space, h*w after a Flatten)."""

    cell: nn.Cell
    kind: str
    parts: list[ChannelGroup]
    per: int = 1


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
    grouped_consumers: list[nn.Cell] = field(default_factory=list)
    cat_uses: list[CatUse] = field(default_factory=list)
    blocks: int = 1
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
        ga.grouped_consumers += gb.grouped_consumers
        ga.blocks = math.lcm(ga.blocks, gb.blocks)
        ga.frozen = ga.frozen or gb.frozen
        ga.reasons += gb.reasons
        return ra

    def freeze(self, s: Any, why: str) -> None:
        if isinstance(s, int):
            g = self.group(s)
            g.frozen = True
            g.reasons.append(why)
        elif isinstance(s, tuple) and s[0] == "flat":
            self.freeze(s[1], why)
        elif isinstance(s, tuple):  # ("tuple", items) or ("cat", parts)
            for part in s[1]:
                self.freeze(part, why)


def _space_of(env: dict[str, Any], value: Any) -> Any:
    return env.get(str(value.value)) if value.is_variable else None


class _Walker:
    def __init__(self) -> None:
        self.sp = _Spaces()
        self.seen_producers: set[int] = set()
        self.cat_uses: list[tuple[nn.Cell, str, list[int], int]] = []

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
        if _is_cat(x):
            return self.cat_cell(cell, x)
        if isinstance(x, tuple) and x[0] == "tuple":
            self.sp.freeze(x, f"a tuple into {type(cell).__name__}")
            x = None
        if isinstance(cell, nn.Conv2d):
            if isinstance(x, tuple):
                self.sp.freeze(x, "a flattened tensor into a conv")
                x = None
            depthwise = cell.group == cell.in_channels == cell.out_channels
            if depthwise and cell.group > 1 and isinstance(x, int):
                # one filter per channel: its output channels are its input channels
                if id(cell) in self.seen_producers:
                    self.sp.freeze(x, "a convolution called twice")
                if cell.has_bias:
                    self.sp.freeze(x, _SHIFTED.format("a depthwise conv with a bias on them"))
                self.seen_producers.add(id(cell))
                self.sp.group(x).depthwise.append(cell)
                return x
            if cell.group != 1:
                # pruned by blocks: the same count in each of its groups, inputs and outputs
                if isinstance(x, int):
                    g = self.sp.group(x)
                    g.grouped_consumers.append(cell)
                    g.blocks = math.lcm(g.blocks, cell.group)
                s = self.produced_by(cell)
                self.sp.group(s).blocks = cell.group
                return s
            if isinstance(x, int):
                self.sp.group(x).conv_consumers.append(cell)
            return self.produced_by(cell)
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
        if isinstance(cell, _NONZERO_AT_ZERO):
            self.sp.freeze(x, _SHIFTED.format(f"a {type(cell).__name__} on them"))
            return None
        if isinstance(cell, nn.Dense):
            if isinstance(x, tuple) and _is_cat(x[1]):
                return self.cat_dense(cell, x)
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

    def produced_by(self, cell: nn.Conv2d) -> int:
        """A new channel group for ``cell``'s outputs (frozen if the conv runs twice)."""
        s = self.sp.new(cell.out_channels)
        self.sp.group(s).producers.append(cell)
        if id(cell) in self.seen_producers:
            self.sp.freeze(s, "a convolution called twice")
        self.seen_producers.add(id(cell))
        return s

    def cat_cell(self, cell: nn.Cell, x: tuple) -> Any:
        """A layer on a concat: a conv, BN or Dense is sliced with the parts' channels
        (each part at its offset), a depthwise conv and pass-through layers keep the
        concat, a Flatten keeps it for the Dense after it; anything else freezes the parts."""
        parts = x[1]
        if isinstance(cell, nn.Conv2d):
            return self.cat_conv(cell, x)
        if isinstance(cell, nn.BatchNorm2d):
            self.cat_uses.append((cell, "norm", parts, 1))
            return x
        if isinstance(cell, nn.Dense):
            return self.cat_dense(cell, x)
        if isinstance(cell, nn.Flatten):
            return ("flat", x)
        if isinstance(cell, _PASS_CELLS):
            return x
        self.sp.freeze(x, f"a concat into {type(cell).__name__}")
        return None

    def cat_conv(self, cell: nn.Conv2d, x: tuple) -> Any:
        """A conv reading a concat. A grouped conv needs every part to span whole conv
        groups (then each part is pruned by blocks of the conv's group size); a depthwise
        conv carries the concat (its filters follow their channels)."""
        parts = x[1]
        if cell.group == 1:
            self.cat_uses.append((cell, "conv", parts, 1))
            return self.produced_by(cell)
        if cell.group == cell.in_channels == cell.out_channels:
            if id(cell) in self.seen_producers:
                self.sp.freeze(x, "a convolution called twice")
            if cell.has_bias:
                self.sp.freeze(x, _SHIFTED.format("a depthwise conv with a bias on them"))
            self.seen_producers.add(id(cell))
            self.cat_uses.append((cell, "depthwise", parts, 1))
            return x
        size = cell.in_channels // cell.group
        sizes = [self.sp.group(p).channels for p in parts]
        if any(c % size for c in sizes):
            self.sp.freeze(
                x,
                f"a grouped conv (group={cell.group}, {size} inputs each) whose groups "
                f"straddle the concat's parts {sizes}",
            )
        else:
            for p, c in zip(parts, sizes):
                g = self.sp.group(p)
                g.blocks = math.lcm(g.blocks, c // size)
            self.cat_uses.append((cell, "grouped", parts, 1))
        s = self.produced_by(cell)
        self.sp.group(s).blocks = cell.group
        return s

    def cat_dense(self, cell: nn.Dense, x: tuple) -> None:
        """A Dense reading a concat: after a mean over space one column per channel, after
        a Flatten (``x`` a flattened concat) a block of h*w columns per channel."""
        cat = x[1] if x[0] == "flat" else x
        total = sum(self.sp.group(p).channels for p in cat[1])
        per = cell.in_channels // total
        if per * total != cell.in_channels:
            self.sp.freeze(x, "a Dense whose inputs are not whole channels of the concat")
        else:
            self.cat_uses.append((cell, "dense", cat[1], per))
        return None

    def add_cats(self, a: tuple, b: tuple) -> Any:
        """``cat + cat``: elementwise, so the parts at the same offsets are one group each
        (the parts must line up: same sizes in the same order)."""
        sa = [self.sp.group(p).channels for p in a[1]]
        sb = [self.sp.group(p).channels for p in b[1]]
        if sa != sb:
            why = f"an add of concats whose parts do not line up ({sa} and {sb})"
            self.sp.freeze(a, why)
            self.sp.freeze(b, why)
            return None
        return ("cat", [self.sp.union(p, q) for p, q in zip(a[1], b[1])])

    def concat(self, node: Any, name: str, args: list[Any]) -> Any:
        """``concat((a, b, ...), axis=1)`` of channel spaces: a derived space (its parts)."""
        axis = None
        consts = [a.value for a in node.get_args()[1:] if not a.is_variable]
        kwargs = node.get_kwargs()
        if "axis" in kwargs and not kwargs["axis"].is_variable:
            axis = kwargs["axis"].value
        elif consts:
            axis = consts[0]
        elif type(node.get_instance()).__name__ == "Concat":
            axis = getattr(node.get_instance(), "axis", 0)  # the primitive's own axis
        else:
            axis = 0  # ops.concat / ops.cat default
        first = args[0] if args else None
        items = first[1] if isinstance(first, tuple) and first[0] == "tuple" else None
        if axis != 1 or items is None or any(a is not None for a in args[1:]):
            for a in args:
                self.sp.freeze(a, f"a {name} not along channels")
            return None
        parts: list[int] = []
        for item in items:
            if isinstance(item, int):
                parts.append(item)
            elif _is_cat(item):
                parts += item[1]  # a concat of a concat
            else:
                for a in items:
                    self.sp.freeze(a, f"a {name} of an unknown tensor")
                return None
        return ("cat", parts)

    def function(self, node: Any, args: list[Any]) -> Any:
        func = node.get_func()
        name = str(func).rsplit(".", 1)[-1] if func is not None else ""
        x = args[0] if args else None
        consts = [a for a in node.get_args()[1:] if not a.is_variable]
        inst = node.get_instance()
        if type(inst).__name__ == "Concat" or (
            name in _CAT_FUNCS and getattr(func, "scope", "") != "self"
        ):
            return self.concat(node, name, args)
        if _is_cat(x) and name in _PASS_FUNCS and len(args) == 1:
            return x
        if _is_cat(x) and _spatial_mean(name, consts) and all(a is None for a in args[1:]):
            return x  # one value per channel: the concat stays
        if _is_cat(x) and name == "flatten" and len(args) == 1:
            return ("flat", x)
        if isinstance(x, tuple) and x[0] in ("tuple", "cat"):
            for a in args:
                self.sp.freeze(a, f"a concat or tuple into {name}")
            return None
        if name in _PASS_FUNCS and len(args) == 1:
            return x
        if isinstance(x, int) and _spatial_mean(name, consts):
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
            if isinstance(value, (ast.Tuple, ast.List)) and all(
                isinstance(e, ast.Name) for e in value.elts
            ):
                return ("tuple", [env.get(e.id) for e in value.elts])  # for a concat
            if isinstance(value, ast.BinOp) and isinstance(value.op, (ast.Add, ast.Sub, ast.Mult)):
                sides = [
                    env.get(v.id) if isinstance(v, ast.Name) else None
                    for v in (value.left, value.right)
                ]
                consts = [isinstance(v, ast.Constant) for v in (value.left, value.right)]
                if all(isinstance(s, int) for s in sides):
                    return self.sp.union(sides[0], sides[1])
                if all(_is_cat(s) for s in sides):
                    return self.add_cats(sides[0], sides[1])
                for s, c in zip(sides, consts[::-1]):
                    if (isinstance(s, int) or _is_cat(s)) and c:
                        if isinstance(value.op, ast.Mult):
                            return s  # a channel tensor times a scalar: zeros stay zeros
                        self.sp.freeze(s, _SHIFTED.format("a constant added to them"))
                        return None
                if any(_is_cat(s) for s in sides) and all(
                    isinstance(s, int) or _is_cat(s) for s in sides
                ):
                    why = "an add of a concat and a single group (its parts would split the group)"
                    for s in sides:
                        self.sp.freeze(s, why)
                    return None
        for a in args:
            self.sp.freeze(a, "Python code")
        return None


def _is_cat(value: Any) -> bool:
    return isinstance(value, tuple) and value[0] == "cat"


def _spatial_mean(name: str, consts: list[Any]) -> bool:
    """A mean over the two spatial axes (NCHW)."""
    if name not in _MEAN_FUNCS or not consts:
        return False
    axes = consts[0].value
    axes = (axes,) if isinstance(axes, int) else tuple(axes or ())
    return set(axes) == {2, 3} or set(axes) == {-1, -2}


def find_channel_groups(network: nn.Cell) -> list[ChannelGroup]:
    """The channel groups of ``network`` (each union of coupled spaces once)."""
    walker = _Walker()
    stree = SymbolTree.create(network)
    inputs = [n for n in stree.nodes() if n.get_node_type() == NodeType.Input]
    outs = walker.tree(stree, [None] * len(inputs))
    for o in outs:
        walker.sp.freeze(o, "the network's output")
    for cell, kind, parts, per in walker.cat_uses:
        use = CatUse(cell, kind, [walker.sp.group(p) for p in parts], per)
        for group in {id(g): g for g in use.parts}.values():
            group.cat_uses.append(use)
    roots = sorted({walker.sp.find(i) for i in range(len(walker.sp.parent))})
    return [walker.sp.groups[r] for r in roots]
