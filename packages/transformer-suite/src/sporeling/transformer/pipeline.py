"""GPT training over pipeline stages (``parallel_config.pipeline_stage > 1``) on the core's
``nn.PipelineCell``.

The GPT's blocks already carry their stage from 1.8's per-layer rule (``lambda_func``:
``layer_id // (layers // pipeline_stage)``); :func:`pipeline_gpt_with_loss` puts the
embeddings on stage 0 and the final layernorm + tied head on the last stage, and regroups
the computation between them into cells (the core runs a cell whole on its stage and
refuses plain ops on another stage's output). The word-embedding table travels from stage
0 to the head as an activation, so the head's gradient of the tied table comes back to
stage 0 and adds to the embedding's. The same GPT cells (and parameter names) are used.

:func:`keep_own_stage` then frees the other stages' parameters on each rank (the model is
built whole first, so the seeded initial weights are one process's), and
:func:`stage_state` gathers the whole model to rank 0 for a checkpoint.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sporeling.core import Tensor, nn, ops
from sporeling.core import dtype as mstype

from .models.gpt import GPT, GPTWithLoss

__all__ = [
    "pipeline_gpt_with_loss",
    "stage_pipe",
    "PipelineGPTWithLoss",
    "MeanOfMicroBatches",
    "keep_own_stage",
    "stage_state",
    "StagesClipTrainOneStepCell",
]


class _Embeddings(nn.Cell):
    """Stage 0: word + position embeddings (and dropout); also hands on the word table."""

    def __init__(self, gpt: GPT) -> None:
        super().__init__(auto_prefix=False)
        bb = gpt.backbone
        self.word_embedding = bb.word_embedding
        self.position_embedding = bb.position_embedding
        self.dropout = bb.dropout
        self.positions = bb.positions

    def construct(self, tokens: Tensor) -> tuple[Tensor, Tensor]:
        tok, table = self.word_embedding(tokens)
        pos, _ = self.position_embedding(ops.tile(self.positions, (tokens.shape[0], 1)))
        # a new tensor (not the parameter itself), so the head's gradient returns through it
        return self.dropout(tok + pos), table * 1.0


class _Head(nn.Cell):
    """Last stage: the final layernorm and the tied head (logits against the word table)."""

    def __init__(self, gpt: GPT) -> None:
        super().__init__(auto_prefix=False)
        self.layernorm = gpt.backbone.layernorm
        self.embedding_size = gpt.config.embedding_size

    def construct(self, hidden: Tensor, table: Tensor) -> Tensor:
        h = ops.reshape(self.layernorm(hidden), (-1, self.embedding_size))
        return ops.matmul(ops.cast(h, table.dtype), ops.transpose(table, (1, 0)))


class _BlockCarryingAux(nn.Cell):
    """An MoE block on its stage: adds its auxiliary (load-balancing) loss to the sum handed
    in by the blocks before it, so the sum travels to the last stage as an activation."""

    def __init__(self, block: nn.Cell) -> None:
        super().__init__(auto_prefix=False)
        self.block = block
        self.pipeline_stage = block.pipeline_stage

    def construct(
        self, x: Tensor, mask: Tensor, aux: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        res = self.block(x, mask)
        return (res[0], res[2]) if aux is None else (res[0], aux + res[2])


class _LossPlusAux(nn.Cell):
    """Last stage of an MoE GPT: the masked cross-entropy plus the blocks' summed aux loss
    (``GPTWithLoss``'s ``loss + aux``)."""

    def __init__(self, loss: nn.Cell) -> None:
        super().__init__(auto_prefix=False)
        self.loss = loss

    def construct(self, logits: Tensor, labels: Tensor, mask: Tensor, aux: Tensor) -> Tensor:
        return self.loss(logits, labels, mask) + aux


class PipelineGPTWithLoss(nn.Cell):
    """``GPTWithLoss`` regrouped into stage cells: same inputs, loss and parameters. An MoE
    GPT's blocks run one by one, carrying the summed aux loss to the last stage."""

    def __init__(self, with_loss: GPTWithLoss) -> None:
        super().__init__(auto_prefix=False)
        gpt = with_loss.network
        self.embeddings = _Embeddings(gpt)
        self.get_attention_mask = gpt.backbone.get_attention_mask  # no parameters: every rank
        self.transformer = gpt.backbone.transformer
        self.head = _Head(gpt)
        self.loss = with_loss.loss
        self.eos_token = with_loss.eos_token
        self.use_moe = gpt.backbone.use_moe
        if self.use_moe:
            self.moe_blocks = nn.CellList(
                [_BlockCarryingAux(b) for b in self.transformer.encoder.blocks]
            )
            self.loss_plus_aux = _LossPlusAux(self.loss)

    def construct(self, input_ids: Tensor) -> Tensor:
        tokens = input_ids[:, :-1]
        labels = ops.reshape(input_ids[:, 1:], (-1,))
        if self.eos_token >= 0:
            input_mask = ops.cast(ops.not_equal(tokens, self.eos_token), mstype.float32)
        else:
            input_mask = ops.ones(tokens.shape, mstype.float32)
        emb = self.embeddings(tokens)  # (a Remote on other stages: index, never unpack)
        mask = self.get_attention_mask(input_mask)
        if self.use_moe:
            x, aux = emb[0], None
            for blk in self.moe_blocks:
                res = blk(x, mask) if aux is None else blk(x, mask, aux)
                x, aux = res[0], res[1]
            logits = self.head(x, emb[1])
            return self.loss_plus_aux(logits, labels, ops.reshape(input_mask, (-1,)), aux)
        res = self.transformer(emb[0], mask)
        logits = self.head(res[0], emb[1])
        return self.loss(logits, labels, ops.reshape(input_mask, (-1,)))


class MeanOfMicroBatches(nn.Cell):
    """``PipelineCell`` sums the micro-batches' losses; this divides by their number so the
    loss (and gradients) equal the full batch's mean, as ``MeanOfCopies`` does."""

    def __init__(self, pipe: nn.PipelineCell, micro_size: int, stages: int) -> None:
        super().__init__(auto_prefix=False)
        self.pipe = pipe
        self.k = float(micro_size)
        self.pipe_stages = stages

    def construct(self, *inputs: Any) -> Tensor:
        return ops.div(self.pipe(*inputs), self.k)


def stage_pipe(
    net: nn.Cell, micro_batch_num: int, schedule: str = "1f1b", model_parallel: int = 1
) -> nn.PipelineCell:
    """``net`` (its cells carrying their stages) as the core's ``PipelineCell`` over
    ``micro_batch_num`` micro-batches with ``schedule``; ``model_parallel`` m > 1: the model
    went through ``shard_model`` on groups of m consecutive ranks of each stage (the core's
    ``PipelineCell.model_parallel``: a stage's data-parallel copies are the ranks of one
    shard index). GPT, ViT and T5 alike."""
    pipe = nn.PipelineCell(net, micro_batch_num)
    pipe.schedule = schedule
    pipe.model_parallel = int(model_parallel)
    return pipe


def pipeline_gpt_with_loss(
    with_loss: GPTWithLoss,
    stages: int,
    micro_batch_num: int,
    schedule: str = "1f1b",
    model_parallel: int = 1,
) -> MeanOfMicroBatches:
    """``with_loss`` as a ``PipelineCell`` over ``stages`` stages and ``micro_batch_num``
    micro-batches (divided back to the batch mean). Optimise only
    ``result.pipe.trainable_params()``: this rank's stage's parameters. ``model_parallel``
    m > 1: the GPT went through ``shard_model`` on groups of m consecutive ranks of each
    stage (the core's ``PipelineCell.model_parallel``)."""
    cfg = with_loss.network.config
    if micro_batch_num < stages:
        raise ValueError(
            f"parallel_config: micro_batch_num {micro_batch_num} must be at least "
            f"pipeline_stage {stages}"
        )
    net = PipelineGPTWithLoss(with_loss)
    net.embeddings.pipeline_stage = 0
    net.head.pipeline_stage = stages - 1
    if net.use_moe:
        net.loss_plus_aux.pipeline_stage = stages - 1
    used = {blk.pipeline_stage for blk in net.transformer.encoder.blocks}
    if used != set(range(stages)):
        raise ValueError(
            f"parallel_config.pipeline_stage {stages}: the {cfg.num_layers} layers give stages "
            f"{sorted(used)}; num_layers must be at least pipeline_stage"
        )
    pipe = stage_pipe(net, micro_batch_num, schedule, model_parallel)
    return MeanOfMicroBatches(pipe, micro_batch_num, stages)


def _owned(net: nn.Cell, stages: int) -> list[tuple[Any, int]]:
    """Every parameter of a pipelined network with its stage: that of the outermost staged
    cell holding it (the core's plan puts every parameter in one; GPT, ViT and T5 alike)."""
    owned: dict[int, tuple[Any, int]] = {}
    for _, cell in net.cells_and_names():
        if cell.pipeline_stage is not None:
            for p in cell.get_parameters():
                owned.setdefault(id(p), (p, int(cell.pipeline_stage)))
    return list(owned.values())


def keep_own_stage(train_net: MeanOfMicroBatches) -> None:
    """Free the parameters of the stages this rank does not run (their data becomes empty;
    their shapes are kept in ``train_net.local_shapes`` for :func:`stage_state`), so a rank
    holds only its stage's parameters. The pipeline never reads another stage's parameters
    and the optimizer holds only this stage's."""
    from sporeling.core import communication as comm

    stages = train_net.pipe_stages
    stage = comm.get_rank() // (comm.get_group_size() // stages)
    train_net.local_shapes = {}
    for p, s in _owned(train_net.pipe.network, stages):
        if s != stage:
            train_net.local_shapes[p.name] = tuple(p.shape)
            p.set_data(Tensor(np.zeros((0,), p.asnumpy().dtype)))


def stage_state(train_net: MeanOfMicroBatches, model_parallel: int = 1) -> dict[str, Any] | None:
    """The whole model's parameters (name -> array) on rank 0, None on the other ranks (all
    must call it): the first data-parallel copy of each stage sends its parameters to rank
    0, which joins the ``model_parallel`` tensor-parallel shards. The parameters stay as
    they are (each rank keeps only its stage after :func:`keep_own_stage`)."""
    from sporeling.core import communication as comm

    from .modules.layers import Linear

    net, stages, mp = train_net.pipe.network, train_net.pipe_stages, int(model_parallel)
    rank = comm.get_rank()
    per = comm.get_group_size() // stages  # a stage's ranks, stage-major: copy-major shards
    shapes = getattr(train_net, "local_shapes", {})
    axes = {
        getattr(cell, attr).name: axis
        for _, cell in net.cells_and_names()
        if isinstance(cell, Linear) and cell.mp_mode is not None
        for attr, axis in cell.tensor_parallel_axes.items()
    }
    out: dict[str, Any] = {}
    for p, stage in _owned(net, stages):
        axis = axes.get(p.name)
        sources = [stage * per + j for j in range(mp if axis is not None else 1)]
        if rank != 0 and rank in sources:
            comm.send(Tensor(p.asnumpy()), dst=0)
        elif rank == 0:
            dtype = p.asnumpy().dtype
            shape = shapes.get(p.name, tuple(p.shape))
            parts = [
                p.asnumpy() if src == 0 else comm.recv(Tensor(np.empty(shape, dtype)), src=src)
                for src in sources
            ]
            parts = [np.asarray(a.asnumpy() if hasattr(a, "asnumpy") else a) for a in parts]
            out[p.name] = parts[0] if axis is None else np.concatenate(parts, axis)
    return out if rank == 0 else None


class StagesClipTrainOneStepCell(nn.TrainOneStepCell):
    """``TrainOneStepWithClipCell``'s global-norm clipping when each rank holds only part of
    the gradients: the squared norms of the ranks' gradients are summed with an all-reduce
    over ``group``, and each rank scales its own by ``clip_norm / max(global_norm,
    clip_norm)``, so every rank clips by the whole model's norm, as one process would.

    Pipeline stages: every stage's gradients once; with ``replicas`` data-parallel copies of
    every stage (their gradients already averaged, so equal) the sum over all ranks is
    divided by it. Tensor parallelism: ``grad_weights`` gives each gradient's share of the
    sum, 1 for a shard, ``1 / group size`` for a parameter every rank of ``group`` holds
    whole (equal gradients there), so that one counts once."""

    def __init__(
        self,
        network: nn.Cell,
        optimizer: nn.Optimizer,
        clip_norm: float,
        group: str | None = None,
        replicas: int = 1,
        grad_weights: Any = None,
    ) -> None:
        super().__init__(network, optimizer)
        self.replicas = int(replicas)
        if not clip_norm > 0:
            raise ValueError(
                f"StagesClipTrainOneStepCell: clip_norm expected a number > 0, got {clip_norm!r}"
            )
        self.clip_norm = float(clip_norm)
        self.group = group
        weights = None if grad_weights is None else [float(w) for w in grad_weights]
        if weights is not None and len(weights) != len(self.weights):
            raise ValueError(
                f"StagesClipTrainOneStepCell: grad_weights has {len(weights)} entries, expected "
                f"one per optimized parameter ({len(self.weights)})"
            )
        self.grad_weights = weights

    def process_grads(self, grads: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
        from sporeling.core import communication as comm

        if not grads:
            return grads
        squares = [ops.reduce_sum(ops.square(g)) for g in grads]
        if self.grad_weights is not None:
            squares = [s * w for s, w in zip(squares, self.grad_weights)]
        local = ops.reduce_sum(ops.stack(squares))
        total = (
            comm.all_reduce(local)
            if self.group is None
            else comm.all_reduce(local, group=self.group)
        )
        norm = ops.sqrt(total / float(self.replicas))
        scale = self.clip_norm / ops.maximum(norm, self.clip_norm)
        return tuple(g * ops.cast(scale, g.dtype) for g in grads)
