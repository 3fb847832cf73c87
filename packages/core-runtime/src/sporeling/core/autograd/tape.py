"""The autograd tape: nodes recorded by eager execution and the reverse sweep over them.

Each recorded op call becomes a :class:`Node` that keeps its input tensors, its
parameters and its output arrays. The backward sweep calls each primitive's ``vjp`` (made
of ops) in reverse topological order. With ``create_graph=True`` those ops are recorded
too, which is how second-order gradients work.

A sweep may *release* the nodes it has finished (``backward(..., release=epoch)``, as
``grad``/``value_and_grad`` do for a graph their function built and nobody else can
reach): each node drops its inputs, parameters and outputs as soon as its ``vjp`` has run,
so activations are freed during the sweep instead of all at its end (PyTorch's
``retain_graph=False``). Only nodes recorded since ``epoch`` (:func:`new_epoch`) are
released. A later sweep stops at a released node: a tensor computed inside an earlier
``grad`` call is a constant to it, as in MindSpore, where gradients flow only through the
function being differentiated (an RNN state kept from the last step, say).
"""

from __future__ import annotations

import threading
from typing import Any

from ..tensor import Parameter, Tensor

__all__ = [
    "Node",
    "GradMode",
    "backward",
    "backward_into_leaves",
    "new_epoch",
    "GRADIENT_READY_HOOKS",
]

#: the exact types whose ``_data`` is always their array (a RowTensor builds it on reading)
_PLAIN = frozenset((Tensor, Parameter))

#: Callbacks ``hook(tensor, gradient)`` run during a first-order sweep with explicit
#: targets (``grad``/``value_and_grad``) as soon as a target's gradient is final, in the
#: order gradients complete -- data parallelism starts its bucketed all-reduces from here
#: while the rest of the backward pass is still running. Targets whose count of pending
#: contributions never reaches zero (pruned branches) are reported at the end of the sweep.
#: The list is process-wide; sweeps without explicit targets (``targets=None``) never call it.
GRADIENT_READY_HOOKS: list[Any] = []


class _GradMode(threading.local):
    """Whether ops record nodes (off inside ``no_grad`` and non-create-graph backward).

    Thread-local, so that threads recording tapes at once (``nn.MicroBatchInterleaved``
    runs its copies on threads) do not switch recording off for each other; a new thread
    starts with recording on, as in PyTorch. Nodes themselves hang off the tensors, so
    there is no other shared tape state.
    """

    enabled = True


GradMode = _GradMode()


#: how many epochs :func:`new_epoch` has begun; each node records the one it was made in
_EPOCH = 0


def new_epoch() -> int:
    """Begin a new epoch and return it: nodes recorded from now on carry it (or a later one),
    so a sweep given ``release=epoch`` releases only those."""
    global _EPOCH
    _EPOCH += 1
    return _EPOCH


class Node:
    """One recorded op call (``inputs`` is None once a sweep has released it)."""

    __slots__ = ("prim", "inputs", "params", "out_data", "needs", "device", "epoch")

    def __init__(
        self,
        prim: Any,
        inputs: tuple[Tensor, ...],
        params: dict[str, Any],
        out_data: list[Any],
        needs: tuple[bool, ...],
        device: Any,
    ) -> None:
        self.prim = prim
        self.inputs = inputs
        self.params = params
        self.out_data = out_data
        self.needs = needs
        self.device = device
        self.epoch = _EPOCH

    def release(self) -> None:
        """Drop what the node keeps for its vjp; later sweeps treat its outputs as constants."""
        self.inputs = None  # type: ignore[assignment]
        self.params = None  # type: ignore[assignment]
        self.out_data = None  # type: ignore[assignment]

    def outputs(self) -> list[Tensor]:
        """Output tensors linked to this node (rebuilt, so no reference cycle is kept)."""
        return [Tensor._wrap(d, self.device, self, i) for i, d in enumerate(self.out_data)]

    def __repr__(self) -> str:
        return f"<node {self.prim.name}>"


