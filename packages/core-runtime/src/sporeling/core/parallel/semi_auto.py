"""``SEMI_AUTO_PARALLEL`` / ``AUTO_PARALLEL`` without shard strategies: data parallel, as in
MindSpore.

MindSpore gives every op without a strategy the data-parallel strategy (batch split over all
devices, weights replicated) and its compiler inserts an all-reduce of each weight gradient.
Here each rank's dataset shard is its part of the batch (``full_batch=False``, the default),
so :func:`reduce_weight_gradients` averages the Parameter gradients over the world whenever
``grad``/``value_and_grad``/``GradOperation`` differentiate with respect to weights: a
hand-written ``TrainOneStepCell`` gets the same weights on every rank, as in MindSpore, with
no ``DistributedGradReducer`` of its own. The reduction is a traced collective, so it lands
in the graph under ``jit``/GRAPH_MODE too.

With ``full_batch=True`` every rank holds the whole batch; ops without a strategy compute the
whole result on every rank, so gradients already agree and nothing is reduced. Ops with a
strategy (``Primitive.shard``) need ``full_batch=True`` (see ``shard.py``).

There is no strategy search: ``AUTO_PARALLEL`` runs as ``SEMI_AUTO_PARALLEL`` (a warning
says so once) and an explicit ``search_mode`` is refused by ``set_auto_parallel_context``.
"""

from __future__ import annotations

import warnings
from typing import Any

from ..communication.management import GlobalComm, get_group
from ..tensor import Tensor
from . import context as _ctx

__all__ = ["reduce_weight_gradients", "auto_data_parallel_active"]

_WARNED = {"auto": False}


def _world_size() -> int:
    return get_group(GlobalComm.WORLD_COMM_GROUP, "semi_auto_parallel").size


def auto_data_parallel_active() -> bool:
    """Whether weight gradients are averaged over the ranks (see the module docstring)."""
    mode = _ctx._SETTINGS["parallel_mode"]
    if mode not in ("semi_auto_parallel", "auto_parallel"):
        return False
    if not GlobalComm.INITED or _world_size() == 1:
        return False
    if _ctx._SETTINGS["pipeline_stages"] > 1:  # one stage per rank: no data-parallel group
        return False
    if mode == "auto_parallel" and not _WARNED["auto"]:
        _WARNED["auto"] = True
        warnings.warn(
            "AUTO_PARALLEL: Sporeling does no strategy search; ops without a shard strategy "
            "run data parallel (weight gradients averaged over the ranks), as under "
            "SEMI_AUTO_PARALLEL",
            UserWarning,
            stacklevel=4,
        )
    return _ctx._SETTINGS["dataset_strategy"] != "full_batch"


def reduce_weight_gradients(grads: tuple[Any, ...]) -> tuple[Any, ...]:
    """Each weight gradient averaged over the world (a traced all-reduce, then / size)."""
    from ..communication.collectives import all_reduce

    size = _world_size()
    out = []
    for g in grads:
        if hasattr(g, "to_dense") and type(g) is not Tensor:  # row-sparse: densify first
            g = g.to_dense()
        out.append(all_reduce(g) / size)
    return tuple(out)
