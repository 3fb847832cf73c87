"""The engine of ``nn.MicroBatchInterleaved``: copies whose forward *and* backward take turns.

:func:`interleaved_call` slices the inputs, runs the copies' forwards through a
:class:`~sporeling.core.communication.overlap.CopyScheduler` (each copy records its own
tape from leaf slices of the inputs), and puts a single node on the caller's tape whose
outputs are the copies' summed outputs. That node's gradient runs the copies' backward
sweeps through a scheduler again, so a copy's gradient collectives (the all-reduce of
``copy_to_mp``'s gradient, the all-gather of ``scatter_to_mp``'s...) are in flight while the
other copies' backward computes -- a single sweep over the whole tape would wait for each
one in turn. The node then returns the input gradients (the slices' gradients
concatenated) and the parameters' (summed over the copies), so the caller's tape, its
gradient-ready hooks (data parallelism) and optimizers see the usual gradients.

The copies' sweeps run without explicit targets, which never calls the tape's
gradient-ready hooks: a data-parallel reducer sees each parameter's summed gradient once.
"""

from __future__ import annotations

import warnings
from typing import Any

from .._primitive import Primitive, ShapedArray
from ..autograd.tape import GradMode, backward
from ..communication import management
from ..communication.overlap import CopyScheduler, EventLog
from ..dtype import from_numpy
from ..tensor import Tensor

__all__ = ["interleaved_call", "interleaved_p", "interleave_threads"]


def _flatten(obj: Any, leaves: list[Any]) -> Any:
    """Leaves of nested tuples/lists appended to ``leaves``; returns the structure."""
    if isinstance(obj, (tuple, list)):
        return (type(obj), [_flatten(o, leaves) for o in obj])
    leaves.append(obj)
    return None


def _unflatten(spec: Any, leaves: Any) -> Any:
    if spec is None:
        return next(leaves)
    kind, children = spec
    return kind(_unflatten(c, leaves) for c in children)


def _tracked(t: Any) -> bool:
    return isinstance(t, Tensor) and (t._node is not None or t._requires_grad)


class _Run:
    """One interleaved call, kept by its tape node for the backward."""

    __hash__ = None  # type: ignore[assignment]  # never memoized: it holds the copies' graphs

    def __init__(
        self,
        outs: list[list[Any]],
        slices: list[list[Tensor]],
        sums: list[Any],
        threads: bool,
        log: EventLog,
    ) -> None:
        self.outs = outs  # per copy: its flattened outputs
        self.slices = slices  # per copy: the leaf slices of the tracked inputs
        self.sums = sums  # per output: the summed data
        self.threads = threads
        self.log = log
        self.n = len(outs)


def _abstract(*avals: ShapedArray, run: _Run) -> list[ShapedArray]:
    return [ShapedArray(s.shape, from_numpy(s.dtype)) for s in run.sums]


def _impl(xp: Any, *arrays: Any, run: _Run) -> list[Any]:
    return run.sums


def _vjp(ct: Any, *inputs: Tensor, out: Any, run: _Run) -> tuple[Any, ...]:
    create_graph = GradMode.enabled  # the sweep calling us records iff create_graph

    def backward_copy(k: int) -> dict[int, Any]:
        pairs = [(o, c) for o, c in zip(run.outs[k], ct, strict=True) if _tracked(o)]
        if not pairs:
            return {}
        return backward([o for o, _ in pairs], [c for _, c in pairs], None, create_graph)

    found = CopyScheduler(run.n, run.threads, run.log, "backward").run(backward_copy)
    n_in = len(run.slices[0])
    grads: list[Any] = []
    for i in range(n_in):
        parts = []
        for k in range(run.n):
            leaf = run.slices[k][i]
            hit = found[k].get(id(leaf))
            parts.append(hit[1] if hit is not None else _zeros(leaf))
        grads.append(_concat(parts))
    for p in inputs[n_in:]:
        total = None
        for k in range(run.n):
            hit = found[k].get(id(p))
            if hit is not None:
                total = hit[1] if total is None else total + hit[1]
        grads.append(total)
    return tuple(grads)


def _zeros(t: Tensor) -> Tensor:
    return Tensor._wrap(t._device.xp.zeros(t._data.shape, t._data.dtype), t._device)


def _concat(parts: list[Tensor]) -> Tensor:
    from .. import ops

    return ops.concat(parts, 0)


