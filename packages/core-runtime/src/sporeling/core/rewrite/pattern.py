"""Pattern matching and replacement over a :class:`SymbolTree` (MindSpore 1.8's
``PatternEngine``, ``PatternNode``, ``VarNode``, ``Replacement``).

A pattern is a tree of :class:`PatternNode` (the root is the last node, its inputs the
nodes feeding it) or a chain given as a list of Cell/Primitive classes,
``[nn.Conv2d, nn.BatchNorm2d, nn.ReLU]``. :meth:`PatternEngine.apply` finds every match
(in sub-networks too), asks the :class:`Replacement` for new nodes and puts them in place;
the matched nodes are erased once nothing uses them.
"""

from __future__ import annotations

import abc
from collections import OrderedDict
from typing import Any

from .node import Node, NodeType
from .symbol_tree import SymbolTree

__all__ = ["PatternNode", "VarNode", "Replacement", "PatternEngine"]

_NONE_TYPE = type(None)


class PatternNode:
    """Matches a node whose instance is a ``match_type``, with inputs matching ``inputs``
    (no inputs given: any inputs)."""

    def __init__(
        self, pattern_node_name: str, match_type: type = _NONE_TYPE, inputs: Any = None
    ) -> None:
        if not isinstance(pattern_node_name, str):
            raise TypeError(
                f"PatternNode: argument 'pattern_node_name' expected a str, "
                f"got {pattern_node_name!r}"
            )
        if not isinstance(match_type, type):
            raise TypeError(
                f"PatternNode: argument 'match_type' expected a type, got {match_type!r}"
            )
        self._name = pattern_node_name
        self._type = match_type
        self._inputs: list[PatternNode] = list(inputs or [])

    @staticmethod
    def from_node(node: Node) -> PatternNode:
        return PatternNode(node.get_name(), node.get_instance_type())

    @staticmethod
    def create_pattern_from_node(node: Node) -> PatternNode:
        """A pattern of ``node`` and, recursively, the nodes feeding it."""
        pattern = PatternNode.from_node(node)
        for inp in node.get_inputs():
            if inp.get_node_type() != NodeType.Input:
                pattern.add_input(PatternNode.create_pattern_from_node(inp))
        return pattern

    @staticmethod
    def create_pattern_from_list(type_list: list[type]) -> PatternNode:
        """A chain ``type_list[0] -> type_list[1] -> ...``; returns the last (root) node."""
        if not isinstance(type_list, (list, tuple)) or not type_list:
            raise ValueError(
                "PatternNode.create_pattern_from_list: argument 'type_list' expected a "
                f"non-empty list of types, got {type_list!r}"
            )
        names: dict[str, int] = {}
        prev: PatternNode | None = None
        for t in type_list:
            if not isinstance(t, type):
                raise TypeError(
                    f"PatternNode.create_pattern_from_list: every item must be a type, got {t!r}"
                )
            k = names.get(t.__name__, 0)
            names[t.__name__] = k + 1
            node = PatternNode(t.__name__ if k == 0 else f"{t.__name__}_{k}", t)
            if prev is not None:
                node.add_input(prev)
            prev = node
        assert prev is not None
        return prev

    def add_input(self, node: PatternNode) -> None:
        if not isinstance(node, PatternNode):
            raise TypeError(
                f"PatternNode.add_input: argument 'node' expected a PatternNode, got {node!r}"
            )
        self._inputs.append(node)

    def set_inputs(self, inputs: list[PatternNode]) -> None:
        self._inputs = list(inputs)

    def get_inputs(self) -> list[PatternNode]:
        return list(self._inputs)

    def name(self) -> str:
        return self._name

    def type(self) -> type:
        return self._type

    def match(self, node: Node) -> bool:
        inst = node.get_instance()
        return inst is not None and isinstance(inst, self._type)


class VarNode(PatternNode):
    """Matches any node (a wildcard input of a pattern); never replaced."""

    def __init__(self) -> None:
        super().__init__("placeholder", type(None))

    def match(self, node: Node) -> bool:
        return node is not None


