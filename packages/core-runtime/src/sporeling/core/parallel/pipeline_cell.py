"""The pipeline over ranks behind ``nn.PipelineCell``: its stage layout and its run.

``nn`` sits below this layer and does not import it: ``PipelineCell`` calls these through
``sporeling.core._hooks.parallel`` (``pipeline_layout``, ``pipeline_run``), filled by
:mod:`sporeling.core.parallel`. See :mod:`sporeling.core.nn.layers.pipeline_cell`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import context as _context
from .._eager import EagerInterpreter
from .._primitive import current_interpreter
from ..autograd import functional
from ..autograd.tape import GradMode
from ..communication import create_group, get_group_size, get_rank
from ..communication.management import GlobalComm, _State, get_group
from ..compiler.graph import TracingError
from ..tensor import Tensor
from .context import get_auto_parallel_context
from .pipeline import PipelineEngine, StagePlan, _Run, pipeline_p

__all__ = ["pipeline_layout", "pipeline_run", "stage_data_parallel_group"]


def stage_data_parallel_group(model_parallel: int = 1) -> str | None:
    """The name of this rank's data-parallel group inside its pipeline stage (created on
    first use; every rank must call it), or None when the stage has no other copy.

    Stage-major ranks: stage ``s`` runs on ranks ``s*per .. s*per+per-1`` (``per`` = ranks /
    ``pipeline_stages``). With ``model_parallel`` m > 1 those ranks form groups of m
    consecutive ranks holding tensor-parallel shards, and the data-parallel group is the
    ranks of the stage with this rank's shard index (``column % m``)."""
    stages = get_auto_parallel_context("pipeline_stages")
    size, rank = get_group_size(), get_rank()
    per = size // stages
    m = int(model_parallel)
    if m < 1 or per % m:
        raise ValueError(
            f"PipelineCell: model_parallel expected a divisor of the {per} ranks of each "
            f"stage ({size} processes / pipeline_stages {stages}), got {model_parallel!r}"
        )
    if per // m == 1:
        return None
    stage, j = rank // per, rank % per % m
    name = f"pipeline_stage{stage}_of_{stages}x{per}" + (f"_mp{m}_shard{j}" if m > 1 else "")
    if name not in _State.groups:
        create_group(name, [stage * per + d * m + j for d in range(per // m)])
    return name


def pipeline_layout(cell: Any) -> tuple[Any, int, list[int], str | None]:
    """``(plan, stage, peers, dp_group)`` when a pipeline over ranks is configured
    (``peers[s]``: the rank running stage ``s`` on this rank's data; ``dp_group``: the
    ranks of this stage, when several share it) of ``cell`` (a ``PipelineCell``) under
    ``pipeline_stages > 1``."""
    stages = get_auto_parallel_context("pipeline_stages")
    if not GlobalComm.INITED:
        raise RuntimeError(
            f"PipelineCell: pipeline_stages={stages} needs {stages} processes: start the "
            "script with `sporeling launch -n N` and call communication.init() first"
        )
    mode = get_auto_parallel_context("parallel_mode")
    if mode in ("data_parallel", "hybrid_parallel"):
        raise ValueError(
            f"PipelineCell: parallel_mode={mode!r} with pipeline_stages={stages}: expected "
            "'semi_auto_parallel', 'auto_parallel' or 'stand_alone' (data parallelism "
            "inside a stage comes from running more processes than stages)"
        )
    size = get_group_size()
    if size % stages:
        raise ValueError(
            f"PipelineCell: set_auto_parallel_context(pipeline_stages={stages}) expected a "
            f"divisor of the number of processes in the job ({size}); each stage runs on "
            "processes / pipeline_stages ranks"
        )
    key = (stages, id(cell.network))
    cached = cell.__dict__.get("_plan")
    if cached is None or cached[0] != key:
        cached = (key, StagePlan(cell.network, stages))
        object.__setattr__(cell, "_plan", cached)
    per, rank = size // stages, get_rank()
    stage, column = rank // per, rank % per  # MindSpore's layout: stage-major ranks
    peers = [s * per + column for s in range(stages)]
    group = stage_data_parallel_group(getattr(cell, "model_parallel", 1))
    return cached[1], stage, peers, group


def pipeline_run(
    cell: Any, parts: list[tuple[Any, ...]], plan: Any, rank: int, peers: list[int], group: Any
) -> Tensor:
    """``cell``'s micro-batches through the stages (this rank runs ``plan``'s stage ``rank``):
    the summed loss, its gradients flowing to this stage's parameters."""

    if not isinstance(current_interpreter(), EagerInterpreter):
        # GRAPH_MODE: the outermost cell catches this and runs eagerly (with a warning)
        raise TracingError(
            "PipelineCell: a pipeline over ranks runs eagerly (its stages exchange MPI "
            "messages) and cannot be compiled"
        )
    if functional._DEPTH[0] > 1:
        raise RuntimeError(
            "PipelineCell: higher-order gradients (grad of grad) through a pipeline over "
            "ranks are not supported; the schedule gives first-order gradients"
        )
    train = bool(GradMode.enabled)
    mode = _context._SETTINGS["mode"]
    _context._SETTINGS["mode"] = _context.PYNATIVE_MODE  # the stages' cells run eagerly
    try:
        engine = PipelineEngine(cell.network, plan, rank, train, peers)
        loss = engine.run(parts, cell.schedule)
    finally:
        _context._SETTINGS["mode"] = mode
    cell.last_order = engine.order
    loss_data, grads = engine.loss_data, engine.param_grads()
    if group is not None:  # data parallel inside the stage: sum (or average) over its ranks
        loss_data, grads = _reduce_over(group, loss_data, grads, engine.params)
        loss = Tensor(loss_data)
    if not engine.params:
        return loss
    run = _Run(loss_data, grads)
    return pipeline_p.bind(*engine.params, run=run)


def _reduce_over(
    group: str, loss: Any, grads: list[Any], params: list[Any]
) -> tuple[Any, list[Any]]:
    """The loss and gradients summed over the stage's data-parallel ranks (averaged with
    ``gradients_mean``); a parameter without a gradient here takes part with zeros."""
    g = get_group(group, "PipelineCell")
    scale = 1.0 / g.size if get_auto_parallel_context("gradients_mean") else 1.0
    loss = np.asarray(g.allreduce(np.asarray(loss)) * scale, np.asarray(loss).dtype)
    out = []
    for t, p in zip(grads, params, strict=True):
        data = np.zeros(p.shape, p.asnumpy().dtype) if t is None else t.asnumpy()
        out.append(Tensor(np.asarray(g.allreduce(data) * scale, data.dtype)))
    return loss, out
