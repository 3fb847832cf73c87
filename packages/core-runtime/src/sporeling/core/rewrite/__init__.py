"""``sporeling.core.rewrite``: MindSpore 1.8's network-rewriting API.

Parse a Cell's ``construct`` into a :class:`SymbolTree` of :class:`Node` s, edit it (insert,
erase, replace, patterns), and get back readable source (``get_code``) and a runnable Cell
(``get_network``) that shares the original's parameters.
"""

from .node import Node, NodeType
from .parser import RewriteError
from .pattern import PatternEngine, PatternNode, Replacement, VarNode
from .scoped_value import ScopedValue, ValueType
from .symbol_tree import Position, SymbolTree
from .tree_node_helper import TreeNodeHelper

__all__ = [
    "SymbolTree",
    "Node",
    "NodeType",
    "ScopedValue",
    "ValueType",
    "PatternEngine",
    "PatternNode",
    "VarNode",
    "Replacement",
    "TreeNodeHelper",
    "Position",
    "RewriteError",
]
