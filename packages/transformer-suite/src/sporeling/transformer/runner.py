"""Train, evaluate and sample a GPT from a run config: the code behind the CLI.

Training goes through the core's ``Model.fit`` (validation every ``eval_interval`` steps,
``EarlyStopping`` if asked, the best checkpoint kept) with nanoGPT's recipe: AdamW with
decay on matrices only, warm-up then cosine learning rate, global-norm clipping. A callback
reports tokens/s and the model FLOPs utilisation against this machine's measured matmul peak.
"""

from __future__ import annotations

import json
import math
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from sporeling.core import (
    GRAPH_MODE,
    PYNATIVE_MODE,
    Model,
    Tensor,
    get_context,
    load_checkpoint,
    load_param_into_net,
    nn,
    save_checkpoint,
    set_context,
    set_seed,
)
from sporeling.core.train import Callback, EarlyStopping, Loss, ProgressBar

from .data import encode_corpus
from .models.gpt import GPT, GPTConfig, GPTWithLoss
from .parallel import MeanOfCopies, apply_parallel, full_state, shard_model, train_step
from .pipeline import keep_own_stage, pipeline_gpt_with_loss, stage_state
from .pipelines import TokenWindows, sampled_batches, tiled_batches

__all__ = [
    "Throughput",
    "KeepBest",
    "StepLosses",
    "make_optimizer",
    "build_gpt",
    "lr_schedule",
    "train",
    "evaluate",
    "load_run",
    "measure_peak_flops",
    "model_flops_per_token",
]


def build_gpt(cfg: dict[str, Any], vocab_size: int, **model_overrides: Any) -> GPT:
    model = dict(cfg.get("model", {}))
    if not model.get("vocab_size"):
        model["vocab_size"] = vocab_size
    model.update(model_overrides)
    gc = GPTConfig.from_dict(model, cfg.get("parallel_config"), cfg.get("moe_config"))
    rc = cfg.get("recompute_config")
    if rc:
        from .modules import TransformerRecomputeConfig

        gc.parallel_config.recompute = TransformerRecomputeConfig(**rc)
    return GPT(gc)


def lr_schedule(opt: dict[str, Any], steps: int) -> list[float]:
    """nanoGPT's ``get_lr``: linear warm-up, cosine decay to ``min_lr`` at
    ``lr_decay_iters``, ``min_lr`` after."""
    lr, min_lr = float(opt["learning_rate"]), float(opt.get("min_lr", opt["learning_rate"]))
    warm, decay = int(opt.get("warmup_iters", 0)), int(opt.get("lr_decay_iters", steps))
    out = []
    for it in range(steps):
        if it < warm:
            out.append(lr * (it + 1) / (warm + 1))
        elif it > decay:
            out.append(min_lr)
        else:
            ratio = (it - warm) / max(decay - warm, 1)
            out.append(min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (lr - min_lr))
    return out


def make_optimizer(
    net: nn.Cell, opt: dict[str, Any], steps: int, params: list[Any] | None = None
) -> nn.Optimizer:
    """AdamW over ``params`` (default: all of ``net``'s), weight decay on matrices only."""
    params = net.trainable_params() if params is None else params
    decay = [p for p in params if len(p.shape) >= 2]
    rest = [p for p in params if len(p.shape) < 2]
    groups = [
        {"params": decay, "weight_decay": float(opt.get("weight_decay", 0.0))},
        {"params": rest, "weight_decay": 0.0},
    ]
    return nn.AdamW(
        groups,
        learning_rate=lr_schedule(opt, steps),
        beta1=float(opt.get("beta1", 0.9)),
        beta2=float(opt.get("beta2", 0.999)),
        eps=1e-8,
    )


def model_flops_per_token(c: GPTConfig) -> float:
    """Training FLOPs per token (PaLM appendix B): ``6 N + 12 L h s`` with ``N`` the
    non-embedding parameters plus the tied head."""
    h, L, s = c.embedding_size, c.num_layers, c.seq_length
    n = L * (12 * h * h + 13 * h) + c.vocab_size * h
    return 6.0 * n + 12.0 * L * h * s


def measure_peak_flops(n: int = 1024, repeats: int = 5) -> float:
    """This machine's float32 matmul FLOP/s (best of ``repeats``), the MFU denominator."""
    a = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        a @ a
        best = min(best, time.perf_counter() - t0)
    return 2.0 * n**3 / best