class Replacement(abc.ABC):
    """``build`` returns the nodes that take the place of one match."""

    @abc.abstractmethod
    def build(
        self, pattern: PatternNode, is_chain_pattern: bool, matched: OrderedDict[str, Node]
    ) -> list[Node]:
        """New nodes for ``matched`` (pattern-node name -> node, inputs first)."""

    def __call__(
        self, pattern: PatternNode, is_chain_pattern: bool, matched: OrderedDict[str, Node]
    ) -> list[Node]:
        return self.build(pattern, is_chain_pattern, matched)


class PatternEngine:
    """``PatternEngine(pattern, replacement).apply(stree)`` replaces every match."""

    def __init__(self, pattern: Any, replacement: Replacement | None = None) -> None:
        if isinstance(pattern, (list, tuple)):
            self._is_chain = True
            self._pattern = PatternNode.create_pattern_from_list(list(pattern))
        elif isinstance(pattern, PatternNode):
            self._is_chain = False
            self._pattern = pattern
        else:
            raise TypeError(
                "PatternEngine: argument 'pattern' expected a PatternNode or a list of types, "
                f"got {type(pattern).__name__}"
            )
        if replacement is not None and not callable(replacement):
            raise TypeError(
                "PatternEngine: argument 'replacement' expected a Replacement, "
                f"got {type(replacement).__name__}"
            )
        self._replacement = replacement

    def pattern(self) -> PatternNode:
        return self._pattern

    def _match(self, pattern: PatternNode, node: Node, found: OrderedDict[str, Node]) -> bool:
        if isinstance(pattern, VarNode):
            return True
        if node.get_node_type() in (NodeType.Input, NodeType.Output) or not pattern.match(node):
            return False
        inputs = pattern.get_inputs()
        if inputs:
            provided = node.get_inputs()
            if len(provided) != len(inputs):
                return False
            for p, n in zip(inputs, provided):
                if not self._match(p, n, found):
                    return False
        found[pattern.name()] = node
        return True

    def match_all(self, stree: SymbolTree) -> list[OrderedDict[str, Node]]:
        """Every non-overlapping match in ``stree`` (not its sub-trees), in statement order."""
        matches: list[OrderedDict[str, Node]] = []
        taken: set[int] = set()
        for node in reversed(stree.nodes()):
            if id(node) in taken:
                continue
            found: OrderedDict[str, Node] = OrderedDict()
            if not self._match(self._pattern, node, found):
                continue
            inner = [n for n in found.values() if n is not node]
            members = {id(n) for n in found.values()}
            if any(id(n) in taken for n in found.values()):
                continue
            # a matched inner node whose output also goes elsewhere cannot be replaced
            if any(any(id(u) not in members for u in n.get_users()) for n in inner):
                continue
            taken |= members
            matches.append(found)
        matches.reverse()
        return matches

    def apply(self, stree: SymbolTree) -> bool:
        """Replace every match (sub-networks included); True if anything changed."""
        if not isinstance(stree, SymbolTree):
            raise TypeError(
                f"PatternEngine.apply: argument 'stree' expected a SymbolTree, got {stree!r}"
            )
        if self._replacement is None:
            raise ValueError("PatternEngine.apply: this engine has no replacement to apply")
        changed = False
        seen: set[int] = set()

        def visit(tree: SymbolTree) -> None:
            nonlocal changed
            if id(tree) in seen:
                return
            seen.add(id(tree))
            for node in tree.nodes():
                if node.get_node_type() == NodeType.Tree and node._subtree is not None:
                    visit(node._subtree)
            for found in self.match_all(tree):
                root = next(reversed(found.values()))
                new_nodes = self._replacement(self._pattern, self._is_chain, found)
                if not new_nodes:
                    continue
                if not isinstance(new_nodes, (list, tuple)) or not all(
                    isinstance(n, Node) for n in new_nodes
                ):
                    raise TypeError("Replacement.build must return a list of Node")
                tree.replace(root, list(new_nodes))
                for n in reversed(list(found.values())[:-1]):
                    if n.get_belong_symbol_tree() is tree and not n.get_users():
                        tree.erase_node(n)
                changed = True

        visit(stree)
        return changed
