"""Graph mode (``sporeling.core.jit``, ``GRAPH_MODE``): trace, optimise and cache graphs.

See :mod:`.api` for signatures and caching, :mod:`.tracer` for tracing, :mod:`.passes` for
the optimisations and :mod:`.executor` for running compiled graphs.
"""

from ._mutable import is_mutable, mutable
from .api import JitFunction, compile_stats, jit
from .graph import TracingError

__all__ = ["jit", "JitFunction", "mutable", "is_mutable", "compile_stats", "TracingError"]