class Throughput(Callback):
    """Tokens/s and MFU per epoch (between validations), and over the whole run."""

    def __init__(
        self, tokens_per_step: int, flops_per_token: float, peak: float, log: Any = print
    ) -> None:
        self.tokens_per_step, self.fpt, self.peak, self.log = (
            tokens_per_step,
            flops_per_token,
            peak,
            log,
        )
        self.steps = 0
        self.seconds = 0.0
        self.first_step_s: float | None = None
        self.records: list[dict[str, float]] = []

    def on_train_step_begin(self, run_context: Any) -> None:
        self._t = time.perf_counter()

    def on_train_step_end(self, run_context: Any) -> None:
        dt = time.perf_counter() - self._t
        if self.first_step_s is None:
            self.first_step_s = dt  # graph compile included: kept out of the rate
            return
        self.steps += 1
        self.seconds += dt

    def on_train_epoch_end(self, run_context: Any) -> None:
        cb = run_context.original_args()
        res = dict(getattr(cb, "eval_results", None) or {})
        loss = cb.net_outputs
        tps = self.tokens_per_second
        rec = {
            "step": cb.cur_step_num,
            "train_loss": float(np.asarray(loss.asnumpy())),
            "val_loss": float(res.get("loss", float("nan"))),
            "tokens_per_s": tps,
            "mfu": tps * self.fpt / self.peak,
        }
        self.records.append(rec)
        self.log(
            f"step {rec['step']}: train loss {rec['train_loss']:.4f}, val loss "
            f"{rec['val_loss']:.4f}, {tps:,.0f} tokens/s, MFU {100 * rec['mfu']:.1f}%"
        )

    @property
    def tokens_per_second(self) -> float:
        return self.steps * self.tokens_per_step / self.seconds if self.seconds else 0.0


class StepLosses(Callback):
    """Every training step's loss; :meth:`global_losses` gives the whole batch's (under data
    parallelism without a pipeline each rank's is its shard's: averaged over the ranks)."""

    def __init__(self) -> None:
        self.losses: list[float] = []

    def on_train_step_end(self, run_context: Any) -> None:
        out = run_context.original_args().net_outputs
        self.losses.append(float(np.asarray(out.asnumpy())))

    def global_losses(self, info: Any) -> list[float]:
        if info.dp == 1 or info.pp > 1:  # every rank holds the whole batch's loss
            return self.losses
        from sporeling.core import communication as comm

        # dp x mp: the mp ranks of one copy hold equal losses, so the mean over all ranks
        # is the mean over the data-parallel copies
        every = comm.all_gather(Tensor(np.asarray([self.losses], np.float64))).asnumpy()
        return [float(v) for v in every.mean(axis=0)]


class KeepBest(Callback):
    """Save the checkpoint whenever the validation loss improves (nanoGPT keeps the best);
    under tensor parallelism every rank gathers the shards and rank 0 writes them whole."""

    def __init__(self, net: nn.Cell, path: Path, write: bool = True, sharded: bool = False) -> None:
        self.net, self.path, self.best = net, path, float("inf")
        self.write, self.sharded = write, sharded
        # instead of the net: the state to write (rank 0) or None, e.g. the pipeline's stages
        self.state_fn: Any = None

    def on_train_epoch_end(self, run_context: Any) -> None:
        res = getattr(run_context.original_args(), "eval_results", None) or {}
        val = float(res.get("loss", float("inf")))
        if val < self.best:
            self.best = val
            if self.state_fn is not None:
                whole = self.state_fn()
                state = None if whole is None else {k: Tensor(v) for k, v in whole.items()}
            elif self.sharded:
                state = {k: Tensor(v) for k, v in full_state(self.net).items()}
            else:
                state = self.net
            if self.write:
                save_checkpoint(state, str(self.path))


def _context(cfg: dict[str, Any], pipeline_stages: int = 1) -> bool:
    """``context.mode`` and ``context.enable_graph_kernel``: fusion is on by default in graph
    mode here (the core's default is off, as MindSpore's; these recipes were tuned with it).
    Returns the fusion setting it replaced, for the caller to restore. Graph mode with
    ``pipeline_stages`` > 1 runs eagerly, saying so once: the core's ``PipelineCell``
    cannot be compiled, so every step and evaluation around it would fall back anyway."""
    ctx = cfg.get("context", {})
    mode = str(ctx.get("mode", "pynative")).lower()
    if mode not in ("graph", "pynative"):
        raise ValueError(f"context.mode must be 'graph' or 'pynative', got {mode!r}")
    fusion = ctx.get("enable_graph_kernel", mode == "graph")
    if not isinstance(fusion, bool):
        raise ValueError(f"context.enable_graph_kernel must be true or false, got {fusion!r}")
    if mode == "graph" and pipeline_stages > 1:
        warnings.warn(
            f"context.mode 'graph' with parallel_config.pipeline_stage {pipeline_stages}: the "
            "training step and evaluation run in PYNATIVE mode (eagerly): the core's "
            "PipelineCell exchanges MPI messages between its stages and cannot be compiled",
            UserWarning,
            stacklevel=3,
        )
        mode = "pynative"
    previous = bool(get_context("enable_graph_kernel"))
    set_context(mode=GRAPH_MODE if mode == "graph" else PYNATIVE_MODE, enable_graph_kernel=fusion)
    return previous


