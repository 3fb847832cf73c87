"""``TreeNodeHelper``: reach the sub-tree of a ``NodeType.Tree`` node (MindSpore 1.8)."""

from __future__ import annotations

from .node import Node, NodeType
from .symbol_tree import SymbolTree

__all__ = ["TreeNodeHelper"]


class TreeNodeHelper:
    """Static helpers for sub-network nodes."""

    @staticmethod
    def get_sub_tree(node: Node) -> SymbolTree | None:
        """The :class:`SymbolTree` of a Tree node's sub-network (None for other nodes)."""
        if not isinstance(node, Node):
            raise TypeError(
                f"TreeNodeHelper.get_sub_tree: argument 'node' expected a Node, got {node!r}"
            )
        return node._subtree if node.get_node_type() == NodeType.Tree else None
