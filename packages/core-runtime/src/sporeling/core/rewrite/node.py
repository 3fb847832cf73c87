"""``Node``: one statement of a rewritten ``construct`` (MindSpore 1.8's ``rewrite.Node``).

A node assigns its ``targets`` from a call (``CallCell``: ``x = self.conv1(x)``;
``CallPrimitive``/``CallMethod``: a primitive or function call), from any other Python
statement kept as syntax (``Python``: ``x = a + b``, an ``if`` that depends on the inputs), or
is an ``Input``/``Output`` of the tree. ``Tree`` nodes call a sub-network that has its own
:class:`SymbolTree` (see :class:`TreeNodeHelper`).
"""

from __future__ import annotations

import ast
from enum import Enum
from typing import TYPE_CHECKING, Any

from ..nn.cell import Cell
from .scoped_value import ScopedValue

if TYPE_CHECKING:
    from .symbol_tree import SymbolTree

__all__ = ["Node", "NodeType"]


class NodeType(Enum):
    """Kinds of node (MindSpore 1.8's names)."""

    Unknown = 0
    CallCell = 1
    CallPrimitive = 2
    CallMethod = 3
    Python = 4
    Input = 5
    Output = 6
    Tree = 7


def _as_values(values: Any, what: str) -> list[ScopedValue]:
    out = []
    for v in values or ():
        if isinstance(v, ScopedValue):
            out.append(v)
        elif isinstance(v, str):
            out.append(ScopedValue.create_naming_value(v))
        else:
            raise TypeError(
                f"Node: every item of '{what}' must be a ScopedValue or a str, got {v!r}"
            )
    return out