def train(cfg: dict[str, Any], log: Any = print) -> dict[str, Any]:
    """Train the model of ``cfg`` (``arch``: gpt, t5 or vit); writes ``model.safetensors``,
    ``config.yaml`` and ``results.json`` (and the GPT's ``tokenizer.json``) into
    ``output_dir``; returns the results."""
    arch = str(cfg.get("arch", "gpt")).lower()
    if arch == "t5":
        from .train_other import train_t5

        return train_t5(cfg, log)
    if arch == "vit":
        from .train_other import train_vit

        return train_vit(cfg, log)
    if arch != "gpt":
        raise ValueError(f"arch must be 'gpt', 't5' or 'vit', got {arch!r}")
    t = cfg.get("train", {})
    out = Path(cfg.get("output_dir", "out"))
    out.mkdir(parents=True, exist_ok=True)
    info = apply_parallel(cfg)
    main_rank = info.rank == 0
    if not main_rank:
        log = _quiet
    set_seed(int(t.get("seed", 0)))
    tok, train_ids, val_ids = encode_corpus(cfg["data"])
    if main_rank:
        tok.save(out / "tokenizer.json")
    net = build_gpt(cfg, tok.vocab_size)
    if info.mp > 1:
        shard_model(net, info.mp_group)
    c = net.config
    steps, interval = int(t["max_iters"]), int(t.get("eval_interval", t["max_iters"]))
    bs = int(t["batch_size"])
    seed = int(t.get("seed", 0))
    if bs % info.dp:
        raise ValueError(f"train.batch_size {bs} must divide over data_parallel {info.dp}")
    # sporeling.data: random windows batched by a GeneratorDataset; under data parallelism
    # every rank draws one process's batches and keeps its share of each, so every layout
    # trains on the same data in the same order (loss curves comparable step for step)
    train_ds = sampled_batches(
        TokenWindows(train_ids, c.seq_length),
        ["input_ids"],
        bs,
        interval,
        seed,
        num_shards=info.dp,
        shard_id=info.dp_rank,
    )
    val_ds = sampled_batches(
        TokenWindows(val_ids, c.seq_length),
        ["input_ids"],
        bs,
        int(t.get("eval_iters", 20)),
        seed + 1,
        fixed=True,
    )
    with_loss = GPTWithLoss(net)
    k = int(cfg.get("speed_up", {}).get("micro_batch_num", 1) or 1)
    eval_net: nn.Cell = with_loss
    if info.pp > 1:
        # speed_up.micro_batch_num k interleaved copies of each of the pipeline's micro
        # micro-batches average to the same loss and gradients as micro * k micro-batches,
        # which is how they run here (interleaving overlaps tensor-parallel communication,
        # which a pipeline stage here does not have)
        micro = info.micro * k
        # this rank trains (and evaluates through the pipeline) only its stage's parameters
        train_net = eval_net = pipeline_gpt_with_loss(
            with_loss, info.pp, micro, model_parallel=info.mp
        )
        own = train_net.pipe.trainable_params()
    else:
        train_net = MeanOfCopies(with_loss, k) if k > 1 else with_loss
        own = None
    parameters = sum(p.size for p in net.trainable_params())
    opt = make_optimizer(net, cfg.get("optimizer", {"learning_rate": 1e-3}), steps, own)
    if info.pp > 1:
        keep_own_stage(train_net)  # built whole (one process's initial weights), then freed
    clip = float(cfg.get("optimizer", {}).get("grad_clip", 0.0))
    step = train_step(train_net, opt, clip, info)
    losses = StepLosses()
    model = Model(step, eval_network=eval_net, metrics={"loss": Loss()})
    peak = measure_peak_flops()
    meter = Throughput(bs * c.seq_length, model_flops_per_token(c), peak * info.world, log)
    keep = KeepBest(net, out / "model.safetensors", main_rank, info.mp > 1)
    if info.pp > 1:
        # the whole model on rank 0 (each shard index's part, then gathered by full_state)
        keep.state_fn = lambda: stage_state(train_net, info.mp)
    callbacks: list[Any] = [meter, keep, losses]
    if t.get("progress_bar"):
        callbacks.append(ProgressBar())  # the core's (tqdm if installed, else plain text)
    if t.get("early_stopping_patience"):
        callbacks.append(EarlyStopping(monitor="loss", patience=int(t["early_stopping_patience"])))
    if main_rank:
        (out / "config.yaml").write_text(yaml.safe_dump(_with_vocab(cfg, c.vocab_size)))
    fusion_before = _context(cfg, info.pp)
    t0 = time.perf_counter()
    try:
        model.fit(math.ceil(steps / interval), train_ds, val_ds, callbacks=callbacks)
    finally:
        set_context(mode=PYNATIVE_MODE, enable_graph_kernel=fusion_before)
    results = {
        "wall_s": time.perf_counter() - t0,
        "tokens_per_s": meter.tokens_per_second,
        "first_step_s": meter.first_step_s,
        "peak_flops": peak,
        "mfu": meter.tokens_per_second * model_flops_per_token(c) / (peak * info.world),
        "best_val_loss": min((r["val_loss"] for r in meter.records), default=float("nan")),
        "history": meter.records,
        "parameters": parameters,
        # what this rank holds (its stage's under a pipeline, its shards under mp)
        "parameter_bytes": sum(p.asnumpy().nbytes for p in net.get_parameters()),
        "step_losses": losses.global_losses(info),
    }
    results["rank"] = info.rank
    results["layout"] = {
        "data_parallel": info.dp,
        "model_parallel": info.mp,
        "pipeline_stage": info.pp,
        "micro_batch_num": info.micro if info.pp > 1 else k,
        "interleaved_copies": k,
    }
    if main_rank:
        (out / "results.json").write_text(json.dumps(results, indent=1))
    return results


