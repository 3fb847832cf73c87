"""``Cell.recompute()`` in eager (PYNATIVE) autodiff: keep a cell's inputs, not its activations.

When gradients are being recorded, a cell flagged ``recompute`` runs its ``construct`` once,
finds the tensors needing gradients that it read (walking its own nodes back to its
arguments, its trainable Parameters and any other tensor it read: another cell's Parameter,
a tied embedding weight, a tensor held in an attribute or a closed-over one), then drops
those nodes, so none of its intermediate results stays alive after the call; its outputs are
linked to one tape node that keeps only those tensors and the random generators' state.
That node's backward rule runs ``construct`` again with recording on (drawing the same
dropout masks from the saved generator state) and backpropagates the cotangents through it
to all those tensors, which therefore get the same gradients as without recompute (under
``grad``/``value_and_grad`` with weights as under ``Tensor.backward``). Activations then live
one recomputed cell at a time instead of all at once; the price is one more forward pass of
the cell (and the forward records nodes, as without recompute, until the cell returns).

Details:

- Cells inside a recomputed cell are recomputed with it (MindSpore's flag is recursive): while
  a recomputed cell's construct runs (forward or replay), the recompute flags below it are
  ignored.
- Outputs may be nested tuples/lists/dicts (``(output, layer_present)``); their float Tensors
  get gradients, other values are returned as they are. Non-Tensor arguments are passed
  again unchanged.
- Parameters with ``requires_grad=False`` (BatchNorm's moving statistics) are put back after
  the replay, so a training-mode replay does not update them twice.
- If the replay reads a tensor needing gradients that the forward did not (an attribute
  reassigned between forward and backward, a data-dependent branch), backward raises a
  RuntimeError naming the cell and the tensor rather than dropping its gradient.
- A tensor the construct stores on the side (``self.cache = h``) keeps its recorded nodes,
  as without recompute.
- The generators are process-wide: replaying swaps their state for the replay's duration.
  Copies of ``nn.MicroBatchInterleaved`` taking turns on threads that draw random numbers
  inside a recomputed cell across a collective may see other copies' draws in between, so
  a replay's dropout masks are then not guaranteed to match (not handled yet).
- GRAPH_MODE / ``jit``: while tracing, the construct runs once inside the tracer's
  ``recompute_region``, which tags the equations it records; the compiler's
  rematerialisation pass (``compiler/passes/remat.py``) then gives the backward sweep copies
  of them, so their values are recomputed just before backward reads them (random draws,
  such as dropout masks, are kept instead: the same masks, bit for bit).
"""

from __future__ import annotations

import threading
from typing import Any

from .._eager import EagerInterpreter
from .._primitive import current_interpreter
from ..autograd.tape import GradMode, Node, backward, new_epoch
from ..random_state import _Replay, _snapshot
from ..tensor import Tensor

__all__ = ["is_recompute", "call_with_recompute"]


class _State(threading.local):
    replaying = 0  # > 0 inside a recomputed construct (its forward or its replay)


_STATE = _State()


def is_recompute(cell: Any) -> bool:
    """Whether ``cell.recompute()`` (or ``add_flags(recompute=True)``) marked the cell."""
    return bool(cell.__dict__.get("_mindspore_flags", {}).get("recompute", False))


def _tracked(t: Tensor) -> bool:
    return t._node is not None or t._requires_grad


def _reads(outputs: list[Any], start: int, known: set[int]) -> list[Tensor]:
    """Tensors needing gradients that the nodes recorded since epoch ``start`` and leading to
    ``outputs`` read, other than those in ``known`` (ids), in first-seen order: leaves
    requiring gradients and results of earlier nodes, where the walk stops."""
    found: dict[int, Tensor] = {}
    seen: set[int] = set()
    stack = []

    def visit(t: Any) -> None:
        if not isinstance(t, Tensor) or id(t) in known or not _tracked(t):
            return
        node = t._node
        if node is not None and node.epoch >= start and node.inputs is not None:
            if id(node) not in seen:
                seen.add(id(node))
                stack.append(node)
        else:
            found.setdefault(id(t), t)

    for o in outputs:
        visit(o)
    while stack:
        node = stack.pop()
        for t, need in zip(node.inputs, node.needs, strict=True):
            if need:
                visit(t)
    return list(found.values())


def _describe(t: Tensor) -> str:
    name = getattr(t, "name", None)
    kind = "Parameter" if name is not None and hasattr(t, "requires_grad") else "Tensor"
    label = f"{kind} {name!r}" if isinstance(name, str) else kind
    return f"{label} of shape {tuple(t.shape)} and dtype {t.dtype}"


def _flatten(obj: Any) -> tuple[list[Any], Any]:
    """The leaves of nested tuples/lists/dicts (in order) and the structure to rebuild it."""
    leaves: list[Any] = []

    def walk(o: Any) -> Any:
        if isinstance(o, (tuple, list)):
            return (type(o), [walk(x) for x in o])
        if isinstance(o, dict):
            return (dict, {k: walk(v) for k, v in o.items()})
        leaves.append(o)
        return None

    return leaves, walk(obj)


def _unflatten(tree: Any, leaves: list[Any]) -> Any:
    it = iter(leaves)

    def build(t: Any) -> Any:
        if t is None:
            return next(it)
        kind, sub = t
        if kind is dict:
            return {k: build(v) for k, v in sub.items()}
        items = [build(x) for x in sub]
        return kind(items) if kind in (tuple, list) else kind(*items)  # namedtuples

    return build(tree)


