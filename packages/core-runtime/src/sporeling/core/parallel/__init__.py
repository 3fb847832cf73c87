"""``sporeling.core.parallel``: the parallel context and the parallel training machinery.

Data parallelism (:class:`DistributedGradReducer`, bucketed all-reduce overlapped with
backward) and optimizer parallelism (sharded optimizer state and update) live here;
``TrainOneStepCell`` and ``Model`` pick them up from :func:`set_auto_parallel_context`.
"""

from .. import _hooks
from .. import context as _context
from ..communication.overlap import EventLog as _EventLog
from .context import (
    ParallelMode,
    get_auto_parallel_context,
    reset_auto_parallel_context,
    set_auto_parallel_context,
)
from .data_parallel import DistributedGradReducer
from .data_parallel import grad_reducer_for as _grad_reducer_for
from .interleave import interleave_threads as _interleave_threads
from .interleave import interleaved_call as _interleaved_call
from .optimizer_parallel import parallel_optimizer_enabled as _optimizer_enabled
from .optimizer_parallel import sharded_update as _sharded_update
from .pipeline_cell import pipeline_layout as _pipeline_layout
from .pipeline_cell import pipeline_run as _pipeline_run
from .semi_auto import auto_data_parallel_active as _auto_dp_active
from .semi_auto import reduce_weight_gradients as _reduce_weight_gradients

__all__ = [
    "ParallelMode",
    "set_auto_parallel_context",
    "get_auto_parallel_context",
    "reset_auto_parallel_context",
    "DistributedGradReducer",
]


def _sharded_primitive(name: str) -> type | None:
    """The sharded implementation of MindSpore primitive ``name`` (for ``op.shard``), if any."""
    from . import shard

    cls = getattr(shard, name, None)
    return cls if isinstance(cls, type) and issubclass(cls, shard.ShardedPrimitive) else None


# The lower layers call the parallel layer through these slots, never by importing it.
_hooks.parallel.register(
    get_auto_parallel_context=get_auto_parallel_context,
    grad_reducer_for=_grad_reducer_for,
    parallel_optimizer_enabled=_optimizer_enabled,
    sharded_update=_sharded_update,
    auto_data_parallel_active=_auto_dp_active,
    reduce_weight_gradients=_reduce_weight_gradients,
    sharded_primitive=_sharded_primitive,
    event_log=_EventLog,
    interleave_threads=_interleave_threads,
    interleaved_call=_interleaved_call,
    pipeline_layout=_pipeline_layout,
    pipeline_run=_pipeline_run,
)
# MindSpore 1.8 scripts write context.set_auto_parallel_context(...), context.ParallelMode
for _name in __all__[:4]:
    setattr(_context, _name, globals()[_name])
