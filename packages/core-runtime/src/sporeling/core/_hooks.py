"""Slots a higher layer fills in, so that a lower one calls it without importing it.

The layers import one way (``nn`` never imports ``parallel``; see DESIGN.md). Where a lower
layer must still reach a higher one — ``TrainOneStepCell`` asks for a gradient reducer,
an optimizer asks whether its state is sharded, ``grad`` reduces weight gradients under
semi-auto parallel, ``Model`` reads the parallel mode — it calls a slot of :data:`parallel`,
which :mod:`sporeling.core.parallel` fills when it is imported (``import sporeling.core``
imports it). An empty slot raises, naming itself: it is a bug, never silently serial.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["ParallelHooks", "parallel"]


class ParallelHooks:
    """The parallel layer's entry points, one attribute per slot (see :meth:`register`)."""

    SLOTS = (
        "get_auto_parallel_context",  # (key) -> value
        "grad_reducer_for",  # (cell class name, weights, optimizer) -> reducer or None
        "parallel_optimizer_enabled",  # () -> bool
        "sharded_update",  # (optimizer, bank, step, inv_scale, rows) -> None
        "auto_data_parallel_active",  # () -> bool
        "reduce_weight_gradients",  # (grads) -> grads
        "sharded_primitive",  # (MindSpore primitive name) -> class or None
    )

    def register(self, **fns: Callable[..., Any]) -> None:
        """Fill slots by name; an unknown name is refused."""
        for name, fn in fns.items():
            if name not in self.SLOTS:
                raise ValueError(f"hooks: argument {name!r} expected one of {self.SLOTS}")
            setattr(self, name, fn)

    def __getattr__(self, name: str) -> Any:  # only reached for an unfilled slot
        if name in self.SLOTS:
            raise RuntimeError(
                f"hooks: the parallel slot {name!r} is empty: sporeling.core.parallel was not "
                "imported (import sporeling.core first)"
            )
        raise AttributeError(name)


#: filled by :mod:`sporeling.core.parallel`
parallel = ParallelHooks()
