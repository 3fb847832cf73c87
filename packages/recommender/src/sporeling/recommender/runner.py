"""Training and evaluation loops over preprocessed records (what ``sporeling-rec train`` and
``eval`` run): the model zoo's ``train_and_eval.py`` in one function."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from sporeling.core import Tensor, load_checkpoint, save_checkpoint, set_seed
from sporeling.data import config as data_config

from .cache import _host_level_text, cached_lookups
from .metrics import AUCMetric
from .records import CriteoRecordDataset, iterate_batches
from .train import NetWithLossClass, PredictWithSigmoid, TrainStepWrap

__all__ = ["ModelConfig", "build_model", "train", "evaluate", "evaluate_checkpoint", "save", "load"]


@dataclass
class ModelConfig:
    """Everything needed to build the model again (kept in checkpoints)."""

    model: str = "wide_deep"
    vocab_size: int = 0
    field_size: int = 39
    emb_dim: int = 80
    deep_layer_dims: list[int] = field(default_factory=lambda: [1024, 512, 256, 128])
    sparse: bool = True
    vocab_cache_size: int = 0
    l2_coef: float = 8e-5


def build_model(cfg: ModelConfig, **cache_options: Any) -> Any:
    """The model ``cfg.model`` names (``wide_deep``, ``deepfm`` or ``dcn_v2``)."""
    from . import models

    factories = {
        "wide_deep": models.WideDeepModel,
        "deepfm": models.DeepFMModel,
        "dcn_v2": models.DCNv2Model,
    }
    if cfg.model not in factories:
        raise ValueError(
            f"build_model: argument 'model' expected one of {sorted(factories)}, got {cfg.model!r}"
        )
    return factories[cfg.model](
        cfg.vocab_size, cfg.field_size, cfg.emb_dim, tuple(cfg.deep_layer_dims), cfg.sparse,
        cfg.vocab_cache_size, **cache_options,
    )  # fmt: skip


def _lookahead(it: Iterator[Any]) -> Iterator[tuple[Any, Any]]:
    prev = next(it, None)
    while prev is not None:
        nxt = next(it, None)
        yield prev, nxt
        prev = nxt


def save(net: Any, cfg: ModelConfig, path: str) -> None:
    """A checkpoint of ``net`` with the full tables of cached lookups (flushed first) and the
    model config in its metadata."""
    full = {}
    for lookup in cached_lookups(net):
        full[id(lookup.embedding_table)] = lookup.full_table()  # flushed
    entries = []
    for p in net.get_parameters():
        data = full.get(id(p))
        entries.append(
            {"name": p.name, "data": Tensor(np.asarray(data)) if data is not None else p}
        )
    save_checkpoint(entries, path, append_dict={"model_config": json.dumps(asdict(cfg))})


def load(path: str, vocab_cache_size: int | None = None) -> tuple[Any, ModelConfig]:
    """Rebuild the model a checkpoint holds (optionally with another cache size)."""
    params = load_checkpoint(path)
    cfg = ModelConfig(**json.loads(params.pop("model_config")))
    if vocab_cache_size is not None:
        cfg.vocab_cache_size = vocab_cache_size
    net = build_model(cfg)
    tables = {id(c.embedding_table): c for c in cached_lookups(net)}
    for p in net.get_parameters():
        value = params[p.name]
        if id(p) in tables:
            tables[id(p)].load_table(value)
        else:
            p.set_data(Tensor(value.asnumpy()))
    return net, cfg


def evaluate(net: Any, dataset_dir: str, batch_size: int, split: str = "test") -> dict[str, Any]:
    """AUC and log loss of ``net`` on a split (every full batch of it)."""
    data = CriteoRecordDataset(dataset_dir, split, shuffle=False)
    if len(data.store) == 0:
        raise ValueError(f"evaluate: the {split!r} split of {dataset_dir} holds no records")
    batch_size = max(batch_size - batch_size % data.line_per_sample, data.line_per_sample)
    predict = PredictWithSigmoid(net)
    net.set_train(False)
    metric = AUCMetric()
    for ids, vals, label in iterate_batches(
        data, data.line_per_sample, batch_size, drop_remainder=False
    ):
        metric.update(*predict(Tensor(ids), Tensor(vals), Tensor(label)))
    net.set_train(True)
    return {
        "auc": metric.eval(),
        "logloss": metric.log_loss(),
        "rows": sum(map(len, metric.true_labels)),
    }


def train(
    dataset_dir: str,
    cfg: ModelConfig | None = None,
    *,
    epochs: int = 1,
    batch_size: int = 1000,
    seed: int = 0,
    ckpt: str | None = None,
    eval_split: str | None = "test",
    num_shards: int | None = None,
    shard_id: int | None = None,
    ftrl_lr: float = 5e-2,
    adam_lr: float = 3.5e-4,
    log: Callable[[str], None] = print,
    **cache_options: Any,
) -> dict[str, Any]:
    """Train on the ``train`` split, evaluating after every epoch; returns the history
    (losses, AUC, log loss, samples/s, cache statistics per epoch). The learning rates
    default to MindSpore's (FTRL 5e-2 for the wide part, Adam 3.5e-4 for the rest)."""
    cfg = cfg or ModelConfig()
    data = CriteoRecordDataset(dataset_dir, "train", shuffle=True, num_shards=num_shards,
                               shard_id=shard_id)  # fmt: skip
    cfg.vocab_size = cfg.vocab_size or data.store.vocab_size
    cfg.field_size = data.store.field_size
    set_seed(seed)
    data_config.set_seed(seed)
    net = build_model(cfg, **cache_options)
    step = TrainStepWrap(NetWithLossClass(net, cfg.l2_coef), ftrl_lr=ftrl_lr, adam_lr=adam_lr)
    caches = cached_lookups(net)
    history: list[dict[str, Any]] = []
    for epoch in range(epochs):
        t0 = time.perf_counter()
        losses, rows = [], 0
        batches = iterate_batches(data, data.line_per_sample, batch_size)
        for (ids, vals, label), nxt in _lookahead(batches):
            for c in caches:
                c.prepare(ids)
                if nxt is not None:
                    c.prefetch(nxt[0])
            loss_w, _ = step(Tensor(ids), Tensor(vals), Tensor(label))
            losses.append(float(loss_w.asnumpy()))
            rows += len(ids)
        for c in caches:
            c.flush()  # MindSpore: Model.train flushes the cache to the host every epoch
        seconds = time.perf_counter() - t0
        entry: dict[str, Any] = {
            "epoch": epoch + 1,
            "loss": float(np.mean(losses)) if losses else float("nan"),
            "rows": rows,
            "samples_per_s": rows / seconds if seconds > 0 else 0.0,
        }
        if caches:
            entry["cache"] = [c.reset_stats().as_dict() for c in caches]
        if eval_split is not None:
            entry.update(
                {
                    f"eval_{k}": v
                    for k, v in evaluate(net, dataset_dir, batch_size, eval_split).items()
                }
            )
        history.append(entry)
        log(_describe(entry))
    if ckpt is not None:
        save(net, cfg, ckpt)
    return {"config": asdict(cfg), "epochs": history, "net": net}


def _describe(e: dict[str, Any]) -> str:
    text = f"epoch {e['epoch']}: loss {e['loss']:.5f}, {e['samples_per_s']:.0f} samples/s"
    if "eval_auc" in e:
        text += f", test AUC {e['eval_auc']:.5f}, log loss {e['eval_logloss']:.5f}"
    for i, c in enumerate(e.get("cache", [])):
        text += (
            f"\n  cache {i}: hit rate {c['hit_rate']:.3f}, loaded {c['loaded']} "
            f"(prefetched {c['prefetched']}), write-backs {c['write_backs']}, "
            f"stalls {c['stalls']} ({c['stall_seconds']:.3f} s)" + _host_level_text(c)
        )
    return text


def evaluate_checkpoint(dataset_dir: str, ckpt: str, batch_size: int = 1000) -> dict[str, Any]:
    net, _ = load(ckpt)
    return evaluate(net, dataset_dir, batch_size)
