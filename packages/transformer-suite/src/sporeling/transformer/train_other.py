"""Train and evaluate the T5 (digit reversal) and ViT (MNIST) runs of a config, through
``Model.fit`` as the GPT runner does; checkpoints in the core's safetensors format.

Parallel layouts as the GPT's, from the same model code: ``data_parallel``,
``model_parallel`` (every attention's heads and feed-forward's units split by
:func:`~sporeling.transformer.parallel.shard_model`), both (``sporeling launch -n dp*mp``) and
``optimizer_shard``; the checkpoint is written whole (the shards gathered). ``pipeline_stage``
N > 1 (``micro_batch_num`` >= N micro-batches): the stages of
:mod:`sporeling.transformer.pipeline_vit_t5`, each rank holding only its stage's parameters,
evaluation through the pipeline, the checkpoint gathered whole to rank 0; each stage on
``data_parallel`` ranks (with ``optimizer_shard``) or on ``model_parallel`` ranks
(``sporeling launch -n N*dp`` or ``-n N*mp``; both at once is refused, untested)."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from sporeling.core import (
    PYNATIVE_MODE,
    Model,
    Tensor,
    load_checkpoint,
    load_param_into_net,
    nn,
    save_checkpoint,
    set_context,
    set_seed,
)
from sporeling.core.train import Accuracy, Loss

from .generation import generate_seq2seq
from .models.t5 import T5Config, T5Model, T5WithLoss
from .models.vit import ViT, ViTConfig
from .pipelines import GeneratedRows, mnist_datasets, sampled_batches
from .tasks import EOS, PAD, reverse_digits, reverse_digits_row

__all__ = [
    "GlobalTokenMean",
    "train_t5",
    "evaluate_t5",
    "train_vit",
    "evaluate_vit",
    "load_t5",
    "load_vit",
]


def _optimizer(
    net: nn.Cell, opt: dict[str, Any], steps: int, params: list[Any] | None = None
) -> nn.Optimizer:
    """AdamW over ``params`` (default: all of ``net``'s; a pipeline rank's: its stage's)."""
    from .runner import lr_schedule

    return nn.AdamW(
        net.trainable_params() if params is None else params,
        learning_rate=lr_schedule(opt, steps),
        weight_decay=float(opt.get("weight_decay", 0.0)),
    )


def _step(with_loss: nn.Cell, opt: nn.Optimizer, info: Any) -> nn.Cell:
    """The layout's training step (the GPT's: the dp x mp gradient average over the dp
    group, the optimizer sharded over it); no clipping."""
    from .parallel import train_step

    return train_step(with_loss, opt, 0.0, info)


def _finish(
    out: Path,
    cfg: dict[str, Any],
    net: nn.Cell,
    results: dict[str, Any],
    info: Any,
    whole: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Rank 0 writes the run; under model parallelism every rank first gathers the shards,
    so the checkpoint is the whole model whatever the layout (``whole``: the state a
    pipeline gathered to rank 0)."""
    from .parallel import full_state

    if info.pp > 1:  # (under model parallelism stage_state joined the shards)
        state = None if whole is None else {k: Tensor(v) for k, v in whole.items()}
    else:
        state = {k: Tensor(v) for k, v in full_state(net).items()} if info.mp > 1 else net
    results["parameters"] = sum(p.size for p in net.trainable_params())  # this rank's
    if info.rank != 0:  # every copy holds the same parameters
        return {**results, "rank": info.rank}
    save_checkpoint(state, str(out / "model.safetensors"))
    (out / "config.yaml").write_text(yaml.safe_dump(cfg))
    (out / "results.json").write_text(json.dumps(results, indent=1))
    results["rank"] = 0
    return results


def exact_match(net: T5Model, length: int, n: int, seed: int) -> float:
    src, _, tgt = reverse_digits(np.random.default_rng(seed), n, length)
    outs = generate_seq2seq(net, [list(s[s != PAD]) for s in src])
    want = [list(t[: list(t).index(EOS) + 1]) for t in tgt]
    return float(np.mean([o == w for o, w in zip(outs, want)]))


PARALLEL = ("data_parallel", "model_parallel", "optimizer_shard", "pipeline_stage")


def _pipeline_layouts(cfg: dict[str, Any], arch: str) -> None:
    """ViT and T5 pipeline stages run with data_parallel (and optimizer_shard) or with
    model_parallel, not with both (untested here; the GPT has that combination)."""
    pc = cfg.get("parallel_config") or {}
    if int(pc.get("pipeline_stage", 1) or 1) <= 1:
        return
    dp, mp = (int(pc.get(k, 1) or 1) for k in ("data_parallel", "model_parallel"))
    if dp > 1 and mp > 1:
        raise ValueError(
            f"parallel_config {{'data_parallel': {dp}, 'model_parallel': {mp}}} with "
            f"pipeline_stage {pc['pipeline_stage']}: not implemented for arch {arch!r} (its "
            "pipeline runs each stage data parallel or model parallel, not both; arch 'gpt' "
            "combines all three)"
        )


def _pipeline_config(info: Any) -> Any:
    """The model's ``parallel_config`` under a pipeline (its blocks take their stages from
    it), else None."""
    from .modules import TransformerOpParallelConfig

    if info.pp <= 1:
        return None
    return TransformerOpParallelConfig(pipeline_stage=info.pp, micro_batch_num=info.micro)


def _one_process_only(cfg: dict[str, Any], arch: str, allowed: tuple[str, ...] = ()) -> None:
    """A parallel layout these runs do not implement is refused rather than ignored (T5 and
    ViT: all but ``allowed``)."""
    pc = cfg.get("parallel_config") or {}
    asked = {
        k: pc[k]
        for k in ("data_parallel", "model_parallel", "pipeline_stage")
        if int(pc.get(k, 1) or 1) > 1 and k not in allowed
    }
    if pc.get("optimizer_shard") and "optimizer_shard" not in allowed:
        asked["optimizer_shard"] = pc["optimizer_shard"]
    if asked:
        can = " and ".join(allowed) if allowed else "none: it trains on one process"
        raise ValueError(
            f"parallel_config {asked}: not implemented for arch {arch!r} (its parallel "
            f"layouts: {can}; arch 'gpt' has them all)"
        )


class GlobalTokenMean(nn.Cell):
    """Data parallel T5: each rank's masked-mean loss rescaled so that the data-parallel
    average of the ranks' losses (and gradients) is the whole batch's token mean, as one
    process computes it (``sum / (count + 1e-5)``; the halves of a batch hold different
    numbers of target tokens, so a plain average of their means would differ)."""

    def __init__(self, with_loss: T5WithLoss, dp: int, group: str | None = None) -> None:
        super().__init__(auto_prefix=False)
        self.with_loss = with_loss
        self.dp = float(dp)
        # dp x mp: the counts of this rank's dp group (the mp ranks of a copy hold equal ones)
        self.group = "world" if group is None else group

    def construct(self, source_ids: Any, source_mask: Any, target_ids: Any) -> Any:
        from sporeling.core import ops

        from .pipeline_vit_t5 import target_tokens

        local, total = target_tokens(target_ids, self.with_loss.pad, self.group)
        weight = ops.stop_gradient((local + 1e-5) * self.dp / (total + 1e-5))
        loss = self.with_loss(source_ids, source_mask, target_ids)
        return loss * ops.cast(weight, loss.dtype)


def train_t5(cfg: dict[str, Any], log: Any = print) -> dict[str, Any]:
    from .parallel import apply_parallel, shard_model
    from .pipeline import keep_own_stage, stage_state
    from .pipeline_vit_t5 import pipeline_t5_with_loss
    from .runner import _context

    _one_process_only(cfg, "t5", PARALLEL)
    _pipeline_layouts(cfg, "t5")
    info = apply_parallel(cfg)  # data parallel: the core's DATA_PARALLEL, batches as ViT's
    if info.rank != 0:
        log = _quiet
    t, d = cfg.get("train", {}), cfg.get("data", {})
    out = Path(cfg.get("output_dir", "out"))
    out.mkdir(parents=True, exist_ok=True)
    if d.get("task", "reverse_digits") != "reverse_digits":
        raise ValueError(f"data.task: only 'reverse_digits' is built in, got {d.get('task')!r}")
    length = int(d.get("length", 8))
    m = dict(cfg.get("model", {}))
    m.setdefault("vocab_size", 12)
    m["seq_length"], m["max_decode_length"] = length, length + 1
    cfg = {**cfg, "model": m}
    set_seed(int(t.get("seed", 0)))
    net = T5Model(T5Config.from_dict(m), _pipeline_config(info))
    if info.mp > 1:
        shard_model(net, info.mp_group)
    steps, interval, bs = (
        int(t["max_iters"]),
        int(t.get("eval_interval", t["max_iters"])),
        int(t["batch_size"]),
    )
    seed = int(t.get("seed", 0))
    with_loss = T5WithLoss(net)

    def digits(seed: int, steps: int, fixed: bool = False, shards: int = 1) -> Any:
        # sporeling.data: generated examples drawn by a sampler, batched (data parallel:
        # this rank's share of every batch one process draws)
        rows = GeneratedRows(lambda rng: reverse_digits_row(rng, length), seed)
        cols = ["source", "source_mask", "target"]
        shard = info.dp_rank if shards > 1 else 0
        return sampled_batches(rows, cols, bs, steps, seed, fixed, shards, shard)

    train_net: nn.Cell = with_loss
    eval_net: nn.Cell = with_loss
    own = None
    if info.pp > 1:  # this rank trains (and evaluates through the pipeline) its stage
        pipe_net = pipeline_t5_with_loss(with_loss, info.pp, info.micro, model_parallel=info.mp)
        # training: the stage's data-parallel copies hold their shares of each batch (the
        # token count summed over them); evaluation: every rank holds the whole batch
        train_net, eval_net = pipe_net, pipe_net.whole_batch()
        own = pipe_net.pipe.trainable_params()
    elif info.dp > 1:
        train_net = GlobalTokenMean(with_loss, info.dp, info.dp_group)
    opt = _optimizer(net, cfg.get("optimizer", {"learning_rate": 1e-3}), steps, own)
    if info.pp > 1:
        keep_own_stage(train_net)  # built whole (one process's initial weights), then freed
    step = _step(train_net, opt, info)
    model = Model(step, eval_network=eval_net, metrics={"loss": Loss()})
    fusion_before = _context(cfg, info.pp)
    t0 = time.perf_counter()
    history: list[float] = []
    from sporeling.core.train import LambdaCallback

    def epoch_end(ctx: Any) -> None:
        res = getattr(ctx.original_args(), "eval_results", None) or {}
        history.append(float(res.get("loss", float("nan"))))
        log(f"step {ctx.original_args().cur_step_num}: val loss {history[-1]:.4f}")

    try:
        model.fit(
            math.ceil(steps / interval),
            digits(seed, interval, shards=info.dp),
            digits(seed + 1, int(t.get("eval_iters", 4)), fixed=True),
            callbacks=[LambdaCallback(on_train_epoch_end=epoch_end)],
        )
    finally:
        set_context(mode=PYNATIVE_MODE, enable_graph_kernel=fusion_before)
    wall = time.perf_counter() - t0
    whole, decoder = None, net
    if info.pp > 1:  # the stages gathered to rank 0, which decodes with the whole model
        whole = stage_state(train_net, info.mp)
        decoder = None
        if whole is not None:
            decoder = T5Model(T5Config.from_dict(m))
            load_param_into_net(decoder, {k: Tensor(v) for k, v in whole.items()}, True)
    em = None
    if decoder is not None:
        em = exact_match(decoder, length, int(t.get("test_size", 500)), seed + 2)
        log(f"exact match {em:.3f} on {int(t.get('test_size', 500))} held-out strings")
    results = {"wall_s": wall, "val_loss": history, "exact_match": em}
    return _finish(out, cfg, net, results, info, whole)


def load_t5(out_dir: str | Path) -> tuple[T5Model, dict[str, Any]]:
    cfg = yaml.safe_load((Path(out_dir) / "config.yaml").read_text())
    net = T5Model(T5Config.from_dict({**cfg["model"], "use_past": True}))
    load_param_into_net(
        net, load_checkpoint(str(Path(out_dir) / "model.safetensors")), strict_load=True
    )
    return net, cfg


def evaluate_t5(out_dir: str | Path, test_size: int | None = None) -> float:
    """Exact match of greedy cached decoding on ``test_size`` held-out strings (default: the
    run's ``train.test_size``, 500 if unset), drawn with the run's ``seed + 2`` as training's
    final evaluation drew them."""
    net, cfg = load_t5(out_dir)
    t = cfg.get("train", {})
    n = int(t.get("test_size", 500)) if test_size is None else test_size
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"evaluate_t5: argument 'test_size' expected an int >= 1, got {n!r}")
    return exact_match(net, net.config.seq_length, n, int(t.get("seed", 0)) + 2)


def train_vit(cfg: dict[str, Any], log: Any = print) -> dict[str, Any]:
    from .parallel import apply_parallel, shard_model
    from .pipeline import keep_own_stage, stage_state
    from .pipeline_vit_t5 import CorrectFraction, pipeline_vit
    from .runner import _context

    _one_process_only(cfg, "vit", PARALLEL)
    _pipeline_layouts(cfg, "vit")
    # data parallel: the core's DATA_PARALLEL (the step averages the gradients); every rank
    # reads one process's batches and keeps its share of each
    info = apply_parallel(cfg)
    t, d = cfg.get("train", {}), cfg.get("data", {})
    out = Path(cfg.get("output_dir", "out"))
    out.mkdir(parents=True, exist_ok=True)
    bs, epochs, seed = int(t["batch_size"]), int(t.get("epochs", 1)), int(t.get("seed", 0))
    train_ds, test_ds = mnist_datasets(
        d["path"],
        bs,
        int(d.get("holdout", 10000)),
        int(d.get("limit", 0) or 0),
        seed,
        num_shards=info.dp,
        shard_id=info.dp_rank,
    )
    if info.rank != 0:
        log = _quiet
    set_seed(seed)
    net = ViT(ViTConfig.from_dict(cfg.get("model", {})), _pipeline_config(info))
    if info.mp > 1:
        shard_model(net, info.mp_group)
    steps = epochs * train_ds.get_dataset_size()
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt_cfg = cfg.get("optimizer", {"learning_rate": 1e-3})
    if info.pp > 1:
        # this rank trains its stage; evaluation counts correct predictions through the
        # pipeline (on the last stage), every rank getting the counts
        train_net, eval_net = pipeline_vit(net, info.pp, info.micro, model_parallel=info.mp)
        opt = _optimizer(net, opt_cfg, steps, train_net.pipe.trainable_params())
        keep_own_stage(train_net)  # built whole (one process's initial weights), then freed
        model = Model(
            _step(train_net, opt, info),
            eval_network=eval_net,
            metrics={"accuracy": CorrectFraction()},
        )
    else:
        opt = _optimizer(net, opt_cfg, steps)
        model = Model(
            _step(nn.WithLossCell(net, loss), opt, info),
            eval_network=nn.WithEvalCell(net, loss),
            eval_indexes=[0, 1, 2],
            metrics={"accuracy": Accuracy()},
        )
    history: list[float] = []
    from sporeling.core.train import LambdaCallback

    def epoch_end(ctx: Any) -> None:
        res = getattr(ctx.original_args(), "eval_results", None) or {}
        history.append(float(res.get("accuracy", float("nan"))))
        log(f"epoch {ctx.original_args().cur_epoch_num}: test accuracy {history[-1]:.4f}")

    fusion_before = _context(cfg, info.pp)
    t0 = time.perf_counter()
    try:
        model.fit(
            epochs,
            train_ds,
            test_ds,
            callbacks=[LambdaCallback(on_train_epoch_end=epoch_end)],
        )
    finally:
        set_context(mode=PYNATIVE_MODE, enable_graph_kernel=fusion_before)
    results = {"wall_s": time.perf_counter() - t0, "test_accuracy": history}
    whole = stage_state(train_net, info.mp) if info.pp > 1 else None
    return _finish(out, cfg, net, results, info, whole)


def _quiet(*_: Any) -> None:
    pass


def load_vit(out_dir: str | Path) -> tuple[ViT, dict[str, Any]]:
    cfg = yaml.safe_load((Path(out_dir) / "config.yaml").read_text())
    net = ViT(ViTConfig.from_dict(cfg["model"]))
    load_param_into_net(
        net, load_checkpoint(str(Path(out_dir) / "model.safetensors")), strict_load=True
    )
    return net, cfg


def evaluate_vit(out_dir: str | Path) -> float:
    net, cfg = load_vit(out_dir)
    d = cfg["data"]
    _, test_ds = mnist_datasets(d["path"], 1, int(d.get("holdout", 10000)))
    model = Model(
        net,
        nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
        metrics={"accuracy": Accuracy()},
    )
    return float(model.eval(test_ds)["accuracy"])