class _RecomputeRule:
    """Stands in for a primitive on the tape: ``vjp`` replays the construct and
    backpropagates through the replay."""

    def __init__(self, cell: Any, run: Any, arg_leaves: list[Any], arg_tree: Any,
                 positions: list[int], linked: list[int], rng: Any) -> None:  # fmt: skip
        self.cell = cell
        self.run = run
        # the Tensor arguments are the node's inputs: not kept twice
        self.arg_leaves = [None if isinstance(a, Tensor) else a for a in arg_leaves]
        self.arg_tree = arg_tree
        self.positions = positions  # where the Tensor arguments sit among arg_leaves
        self.linked = linked  # which output leaves are linked to the node
        self.rng = rng
        self.multiple_results = len(linked) > 1
        self.name = f"{type(cell).__name__}.recompute"

    def vjp(self, ct: Any, *inputs: Tensor, out: Any, **_: Any) -> tuple[Any, ...]:
        create_graph = GradMode.enabled  # the sweep's: second order records through the replay
        n_args = len(self.positions)
        leaves = list(self.arg_leaves)
        targets: list[Tensor | None] = []
        for pos, t in zip(self.positions, inputs[:n_args], strict=True):
            if not create_graph:  # a fresh leaf: the replay's sweep stops there
                t2 = Tensor._wrap(t._data, t._device)
                t2._requires_grad = _tracked(t)
                t = t2
            leaves[pos] = t
            targets.append(t if _tracked(t) else None)
        targets.extend(p if _tracked(p) else None for p in inputs[n_args:])
        output = self._replay(leaves)
        out_leaves, _ = _flatten(output)
        known = {id(t) for t in leaves if isinstance(t, Tensor)}
        known.update(id(t) for t in inputs[n_args:])
        missed = _reads([out_leaves[i] for i in self.linked], self._epoch, known)
        if missed:
            raise RuntimeError(
                f"{type(self.cell).__name__}.recompute: replaying construct in backward read "
                f"{_describe(missed[0])}, which needs gradients but was not read by the "
                "forward (reassigned in between, or a data-dependent branch); its gradient "
                "would be lost. Pass it to the cell as an argument, keep it unchanged until "
                "backward, or drop recompute() on this cell."
            )
        cts = ct if self.multiple_results else (ct,)
        outs, used = [], []
        for i, c in zip(self.linked, cts, strict=True):
            o = out_leaves[i]
            if isinstance(o, Tensor) and c is not None and _tracked(o):
                outs.append(o)
                used.append(c)
        wanted = [t for t in targets if t is not None]
        found = backward(outs, used, wanted, create_graph=create_graph,
                         release=None if create_graph else self._epoch,
                         ready_hooks=False)  # fmt: skip
        return tuple(None if t is None else found.get(id(t), (None, None))[1] for t in targets)

    def _replay(self, leaves: list[Any]) -> Any:
        cell = self.cell
        buffers = []
        if cell.training:
            buffers = [(p, p._data.copy()) for p in cell.get_parameters() if not p.requires_grad]
        prev = GradMode.enabled
        GradMode.enabled = True
        _STATE.replaying += 1
        self._epoch = new_epoch()  # nodes of the replay: released by its own sweep
        try:
            with _Replay(self.rng):
                args, kwargs = _unflatten(self.arg_tree, leaves)
                return self.run(*args, **kwargs)
        finally:
            _STATE.replaying -= 1
            GradMode.enabled = prev
            for p, data in buffers:
                p._data[...] = data


def call_with_recompute(
    cell: Any, run: Any, inputs: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``run(*inputs, **kwargs)`` (the construct call) keeping only what a replay needs."""
    if not GradMode.enabled or _STATE.replaying:
        return run(*inputs, **kwargs)
    interp = current_interpreter()
    if not isinstance(interp, EagerInterpreter):  # tracing a graph: the compiler recomputes
        region = getattr(interp, "recompute_region", None)
        if region is None:
            return run(*inputs, **kwargs)
        with region():
            return run(*inputs, **kwargs)
    rng = _snapshot()
    start = new_epoch()  # the construct's own nodes: walked once, then dropped
    _STATE.replaying += 1  # cells inside are recorded plainly, recomputed with this one
    try:
        output = run(*inputs, **kwargs)
    finally:
        _STATE.replaying -= 1
    arg_leaves, arg_tree = _flatten((inputs, kwargs))
    positions = [i for i, a in enumerate(arg_leaves) if isinstance(a, Tensor)]
    params = [p for p in cell.get_parameters() if p._requires_grad]
    tensors = tuple(arg_leaves[i] for i in positions) + tuple(params)
    out_leaves, out_tree = _flatten(output)
    linked = [
        i
        for i, o in enumerate(out_leaves)
        if isinstance(o, Tensor) and o.dtype.category == 2  # float: differentiable
    ]
    # other tensors the construct read that need gradients (tied weights, attributes)
    extra = _reads([out_leaves[i] for i in linked], start, {id(t) for t in tensors})
    tensors += tuple(extra)
    needs = tuple(_tracked(t) for t in tensors)
    for i, o in enumerate(out_leaves):  # drop the recorded nodes: no activation stays
        if isinstance(o, Tensor) and o._node is not None and o._node.epoch >= start:
            out_leaves[i] = Tensor._wrap(o._data, o._device)
    if not any(needs) or not linked:
        return _unflatten(out_tree, out_leaves)
    rule = _RecomputeRule(cell, run, arg_leaves, arg_tree, positions, linked, rng)
    device = out_leaves[linked[0]]._device
    node = Node(rule, tensors, {}, [out_leaves[i]._data for i in linked], needs, device)
    for j, i in enumerate(linked):
        o = out_leaves[i]
        out_leaves[i] = Tensor._wrap(o._data, o._device, node, j)
    return _unflatten(out_tree, out_leaves)
