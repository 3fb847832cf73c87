"""``sporeling-rec train``."""

from __future__ import annotations

import argparse
import json


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", help="a folder written by `sporeling-rec preprocess`")
    p.add_argument("--model", default="wide_deep", help="wide_deep, deepfm or dcn_v2")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument(
        "--batch-size", type=int, default=1000, help="rows (a multiple of line_per_sample)"
    )
    p.add_argument("--emb-dim", type=int, default=80)
    p.add_argument(
        "--deep-layers", default="1024,512,256,128", help="hidden sizes, comma-separated"
    )
    p.add_argument(
        "--dense", action="store_true", help="dense table gradients (Adam + L2 on the table)"
    )
    p.add_argument(
        "--vocab-cache-size", type=int, default=0, help="rows of the embedding cache (0: none)"
    )
    p.add_argument(
        "--storage", default="memory", choices=["memory", "disk"], help="the cache's full table"
    )
    p.add_argument("--path", default=None, help="folder of the disk level")
    p.add_argument(
        "--host-cache-size",
        type=int,
        default=0,
        help="rows of the host-memory level between the cache and the disk level (0: none)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--adam-lr", type=float, default=3.5e-4, help="deep part (MindSpore: 3.5e-4)")
    p.add_argument("--ftrl-lr", type=float, default=5e-2, help="wide part (MindSpore: 5e-2)")
    p.add_argument("--ckpt", default=None, help="save the trained model here")
    p.add_argument("--json", default=None, help="write the history here")


def run(a: argparse.Namespace) -> int:
    from .runner import ModelConfig, train

    if (a.storage == "disk" or a.host_cache_size) and not a.vocab_cache_size:
        raise ValueError(
            "sporeling-rec train: --storage disk and --host-cache-size need an embedding cache "
            f"(--vocab-cache-size > 0), got --vocab-cache-size {a.vocab_cache_size}"
        )
    levels = {"storage": a.storage, "path": a.path} if a.storage == "disk" else {}
    if a.host_cache_size:
        levels["host_cache_size"] = a.host_cache_size

    cfg = ModelConfig(
        model=a.model,
        emb_dim=a.emb_dim,
        deep_layer_dims=[int(x) for x in a.deep_layers.split(",") if x],
        sparse=not a.dense,
        vocab_cache_size=a.vocab_cache_size,
    )
    out = train(
        a.dataset, cfg, epochs=a.epochs, batch_size=a.batch_size, seed=a.seed, ckpt=a.ckpt,
        adam_lr=a.adam_lr, ftrl_lr=a.ftrl_lr, **levels,
    )  # fmt: skip
    out.pop("net")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0
