"""Wide&Deep training samples/s: Sporeling against PyTorch (nn.Embedding(sparse=True) +
SparseAdam) in the same run, on the same synthetic Criteo-like batches.

Default: the issue's configuration (vocab 1M, 13 + 26 fields, emb 16, MLP 256-128-1, batch
1024); ``--seed-config`` is MindSpore's benchmark (vocab 5.86M, emb 16, 7 x 1024, batch
16000). The two frameworks alternate in rounds so that load changes hit both alike; each
round reports samples/s over ``--steps`` steps after warm-up. The machine is shared: the
numbers are noisy.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np


def sporeling_runner(vocab, emb, dims, batches, cache):
    from sporeling.core import Tensor, set_seed
    from sporeling.recommender.cache import cached_lookups
    from sporeling.recommender.models import WideDeepModel
    from sporeling.recommender.train import NetWithLossClass, TrainStepWrap

    set_seed(0)
    net = WideDeepModel(vocab, 39, emb, dims, vocab_cache_size=cache)
    step = TrainStepWrap(NetWithLossClass(net))
    caches = cached_lookups(net)
    data = [tuple(Tensor(a) for a in b) for b in batches]

    def run(k0, k1):
        for i in range(k0, k1):
            ids = batches[i % len(batches)][0]
            for c in caches:
                c.prepare(ids)
                c.prefetch(batches[(i + 1) % len(batches)][0])
            step(*data[i % len(data)])

    return run, caches


def torch_runner(vocab, emb, dims, batches, threads):
    import torch
    from torch_wide_deep import TorchWideDeep, make_step

    torch.manual_seed(0)
    torch.set_num_threads(threads)
    model = TorchWideDeep(vocab, 39, emb, dims)
    step = make_step(model)
    data = [(torch.from_numpy(i.astype(np.int64)), torch.from_numpy(v), torch.from_numpy(y))
            for i, v, y in batches]  # fmt: skip

    def run(k0, k1):
        for i in range(k0, k1):
            step(*data[i % len(data)])

    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vocab", type=int, default=1_000_000)
    ap.add_argument("--emb-dim", type=int, default=16)
    ap.add_argument("--deep-layers", default="256,128")
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cache", type=int, default=0, help="Sporeling vocab_cache_size")
    ap.add_argument("--seed-config", action="store_true")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--threads", type=int, default=0, help="BLAS / torch threads (0: all cores)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    if a.seed_config:
        a.vocab, a.emb_dim, a.batch_size = 5_860_000, 16, 16000
        a.deep_layers = ",".join(["1024"] * 7)
    from sporeling.recommender.synthetic import SyntheticCriteo

    dims = tuple(int(x) for x in a.deep_layers.split(","))
    gen = SyntheticCriteo(a.vocab)
    batches = [gen.rows(a.batch_size, seed=s) for s in range(a.steps + 1)]
    import os

    from threadpoolctl import threadpool_limits

    threads = a.threads or os.cpu_count() or 1
    threadpool_limits(threads, user_api="blas")  # Sporeling's BLAS (NumPy's OpenBLAS)
    runners = {"sporeling": sporeling_runner(a.vocab, a.emb_dim, dims, batches, a.cache)[0]}
    if not a.no_torch:
        runners["pytorch"] = torch_runner(a.vocab, a.emb_dim, dims, batches, threads)
    for run in runners.values():
        run(0, 3)  # warm-up (compilation, allocation)
    rates: dict[str, list[float]] = {k: [] for k in runners}
    for _ in range(a.rounds):
        for name, run in runners.items():
            t0 = time.perf_counter()
            run(0, a.steps)
            rates[name].append(a.steps * a.batch_size / (time.perf_counter() - t0))
    result = {
        "config": {
            "vocab": a.vocab,
            "emb_dim": a.emb_dim,
            "deep_layers": list(dims),
            "batch_size": a.batch_size,
            "steps": a.steps,
            "rounds": a.rounds,
            "cache": a.cache,
        },  # fmt: skip
        "samples_per_s": {k: statistics.median(v) for k, v in rates.items()},
        "rounds": rates,
    }
    for k, v in result["samples_per_s"].items():
        print(f"{k:10s} {v:10.0f} samples/s (median of {a.rounds} rounds: "
              f"{', '.join(f'{x:.0f}' for x in rates[k])})")  # fmt: skip
    if "pytorch" in rates:
        ratio = result["samples_per_s"]["sporeling"] / result["samples_per_s"]["pytorch"]
        # each round's two runs are back to back, so their ratio shares the load of the moment
        per_round = [a / b for a, b in zip(rates["sporeling"], rates["pytorch"], strict=True)]
        result["ratio"] = ratio
        result["ratio_per_round"] = per_round
        print(f"Sporeling / PyTorch: {ratio:.2f}x (per round: "
              f"{', '.join(f'{r:.2f}' for r in per_round)}; median "
              f"{statistics.median(per_round):.2f}x)")  # fmt: skip
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
