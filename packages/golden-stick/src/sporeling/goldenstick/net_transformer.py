"""``NetTransformer``: Golden Stick 0.1's thin wrapper over the rewrite ``SymbolTree``."""

from __future__ import annotations

from typing import Any

from sporeling.core import nn
from sporeling.core.rewrite import Node, PatternEngine, Position, SymbolTree

__all__ = ["NetTransformer"]


class NetTransformer:
    """The network's rewrite tree with Golden Stick's method names."""

    def __init__(self, net: nn.Cell) -> None:
        self._net = net
        self._stree = SymbolTree.create(net)

    def get_handler(self) -> SymbolTree:
        return self._stree

    def nodes(self) -> list[Node]:
        return self._stree.nodes()

    def before(self, node: Node) -> Position:
        return self._stree.before(node)

    def after(self, node: Node) -> Position:
        return self._stree.after(node)

    def insert(self, position: Position, node: Node) -> Node:
        return self._stree.insert(position, node)

    def erase_node(self, node: Node) -> Node:
        return self._stree.erase_node(node)

    def replace(self, old_node: Node, new_nodes: list[Node]) -> Node:
        return self._stree.replace(old_node, new_nodes)

    def pattern_transform(self, pattern_engine: PatternEngine) -> bool:
        """Apply a pattern engine to the whole network; True if anything changed."""
        if not isinstance(pattern_engine, PatternEngine):
            raise TypeError(
                "NetTransformer.pattern_transform: argument 'pattern_engine' expected a "
                f"PatternEngine, got {type(pattern_engine).__name__}"
            )
        return pattern_engine.apply(self._stree)

    def get_network(self) -> nn.Cell:
        return self._stree.get_network()

    def get_code(self) -> str:
        return self._stree.get_code()

    def dump(self) -> Any:
        return self._stree.dump()