def _quiet(*_: Any) -> None:
    pass


def _with_vocab(cfg: dict[str, Any], vocab: int) -> dict[str, Any]:
    d = json.loads(json.dumps(cfg))
    d.setdefault("model", {})["vocab_size"] = vocab
    return d


def load_run(out_dir: str | Path, **model_overrides: Any) -> tuple[GPT, Any, dict[str, Any]]:
    """The trained model, its tokenizer and config from an ``output_dir``."""
    from .tokenizer import load_tokenizer

    out = Path(out_dir)
    cfg = yaml.safe_load((out / "config.yaml").read_text())
    tok = load_tokenizer(out / "tokenizer.json")
    net = build_gpt(cfg, tok.vocab_size, **model_overrides)
    load_param_into_net(net, load_checkpoint(str(out / "model.safetensors")), strict_load=True)
    return net, tok, cfg


def evaluate(
    out_dir: str | Path,
    split: str = "val",
    batches: int | None = None,
    whole: bool = False,
    draw_seed: int | None = None,
) -> float:
    """Mean loss of the saved model over ``batches`` (default: the run's ``eval_iters``)
    batches of random windows of ``split``, drawn with the run's ``seed + 1`` (the windows its
    training evaluated on and kept its best checkpoint by) or with ``draw_seed``: a draw
    independent of those, nanoGPT's ``estimate_loss`` protocol for one evaluation.
    ``whole``: over the windows that tile the split (every token but the first predicted
    once, the same windows for any run of the text), a token-weighted mean."""
    if draw_seed is not None and (isinstance(draw_seed, bool) or not isinstance(draw_seed, int)):
        raise ValueError(f"evaluate: argument 'draw_seed' expected an int, got {draw_seed!r}")
    if batches is not None and (
        isinstance(batches, bool) or not isinstance(batches, int) or batches < 1
    ):
        raise ValueError(f"evaluate: argument 'batches' expected an int >= 1, got {batches!r}")
    if whole and (batches is not None or draw_seed is not None):
        raise ValueError(
            "evaluate: whole=True takes every tiling window; 'batches' and 'draw_seed' choose "
            f"random ones (got batches={batches!r}, draw_seed={draw_seed!r})"
        )
    net, tok, cfg = load_run(out_dir)
    _, train_ids, val_ids = encode_corpus(cfg["data"], Path(out_dir) / "tokenizer.json")
    t = cfg.get("train", {})
    ids = val_ids if split == "val" else train_ids
    bs, seq = int(t["batch_size"]), net.config.seq_length
    with_loss = GPTWithLoss(net)
    if whole:
        total = rows = 0.0
        for (batch,) in tiled_batches(ids, seq, bs).create_tuple_iterator(output_numpy=True):
            total += float(with_loss(Tensor(batch)).asnumpy()) * len(batch)
            rows += len(batch)
        return total / rows
    ds = sampled_batches(
        TokenWindows(ids, seq),
        ["input_ids"],
        bs,
        batches or int(t.get("eval_iters", 20)),
        int(t.get("seed", 0)) + 1 if draw_seed is None else draw_seed,
        fixed=True,
    )
    model = Model(with_loss, eval_network=with_loss, metrics={"loss": Loss()})
    return float(model.eval(ds)["loss"])
