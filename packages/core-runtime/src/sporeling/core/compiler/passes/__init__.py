"""Graph optimisation passes, run in order by :func:`optimize`."""

from __future__ import annotations

from ..graph import Graph
from .dce import dead_code_elimination

__all__ = ["optimize", "PASSES"]

PASSES = [dead_code_elimination]


def optimize(graph: Graph) -> Graph:
    """Apply every pass of :data:`PASSES` in order."""
    for p in PASSES:
        graph = p(graph)
    return graph
