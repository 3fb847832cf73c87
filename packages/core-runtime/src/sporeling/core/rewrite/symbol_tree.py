"""``SymbolTree``: a network's ``construct`` as a list of nodes that can be edited and turned
back into code and a runnable Cell (MindSpore 1.8's ``mindspore.rewrite.SymbolTree``).

>>> from sporeling.core import nn
>>> class Net(nn.Cell):
...     def __init__(self):
...         super().__init__()
...         self.fc = nn.Dense(4, 2)
...         self.relu = nn.ReLU()
...     def construct(self, x):
...         return self.relu(self.fc(x))

The regenerated network shares its parameters with the original (as MindSpore's does):
it is the same model with a new ``construct``, not a copy of the weights.
"""

from __future__ import annotations

import ast
import os
from collections import OrderedDict
from typing import Any

from ..nn.cell import Cell
from .node import Node, NodeType
from .parser import ConstructParser, RewriteError
from .scoped_value import ScopedValue

__all__ = ["SymbolTree", "Position"]


_NO_CALL = (NodeType.Input, NodeType.Output, NodeType.Python)


class Position:
    """Where :meth:`SymbolTree.insert` puts a node: before or after ``node``."""

    def __init__(self, tree: SymbolTree, node: Node, before: bool) -> None:
        self.tree = tree
        self.node = node
        self.before = before


