"""Export a network as a plain-Sporeling model: ``<name>.py`` (a Cell description: the
classes, their layers and the regenerated ``construct``) and ``<name>.safetensors`` (the
core's checkpoint). Loading needs only ``sporeling-core-runtime``::

    import importlib.util
    spec = importlib.util.spec_from_file_location("model", "out/model.py")
    model = importlib.util.module_from_spec(spec); spec.loader.exec_module(model)
    net = model.load()          # reads out/model.safetensors next to it
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import inspect
import os
import shutil
import types
from typing import Any

from sporeling.core import Tensor, nn, ops, save_checkpoint
from sporeling.core.rewrite import SymbolTree, TreeNodeHelper

from . import deploy_runtime, runtime_loader
from .fold_bn import fold_batchnorm
from .layer_spec import UnsupportedLayer, layer_source

__all__ = ["export_network", "network_source", "UnsupportedLayer"]

RUNTIME_FILE = "sporeling_gs_runtime.py"

_HEADER = '''"""{name}: exported by sporeling-golden-stick; needs only sporeling-core-runtime.

net = load() builds the network and loads {name}.safetensors from this folder.
"""

import os

import numpy as np

from sporeling.core import Parameter, load_checkpoint, load_param_into_net, nn
'''

# the deploy layers (int8, bit-packed): the runtime file beside the model, checked against
# its hash and run from one shared per-user copy (one Numba cache for every export; see
# runtime_loader), with no golden stick import
_RUNTIME_CALL = """

gsrt = _gs_load_runtime(os.path.dirname(os.path.abspath(__file__)), {file!r}, {sha256!r})
"""


def _runtime_loader_source() -> str:
    with open(deploy_runtime.__file__, "rb") as fh:
        digest = hashlib.sha256(fh.read()).hexdigest()
    funcs = "\n\n".join(inspect.getsource(fn) for fn in runtime_loader.LOADER_FUNCTIONS)
    return "\n\n" + funcs + _RUNTIME_CALL.format(file=RUNTIME_FILE, sha256=digest)


class _Writer:
    def __init__(self) -> None:
        self.classes: list[str] = []
        self.imports: dict[str, str] = {}
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        self.runtime = False

    def class_name(self, base: str) -> str:
        base = base.replace("Opt", "") or "Net"
        name, k = base, 0
        while name in self.used:
            k += 1
            name = f"{base}{k}"
        self.used.add(name)
        return name

    def cell_expr(self, cell: nn.Cell, stree: SymbolTree | None) -> str:
        if isinstance(cell, nn.SequentialCell) and (
            type(cell) is nn.SequentialCell or stree is None
        ):  # (a rewritten one, SequentialCellOpt, has its own construct: a class below)
            subs = _subs(stree)
            items = [self.cell_expr(c, subs.get(id(c))) for c in cell.cells()]
            return f"nn.SequentialCell([{', '.join(items)}])"
        if isinstance(cell, nn.CellList):
            return f"nn.CellList([{', '.join(self.cell_expr(c, None) for c in cell.cells())}])"
        if type(cell).__module__ == deploy_runtime.__name__:
            self.runtime = True
            args = ", ".join(f"{k}={self.value_expr(v)}" for k, v in cell.export_args().items())
            return f"gsrt.{type(cell).__name__}({args})"
        if stree is not None:
            return f"{self.network_class(stree)}()"
        return layer_source(cell)

    def value_expr(self, value: Any) -> str:
        if isinstance(value, nn.Cell):
            return self.cell_expr(value, None)
        if isinstance(value, dict):
            items = ", ".join(f"{k!r}: {self.value_expr(v)}" for k, v in value.items())
            return "{" + items + "}"
        if ast.literal_eval(repr(value)) != value:
            raise UnsupportedLayer(f"export: argument {value!r} is not a literal")
        return repr(value)

    def network_class(self, stree: SymbolTree) -> str:
        owner = stree.get_origin_network()
        if id(owner) in self.names:
            return self.names[id(owner)]
        subs = _subs(stree)
        lines = ["    def __init__(self):", "        super().__init__()"]
        for pname, param in owner.parameters_and_names(expand=False):
            arr = param.asnumpy()
            lines.append(
                f"        self.{pname} = Parameter(np.zeros({arr.shape!r}, {str(arr.dtype)!r}), "
                f"name={pname!r}, requires_grad={param.requires_grad})"
            )
        for cname, child in owner.name_cells().items():
            expr = self.cell_expr(child, subs.get(id(child)))
            if cname.isidentifier():
                lines.append(f"        self.{cname} = {expr}")
            else:
                lines.append(f"        self.insert_child_to_cell({cname!r}, {expr})")
        code = stree.construct_source()
        self.attributes(owner, code, lines)
        self.globals(stree, code)
        body = "\n".join("    " + ln for ln in code.splitlines())
        name = self.class_name(type(owner).__name__)
        self.names[id(owner)] = name
        self.classes.append(f"class {name}(nn.Cell):\n" + "\n".join(lines) + "\n\n" + body + "\n")
        return name

    def attributes(self, owner: nn.Cell, code: str, lines: list[str]) -> None:
        """Plain Python attributes ``construct`` reads (``self.scales``)."""
        cells = set(owner.name_cells())
        params = {n for n, _ in owner.parameters_and_names(expand=False)}
        for node in ast.walk(ast.parse(code)):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
                and node.attr not in cells | params
            ):
                value = getattr(owner, node.attr)
                if isinstance(value, Tensor):
                    raise UnsupportedLayer(
                        f"export: attribute '{node.attr}' is a Tensor that is not a Parameter"
                    )
                prim = _primitive_source(value)
                if prim is not None:  # ops.Concat(axis=1) and such: rebuilt from its attrs
                    self.imports["ops"] = "import sporeling.core.ops as ops"
                    line = f"        self.{node.attr} = {prim}"
                    if line not in lines:
                        lines.append(line)
                    continue
                if callable(value):
                    raise UnsupportedLayer(f"export: construct calls method '{node.attr}'")
                if ast.literal_eval(repr(value)) != value:
                    raise UnsupportedLayer(f"export: attribute '{node.attr}' is not a literal")
                line = f"        self.{node.attr} = {value!r}"
                if line not in lines:
                    lines.append(line)

    def globals(self, stree: SymbolTree, code: str) -> None:
        tree = ast.parse(code)
        fn = tree.body[0]
        local = {a.arg for a in fn.args.args}  # type: ignore[attr-defined]
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                local.add(node.id)
        namespace = stree.get_namespace()
        for node in ast.walk(tree):
            if not isinstance(node, ast.Name) or node.id in local or node.id in self.imports:
                continue
            if hasattr(builtins, node.id) and node.id not in namespace:
                continue
            if node.id not in namespace:
                raise UnsupportedLayer(f"export: construct uses unknown name '{node.id}'")
            value = namespace[node.id]
            if isinstance(value, types.ModuleType):
                self.imports[node.id] = f"import {value.__name__} as {node.id}"
            elif isinstance(value, (int, float, str, bool, tuple)) and not isinstance(value, type):
                self.imports[node.id] = f"{node.id} = {value!r}"
            elif hasattr(value, "__module__") and "<locals>" not in getattr(
                value, "__qualname__", "<locals>"
            ):
                self.imports[node.id] = (
                    f"from {value.__module__} import {value.__qualname__} as {node.id}"
                )
            else:
                raise UnsupportedLayer(f"export: cannot describe global '{node.id}'")


def _primitive_source(value: Any) -> str | None:
    """``ops.Name(k=v, ...)`` for a core primitive that its literal attributes rebuild
    (checked by rebuilding it), else None."""
    if not isinstance(value, ops.Primitive) or getattr(ops, type(value).__name__, None) is not type(
        value
    ):
        return None
    attrs = dict(getattr(value, "attrs", {}) or {})
    try:
        if ast.literal_eval(repr(attrs)) != attrs or type(value)(**attrs).attrs != attrs:
            return None
    except (TypeError, ValueError, SyntaxError):
        return None
    args = ", ".join(f"{k}={v!r}" for k, v in attrs.items())
    return f"ops.{type(value).__name__}({args})"


def _subs(stree: SymbolTree | None) -> dict[int, SymbolTree]:
    """The sub-trees of ``stree``'s cell calls, by the id of the called cell."""
    out: dict[int, SymbolTree] = {}
    for node in stree.nodes() if stree is not None else ():
        sub = TreeNodeHelper.get_sub_tree(node)
        if sub is not None:
            out[id(node.get_instance())] = sub
    return out


