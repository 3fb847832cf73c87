"""``sporeling.core.parallel``: the parallel context and the parallel training machinery.

Data parallelism (:class:`DistributedGradReducer`, bucketed all-reduce overlapped with
backward) and optimizer parallelism (sharded optimizer state and update) live here;
``TrainOneStepCell`` and ``Model`` pick them up from :func:`set_auto_parallel_context`.
"""

from .context import (
    ParallelMode,
    get_auto_parallel_context,
    reset_auto_parallel_context,
    set_auto_parallel_context,
)
from .data_parallel import DistributedGradReducer

__all__ = [
    "ParallelMode",
    "set_auto_parallel_context",
    "get_auto_parallel_context",
    "reset_auto_parallel_context",
    "DistributedGradReducer",
]
