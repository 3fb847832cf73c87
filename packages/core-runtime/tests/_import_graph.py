"""The core's import graph read from its source (every import, module-level or inside a
function), the layer of each module, and the checks the layering test runs on it."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

#: the layers, lowest first (DESIGN.md, "Layers"): a module may import its own layer and the
#: layers below it, never one above, not even lazily inside a function
LAYERS: tuple[tuple[str, ...], ...] = (
    # base: no core imports beyond each other; kernels build on them
    (
        "dtype",
        "errors",
        "log",
        "_version",
        "_context_keys",
        "_backend",
        "context",
        "_hooks",
        "kernels",
    ),
    (
        "_primitive",
        "tensor",
        "_placeholder",
        "_eager",
        "autograd",
        "random_state",
        "initializer",
        "parameter_tuple",
    ),
    ("ops",),
    ("nn",),
    ("train", "compiler", "rewrite"),
    ("parallel", "communication"),
    # the package surface: re-exports, compatibility paths, entry points
    (
        "__init__",
        "__main__",
        "common",
        "extend",
        "cli",
        "demo",
        "demo_data",
        "data",
        "sparse_tensor",
    ),
)


def layer_of(module: str) -> int:
    """Layer index of ``sporeling.core.<part>...`` by its first part below the core."""
    parts = module.split(".")
    first = parts[2] if len(parts) > 2 else "__init__"
    for i, names in enumerate(LAYERS):
        if first in names:
            return i
    raise KeyError(f"{module}: its top-level name {first!r} is in no layer of LAYERS")


def folder_of(module: str) -> str:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 else "__init__"


def module_files(src: Path) -> dict[str, Path]:
    """``sporeling.core...`` module name -> file, for every ``.py`` under ``src`` (the
    ``sporeling/core`` directory)."""
    out = {}
    for p in sorted(src.rglob("*.py")):
        parts = list(p.relative_to(src.parent.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def _targets(module: str, is_pkg: bool, node: ast.AST, known: Iterable[str]) -> list[str]:
    known = set(known)
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        assert isinstance(node, ast.ImportFrom)
        if node.level:
            base = module.split(".") if is_pkg else module.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        names = [
            f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in known else prefix for a in node.names
        ]
    out = []
    for t in names:
        if not t.startswith("sporeling.core"):
            continue
        while t not in known and "." in t:
            t = t.rsplit(".", 1)[0]
        out.append(t)
    return out


def import_graph(src: Path) -> dict[str, set[str]]:
    """Module -> the core modules it imports anywhere in its source."""
    files = module_files(src)
    graph: dict[str, set[str]] = {m: set() for m in files}
    for m, p in files.items():
        tree = ast.parse(p.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for t in _targets(m, p.name == "__init__.py", node, files):
                    if t != m:
                        graph[m].add(t)
    return graph


def upward_imports(graph: Mapping[str, Iterable[str]]) -> set[tuple[str, str]]:
    """Every ``(importer, imported)`` pair where the imported module's layer is higher."""
    return {(m, t) for m, ts in graph.items() for t in ts if layer_of(t) > layer_of(m)}


def strongly_connected(graph: Mapping[str, Iterable[str]]) -> list[set[str]]:
    """The graph's strongly connected components of two or more modules (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    comp = set()
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.add(w)
                        if w == node:
                            break
                    if len(comp) > 1:
                        found.append(comp)
    return found
