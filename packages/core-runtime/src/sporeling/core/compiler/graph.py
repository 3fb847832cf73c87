"""The graph IR: a typed DAG of primitive calls, as produced by tracing.

A :class:`Var` is a symbolic array (shape and NumPy dtype, no data). An :class:`Eqn` is one
primitive call ``outputs = prim(*inputs, **params)``. A :class:`Graph` has input Vars (the
function's tensor arguments), *captured* Vars (tensors the function read from outside —
Parameters, constants — bound by reference, so in-place updates between calls are seen),
*consts* (arrays fixed at compile time: folded values and tensors only the graph holds),
its equations in execution order, and its output Vars.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Var", "Eqn", "Graph", "TracingError"]

_ids = itertools.count()


class TracingError(RuntimeError):
    """Python code asked for a traced tensor's *value* (data-dependent control flow)."""


class Var:
    """A symbolic array: shape and dtype known, value only at run time."""

    __slots__ = ("shape", "dtype", "id")

    def __init__(self, shape: tuple[int, ...], dtype: Any) -> None:
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.id = next(_ids)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TracingError(
            "jit: a traced tensor's value was needed while compiling (e.g. `if x > 0:`, "
            "`float(x)`, `x.asnumpy()`). Graph mode sees shapes, not values: use "
            "ops.select / ops.where for data-dependent choices, or run this code outside jit."
        )

    get = __array__ = tolist = item = _refuse

    def __bool__(self) -> bool:
        return bool(self._refuse())

    def __repr__(self) -> str:
        return f"%{self.id}:{self.dtype}{list(self.shape)}"


@dataclass
class Eqn:
    """One primitive call in the graph."""

    prim: Any
    inputs: list[Var]
    params: dict[str, Any]
    outputs: list[Var]
    #: buffer reuse: for each output, the index of an input whose buffer it is written into
    out_alias: tuple[int | None, ...] | None = None
    #: the call of a ``recompute()`` cell that recorded it (an id per outermost call), or None
    remat: int | None = None
    #: recorded while gradients were not being recorded: a first-order backward sweep (or
    #: ``no_grad`` code); such readers get a recomputed cell's values rematerialised
    backward: bool = False

    def __repr__(self) -> str:
        outs = ", ".join(map(repr, self.outputs))
        ins = ", ".join(f"%{v.id}" for v in self.inputs)
        shown = {k: v for k, v in self.params.items() if k != "device"}
        extra = f" {shown}" if shown else ""
        if self.out_alias is not None:
            extra += f" in-place{list(self.out_alias)}"
        if self.remat is not None:
            extra += f" recompute#{self.remat}"
        return f"{outs} = {self.prim.name}({ins}){extra}"


@dataclass
class Graph:
    """A traced function: inputs, captured tensors, equations, outputs."""

    invars: list[Var]
    captured: list[tuple[Var, Any]]  # (var, Tensor read at run time)
    eqns: list[Eqn]
    outvars: list[Any]  # Vars, or constants (Python values / arrays) returned as-is
    out_tree: Any = None  # how to rebuild fn's output structure from outvars
    device: Any = None
    notes: list[str] = field(default_factory=list)  # what the passes did
    consts: list[tuple[Var, Any]] = field(default_factory=list)  # (var, array fixed at compile)
    #: captured Vars whose tensors nothing but the graph holds (see api._graph_only): their
    #: values cannot change between calls, so constant folding may read them
    constant_ids: set[int] = field(default_factory=set)

    def pretty(self) -> str:
        """A readable listing (what SPORELING_DUMP_IR prints)."""
        lines = ["graph(" + ", ".join(map(repr, self.invars)) + ")"]
        for var, tensor in self.captured:
            lines.append(
                f"  {var!r} <- captured {type(tensor).__name__} "
                f"{getattr(tensor, 'name', '')}".rstrip()
            )
        for var, arr in self.consts:
            lines.append(f"  {var!r} <- const {_short(arr)}")
        lines += [f"  {e!r}" for e in self.eqns]
        lines.append(
            "  return "
            + ", ".join(repr(v) if isinstance(v, Var) else "const" for v in self.outvars)
        )
        return "\n".join(lines)


def _short(arr: Any) -> str:
    if getattr(arr, "size", 2) == 1:
        return repr(arr.reshape(-1)[0].item())
    return f"array{list(getattr(arr, 'shape', ()))}"