def network_source(network: nn.Cell, name: str = "model") -> str:
    """The Cell description of ``network`` as a Python module."""
    writer = _Writer()
    root = writer.network_class(SymbolTree.create(network))
    imports = "\n".join(sorted(set(writer.imports.values())))
    parts = [_HEADER.format(name=name)]
    if writer.runtime:
        parts.append(_runtime_loader_source())
    if imports:
        parts.append(imports + "\n")
    parts += ["\n" + c for c in writer.classes]
    parts.append(
        f'''

def build():
    """The network with freshly initialised parameters."""
    return {root}()


def load(ckpt_file=None):
    """The network with the exported parameters, in eval mode."""
    net = build()
    here = os.path.dirname(os.path.abspath(__file__))
    path = ckpt_file or os.path.join(here, {name + ".safetensors"!r})
    missing, unused = load_param_into_net(net, load_checkpoint(path), strict_load=True)
    if missing or unused:
        raise ValueError(f"checkpoint does not match: missing {{missing}}, unused {{unused}}")
    net.set_train(False)
    return net
'''
    )
    return "".join(parts)


def export_network(
    network: nn.Cell, directory: str, name: str = "model", fold_bn: bool = False
) -> dict[str, str]:
    """Write ``<name>.py`` and ``<name>.safetensors`` into ``directory`` (and, for int8 or
    bit-packed layers, ``sporeling_gs_runtime.py``); returns the paths. With ``fold_bn``
    each Conv2d -> BatchNorm2d pair is exported as one conv with the BN folded in
    (:func:`.fold_bn.fold_batchnorm`: an inference network, outputs equal within rounding)."""
    if not name.isidentifier():
        raise ValueError(f"export_network: argument 'name' expected an identifier, got {name!r}")
    if not isinstance(fold_bn, bool):
        raise TypeError(f"export_network: argument 'fold_bn' expected a bool, got {fold_bn!r}")
    if fold_bn:
        network = fold_batchnorm(network)
    os.makedirs(directory, exist_ok=True)
    source = network_source(network, name)
    py = os.path.join(directory, f"{name}.py")
    tmp = py + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(source)
    os.replace(tmp, py)
    paths = {"description": py}
    if "\ngsrt = _gs_load_runtime(" in source:
        runtime = os.path.join(directory, RUNTIME_FILE)
        shutil.copyfile(deploy_runtime.__file__, runtime + ".tmp")
        os.replace(runtime + ".tmp", runtime)
        paths["runtime"] = runtime
    ckpt = os.path.join(directory, f"{name}.safetensors")
    save_checkpoint(network, ckpt)
    paths["checkpoint"] = ckpt
    return paths
