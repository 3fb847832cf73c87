"""Slots a higher layer fills in, so that a lower one calls it without importing it.

The layers import one way (``nn`` never imports ``parallel``; see DESIGN.md). Where a lower
layer must still reach a higher one — ``TrainOneStepCell`` asks for a gradient reducer,
an optimizer asks whether its state is sharded, ``vmap`` runs the op library's batching
rules, a Cell compiles itself in graph mode — it calls a slot of one of the hook sets below,
which the higher layer fills when it is imported (``import sporeling.core`` imports them
all). An empty slot raises, naming itself: it is a bug, never silently serial or eager.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["Hooks", "ParallelHooks", "parallel", "ops", "compiler"]


class Hooks:
    """One layer's entry points, one attribute per slot (see :meth:`register`)."""

    SLOTS: tuple[str, ...] = ()

    def __init__(self, filled_by: str, slots: tuple[str, ...] | None = None) -> None:
        self._filled_by = filled_by
        if slots is not None:
            self.SLOTS = slots

    def register(self, **fns: Callable[..., Any]) -> None:
        """Fill slots by name; an unknown name is refused."""
        for name, fn in fns.items():
            if name not in self.SLOTS:
                raise ValueError(f"hooks: argument {name!r} expected one of {self.SLOTS}")
            setattr(self, name, fn)

    def __getattr__(self, name: str) -> Any:  # only reached for an unfilled slot
        if name in self.SLOTS:
            raise RuntimeError(
                f"hooks: the slot {name!r} is empty: {self._filled_by} was not imported "
                "(import sporeling.core first)"
            )
        raise AttributeError(name)


class ParallelHooks(Hooks):
    """The parallel layer's entry points."""

    SLOTS = (
        "get_auto_parallel_context",  # (key) -> value
        "grad_reducer_for",  # (cell class name, weights, optimizer) -> reducer or None
        "parallel_optimizer_enabled",  # () -> bool
        "sharded_update",  # (optimizer, bank, step, inv_scale, rows) -> None
        "auto_data_parallel_active",  # () -> bool
        "reduce_weight_gradients",  # (grads) -> grads
        "sharded_primitive",  # (MindSpore primitive name) -> class or None
        # nn's parallel layers: SyncBatchNorm (filled by communication), the micro-batch
        # interleave and the pipeline over ranks
        "sync_group",  # (process_groups) -> group name or None
        "all_reduce",  # (tensor, group=...) -> tensor summed over the group
        "event_log",  # () -> a fresh communication.overlap.EventLog
        "interleave_threads",  # () -> whether the copies may take turns on threads
        "interleaved_call",  # (network, inputs, n, threads, events) -> summed outputs
        "pipeline_layout",  # (pipeline cell) -> (plan, stage, peers, dp_group)
        "pipeline_run",  # (pipeline cell, parts, plan, stage, peers, dp_group) -> loss
    )

    def __init__(self) -> None:
        super().__init__("sporeling.core.parallel")


#: filled by :mod:`sporeling.core.parallel`
parallel = ParallelHooks()

#: filled by :mod:`sporeling.core.ops` (autograd sits below the op library)
ops = Hooks(
    "sporeling.core.ops",
    (
        "run_batched",  # (fn, args, in_axes, n) -> (out, out_axes); raises Unbatchable
        "unbatchable",  # the exception class run_batched raises
        "move_axis",  # (tensor, src, dst) -> tensor
        "stack",  # (tensors, axis) -> tensor
    ),
)

#: filled by :mod:`sporeling.core.compiler` (a Cell in GRAPH_MODE compiles through it)
compiler = Hooks(
    "sporeling.core.compiler",
    (
        "graph_call",  # (cell) -> the cell's compiled callable, or None inside a trace
        "tracing_error",  # the exception class a compiled call raises when it cannot trace
    ),
)
