"""The embedding cache at 100%, 10% and 1% of the vocabulary on synthetic Criteo-like data:
final parameters against training without a cache, hit rates and samples/s in a table.

    python cache_sizes.py [--vocab 1000000] [--batch-size 512] [--steps 30]

Every run trains Wide&Deep on the same batches from the same initial parameters; the
parameters after training (the full tables, flushed) are compared element by element with
the run without a cache. The machine is shared: samples/s are noisy.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def train(vocab, emb, dims, batches, cache, storage, path):
    from sporeling.core import Tensor, set_seed
    from sporeling.recommender.cache import cached_lookups
    from sporeling.recommender.models import WideDeepModel
    from sporeling.recommender.train import NetWithLossClass, TrainStepWrap

    set_seed(0)
    opts = {"storage": storage, "path": path} if cache and storage == "disk" else {}
    net = WideDeepModel(vocab, 39, emb, dims, vocab_cache_size=cache, **opts)
    if cache and storage == "disk":  # the disk level draws its own table: start from the same
        set_seed(0)
        ref = WideDeepModel(vocab, 39, emb, dims)
        for c, t in zip(cached_lookups(net), (ref.wide_embeddinglookup, ref.deep_embeddinglookup)):
            c.load_table(t.embedding_table.asnumpy())
    step = TrainStepWrap(NetWithLossClass(net))
    caches = cached_lookups(net)
    data = [tuple(Tensor(a) for a in b) for b in batches]
    t0 = time.perf_counter()
    for i, b in enumerate(data):
        for c in caches:
            c.prepare(batches[i][0])
            if i + 1 < len(batches):
                c.prefetch(batches[i + 1][0])
        step(*b)
    for c in caches:
        c.flush()
    seconds = time.perf_counter() - t0
    tables = {id(c.embedding_table): c.host_table for c in caches}
    params = {p.name: np.array(tables.get(id(p), p.asnumpy())) for p in net.trainable_params()}
    stats = [c.reset_stats().as_dict() for c in caches]
    return params, stats, sum(len(b[0]) for b in batches) / seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vocab", type=int, default=1_000_000)
    ap.add_argument("--emb-dim", type=int, default=16)
    ap.add_argument("--deep-layers", default="256,128")
    ap.add_argument("--batch-size", type=int, default=512)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--storage", default="memory", choices=["memory", "disk"])
    ap.add_argument("--path", default="/tmp/sporeling_cache_tables")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    from sporeling.recommender.synthetic import SyntheticCriteo

    dims = tuple(int(x) for x in a.deep_layers.split(","))
    gen = SyntheticCriteo(a.vocab)
    batches = [gen.rows(a.batch_size, seed=s) for s in range(a.steps)]
    base, _, base_rate = train(a.vocab, a.emb_dim, dims, batches, 0, "memory", None)
    rows = [{"cache": "none", "samples_per_s": base_rate}]
    for frac in (1.0, 0.1, 0.01):
        size = int(a.vocab * frac)
        params, stats, rate = train(a.vocab, a.emb_dim, dims, batches, size, a.storage,
                                    f"{a.path}/{size}")  # fmt: skip
        diff = max(float(np.abs(params[k] - base[k]).max()) for k in base)
        rows.append({
            "cache": f"{frac:.0%} ({size} rows)", "samples_per_s": rate,
            "equal_parameters": all(np.array_equal(params[k], base[k]) for k in base),
            "max_abs_diff": diff, "hit_rate_deep": stats[1]["hit_rate"],
            "write_backs_deep": stats[1]["write_backs"], "stalls_deep": stats[1]["stalls"],
        })  # fmt: skip
    print(f"vocab {a.vocab}, emb {a.emb_dim}, batch {a.batch_size}, {a.steps} steps, "
          f"{a.storage} level")  # fmt: skip
    print("| cache | equal parameters | hit rate | write-backs | stalls | samples/s |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        if r["cache"] == "none":
            print(f"| none | (reference) | - | - | - | {r['samples_per_s']:.0f} |")
        else:
            print(f"| {r['cache']} | {r['equal_parameters']} (max diff {r['max_abs_diff']:.1e}) "
                  f"| {r['hit_rate_deep']:.3f} | {r['write_backs_deep']} | {r['stalls_deep']} "
                  f"| {r['samples_per_s']:.0f} |")  # fmt: skip
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
