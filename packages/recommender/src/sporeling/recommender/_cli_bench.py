"""``sporeling-rec bench``: Wide&Deep training samples/s on synthetic Criteo-like batches.

The issue's configuration is the default (vocab 1M, 13 + 26 fields, emb 16, MLP 256-128-1,
batch 1024); ``--seed-config`` is MindSpore's benchmark (vocab 5.86M, emb 16, 7 x 1024,
batch 16000). Batches are generated up front, so only training is timed.
"""

from __future__ import annotations

import argparse
import json
import time


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--vocab", type=int, default=1_000_000)
    p.add_argument("--emb-dim", type=int, default=16)
    p.add_argument("--deep-layers", default="256,128")
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--steps", type=int, default=20, help="timed steps (after 3 warm-up steps)")
    p.add_argument("--vocab-cache-size", type=int, default=0)
    p.add_argument(
        "--storage", default="memory", choices=["memory", "disk"], help="cache's host level"
    )
    p.add_argument("--path", default=None, help="folder of the disk level")
    p.add_argument(
        "--host-cache-size",
        type=int,
        default=0,
        help="rows of the host-memory level between the cache and the disk level (0: none)",
    )
    p.add_argument("--seed-config", action="store_true", help="vocab 5.86M, 7x1024, batch 16000")
    p.add_argument("--json", default=None, help="write the result here")


def run(a: argparse.Namespace) -> int:
    from sporeling.core import Tensor, set_seed

    from .cache import _host_level_text, cached_lookups
    from .models import WideDeepModel
    from .synthetic import SyntheticCriteo
    from .train import NetWithLossClass, TrainStepWrap

    if a.seed_config:
        a.vocab, a.emb_dim, a.deep_layers, a.batch_size = (
            5_860_000,
            16,
            ",".join(["1024"] * 7),
            16000,
        )
    dims = tuple(int(x) for x in a.deep_layers.split(",") if x)
    set_seed(0)
    gen = SyntheticCriteo(a.vocab)
    warm = 3
    batches = [gen.rows(a.batch_size, seed=i) for i in range(warm + a.steps)]
    opts = {"storage": a.storage, "path": a.path} if a.storage == "disk" else {}
    if a.host_cache_size:
        opts["host_cache_size"] = a.host_cache_size
    net = WideDeepModel(a.vocab, 39, a.emb_dim, dims, vocab_cache_size=a.vocab_cache_size, **opts)
    step = TrainStepWrap(NetWithLossClass(net))
    caches = cached_lookups(net)
    t0 = 0.0
    for i, (ids, vals, y) in enumerate(batches):
        if i == warm:
            for c in caches:
                c.reset_stats()
            t0 = time.perf_counter()
        for c in caches:
            c.prepare(ids)
            if i + 1 < len(batches):
                c.prefetch(batches[i + 1][0])
        step(Tensor(ids), Tensor(vals), Tensor(y))
    for c in caches:
        c.flush()  # the write-back belongs to the timed steps
    seconds = time.perf_counter() - t0
    result = {
        "vocab": a.vocab, "emb_dim": a.emb_dim, "deep_layers": list(dims),
        "batch_size": a.batch_size, "steps": a.steps, "vocab_cache_size": a.vocab_cache_size,
        "host_cache_size": a.host_cache_size,
        "samples_per_s": a.batch_size * a.steps / seconds,
        "cache": [c.reset_stats().as_dict() for c in caches],
    }  # fmt: skip
    print(
        f"Wide&Deep vocab {a.vocab}, emb {a.emb_dim}, MLP {'-'.join(map(str, dims))}-1, batch "
        f"{a.batch_size}: {result['samples_per_s']:.0f} samples/s over {a.steps} steps"
    )
    for i, c in enumerate(result["cache"]):
        hit, stalls, wb = c["hit_rate"], c["stalls"], c["write_backs"]
        print(f"  cache {i}: hit rate {hit:.3f}, stalls {stalls}, write-backs {wb}"
              + _host_level_text(c))  # fmt: skip
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0
