"""Cell methods MindSpore 1.8 scripts call that are about flags rather than computation:
``add_flags``, ``add_flags_recursive``, ``get_flags``, ``recompute``.

Flags are plain attributes (and a ``_mindspore_flags`` dict, as MindSpore keeps them).
``recompute()`` marks the cells; eager autodiff then keeps only a marked cell's inputs and
replays its construct in backward (``nn/_recompute.py``); in GRAPH_MODE the compiler
recomputes the marked cell's values in the backward graph (``compiler/passes/remat.py``).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["CellFlagsMixin", "graph_fallback", "run_fallen_back"]

# the fallback reasons of the cells now running eagerly after GRAPH_MODE could not compile
# them (outermost first), per thread: a cell inside one of them that fails for the same
# reason (the pipeline inside its training step, say) runs eagerly without saying it again
_RUNNING = threading.local()


class CellFlagsMixin:
    """Mixed into :class:`~sporeling.core.nn.Cell`."""

    def set_inputs(self, *inputs: Any) -> None:
        """The input signature for GRAPH_MODE (MindSpore 2.x): one Tensor per positional
        input of construct, ``Tensor(shape=[None, 3], dtype=...)`` leaving ``None`` sizes
        free; each call's inputs are checked against it."""
        from ..tensor import Tensor

        for i, t in enumerate(inputs):
            if not isinstance(t, Tensor):
                raise TypeError(
                    f"set_inputs: input {i} expected a Tensor (e.g. Tensor(shape=[None, 3], "
                    f"dtype=ms.float32)), got {type(t).__name__}"
                )
        object.__setattr__(self, "_input_signature", tuple(inputs))

    def get_inputs(self) -> tuple[Any, ...] | None:
        """What :meth:`set_inputs` declared (None if nothing)."""
        return self.__dict__.get("_input_signature")

    def add_flags(self, **flags: Any) -> Any:
        """Set ``flags`` on this cell (``cell.add_flags(defer_inline=True)``)."""
        store = self.__dict__.setdefault("_mindspore_flags", {})
        store.update(flags)
        for key, value in flags.items():
            if not hasattr(type(self), key):  # a flag never hides a method (recompute)
                object.__setattr__(self, key, value)
        return self

    def add_flags_recursive(self, **flags: Any) -> Any:
        """Set ``flags`` on this cell and every cell below it."""
        for _, cell in self.cells_and_names():  # type: ignore[attr-defined]
            cell.add_flags(**flags)
        return self

    def get_flags(self) -> dict[str, Any]:
        return dict(self.__dict__.get("_mindspore_flags", {}))

    def recompute(self, **kwargs: Any) -> None:
        """Mark this cell and its children for recomputation: in eager autodiff the cell keeps
        only its inputs (arguments, Parameters and any other tensor needing gradients that
        construct read, a tied weight say) and runs construct again in backward (same values
        and gradients, less memory, one more forward). Under GRAPH_MODE / ``jit`` the
        compiled backward recomputes the cell's values from its inputs instead. The
        keyword flags (communication recompute, activation slicing) are accepted and have no
        effect on one process."""
        for key in kwargs:
            if key not in ("mp_comm_recompute", "parallel_optimizer_comm_recompute",
                           "recompute_slice_activation"):  # fmt: skip
                raise TypeError(f"Cell.recompute: unexpected argument {key!r}")
        self.add_flags_recursive(recompute=True)


def graph_fallback(cell: Any, exc: Exception) -> None:
    """GRAPH_MODE could not trace ``cell`` (Python control flow on tensor values): from now on
    it runs eagerly (PYNATIVE), and a warning says why once for this cell, unless a cell
    around it already fell back for the same reason and is running it (one warning for a
    training step, not one for each cell inside it that meets the same obstacle)."""
    object.__setattr__(cell, "_graph_fallback", True)
    reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    object.__setattr__(cell, "_graph_fallback_reason", reason)
    if reason in getattr(_RUNNING, "reasons", ()):
        return
    warnings.warn(
        f"GRAPH_MODE: {type(cell).__name__} runs in PYNATIVE mode (eagerly) because it could "
        f"not be compiled: {reason}",
        UserWarning,
        stacklevel=4,
    )


def run_fallen_back(cell: Any, run: Callable[..., Any], *inputs: Any, **kwargs: Any) -> Any:
    """``run(*inputs, **kwargs)`` for a cell that fell back to eager, its reason recorded
    meanwhile (see :func:`graph_fallback`)."""
    reasons = _RUNNING.__dict__.setdefault("reasons", [])
    reasons.append(cell.__dict__.get("_graph_fallback_reason"))
    try:
        return run(*inputs, **kwargs)
    finally:
        reasons.pop()