class Node:
    """A statement of the tree; build new ones with :meth:`create_call_cell`."""

    def __init__(
        self,
        node_type: NodeType,
        name: str,
        targets: list[ScopedValue],
        args: list[ScopedValue],
        kwargs: dict[str, ScopedValue] | None = None,
        func: ScopedValue | None = None,
        instance: Any = None,
    ) -> None:
        self._type = node_type
        self._name = name
        self._targets = list(targets)
        self._args = list(args)
        self._kwargs = dict(kwargs or {})
        self._func = func
        self._instance = instance
        self._attributes: dict[str, Any] = {}
        self._tree: SymbolTree | None = None
        self._subtree: SymbolTree | None = None
        # Python nodes: statements, and the names in them that stand for args/targets
        self._stmts: list[ast.stmt] = []
        self._py_inputs: list[str] = []
        self._py_targets: list[str] = []
        self._cell_path: tuple[str, ...] | None = None  # where the instance lives in the owner
        self._lineno: int | None = None

    # ---- construction ---------------------------------------------------------------
    @classmethod
    def create_call_cell(
        cls,
        cell: Cell,
        targets: Any,
        args: Any = None,
        kwargs: dict[str, Any] | None = None,
        name: str = "",
    ) -> Node:
        """A node ``targets = self.<name>(*args, **kwargs)`` calling ``cell``; insert it with
        :meth:`SymbolTree.insert`."""
        if not isinstance(cell, Cell):
            raise TypeError(
                f"Node.create_call_cell: argument 'cell' expected a Cell, got {type(cell).__name__}"
            )
        if not isinstance(name, str):
            raise TypeError(f"Node.create_call_cell: argument 'name' expected a str, got {name!r}")
        tgts = _as_values(targets, "targets")
        if not tgts:
            raise ValueError(
                "Node.create_call_cell: argument 'targets' must name at least one value"
            )
        kw = {}
        for k, v in (kwargs or {}).items():
            kw[k] = v if isinstance(v, ScopedValue) else ScopedValue.create_naming_value(v)
        node_name = name or type(cell).__name__.lower()
        node = cls(NodeType.CallCell, node_name, tgts, _as_values(args, "args"), kw, None, cell)
        return node

    # ---- accessors (MindSpore's names) ----------------------------------------------
    def get_name(self) -> str:
        return self._name

    def get_node_type(self) -> NodeType:
        return self._type

    def get_instance(self) -> Any:
        return self._instance

    def get_instance_type(self) -> type:
        return type(self._instance) if self._instance is not None else type(None)

    def get_targets(self) -> list[ScopedValue]:
        return list(self._targets)

    def get_args(self) -> list[ScopedValue]:
        return list(self._args)

    def get_kwargs(self) -> dict[str, ScopedValue]:
        return dict(self._kwargs)

    def get_func(self) -> ScopedValue | None:
        return self._func

    def get_handler(self) -> Node:
        return self

    def get_belong_symbol_tree(self) -> SymbolTree | None:
        return self._tree

    def get_inputs(self) -> list[Node]:
        """Nodes whose outputs this node reads, in argument order."""
        return self._tree._providers(self) if self._tree is not None else []

    def get_users(self) -> list[Node]:
        """Nodes that read one of this node's targets."""
        return self._tree._users(self) if self._tree is not None else []

    def get_prev(self) -> Node | None:
        return self._tree._neighbour(self, -1) if self._tree is not None else None

    def get_next(self) -> Node | None:
        return self._tree._neighbour(self, 1) if self._tree is not None else None

    def set_arg(self, index: int, arg: Any) -> None:
        """Set positional argument ``index`` to a variable name, ScopedValue or constant."""
        if not isinstance(index, int) or not 0 <= index < len(self._args):
            raise IndexError(
                f"Node.set_arg: argument 'index' expected an int in [0, {len(self._args)}), "
                f"got {index!r} (node '{self._name}')"
            )
        if isinstance(arg, str):
            arg = ScopedValue.create_naming_value(arg)
        elif not isinstance(arg, ScopedValue):
            arg = ScopedValue.create_variable_value(arg)
        self._args[index] = arg

    def set_arg_by_node(self, index: int, src_node: Node, out_idx: int = 0) -> None:
        """Make argument ``index`` read output ``out_idx`` of ``src_node``."""
        if not isinstance(src_node, Node):
            raise TypeError(
                f"Node.set_arg_by_node: argument 'src_node' expected a Node, got {src_node!r}"
            )
        targets = src_node.get_targets()
        if not 0 <= out_idx < len(targets):
            raise IndexError(
                f"Node.set_arg_by_node: argument 'out_idx' expected an int in "
                f"[0, {len(targets)}), got {out_idx!r}"
            )
        self.set_arg(index, targets[out_idx])

    def set_attribute(self, key: str, value: Any) -> None:
        """Free-form per-node data (compression algorithms keep layer policies here)."""
        if not isinstance(key, str):
            raise TypeError(f"Node.set_attribute: argument 'key' expected a str, got {key!r}")
        self._attributes[key] = value

    def get_attribute(self, key: str) -> Any:
        return self._attributes.get(key)

    def get_attributes(self) -> dict[str, Any]:
        return dict(self._attributes)

    # ---- regenerated source ---------------------------------------------------------
    def to_source(self) -> list[str]:
        """The statement(s) of this node in regenerated ``construct`` code."""
        if self._type == NodeType.Input:
            return []
        if self._type == NodeType.Output:
            vals = ", ".join(a.to_source() for a in self._args)
            return [f"return {vals}"] if self._args else ["return None"]
        if self._type == NodeType.Python:
            return _python_source(self)
        call = f"{self._call_target()}({self._call_args()})"
        if not self._targets:
            return [call]
        return [f"{', '.join(t.to_source() for t in self._targets)} = {call}"]

    def _call_target(self) -> str:
        if self._cell_path is not None:
            return _path_source(self._cell_path)
        return self._func.to_source() if self._func is not None else "None"

    def _call_args(self) -> str:
        parts = [a.to_source() for a in self._args]
        parts += [f"{k}={v.to_source()}" for k, v in self._kwargs.items()]
        return ", ".join(parts)

    def __repr__(self) -> str:
        return f"Node({self._name!r}, {self._type.name})"


def _path_source(path: tuple[str, ...]) -> str:
    """``self.a.b`` for identifiers, ``getattr(self.a, '0')`` for container indices."""
    expr = "self"
    for part in path:
        expr = f"{expr}.{part}" if part.isidentifier() else f"getattr({expr}, {part!r})"
    return expr


class _Renamer(ast.NodeTransformer):
    def __init__(self, names: dict[str, str], exprs: dict[str, str]) -> None:
        self.names = names
        self.exprs = exprs

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.names:
            return ast.copy_location(ast.Name(self.names[node.id], node.ctx), node)
        if isinstance(node.ctx, ast.Load) and node.id in self.exprs:
            return ast.copy_location(ast.parse(self.exprs[node.id], mode="eval").body, node)
        return node


def _python_source(node: Node) -> list[str]:
    names: dict[str, str] = {}
    exprs: dict[str, str] = {}
    for orig, tgt in zip(node._py_targets, node._targets):
        if orig != tgt.to_source():
            names[orig] = tgt.to_source()
    for orig, arg in zip(node._py_inputs, node._args):
        src = arg.to_source()
        if src != orig:
            (names if arg.is_variable else exprs)[orig] = src
    import copy

    lines: list[str] = []
    for stmt in node._stmts:
        new = _Renamer(names, exprs).visit(copy.deepcopy(stmt))
        lines.extend(ast.unparse(ast.fix_missing_locations(new)).splitlines())
    return lines
