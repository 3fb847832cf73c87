"""``Cell``: MindSpore's module class — parameters by attribute, children, train/eval mode.

A Cell's ``construct`` holds the computation; calling the cell runs the forward pre-hooks,
``construct`` and the forward hooks. Assigning a :class:`Parameter` or a Cell to an
attribute registers it; with ``auto_prefix`` (the default) a child's parameter names get the
attribute path as prefix (``"conv1.weight"``), as in MindSpore.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from .. import _hooks
from ..context import _SETTINGS, GRAPH_MODE
from ..tensor import Parameter
from ._amp import mark_dtype, run_in_dtype
from ._bprop import call_with_bprop, has_bprop
from ._cell_compat import CellFlagsMixin, graph_fallback, run_fallen_back
from ._flatten_weights import FlattenWeightsMixin
from ._pipeline_stage import PipelineStageMixin
from ._recompute import call_with_recompute, is_recompute

__all__ = ["Cell"]

_DEFAULT_PARAM_NAME = "Parameter"


#: set by the compiler while a graph-mode trace converts control flow on tensor values
#: (compiler/convert.py): each construct runs through the last one (a hook, so this layer
#: does not import the compiler's converter)
CONSTRUCT_TRANSFORMS: list[Callable[[Any], Any]] = []


class Cell(CellFlagsMixin, FlattenWeightsMixin, PipelineStageMixin):
    """Base class of every network (``construct`` defines the forward computation)."""

    def __init__(self, auto_prefix: bool = True, flags: dict[str, Any] | None = None) -> None:
        object.__setattr__(self, "_params", OrderedDict())
        object.__setattr__(self, "_cells", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", OrderedDict())
        object.__setattr__(self, "_forward_hooks", OrderedDict())
        object.__setattr__(self, "_hook_id", 0)
        self._auto_prefix = auto_prefix
        self.training = False
        self.requires_grad = False
        self.param_prefix = ""
        if flags:
            for key, value in flags.items():
                setattr(self, key, value)

    # ---- attributes -----------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        params = self.__dict__.get("_params")
        cells = self.__dict__.get("_cells")
        if params is None or cells is None:
            if isinstance(value, (Parameter, Cell)):
                raise RuntimeError(
                    f"{type(self).__name__}: call super().__init__() before assigning "
                    f"parameters or cells (while setting '{name}')"
                )
            object.__setattr__(self, name, value)
            return
        if isinstance(value, (Parameter, Cell)):
            self.__dict__.pop(name, None)  # a plain attribute of that name would shadow it
        if isinstance(value, Parameter):
            self.insert_param_to_cell(name, value, check_name_contain_dot=False)
        elif isinstance(value, Cell):
            self.insert_child_to_cell(name, value)
        elif value is None and (name in params or name in cells):
            (params if name in params else cells)[name] = None
        else:
            if name in params or name in cells:
                kind = "Parameter" if name in params else "Cell"
                raise TypeError(
                    f"{type(self).__name__}: attribute '{name}' holds a {kind}; assign a "
                    f"{kind} (or None), not {type(value).__name__}"
                )
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        if name in d.get("_params", ()):
            return d["_params"][name]
        if name in d.get("_cells", ()):
            return d["_cells"][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        if name in self._params:
            del self._params[name]
        elif name in self._cells:
            del self._cells[name]
        else:
            object.__delattr__(self, name)

    def insert_param_to_cell(
        self, param_name: str, param: Parameter, check_name_contain_dot: bool = True
    ) -> None:
        """Register ``param`` under ``param_name`` (its name defaults to the attribute name)."""
        if not isinstance(param_name, str) or not param_name:
            raise KeyError(
                "insert_param_to_cell: argument 'param_name' must be a non-empty str, "
                f"got {param_name!r}"
            )
        if check_name_contain_dot and "." in param_name:
            raise KeyError(
                "insert_param_to_cell: argument 'param_name' must not contain '.', "
                f"got {param_name!r}"
            )
        if not isinstance(param, Parameter):
            raise TypeError(
                "insert_param_to_cell: argument 'param' expected a Parameter, "
                f"got {type(param).__name__}"
            )
        if param.name == _DEFAULT_PARAM_NAME:
            param.name = param_name
        self._params[param_name] = param

    def insert_child_to_cell(self, child_name: str, child_cell: Cell) -> None:
        """Register ``child_cell`` under ``child_name``; prefixes its parameter names."""
        if not isinstance(child_name, str) or not child_name or "." in child_name:
            raise KeyError(
                f"insert_child_to_cell: argument 'child_name' must be a non-empty str without '.', "
                f"got {child_name!r}"
            )
        if not isinstance(child_cell, Cell) and child_cell is not None:
            raise TypeError(
                "insert_child_to_cell: argument 'child_cell' expected a Cell, "
                f"got {type(child_cell).__name__}"
            )
        if child_cell is not None and self._auto_prefix:
            child_cell.update_parameters_name(child_name + ".")
        self._cells[child_name] = child_cell

    def update_parameters_name(self, prefix: str = "", recurse: bool = True) -> None:
        """Prepend ``prefix`` to the names of this cell's parameters (and its children's)."""
        for _, param in self.parameters_and_names(expand=recurse):
            if not param.name.startswith(prefix):
                param.name = prefix + param.name

    # ---- calling --------------------------------------------------------------------
    def construct(self, *inputs: Any, **kwargs: Any) -> Any:
        raise TypeError(f"{type(self).__name__} must define construct(self, ...)")

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        if _SETTINGS["mode"] == GRAPH_MODE:
            if not self.__dict__.get("_graph_fallback"):
                # GRAPH_MODE: the outermost cell call compiles (once per signature) and runs,
                # through the compiler's hook (a higher layer); inside a trace it returns None
                compiler = _hooks.compiler
                compiled = compiler.graph_call(self)
                if compiled is None:
                    return self._run_construct(*inputs, **kwargs)
                try:
                    return compiled(*inputs, **kwargs)
                except compiler.tracing_error as exc:  # control flow on tensor values: eager
                    graph_fallback(self, exc)
            return run_fallen_back(self, self._run_construct, *inputs, **kwargs)
        d = self.__dict__
        if (
            not d.get("_forward_pre_hooks", True)
            and not d["_forward_hooks"]
            and not d.get("_mindspore_flags")  # recompute (and other flags): the full path
            and d.get("_amp_dtype") is None
            and not CONSTRUCT_TRANSFORMS
            and not callable(getattr(type(self), "bprop", None))
        ):
            # a plain cell in PYNATIVE mode (the common case): construct itself, without
            # _run_construct's hook lists and wrappers (one frame and ~1 us less per call)
            return self.construct(*inputs, **kwargs)
        return self._run_construct(*inputs, **kwargs)

    def _run_construct(self, *inputs: Any, **kwargs: Any) -> Any:
        for hook in list(self._forward_pre_hooks.values()):
            result = hook(self, inputs)
            if result is not None:
                inputs = result if isinstance(result, tuple) else (result,)
        run = self.construct
        if CONSTRUCT_TRANSFORMS:  # a graph-mode trace converting if/while/for on tensors
            run = CONSTRUCT_TRANSFORMS[-1](run)
        if has_bprop(self):  # a custom bprop replaces autodiff through construct
            output = call_with_bprop(self, run, inputs, kwargs)
        else:
            amp = self.__dict__.get("_amp_dtype")
            body = run
            if amp is not None:  # to_float: compute in that dtype

                def body(*args: Any, **kw: Any) -> Any:
                    return run_in_dtype(self, amp, run, args, kw)

            if is_recompute(self):  # keep the inputs, replay construct in backward
                output = call_with_recompute(self, body, inputs, kwargs)
            else:
                output = body(*inputs, **kwargs)
        for hook in list(self._forward_hooks.values()):
            result = hook(self, inputs, output)
            if result is not None:
                output = result
        return output

    def _add_hook(self, table: OrderedDict[int, Callable[..., Any]], fn: Callable[..., Any]) -> Any:
        if not callable(fn):
            raise TypeError(f"hook must be callable, got {type(fn).__name__}")
        hid = self._hook_id
        object.__setattr__(self, "_hook_id", hid + 1)
        table[hid] = fn
        return _HookHandle(table, hid)

    def register_forward_pre_hook(self, hook_fn: Callable[..., Any]) -> Any:
        """``hook_fn(cell, inputs)`` runs before construct; it may return new inputs."""
        return self._add_hook(self._forward_pre_hooks, hook_fn)

    def register_forward_hook(self, hook_fn: Callable[..., Any]) -> Any:
        """``hook_fn(cell, inputs, output)`` runs after construct; it may return a new output."""
        return self._add_hook(self._forward_hooks, hook_fn)

    # ---- traversal ------------------------------------------------------------------
    def cells_and_names(
        self, cells: Any = None, name_prefix: str = ""
    ) -> Iterator[tuple[str, Cell]]:
        """Every cell in the tree (this one first, named ``name_prefix``), each once."""
        seen: set[int] = set() if cells is None else cells
        if id(self) in seen:
            return
        seen.add(id(self))
        yield name_prefix, self
        for name, child in self._cells.items():
            if child is not None:
                prefix = f"{name_prefix}.{name}" if name_prefix else name
                yield from child.cells_and_names(seen, prefix)

    def cells(self) -> list[Cell]:
        return [c for c in self._cells.values() if c is not None]

    def name_cells(self) -> OrderedDict[str, Cell]:
        return OrderedDict((n, c) for n, c in self._cells.items() if c is not None)

    def parameters_and_names(
        self, name_prefix: str = "", expand: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """``(attribute path, parameter)`` for every distinct parameter in the tree."""
        seen: set[int] = set()
        cells = self.cells_and_names(name_prefix=name_prefix) if expand else [(name_prefix, self)]
        for prefix, cell in cells:
            for name, param in cell._params.items():
                if param is not None and id(param) not in seen:
                    seen.add(id(param))
                    yield (f"{prefix}.{name}" if prefix else name), param

    def get_parameters(self, expand: bool = True) -> Iterator[Parameter]:
        for _, p in self.parameters_and_names(expand=expand):
            yield p

    def trainable_params(self, recurse: bool = True) -> list[Parameter]:
        """Parameters with ``requires_grad=True`` (what optimizers update)."""
        return [p for p in self.get_parameters(expand=recurse) if p.requires_grad]

    def untrainable_params(self, recurse: bool = True) -> list[Parameter]:
        return [p for p in self.get_parameters(expand=recurse) if not p.requires_grad]

    def parameters_dict(self, recurse: bool = True) -> OrderedDict[str, Parameter]:
        """Parameters keyed by their (prefixed) names, as checkpoints store them."""
        return OrderedDict((p.name, p) for p in self.get_parameters(expand=recurse))

    def apply(self, fn: Callable[[Cell], None]) -> Cell:
        """Call ``fn`` on every cell of the tree (e.g. to initialise weights)."""
        for _, cell in self.cells_and_names():
            fn(cell)
        return self

    # ---- modes ----------------------------------------------------------------------
    def set_train(self, mode: bool = True) -> Cell:
        """Training (``True``) or evaluation mode, for this cell and its children."""
        for _, cell in self.cells_and_names():
            object.__setattr__(cell, "training", bool(mode))
        return self

    def set_grad(self, requires_grad: bool = True) -> Cell:
        self.requires_grad = bool(requires_grad)
        return self

    def to_float(self, dst_type: Any) -> Cell:
        """Compute this cell (and the cells below it) in ``dst_type`` — float16, bfloat16 or
        float32 — with float32 master weights, as MindSpore does (see ``nn/_amp.py``)."""
        from .. import dtype as _dt

        try:
            dt = _dt.to_dtype(dst_type)
        except TypeError:  # None (bfloat16 without ml_dtypes), names, ...
            dt = _dt.bool_
        if dt.category != 2:
            raise TypeError(
                f"{type(self).__name__}.to_float: argument 'dst_type' expected float16, "
                f"bfloat16 or float32, got {dst_type!r}"
            )
        mark_dtype(self, dt)
        return self

    # ---- display --------------------------------------------------------------------
    @property
    def cls_name(self) -> str:
        return type(self).__name__

    def extend_repr(self) -> str:
        """Extra text inside ``repr`` (layers show their sizes here)."""
        return ""

    def __repr__(self) -> str:
        extra = self.extend_repr()
        children = [(n, c) for n, c in self._cells.items() if c is not None]
        if not children:
            return f"{self.cls_name}<{extra}>"
        lines = [f"{self.cls_name}<{extra}"] if extra else [f"{self.cls_name}<"]
        for name, child in children:
            body = repr(child).replace("\n", "\n  ")
            lines.append(f"  ({name}): {body}")
        lines.append("  >")
        return "\n".join(lines)


class _HookHandle:
    """Returned by ``register_*_hook``; ``remove()`` unregisters the hook."""

    def __init__(self, table: OrderedDict[int, Any], hid: int) -> None:
        self._table = table
        self._hid = hid

    def remove(self) -> None:
        self._table.pop(self._hid, None)
