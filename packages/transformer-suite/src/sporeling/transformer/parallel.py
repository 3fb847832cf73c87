"""Parallel training of the suite's models from the same model code, chosen by the config's
``parallel_config``, on the core's machinery:

* ``data_parallel``: the core's data parallelism (``parallel_mode='data_parallel'``,
  gradients averaged with a bucketed all-reduce overlapped with backward); each rank draws
  the batches one process draws and keeps its share of each.
* ``model_parallel``: :func:`shard_model` splits every attention's heads and every
  feed-forward's hidden units over the ranks (Megatron-LM's column/row split through the
  core's ``copy_to_mp``/``reduce_from_mp`` regions); every rank sees the same batch.
* ``optimizer_shard``: the core's parallel optimizer (state and update sharded over the
  data-parallel ranks: the whole job, each dp group with dp x mp, each stage's copies under a
  pipeline).
* ``micro_batch_num`` (``speed_up``): the core's ``nn.MicroBatchInterleaved`` copies,
  summed and divided by their number so the loss stays the batch mean.

Checkpoints are written unsharded (:func:`full_state` gathers the shards), so a run of any
layout loads into any other (:func:`load_full_state` slices them again).

With dp and mp both > 1 the ranks form mp groups of consecutive ranks and dp groups across
them; gradients are averaged over the dp group. ``pipeline_stage`` N > 1 runs each stage on
its own ranks (the core's ``pipeline_stages``; see :mod:`sporeling.transformer.pipeline`),
data parallel and/or tensor parallel inside a stage. :func:`train_step` clips by the whole
model's norm in every layout.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sporeling.core import Parameter, Tensor, nn, ops
from sporeling.core import communication as comm
from sporeling.core.parallel import ParallelMode, set_auto_parallel_context
from sporeling.core.parallel.tensor_parallel import group_rank_size

from .modules import FeedForward, MultiHeadAttention, TransformerOpParallelConfig
from .modules.layers import Linear

__all__ = [
    "shard_model",
    "apply_parallel",
    "MeanOfCopies",
    "ParallelInfo",
    "full_state",
    "load_full_state",
    "tensor_parallel_names",
    "train_step",
]


_GROUPS: dict[str, list[int]] = {}  # the groups this process made (a rerun reuses them)


def _group(name: str, ranks: list[int]) -> str:
    if name not in _GROUPS:
        comm.create_group(name, ranks)
        _GROUPS[name] = ranks
    return name


def _slice(p: Parameter, axis: int, rank: int, size: int) -> Parameter:
    n = p.shape[axis]
    if n % size:
        raise ValueError(
            f"shard_model: {p.name} has {n} entries on axis {axis}, not divisible by {size}"
        )
    k = n // size
    idx = [slice(None)] * len(p.shape)
    idx[axis] = slice(rank * k, (rank + 1) * k)
    return Parameter(
        Tensor(p.asnumpy()[tuple(idx)].copy()), name=p.name, requires_grad=p.requires_grad
    )


def _column(lin: Linear, rank: int, size: int, group: str | None) -> None:
    out_axis = 0 if lin.transpose_b else 1
    lin.weight = _slice(lin.weight, out_axis, rank, size)
    if lin.bias is not None:
        lin.bias = _slice(lin.bias, 0, rank, size)
    lin.mp_mode, lin.mp_group = "column", group
    lin.tensor_parallel_axes = {"weight": out_axis, "bias": 0}


def _row(lin: Linear, rank: int, size: int, group: str | None) -> None:
    in_axis = 1 if lin.transpose_b else 0
    lin.weight = _slice(lin.weight, in_axis, rank, size)
    lin.mp_mode, lin.mp_group = "row", group
    lin.tensor_parallel_axes = {"weight": in_axis}


def data_parallel_reducer(step: nn.Cell, info: ParallelInfo) -> nn.Cell:
    """With dp and mp both > 1, average ``step``'s gradients over this rank's dp group (the
    core's ``DistributedGradReducer`` on a group); otherwise ``step`` is left as it is."""
    if info.dp_group is not None:
        from sporeling.core.parallel import DistributedGradReducer

        step.grad_reducer = DistributedGradReducer(step.weights, mean=True, group=info.dp_group)
    return step


def tensor_parallel_names(net: nn.Cell) -> set[str]:
    """Names of the parameters :func:`shard_model` split (each rank holds a slice)."""
    return {
        getattr(cell, attr).name
        for _, cell in net.cells_and_names()
        if isinstance(cell, Linear) and cell.mp_mode is not None
        for attr in cell.tensor_parallel_axes
        if getattr(cell, attr) is not None
    }


def train_step(
    train_net: nn.Cell, opt: nn.Optimizer, clip: float, info: ParallelInfo
) -> nn.TrainOneStepCell:
    """The training step for this layout, with global-norm clipping at ``clip`` (0: none)
    that clips by the whole model's norm as one process would: pipeline stages and tensor
    parallel shards sum their squared norms over their group; under ``optimizer_shard`` (where
    the optimizer reduce-scatters the local gradients itself) the gradients are all-reduced
    first, since the norm is that of the averaged gradient."""
    from .pipeline import StagesClipTrainOneStepCell

    if info.pp > 1 and info.mp > 1 and getattr(opt, "use_parallel", False):
        # the optimizer shards over the stage's copies of this rank's shard index
        from sporeling.core.parallel.pipeline_cell import stage_data_parallel_group

        opt.parallel_optimizer_group = stage_data_parallel_group(info.mp)
    share = None
    if info.mp > 1:  # shards count whole, parameters every mp rank holds once
        sharded = tensor_parallel_names(train_net)
        share = [1.0 if p.name in sharded else 1.0 / info.mp for p in opt.parameters]
    if info.dp_group is not None and info.optimizer_shard:
        # dp x mp: the core's parallel optimizer over this rank's dp group (the copies of its
        # shards); it reduce-scatters the local gradients itself, so the dp all-reduce is
        # kept only when the clip needs the averaged gradients first
        opt.parallel_optimizer_group = info.dp_group
        opt.use_parallel = True
    if clip <= 0:
        step = nn.TrainOneStepCell(train_net, opt)
        if getattr(opt, "use_parallel", False):
            return step
    elif info.pp > 1:  # every rank's part once, each stage's dp copies divided out
        step = StagesClipTrainOneStepCell(train_net, opt, clip, None, info.dp, share)
    elif info.mp > 1:
        step = StagesClipTrainOneStepCell(train_net, opt, clip, info.mp_group, 1, share)
    else:
        step = nn.TrainOneStepWithClipCell(train_net, opt, clip_norm=clip)
        if getattr(opt, "use_parallel", False):
            from sporeling.core.parallel import DistributedGradReducer

            step.grad_reducer = DistributedGradReducer(step.weights, mean=True)
    return data_parallel_reducer(step, info)


def shard_model(net: nn.Cell, group: str | None = None) -> nn.Cell:
    """Keep this rank's share of every attention's heads and feed-forward units (in place).

    The parameters must be the same on every rank before the call (same seed), so the
    shards put together are the unsharded model. Expert (MoE) feed-forwards stay whole.
    """
    rank, size = group_rank_size(group)
    if size == 1:
        return net
    for _, cell in net.cells_and_names():
        if isinstance(cell, MultiHeadAttention):
            if cell.num_heads % size:
                raise ValueError(
                    f"shard_model: num_heads {cell.num_heads} is not divisible by model_parallel "
                    f"{size}"
                )
            for lin in (cell.dense1, cell.dense2, cell.dense3):
                _column(lin, rank, size, group)
            _row(cell.projection, rank, size, group)
            cell.local_heads = cell.num_heads // size
        elif isinstance(cell, FeedForward) and cell.expert_num == 1:
            _column(cell.mapping, rank, size, group)
            _row(cell.projection, rank, size, group)
    return net


class MeanOfCopies(nn.Cell):
    """``MicroBatchInterleaved`` sums its copies' losses; this divides by their number so the
    loss (and gradients) equal the full batch's mean."""

    def __init__(self, network: nn.Cell, interleave_num: int) -> None:
        super().__init__(auto_prefix=False)
        self.network = nn.MicroBatchInterleaved(network, interleave_num)
        self.k = float(interleave_num)

    def construct(self, *inputs: Any) -> Tensor:
        return ops.div(self.network(*inputs), self.k)


class ParallelInfo:
    """Where this process sits: ranks, the data-parallel index (which batches it draws), and
    with dp and mp both > 1 the names of its model-parallel and data-parallel groups."""

    def __init__(
        self,
        dp: int,
        mp: int,
        rank: int = 0,
        world: int = 1,
        mp_group: str | None = None,
        dp_group: str | None = None,
        pp: int = 1,
        micro: int = 1,
    ) -> None:
        self.dp, self.mp, self.rank, self.world = dp, mp, rank, world
        self.mp_group, self.dp_group = mp_group, dp_group
        self.pp, self.micro = pp, micro  # pipeline stages (this rank's stage: rank // (dp
        # * mp)) and the micro-batches the pipeline splits each batch into
        self.optimizer_shard = False  # dp x mp: shard the optimizer over the dp group

    @property
    def dp_rank(self) -> int:
        if self.pp > 1:  # a pipeline's stages share batches; its dp copies split them
            return self.rank % (self.dp * self.mp) // self.mp
        return self.rank // self.mp


def apply_parallel(cfg: dict[str, Any]) -> ParallelInfo:
    """Initialise communication and the core's parallel context for the config's layout
    (before the model and optimizer are built); returns this rank's place."""
    pc = TransformerOpParallelConfig.from_dict(cfg.get("parallel_config", {}) or {})
    dp, mp = pc.data_parallel, pc.model_parallel
    if pc.pipeline_stage > 1:
        return _apply_pipeline(pc)
    if dp * mp == 1 and not pc.optimizer_shard:
        return ParallelInfo(1, 1)
    comm.init()
    rank, world = comm.get_rank(), comm.get_group_size()
    if dp * mp != world:
        raise ValueError(
            f"parallel_config: data_parallel {dp} x model_parallel {mp} must equal the number of "
            f"processes ({world}); launch with `sporeling launch -n {dp * mp}`"
        )
    if dp > 1 and mp > 1:
        # ranks d*mp .. d*mp+mp-1 share a model (an mp group); rank j of each model: a dp group
        d, j = rank // mp, rank % mp
        mp_group = _group(f"transformer_mp{d}", [d * mp + k for k in range(mp)])
        dp_group = _group(f"transformer_dp{j}", [e * mp + j for e in range(dp)])
        info = ParallelInfo(dp, mp, rank, world, mp_group, dp_group)
        if pc.optimizer_shard:  # the optimizer's sharded update averages over its group
            set_auto_parallel_context(gradients_mean=True)
            info.optimizer_shard = True
        return info
    if dp > 1:
        set_auto_parallel_context(
            parallel_mode=ParallelMode.DATA_PARALLEL,
            gradients_mean=True,
            enable_parallel_optimizer=pc.optimizer_shard,
        )
    return ParallelInfo(dp, mp, rank, world)


def _apply_pipeline(pc: TransformerOpParallelConfig) -> ParallelInfo:
    """``pipeline_stage`` stages (the core's ``pipeline_stages``), each on ``data_parallel`` x
    ``model_parallel`` ranks: stage-major, and inside a stage groups of ``model_parallel``
    consecutive ranks hold one copy's tensor-parallel shards. ``optimizer_shard`` slices each
    stage's optimizer state over the stage's data-parallel ranks (one per shard index)."""
    pp, dp, mp = pc.pipeline_stage, pc.data_parallel, pc.model_parallel
    comm.init()
    rank, world = comm.get_rank(), comm.get_group_size()
    if world != pp * dp * mp:
        raise ValueError(
            f"parallel_config: pipeline_stage {pp} x data_parallel {dp} x model_parallel {mp} "
            f"needs {pp * dp * mp} processes (one per stage, data shard and model shard), got "
            f"{world}; launch with `sporeling launch -n {pp * dp * mp}`"
        )
    # the core runs each stage data parallel on its dp (x mp) ranks, averaging its gradients
    # and loss over the ranks of one shard index, and shards the optimizer over the same
    # (with one copy of each stage, dp 1, there is nothing to shard the optimizer over)
    set_auto_parallel_context(
        pipeline_stages=pp,
        gradients_mean=True,
        enable_parallel_optimizer=pc.optimizer_shard and dp > 1,
    )
    mp_group = None
    if mp > 1:
        per = dp * mp
        stage, d = rank // per, rank % per // mp
        mp_group = _group(
            f"transformer_pp{stage}_mp{d}", [stage * per + d * mp + k for k in range(mp)]
        )
    return ParallelInfo(dp, mp, rank, world, mp_group, None, pp=pp, micro=pc.micro_batch_num)


def full_state(net: nn.Cell) -> dict[str, np.ndarray]:
    """Every parameter at its unsharded size (tensor-parallel shards all-gathered; every
    rank of the model-parallel group must call it): one checkpoint for any layout, which
    :func:`load_full_state` slices again for this rank's layout."""
    sharded: dict[str, int] = {}
    for _, cell in net.cells_and_names():
        if isinstance(cell, Linear) and cell.mp_mode is not None:
            for attr, axis in cell.tensor_parallel_axes.items():
                sharded[getattr(cell, attr).name] = axis
    out: dict[str, np.ndarray] = {}
    for _, p in net.parameters_and_names():
        a = p.asnumpy()
        axis = sharded.get(p.name)
        if axis is not None:
            group = next(
                c.mp_group for _, c in net.cells_and_names() if isinstance(c, Linear) and c.mp_mode
            )
            moved = np.ascontiguousarray(np.moveaxis(a, axis, 0))
            kwargs = {} if group is None else {"group": group}
            gathered = comm.all_gather(Tensor(moved), **kwargs).asnumpy()
            a = np.moveaxis(gathered, 0, axis)
        out[p.name] = a
    return out


def load_full_state(net: nn.Cell, state: dict[str, Any]) -> None:
    """Load an unsharded state into ``net``, slicing the tensor-parallel parameters to this
    rank's shard (``net`` already went through :func:`shard_model`, or has no shards)."""
    for _, cell in net.cells_and_names():
        if isinstance(cell, Linear) and cell.mp_mode is not None:
            rank, size = group_rank_size(cell.mp_group)
            for attr, axis in cell.tensor_parallel_axes.items():
                p = getattr(cell, attr)
                full = np.asarray(
                    state[p.name].asnumpy() if hasattr(state[p.name], "asnumpy") else state[p.name]
                )
                k = full.shape[axis] // size
                part = np.take(full, range(rank * k, (rank + 1) * k), axis=axis)
                p.set_data(Tensor(np.ascontiguousarray(part).astype(p.asnumpy().dtype)))
    params = net.parameters_dict()
    for name, value in state.items():
        p = params.get(name)
        if p is None:
            raise ValueError(f"load_full_state: the network has no parameter {name!r}")
        arr = value.asnumpy() if hasattr(value, "asnumpy") else np.asarray(value)
        if tuple(arr.shape) == tuple(p.shape):
            p.set_data(Tensor(np.ascontiguousarray(arr).astype(p.asnumpy().dtype)))