interleaved_p = Primitive(
    "micro_batch_interleaved", "opaque", _abstract, impl=_impl, vjp=_vjp, multiple_results=True
)


def _external_leaves(roots: list[Any], own: set[int]) -> list[Tensor]:
    """Leaves requiring gradients (parameters...) that the copies' tapes reach, other than
    the slices ``own``; they become inputs of the interleaved node."""
    leaves: dict[int, Tensor] = {}
    seen: set[int] = set()
    stack = []
    for t in roots:
        if not _tracked(t):
            continue
        if t._node is None:
            if id(t) not in own:
                leaves.setdefault(id(t), t)
        elif id(t._node) not in seen:
            seen.add(id(t._node))
            stack.append(t._node)
    while stack:
        node = stack.pop()
        if node.inputs is None:  # released by an earlier grad: a constant (autograd.tape)
            continue
        for inp, need in zip(node.inputs, node.needs, strict=True):
            if not need:
                continue
            parent = inp._node
            if parent is None:
                if id(inp) not in own:
                    leaves.setdefault(id(inp), inp)
            elif id(parent) not in seen:
                seen.add(id(parent))
                stack.append(parent)
    return list(leaves.values())


def _sum(values: list[Any]) -> Any:
    total = values[0]
    for v in values[1:]:
        total = total + v
    return total


def interleaved_call(
    network: Any, inputs: tuple[Any, ...], n: int, threads: bool, log: EventLog
) -> Any:
    """``sum_k network(*slice_k(inputs))`` with the copies' forward and backward taking
    turns (``threads=True``) or running one after the other; every Tensor input is split
    into ``n`` equal parts along dim 0 (the caller checked that it divides)."""
    tensors = [i for i, x in enumerate(inputs) if isinstance(x, Tensor)]
    diff = [i for i in tensors if _tracked(inputs[i]) and inputs[i].dtype.category == 2]
    parts: list[list[Any]] = []
    slices: list[list[Tensor]] = []
    for k in range(n):
        part = list(inputs)
        for i in tensors:
            x = inputs[i]
            m = x.shape[0] // n
            part[i] = Tensor._wrap(x._data[k * m : (k + 1) * m], x._device)
        for i in diff:
            part[i]._requires_grad = True
        parts.append(part)
        slices.append([part[i] for i in diff])

    outs = CopyScheduler(n, threads, log, "forward").run(lambda k: network(*parts[k]))
    flat: list[list[Any]] = []
    spec = None
    for k, out in enumerate(outs):
        leaves: list[Any] = []
        s = _flatten(out, leaves)
        if k and s != spec:
            raise ValueError(
                "MicroBatchInterleaved: the copies of the network returned differently "
                f"structured outputs ({spec} and {s}); they must match to be summed"
            )
        spec = s
        flat.append(leaves)
    columns = list(zip(*flat, strict=True))
    if not any(_tracked(t) for col in columns for t in col) or not GradMode.enabled:
        return _unflatten(spec, iter(_sum(list(col)) for col in columns))
    if not all(isinstance(t, Tensor) for col in columns for t in col):
        raise TypeError(
            "MicroBatchInterleaved: every output of the network must be a Tensor (or "
            "tuples/lists of them) to be differentiated"
        )
    own = {id(s) for row in slices for s in row}
    params = _external_leaves([t for row in flat for t in row], own)
    sums = [_sum([t._data for t in col]) for col in columns]
    run = _Run(flat, slices, sums, threads, log)
    node_inputs = [inputs[i] for i in diff] + params
    results = interleaved_p.bind(*node_inputs, run=run)
    return _unflatten(spec, iter(results))


def interleave_threads() -> bool:
    """Take turns on threads when the world has several processes and MPI allows calls
    from several threads (else warn once and run the copies one after the other)."""
    world = management._State.world
    if not (management.GlobalComm.INITED and world is not None and world.size > 1):
        return False
    if management.thread_support("serialized"):
        return True
    global _WARNED
    if not _WARNED:
        _WARNED = True
        warnings.warn(
            "MicroBatchInterleaved: MPI was started without MPI_THREAD_SERIALIZED support, so "
            "the copies run one after the other (no overlap of their communication); leave "
            "mpi4py.rc.thread_level at 'multiple' to overlap them",
            RuntimeWarning,
            stacklevel=3,
        )
    return False


_WARNED = False
