"""ViT and T5 training over pipeline stages (``parallel_config.pipeline_stage > 1``) on the
core's ``nn.PipelineCell``, as :mod:`sporeling.transformer.pipeline` does the GPT's.

The blocks carry their stage from 1.8's per-layer rule (the model is built with the
pipeline's ``parallel_config``); these wrappers regroup the computation around them into
staged cells with the same parameters (and names):

* ViT: patch embedding, class token and positions on stage 0, the encoder blocks on their
  stages, the final layer norm and the head on the last; the loss (or, for evaluation, the
  number of correct predictions) runs where the logits are.
* T5: the token table, encoder embedding and positions on stage 0; the encoder blocks, then
  the decoder's, on their stages (one rule over both stacks, so the encoder comes first);
  the encoder's layer norm on its last block's stage; the decoder's embedding of the target
  on its first block's stage; the decoder's layer norm and the tied head on the last. The
  shared table travels from stage 0 to the decoder's embedding and to the head as an
  activation (their gradients of it return to stage 0, as the GPT's head's does), and the
  encoder output travels to every decoder block (cross-attention).

1.8's ``CrossEntropyLoss`` is a token mean, and the micro-batches of a T5 batch hold
different numbers of target tokens, so each micro-batch's mean is weighted by its share of
the whole batch's tokens: the micro-batches then sum to the batch's token mean, as one
process computes it. With data-parallel copies of each stage (each rank holding its share
of the batch) the whole batch's count is summed over the stage's data-parallel ranks only
(the ranks of the other stages hold the same rows), and the core's average over those ranks
gives the batch's token mean again.

Data and model parallelism inside a stage are the core's (``PipelineCell`` reduces a stage's
loss and gradients over its copies; :func:`~sporeling.transformer.pipeline.stage_pipe` passes
``model_parallel``), as for the GPT.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sporeling.core import Tensor, nn, ops
from sporeling.core import dtype as mstype
from sporeling.core.train import Metric

from .models.t5 import T5Model, T5WithLoss
from .models.vit import ViT, embed_images
from .pipeline import MeanOfMicroBatches, stage_pipe

__all__ = [
    "pipeline_vit",
    "pipeline_t5_with_loss",
    "PipelineViT",
    "PipelineT5WithLoss",
    "CorrectFraction",
    "target_tokens",
]


def _check(arch: str, blocks: list[Any], layers: str, stages: int, micro: int) -> None:
    if micro < stages:
        raise ValueError(
            f"parallel_config: micro_batch_num {micro} must be at least pipeline_stage {stages}"
        )
    used = {blk.pipeline_stage for blk in blocks}
    if used != set(range(stages)):
        raise ValueError(
            f"parallel_config.pipeline_stage {stages}: the {len(blocks)} layers of the {arch} "
            f"give stages {sorted(used)}; {layers} must be at least pipeline_stage (build the "
            "model with the pipeline's parallel_config)"
        )


# ---- ViT ------------------------------------------------------------------------------------
class _ViTEmbed(nn.Cell):
    """Stage 0: patches, class token, positions (and dropout)."""

    def __init__(self, vit: ViT) -> None:
        super().__init__(auto_prefix=False)
        self.config = vit.config
        self.patch_embedding = vit.patch_embedding
        self.cls_token = vit.cls_token
        self.position_embedding = vit.position_embedding
        self.dropout = vit.dropout

    def construct(self, images: Tensor) -> Tensor:
        return embed_images(self, images)


class _ViTHead(nn.Cell):
    """Last stage: the final layer norm and the linear head on the class token."""

    def __init__(self, vit: ViT) -> None:
        super().__init__(auto_prefix=False)
        self.layernorm = vit.layernorm
        self.head = vit.head

    def construct(self, x: Tensor) -> Tensor:
        x = self.layernorm(x)
        return self.head(ops.cast(x[:, 0], self.head.weight.dtype))


class _Correct(nn.Cell):
    """The number of rows whose arg-max logit is the label (float, so the pipeline sums it)."""

    def construct(self, logits: Tensor, labels: Tensor) -> Tensor:
        hit = ops.equal(ops.argmax(logits, 1), ops.cast(labels, mstype.int32))
        return ops.reduce_sum(ops.cast(hit, mstype.float32))


class PipelineViT(nn.Cell):
    """``ViTWithLoss`` regrouped into stage cells: ``construct(images, labels)`` gives the
    mean cross-entropy, or with ``count_correct`` the number of correct predictions."""

    def __init__(self, vit: ViT, count_correct: bool = False) -> None:
        super().__init__(auto_prefix=False)
        self.embed = _ViTEmbed(vit)
        self.encoder = vit.encoder
        self.head = _ViTHead(vit)
        self.count_correct = count_correct
        if count_correct:
            self.score = _Correct()
        else:
            self.score = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")

    def construct(self, images: Tensor, labels: Tensor) -> Tensor:
        x = self.embed(images)  # (a Remote on other stages: index, never unpack)
        res = self.encoder(x, None)
        return self.score(self.head(res[0]), labels)


class _SumOfMicroBatches(nn.Cell):
    """The pipeline's summed correct counts with the batch's size: ``(correct, rows)``."""

    def __init__(self, pipe: nn.PipelineCell, stages: int) -> None:
        super().__init__(auto_prefix=False)
        self.pipe = pipe
        self.pipe_stages = stages

    def construct(self, images: Tensor, labels: Tensor) -> tuple[Tensor, Tensor]:
        rows = Tensor(np.asarray(float(images.shape[0]), np.float32))
        return self.pipe(images, labels), rows


class CorrectFraction(Metric):
    """Accuracy from ``(correct, rows)`` batch outputs (the pipeline's evaluation network):
    correct predictions over rows, over every batch."""

    def __init__(self) -> None:
        super().__init__()
        self.clear()

    def clear(self) -> None:
        self._correct, self._rows = 0.0, 0.0

    def update(self, *inputs: Any) -> None:
        if len(inputs) != 2:
            raise ValueError(
                f"CorrectFraction: update expected 2 inputs (correct, rows), got {len(inputs)}"
            )
        correct, rows = (float(np.asarray(self._convert_data(x))) for x in inputs)
        self._correct += correct
        self._rows += rows

    def eval(self) -> float:
        if not self._rows:
            raise RuntimeError("CorrectFraction: update must be called before eval")
        return self._correct / self._rows


def pipeline_vit(
    vit: ViT,
    stages: int,
    micro_batch_num: int,
    schedule: str = "1f1b",
    model_parallel: int = 1,
) -> tuple[MeanOfMicroBatches, nn.Cell]:
    """``(train_net, eval_net)``: the ViT's mean loss over ``stages`` pipeline stages and
    ``micro_batch_num`` micro-batches (optimise ``train_net.pipe.trainable_params()``), and
    an evaluation network through the same stages giving ``(correct, rows)`` per batch (for
    :class:`CorrectFraction`; with data-parallel copies every rank evaluates the whole
    batch). ``model_parallel`` m > 1: the ViT went through ``shard_model`` on groups of m
    consecutive ranks of each stage."""
    _check("ViT", list(vit.encoder.blocks), "num_layers", stages, micro_batch_num)
    train = PipelineViT(vit)
    train.embed.pipeline_stage = 0
    train.head.pipeline_stage = stages - 1
    pipe = stage_pipe(train, micro_batch_num, schedule, model_parallel)
    train_net = MeanOfMicroBatches(pipe, micro_batch_num, stages)
    count = PipelineViT(vit, count_correct=True)
    count.embed.pipeline_stage = 0
    count.head.pipeline_stage = stages - 1
    eval_net = _SumOfMicroBatches(
        stage_pipe(count, micro_batch_num, schedule, model_parallel), stages
    )
    return train_net, eval_net


# ---- T5 -------------------------------------------------------------------------------------
class _T5Embed(nn.Cell):
    """Stage 0: source tokens and positions (and dropout); also hands on the token table."""

    def __init__(self, t5: T5Model) -> None:
        super().__init__(auto_prefix=False)
        self.seq_length = t5.config.seq_length
        self.embedding = t5.embedding
        self.encoder_position = t5.encoder_position
        self.dropout = t5.dropout
        self.enc_positions = t5.enc_positions

    def construct(self, source_ids: Tensor) -> tuple[Tensor, Tensor]:
        b, s = source_ids.shape
        if s != self.seq_length:
            raise ValueError(
                f"T5Model: 'source_ids' must be (batch, seq_length={self.seq_length}), "
                f"but got {list(source_ids.shape)}."
            )
        tok, table = self.embedding(source_ids)
        pos, _ = self.encoder_position(ops.tile(self.enc_positions, (b, 1)))
        # a new tensor (not the parameter itself), so later stages' gradients return through it
        return self.dropout(tok + pos), table * 1.0


class _Norm(nn.Cell):
    """A stack's final layer norm on that stack's last block's stage."""

    def __init__(self, layernorm: nn.Cell) -> None:
        super().__init__(auto_prefix=False)
        self.layernorm = layernorm

    def construct(self, x: Tensor) -> Tensor:
        return self.layernorm(x)


class _T5DecoderEmbed(nn.Cell):
    """The decoder's first stage: target tokens looked up in the handed-on table, plus the
    decoder's positions (and dropout)."""

    def __init__(self, t5: T5Model) -> None:
        super().__init__(auto_prefix=False)
        self.decoder_position = t5.decoder_position
        self.dropout = t5.dropout
        self.dec_positions = t5.dec_positions

    def construct(self, table: Tensor, target_ids: Tensor) -> Tensor:
        b, t = target_ids.shape
        tok = ops.gather(table, target_ids, 0)
        pos, _ = self.decoder_position(ops.tile(self.dec_positions[:, :t], (b, 1)))
        return self.dropout(tok + pos)


class _T5Head(nn.Cell):
    """Last stage: the decoder's layer norm and the tied head (scaled by hidden ** -0.5)."""

    def __init__(self, t5: T5Model) -> None:
        super().__init__(auto_prefix=False)
        self.decoder_layernorm = t5.decoder_layernorm
        self.hidden = t5.config.hidden_size

    def construct(self, y: Tensor, table: Tensor) -> Tensor:
        h = ops.reshape(self.decoder_layernorm(y), (-1, self.hidden))
        h = ops.cast(h, table.dtype) * (self.hidden**-0.5)
        return ops.matmul(h, ops.transpose(table, (1, 0)))


class _ShareOfBatchTokens(nn.Cell):
    """The micro-batch's token mean ``sum / (mine + 1e-5)`` (1.8's loss) times ``(mine +
    1e-5) * scale``, where ``scale`` (the same in every row) is ``micro_batch_num * copies /
    (batch tokens + 1e-5)``: the micro-batches' weighted means, summed, divided by their
    number and averaged over the stage's ``copies``, are the whole batch's token mean."""

    def __init__(self, loss: nn.Cell) -> None:
        super().__init__(auto_prefix=False)
        self.loss = loss

    def construct(
        self, logits: Tensor, labels: Tensor, label_mask: Tensor, scale: Tensor
    ) -> Tensor:
        loss = self.loss(logits, labels, label_mask)
        mine = ops.reduce_sum(ops.cast(label_mask, loss.dtype))
        weight = (mine + 1e-5) * ops.reshape(ops.cast(scale[:1], loss.dtype), ())
        return loss * ops.stop_gradient(weight)


class PipelineT5WithLoss(nn.Cell):
    """``T5WithLoss`` regrouped into stage cells: ``construct(source_ids, source_mask,
    target_ids, scale)``, the last each row's copy of the micro-batch weights' scale
    (:class:`_ShareOfBatchTokens`)."""

    def __init__(self, with_loss: T5WithLoss) -> None:
        super().__init__(auto_prefix=False)
        t5 = with_loss.network
        c = t5.config
        self.seq_length, self.pad = c.seq_length, with_loss.pad
        self.start = with_loss.start
        self.causal = t5.causal
        self.embed = _T5Embed(t5)
        self.encoder = t5.encoder
        self.encoder_norm = _Norm(t5.encoder_layernorm)
        self.decoder_embed = _T5DecoderEmbed(t5)
        self.decoder = t5.decoder
        self.head = _T5Head(t5)
        self.loss = _ShareOfBatchTokens(with_loss.loss)

    def construct(
        self, source_ids: Tensor, source_mask: Tensor, target_ids: Tensor, scale: Tensor
    ) -> Tensor:
        # T5WithLoss's and T5Model's inputs and masks (plain data: every rank computes them)
        b, s = target_ids.shape[0], self.seq_length
        labels = ops.cast(target_ids, mstype.int32)
        dec_in = ops.concat((ops.tile(self.start, (b, 1)), labels[:, :-1]), 1)
        label_mask = ops.cast(ops.not_equal(labels, self.pad), mstype.float32)
        dec_mask = ops.concat((ops.ones((b, 1), mstype.float32), label_mask[:, :-1]), 1)
        t = dec_in.shape[1]
        src = ops.cast(source_mask, mstype.float32)
        enc_mask = ops.tile(ops.reshape(src, (b, 1, s)), (1, s, 1))
        self_mask = self.causal * ops.reshape(dec_mask, (b, 1, t))
        memory_mask = ops.tile(ops.reshape(src, (b, 1, s)), (1, t, 1))
        # the stages (Remote placeholders on the ranks that do not run them: index only)
        emb = self.embed(source_ids)
        enc = self.encoder(emb[0], enc_mask)
        memory = self.encoder_norm(enc[0])
        y = self.decoder_embed(emb[1], dec_in)
        dec = self.decoder(y, self_mask, memory, memory_mask)
        logits = self.head(dec[0], emb[1])
        return self.loss(logits, ops.reshape(labels, (-1,)), ops.reshape(label_mask, (-1,)), scale)


def target_tokens(target_ids: Tensor, pad: int, group: str | None = None) -> tuple[Tensor, Tensor]:
    """``(mine, total)``: the number of real (not ``pad``) target tokens in this rank's rows,
    and that number summed over the ranks of ``group`` (None: this rank's alone), float64
    scalars (exact counts; the loss weights built from them stay float64-exact)."""
    from sporeling.core import communication as comm

    real = ops.not_equal(ops.cast(target_ids, mstype.int32), pad)
    mine = ops.reduce_sum(ops.cast(real, mstype.float64))
    return mine, (mine if group is None else comm.all_reduce(mine, group=group))


class _T5MeanOfMicroBatches(MeanOfMicroBatches):
    """Counts the batch's target tokens and hands every micro-batch its weights' scale.
    ``split_batch``: the stage's data-parallel copies hold their shares of one batch (the
    count summed over them); otherwise (evaluation) each holds the whole batch."""

    def __init__(
        self, pipe: nn.PipelineCell, micro: int, stages: int, pad: int, split_batch: bool = True
    ) -> None:
        super().__init__(pipe, micro, stages)
        self.pad = pad
        self.split_batch = split_batch

    def construct(self, source_ids: Tensor, source_mask: Tensor, target_ids: Tensor) -> Tensor:
        from sporeling.core import communication as comm
        from sporeling.core.parallel.pipeline_cell import stage_data_parallel_group

        group = None
        if self.split_batch:  # (every rank calls the pipeline together: the group is made)
            group = stage_data_parallel_group(self.pipe.model_parallel)
        copies = 1.0 if group is None else float(comm.get_group_size(group))
        _, total = target_tokens(target_ids, self.pad, group)
        scale = ops.reshape(self.k * copies / (total + 1e-5), (1,))
        per_row = ops.tile(scale, (target_ids.shape[0],))
        return ops.div(self.pipe(source_ids, source_mask, target_ids, per_row), self.k)

    def whole_batch(self) -> _T5MeanOfMicroBatches:
        """The same pipeline for evaluation data that every rank holds whole (the count is
        this rank's; the stage's copies then compute equal losses)."""
        return _T5MeanOfMicroBatches(self.pipe, int(self.k), self.pipe_stages, self.pad, False)


def pipeline_t5_with_loss(
    with_loss: T5WithLoss,
    stages: int,
    micro_batch_num: int,
    schedule: str = "1f1b",
    model_parallel: int = 1,
) -> MeanOfMicroBatches:
    """``with_loss`` over ``stages`` pipeline stages and ``micro_batch_num`` micro-batches:
    the batch's token-mean loss (optimise ``result.pipe.trainable_params()``). Each of a
    stage's data-parallel copies holds its share of the batch; ``result.whole_batch()`` is
    the network for data every rank holds whole (evaluation). ``model_parallel`` m > 1: the
    T5 went through ``shard_model`` on groups of m consecutive ranks of each stage."""
    t5 = with_loss.network
    blocks = list(t5.encoder.blocks) + list(t5.decoder.blocks)
    _check("T5", blocks, "num_layers + num_decoder_layers", stages, micro_batch_num)
    net = PipelineT5WithLoss(with_loss)
    net.embed.pipeline_stage = 0
    net.encoder_norm.pipeline_stage = t5.encoder.blocks[-1].pipeline_stage
    net.decoder_embed.pipeline_stage = t5.decoder.blocks[0].pipeline_stage
    net.head.pipeline_stage = stages - 1
    pipe = stage_pipe(net, micro_batch_num, schedule, model_parallel)
    return _T5MeanOfMicroBatches(pipe, micro_batch_num, stages, with_loss.pad)
