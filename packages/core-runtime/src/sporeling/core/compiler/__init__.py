"""Graph mode (``sporeling.core.jit``, ``GRAPH_MODE``): trace, optimise and cache graphs.

See :mod:`.api` for signatures and caching, :mod:`.tracer` for tracing, :mod:`.passes` for
the optimisations and :mod:`.executor` for running compiled graphs.
"""

from typing import Any

from .. import _hooks
from .._primitive import current_interpreter
from ._mutable import is_mutable, mutable
from .api import JitFunction, compile_stats, jit
from .graph import TracingError
from .tracer import Tracer

__all__ = ["jit", "JitFunction", "mutable", "is_mutable", "compile_stats", "TracingError"]


def _graph_call(cell: Any) -> JitFunction | None:
    """The cell's compiled call (made once, cached on the cell), or None inside a trace (an
    inner cell is traced into the outer graph)."""
    if isinstance(current_interpreter(), Tracer):
        return None
    compiled = cell.__dict__.get("_graph_call")
    if compiled is None:
        compiled = JitFunction(cell._run_construct, cell=cell)
        object.__setattr__(cell, "_graph_call", compiled)
    return compiled


_hooks.compiler.register(graph_call=_graph_call, tracing_error=TracingError)