def _tracked(t: Tensor) -> bool:
    return t._node is not None or t._requires_grad


def _toposort(roots: list[Node]) -> list[Node]:
    """Nodes reachable from ``roots``, each after every node that consumes it."""
    order: list[Node] = []
    seen: set[int] = set()
    for root in roots:
        if id(root) in seen or root.inputs is None:
            continue
        seen.add(id(root))
        stack: list[tuple[Node, int]] = [(root, 0)]
        while stack:
            node, i = stack.pop()
            inputs = node.inputs
            while i < len(inputs):
                parent = inputs[i]._node
                i += 1
                if (
                    parent is not None
                    and node.needs[i - 1]
                    and id(parent) not in seen
                    and parent.inputs is not None  # a released node: a constant (see top)
                ):
                    seen.add(id(parent))
                    stack.append((node, i))
                    stack.append((parent, 0))
                    break
            else:
                order.append(node)
    order.reverse()
    return order


def _leading_to(order: list[Node], target_ids: set[int]) -> set[int]:
    """Ids of the nodes from which some target tensor can be reached (the rest is skipped)."""
    relevant: set[int] = set()
    for node in reversed(order):  # producers before consumers
        for inp, need in zip(node.inputs, node.needs, strict=True):
            if need and (
                id(inp) in target_ids or (inp._node is not None and id(inp._node) in relevant)
            ):
                relevant.add(id(node))
                break
    return relevant


def _zeros_for(data: Any, device: Any) -> Tensor:
    return Tensor._wrap(device.xp.zeros(data.shape, data.dtype), device)


def backward(
    outputs: list[Tensor],
    cotangents: list[Tensor],
    targets: list[Tensor] | None,
    create_graph: bool,
    release: int | None = None,
    ready_hooks: bool = True,
) -> dict[int, tuple[Tensor, Tensor]]:
    """Propagate ``cotangents`` from ``outputs``.

    Returns ``{id(tensor): (tensor, gradient)}`` for each of ``targets`` that received a
    gradient, or, with ``targets=None``, for every leaf that requires gradients. With
    ``release`` (an epoch from :func:`new_epoch`), each node recorded since that epoch is
    released as soon as its vjp has run (its inputs and outputs can be freed).
    ``ready_hooks=False`` keeps :data:`GRADIENT_READY_HOOKS` out of a sweep whose gradients
    are only part of a larger one (a recomputed cell's, ``nn/_recompute.py``).
    """
    target_ids = None if targets is None else {id(t) for t in targets}
    found: dict[int, tuple[Tensor, Tensor]] = {}
    node_cts: dict[int, list[Any]] = {}

    def deliver(t: Tensor, g: Tensor) -> None:
        if type(g) is Tensor and type(t) in _PLAIN:  # NumPy's dtypes (DTypes cost ~1 us)
            gd, td = g._data.dtype, t._data.dtype
            if gd is not td and gd != td:  # astype: a Tensor method the op library installs
                g = g.astype(t.dtype)
        elif g.dtype != t.dtype:  # (a RowTensor builds its dense _data only when read)
            g = g.astype(t.dtype)
        if (
            target_ids is not None
            and id(t) in target_ids
            or (target_ids is None and t._node is None and t._requires_grad)
        ):
            prev = found.get(id(t))
            found[id(t)] = (t, g if prev is None else prev[1] + g)
            return
        node = t._node
        if node is not None:
            slots = node_cts.setdefault(id(node), [None] * len(node.out_data))
            slots[t._index] = g if slots[t._index] is None else slots[t._index] + g

    prev_mode = GradMode.enabled
    GradMode.enabled = create_graph
    try:
        for output, cotangent in zip(outputs, cotangents, strict=True):
            deliver(output, cotangent)
        roots = [o._node for o in outputs if o._node is not None]
        order = _toposort(roots)
        relevant = None if target_ids is None else _leading_to(order, target_ids)
        hooks = (
            GRADIENT_READY_HOOKS
            if ready_hooks and target_ids is not None and not create_graph
            else ()
        )
        pending = _pending_counts(order, relevant, target_ids) if hooks else {}
        for node in order:
            if relevant is not None and id(node) not in relevant:
                continue
            slots = node_cts.pop(id(node), None)
            if slots is None:
                continue
            if node.prim.multiple_results:
                ct: Any = tuple(
                    s if s is not None else _zeros_for(d, node.device)
                    for s, d in zip(slots, node.out_data, strict=True)
                )
                out: Any = tuple(node.outputs())
            else:  # (node.outputs()[0] without the list)
                ct, out = slots[0], Tensor._wrap(node.out_data[0], node.device, node, 0)
            grads = node.prim.vjp(ct, *node.inputs, out=out, **node.params)
            if not isinstance(grads, (tuple, list)):
                grads = (grads,)
            for inp, need, g in zip(node.inputs, node.needs, grads, strict=True):
                if not need or g is None:
                    continue
                if (
                    relevant is not None
                    and id(inp) not in target_ids  # type: ignore[operator]
                    and (inp._node is None or id(inp._node) not in relevant)
                ):
                    continue
                if callable(g) and not isinstance(g, Tensor):
                    g = g()
                    if g is None:
                        continue
                if (
                    g._data.shape != inp._data.shape
                    if type(g) is Tensor and type(inp) in _PLAIN
                    else g.shape != inp.shape
                ):
                    raise RuntimeError(
                        f"internal error in the gradient of {node.prim.name}: gradient shape "
                        f"{g.shape} does not match input shape {inp.shape}"
                    )
                deliver(inp, g)
                if hooks and id(inp) in pending:
                    pending[id(inp)] -= 1
                    if not pending[id(inp)]:
                        for hook in hooks:
                            hook(*found[id(inp)])
            if release is not None and node.epoch >= release:
                node.release()  # nothing of this sweep reads it again: free activations now
        for key, (t, g) in found.items() if hooks else ():
            if pending.get(key, 1):  # never reached zero: report now
                for hook in hooks:
                    hook(t, g)
    finally:
        GradMode.enabled = prev_mode
    return found


