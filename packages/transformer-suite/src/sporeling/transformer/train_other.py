"""Train and evaluate the T5 (digit reversal) and ViT (MNIST) runs of a config, through
``Model.fit`` as the GPT runner does; checkpoints in the core's safetensors format."""

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


def _optimizer(net: nn.Cell, opt: dict[str, Any], steps: int) -> nn.Optimizer:
    from .runner import lr_schedule

    return nn.AdamW(
        net.trainable_params(),
        learning_rate=lr_schedule(opt, steps),
        weight_decay=float(opt.get("weight_decay", 0.0)),
    )


def _finish(
    out: Path, cfg: dict[str, Any], net: nn.Cell, results: dict[str, Any]
) -> dict[str, Any]:
    save_checkpoint(net, str(out / "model.safetensors"))
    (out / "config.yaml").write_text(yaml.safe_dump(cfg))
    (out / "results.json").write_text(json.dumps(results, indent=1))
    results["rank"] = 0
    return results


def exact_match(net: T5Model, length: int, n: int, seed: int) -> float:
    src, _, tgt = reverse_digits(np.random.default_rng(seed), n, length)
    outs = generate_seq2seq(net, [list(s[s != PAD]) for s in src])
    want = [list(t[: list(t).index(EOS) + 1]) for t in tgt]
    return float(np.mean([o == w for o, w in zip(outs, want)]))


def _one_process_only(cfg: dict[str, Any], arch: str, allowed: tuple[str, ...] = ()) -> None:
    """A parallel layout these runs do not implement is refused rather than ignored (T5:
    any; ViT: all but ``allowed``, data_parallel and optimizer_shard)."""
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

    def __init__(self, with_loss: T5WithLoss, dp: int) -> None:
        super().__init__(auto_prefix=False)
        self.with_loss = with_loss
        self.dp = float(dp)

    def construct(self, source_ids: Any, source_mask: Any, target_ids: Any) -> Any:
        from sporeling.core import communication as comm
        from sporeling.core import dtype as mstype
        from sporeling.core import ops

        real = ops.not_equal(ops.cast(target_ids, mstype.int32), self.with_loss.pad)
        local = ops.reduce_sum(ops.cast(real, mstype.float32))
        total = comm.all_reduce(local)
        weight = ops.stop_gradient((local + 1e-5) * self.dp / (total + 1e-5))
        return self.with_loss(source_ids, source_mask, target_ids) * weight


def train_t5(cfg: dict[str, Any], log: Any = print) -> dict[str, Any]:
    from .parallel import apply_parallel
    from .runner import _context

    _one_process_only(cfg, "t5", ("data_parallel", "optimizer_shard"))
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
    net = T5Model(T5Config.from_dict(m))
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

    train_net = GlobalTokenMean(with_loss, info.dp) if info.dp > 1 else with_loss
    step = nn.TrainOneStepCell(
        train_net, _optimizer(net, cfg.get("optimizer", {"learning_rate": 1e-3}), steps)
    )
    model = Model(step, eval_network=with_loss, metrics={"loss": Loss()})
    fusion_before = _context(cfg)
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
    em = exact_match(net, length, int(t.get("test_size", 500)), seed + 2)
    log(f"exact match {em:.3f} on {int(t.get('test_size', 500))} held-out strings")
    results = {"wall_s": wall, "val_loss": history, "exact_match": em}
    if info.rank != 0:  # rank 0 writes the run (every rank holds the same parameters)
        return {**results, "rank": info.rank}
    return _finish(out, cfg, net, results)


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
    from .parallel import apply_parallel
    from .runner import _context

    _one_process_only(cfg, "vit", ("data_parallel", "optimizer_shard"))
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
    net = ViT(ViTConfig.from_dict(cfg.get("model", {})))
    steps = epochs * train_ds.get_dataset_size()
    model = Model(
        net,
        nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
        _optimizer(net, cfg.get("optimizer", {"learning_rate": 1e-3}), steps),
        metrics={"accuracy": Accuracy()},
    )
    history: list[float] = []
    from sporeling.core.train import LambdaCallback

    def epoch_end(ctx: Any) -> None:
        res = getattr(ctx.original_args(), "eval_results", None) or {}
        history.append(float(res.get("accuracy", float("nan"))))
        log(f"epoch {ctx.original_args().cur_epoch_num}: test accuracy {history[-1]:.4f}")

    fusion_before = _context(cfg)
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
    if info.rank != 0:  # rank 0 writes the run (every rank holds the same parameters)
        return {**results, "rank": info.rank}
    return _finish(out, cfg, net, results)


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