class SymbolTree:
    """Nodes of one cell's ``construct``; ``SymbolTree.create(net)`` builds it."""

    def __init__(self, network: Cell, _cache: dict[int, SymbolTree] | None = None) -> None:
        if not isinstance(network, Cell):
            raise TypeError(
                f"SymbolTree: argument 'network' expected a Cell, got {type(network).__name__}"
            )
        parser = ConstructParser(network)
        nodes, self._fn_args = parser.parse()
        self._origin = network
        self._namespace = parser.namespace
        self._used = parser.used
        self._nodes: list[Node] = []
        self._new_cells: OrderedDict[str, Cell] = OrderedDict()
        self._saved_file = f"{type(network).__name__}_rewritten.py"
        cache = {} if _cache is None else _cache
        cache[id(network)] = self
        for node in nodes:
            node._tree = self
            self._nodes.append(node)
            if node._type == NodeType.Tree:
                self._attach_subtree(node, cache)

    def _attach_subtree(self, node: Node, cache: dict[int, SymbolTree]) -> None:
        inst = node._instance
        sub = cache.get(id(inst))
        if sub is None:
            try:
                sub = SymbolTree(inst, cache)
            except RewriteError as exc:
                node._type = NodeType.CallCell  # kept whole; why is on the node
                node._attributes["subtree_error"] = str(exc)
                return
        node._subtree = sub

    @classmethod
    def create(cls, network: Cell) -> SymbolTree:
        """Parse ``network.construct`` (and its sub-networks' recursively) into a tree."""
        return cls(network)

    # ---- queries --------------------------------------------------------------------
    def get_origin_network(self) -> Cell:
        return self._origin

    def get_namespace(self) -> dict[str, Any]:
        """The global names ``construct``'s code runs with (its module's, plus closure
        variables): what regenerated code may refer to."""
        return self._namespace

    def nodes(self) -> list[Node]:
        """Every node in statement order (inputs first, the return last)."""
        return list(self._nodes)

    def get_node(self, node_name: str) -> Node | None:
        for n in self._nodes:
            if n._name == node_name:
                return n
        return None

    def get_inputs(self) -> list[Node]:
        return [n for n in self._nodes if n._type == NodeType.Input]

    def get_return_node(self) -> Node:
        return next(n for n in self._nodes if n._type == NodeType.Output)

    def _definitions(self) -> dict[str, Node]:
        defs: dict[str, Node] = {}
        for n in self._nodes:
            for t in n._targets:
                defs[str(t.value)] = n
        return defs

    def _reads(self, node: Node) -> list[str]:
        vals = list(node._args) + list(node._kwargs.values())
        return [str(v.value) for v in vals if v.is_variable]

    def _providers(self, node: Node) -> list[Node]:
        defs = self._definitions()
        out: list[Node] = []
        for name in self._reads(node):
            src = defs.get(name)
            if src is not None and src not in out:
                out.append(src)
        return out

    def _users(self, node: Node) -> list[Node]:
        names = {str(t.value) for t in node._targets}
        return [n for n in self._nodes if n is not node and names & set(self._reads(n))]

    def _neighbour(self, node: Node, step: int) -> Node | None:
        i = self._index(node) + step
        return self._nodes[i] if 0 <= i < len(self._nodes) else None

    def _index(self, node: Node) -> int:
        for i, n in enumerate(self._nodes):
            if n is node:
                return i
        raise ValueError(f"SymbolTree: node '{node.get_name()}' is not in this tree")

    # ---- edits ----------------------------------------------------------------------
    def before(self, node: Node) -> Position:
        self._index(node)
        return Position(self, node, True)

    def after(self, node: Node) -> Position:
        self._index(node)
        return Position(self, node, False)

    def _unique(self, base: str) -> str:
        base = base if base.isidentifier() else "node"
        name, k = base, 0
        taken = self._used | {n._name for n in self._nodes} | set(self._new_cells)
        taken |= set(self._origin._cells) | set(self._origin._params)
        while name in taken or hasattr(type(self._origin), name):
            k += 1
            name = f"{base}_{k}"
        self._used.add(name)
        return name

    def insert(self, position: Position, node: Node) -> Node:
        """Insert a new node (from :meth:`Node.create_call_cell`) at ``position``."""
        if not isinstance(position, Position) or position.tree is not self:
            raise ValueError("SymbolTree.insert: argument 'position' must come from this tree")
        if not isinstance(node, Node) or node._tree is not None:
            raise ValueError("SymbolTree.insert: argument 'node' must be a new, uninserted Node")
        if node._type in (NodeType.Input, NodeType.Output):
            raise ValueError("SymbolTree.insert: inputs and the return cannot be inserted")
        if position.before and position.node._type == NodeType.Input:
            raise ValueError("SymbolTree.insert: nothing can be inserted before an input")
        if not position.before and position.node._type == NodeType.Output:
            raise ValueError("SymbolTree.insert: nothing can be inserted after the return")
        defined = set(self._definitions())
        node._name = self._unique(node._name)
        if node._instance is not None and node._cell_path is None and node._func is None:
            self._new_cells[node._name] = node._instance
            node._cell_path = (node._name,)
            node._func = ScopedValue.create_naming_value(node._name, "self")
            # an inserted cell is called as it is (no sub-tree): its construct may depend on
            # attributes its creator changes later
        new_targets = []
        for t in node._targets:
            name = str(t.value)
            if name in defined or name in self._used:
                name = self._unique(name)
            else:
                self._used.add(name)
            new_targets.append(ScopedValue.create_naming_value(name))
        node._targets = new_targets
        i = self._index(position.node) + (0 if position.before else 1)
        node._tree = self
        self._nodes.insert(i, node)
        return node

    def erase_node(self, node: Node) -> Node:
        """Remove a node nobody uses (rewire its users first, or use :meth:`replace`)."""
        self._index(node)
        if node._type in (NodeType.Input, NodeType.Output):
            raise RuntimeError(f"SymbolTree.erase_node: cannot erase the {node._type.name} node")
        users = self._users(node)
        if users:
            raise RuntimeError(
                f"SymbolTree.erase_node: node '{node.get_name()}' is still used by "
                f"{[u.get_name() for u in users]}; replace or rewire those first"
            )
        self._nodes.remove(node)
        node._tree = None
        return node

    def _rewire(self, old: Node, new: Node) -> None:
        """Every read of ``old``'s outputs now reads ``new``'s (same positions)."""
        mapping = {str(a.value): b for a, b in zip(old._targets, new._targets)}
        for n in self._nodes:
            if n is old or n is new:
                continue
            n._args = [mapping.get(str(a.value), a) if a.is_variable else a for a in n._args]
            n._kwargs = {
                k: (mapping.get(str(v.value), v) if v.is_variable else v)
                for k, v in n._kwargs.items()
            }

    def replace(self, old_node: Node, new_nodes: list[Node]) -> Node:
        """Put ``new_nodes`` where ``old_node`` was; the last new node's outputs take over
        its users. Returns that node."""
        if not new_nodes:
            raise ValueError("SymbolTree.replace: argument 'new_nodes' must not be empty")
        self._index(old_node)
        pos = self.after(old_node)
        renamed: dict[str, ScopedValue] = {}  # a new node's target renamed on insertion
        for n in new_nodes:
            n._args = [renamed.get(str(a.value), a) if a.is_variable else a for a in n._args]
            n._kwargs = {
                k: (renamed.get(str(v.value), v) if v.is_variable else v)
                for k, v in n._kwargs.items()
            }
            before = [str(t.value) for t in n._targets]
            self.insert(pos, n)
            for name, target in zip(before, n._targets):
                if name != str(target.value):
                    renamed[name] = target
            pos = self.after(n)
        last = new_nodes[-1]
        if len(last._targets) < len(old_node._targets) and self._users(old_node):
            raise ValueError(
                f"SymbolTree.replace: the last new node has {len(last._targets)} outputs but "
                f"'{old_node.get_name()}' had {len(old_node._targets)}"
            )
        self._rewire(old_node, last)
        self.erase_node(old_node)
        self._reuse_names(old_node, last)
        return last

    def _reuse_names(self, old: Node, new: Node) -> None:
        """Give ``new`` the erased ``old`` node's output names, so regenerated code keeps
        the original variable names (``x_1 = self.conv1_quant(x)``)."""
        defined = self._definitions()
        for i, (was, now) in enumerate(zip(old._targets, new._targets)):
            was_name, now_name = str(was.value), str(now.value)
            if was_name == now_name or was_name in defined:
                continue
            renamed = ScopedValue.create_naming_value(was_name)
            new._targets[i] = renamed
            for n in self._nodes:
                n._args = [renamed if a.is_variable and a.value == now_name else a for a in n._args]
                n._kwargs = {
                    k: (renamed if v.is_variable and v.value == now_name else v)
                    for k, v in n._kwargs.items()
                }

    def set_output(self, index: int, return_value: str) -> Node:
        """Make output ``index`` of the network return the variable ``return_value``."""
        out = self.get_return_node()
        if not 0 <= index < len(out._args):
            raise IndexError(
                f"SymbolTree.set_output: argument 'index' expected an int in "
                f"[0, {len(out._args)}), got {index!r}"
            )
        out.set_arg(index, return_value)
        return out

    # ---- code and network -----------------------------------------------------------
    def _class_name(self) -> str:
        return f"{type(self._origin).__name__}Opt"

    def construct_source(self) -> str:
        """The regenerated ``construct`` (as a method, indented for a class body)."""
        lines = [f"def construct({ast.unparse(self._fn_args)}):"]
        body = [ln for n in self._nodes for ln in n.to_source()]
        lines += ["    " + ln for ln in (body or ["return None"])]
        return "\n".join(lines)

    def _subtrees(self) -> list[SymbolTree]:
        seen: list[SymbolTree] = []
        for n in self._nodes:
            sub = n._subtree
            if sub is not None and n._type == NodeType.Tree and all(s is not sub for s in seen):
                seen.append(sub)
        return seen

    def get_code(self) -> str:
        """Readable source of the regenerated network and its sub-networks."""
        parts: list[str] = []
        done: set[int] = set()

        def emit(tree: SymbolTree) -> None:
            if id(tree) in done:
                return
            done.add(id(tree))
            base = type(tree._origin).__name__
            body = "\n".join("    " + ln for ln in tree.construct_source().splitlines())
            parts.append(f"class {tree._class_name()}({base}):\n{body}\n")
            for sub in tree._subtrees():
                emit(sub)

        emit(self)
        return "\n\n".join(parts)

    def _compile(self) -> type:
        namespace = dict(self._namespace)
        src = self.construct_source()
        code = compile(src, f"<rewrite:{self._class_name()}>", "exec")
        exec(code, namespace)  # noqa: S102 - our own regenerated source
        base = type(self._origin)
        return type(
            self._class_name(),
            (base,),
            {
                "construct": namespace["construct"],
                "__module__": base.__module__,
                "_rewrite_source": src,
            },
        )

    def get_network(self, _prefix: str = "", _memo: dict[int, Cell] | None = None) -> Cell:
        """A new Cell running the regenerated ``construct`` (parameters shared)."""
        memo = {} if _memo is None else _memo
        if id(self) in memo:
            return memo[id(self)]
        cls = self._compile()
        net = _shallow_copy(self._origin, cls)
        memo[id(self)] = net
        copies: dict[int, Cell] = {id(net): net}
        for name, cell in self._new_cells.items():
            if any(n._cell_path == (name,) for n in self._nodes):
                net._cells[name] = cell
                # a new cell's own fresh parameters get their path as name; parameters it
                # shares with the original network keep theirs (checkpoints still load)
                for path, param in cell.parameters_and_names():
                    if "." not in param.name and param.name == path.rsplit(".", 1)[-1]:
                        param.name = f"{_prefix}{name}.{path}"
        for n in self._nodes:
            if n._type == NodeType.Tree and n._subtree is not None and n._cell_path:
                sub_prefix = _prefix + ".".join(n._cell_path) + "."
                _place(net, n._cell_path, n._subtree.get_network(sub_prefix, memo), copies)
        return net

    # ---- output ---------------------------------------------------------------------
    def dump(self) -> str:
        """A table of the nodes (name, type, targets, call, args); printed and returned."""
        rows = []
        for n in self._nodes:
            targets = ", ".join(t.to_source() for t in n._targets)
            args = ", ".join(a.to_source() for a in n._args)
            func = n._call_target() if n._type not in _NO_CALL else ""
            rows.append(f"{n._name:<20} {n._type.name:<14} [{targets}] = {func}({args})")
        text = "\n".join(rows)
        print(text)
        return text

    def set_saved_file_name(self, file_name: str) -> None:
        if not isinstance(file_name, str) or not file_name:
            raise TypeError(
                f"SymbolTree.set_saved_file_name: argument 'file_name' expected a non-empty "
                f"str, got {file_name!r}"
            )
        self._saved_file = file_name if file_name.endswith(".py") else file_name + ".py"

    def get_saved_file_name(self) -> str:
        return self._saved_file

    def save_network_to_file(self) -> str:
        """Write :meth:`get_code` to the saved file name; returns its path."""
        tmp = self._saved_file + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(self.get_code())
        os.replace(tmp, self._saved_file)
        return self._saved_file


def _shallow_copy(cell: Cell, cls: type | None = None) -> Cell:
    """A new instance sharing parameters and children (containers copied, not shared)."""
    new = object.__new__(cls or type(cell))
    state = dict(cell.__dict__)
    state.pop("_graph_call", None)
    for key in ("_params", "_cells", "_forward_pre_hooks", "_forward_hooks"):
        state[key] = OrderedDict(state[key])
    new.__dict__.update(state)
    return new


def _place(root: Cell, path: tuple[str, ...], cell: Cell, copies: dict[int, Cell]) -> None:
    """Put ``cell`` at ``path`` under ``root``, copying the containers on the way."""
    parent = root
    for part in path[:-1]:
        child = parent._cells[part]
        if id(child) not in copies:
            dup = _shallow_copy(child)
            copies[id(dup)] = dup
            parent._cells[part] = dup
            child = dup
        parent = child
    parent._cells[path[-1]] = cell