def _pending_counts(order: list[Node], relevant: Any, target_ids: Any) -> dict[int, int]:
    """How many gradient contributions each target will receive in this sweep."""
    counts: dict[int, int] = {}
    for node in order:
        if relevant is not None and id(node) not in relevant:
            continue
        for inp, need in zip(node.inputs, node.needs, strict=True):
            if need and id(inp) in target_ids:
                counts[id(inp)] = counts.get(id(inp), 0) + 1
    return counts


def backward_into_leaves(output: Tensor, gradient: Any = None) -> None:
    """``Tensor.backward``: accumulate into ``.grad`` of every leaf requiring gradients."""
    if not _tracked(output):
        raise RuntimeError(
            "backward: this tensor does not depend on any tensor with requires_grad=True"
        )
    if gradient is None:
        ct = Tensor._wrap(
            output._device.xp.ones(output._data.shape, output._data.dtype), output._device
        )
    else:
        ct = gradient if isinstance(gradient, Tensor) else Tensor(gradient, dtype=output.dtype)
        if ct.shape != output.shape:
            raise ValueError(
                f"backward: argument 'gradient' expected shape {output.shape}, got {ct.shape}"
            )
    found = backward([output], [ct], None, create_graph=False)
    for leaf, g in found.values():
        leaf.grad = g if leaf.grad is None else leaf.grad + g


def _tensor_backward(self: Tensor, gradient: Any = None, retain_graph: bool = True) -> None:
    """Accumulate d(self)/d(leaf) into ``leaf.grad`` for every leaf needing gradients.

    ``gradient`` defaults to ones (so a non-scalar output is summed, as MindSpore's
    default sensitivity does).
    """
    backward_into_leaves(self, gradient)


# Tensor.backward, installed here: the Tensor class does not import the tape (which makes
# Tensors)
Tensor.backward = _tensor_backward  # type: ignore[method-assign]
