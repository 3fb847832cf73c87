"""The real-data experiment in one command: raw Criteo lines -> preprocess -> train Wide&Deep
-> AUC and log loss on the held-out split, for Sporeling and for the same model in PyTorch
on the same records.

    python criteo_auc.py [--data PATH/shared/data/criteo] [--out /tmp/criteo_exp]

The split is the preprocessor's fixed hash split (test_ratio 0.1, seed 2022). Sporeling
trains as MindSpore does (FTRL for the wide part, Adam for the deep part); PyTorch has no
FTRL, so its twin trains both tables with SparseAdam (see torch_wide_deep.py).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
# the steering folder's shared/data/criteo, beside the repository (or above a worktree of it)
DEFAULT_DATA = next(
    (p / "shared" / "data" / "criteo" for p in HERE.parents
     if (p / "shared" / "data" / "criteo").is_dir()),
    HERE.parents[2] / "shared" / "data" / "criteo",
)  # fmt: skip


def run_torch(records: str, cfg: dict, epochs: int, batch: int, lr: float, seed: int) -> dict:
    import torch
    from torch_wide_deep import TorchWideDeep, make_step

    from sporeling.recommender.metrics import auc_score, log_loss
    from sporeling.recommender.records import RecordStore

    torch.manual_seed(seed)
    train, test = RecordStore(records, "train"), RecordStore(records, "test")
    ids, vals, y = train.rows(0, train.num_rows)
    tids, tvals, ty = test.rows(0, test.num_rows)
    model = TorchWideDeep(train.vocab_size, 39, cfg["emb_dim"], tuple(cfg["deep_layer_dims"]))
    step = make_step(model, adam_lr=lr, sparse_lr=lr)
    rng = np.random.default_rng(seed)
    history = []
    for epoch in range(epochs):
        t0 = time.perf_counter()
        order = rng.permutation(len(ids) // batch)  # shuffled batches, as the records are
        for b in order:
            sl = slice(b * batch, (b + 1) * batch)
            step(torch.from_numpy(ids[sl].astype(np.int64)), torch.from_numpy(vals[sl]),
                 torch.from_numpy(y[sl]))  # fmt: skip
        seconds = time.perf_counter() - t0
        with torch.no_grad():
            logits = model(torch.from_numpy(tids.astype(np.int64)), torch.from_numpy(tvals))
            p = torch.sigmoid(logits).numpy()
        history.append({"epoch": epoch + 1, "eval_auc": auc_score(ty, p),
                        "eval_logloss": log_loss(ty, p), "seconds": seconds})  # fmt: skip
        print(f"pytorch epoch {epoch + 1}: test AUC {history[-1]['eval_auc']:.5f}, "
              f"log loss {history[-1]['eval_logloss']:.5f}")  # fmt: skip
    return {"epochs": history}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--out", default="/tmp/sporeling_criteo_experiment")
    ap.add_argument("--epochs", type=int, default=3)  # 600 test rows: later epochs overfit
    ap.add_argument("--batch-size", type=int, default=200)
    ap.add_argument("--emb-dim", type=int, default=16)
    ap.add_argument("--deep-layers", default="256,128")
    ap.add_argument("--adam-lr", type=float, default=1e-3)
    ap.add_argument("--min-freq", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-torch", action="store_true")
    a = ap.parse_args()
    from sporeling.recommender.preprocess import preprocess
    from sporeling.recommender.runner import ModelConfig, train

    files = sorted(glob.glob(os.path.join(a.data, "train_*.txt")))
    records = os.path.join(a.out, "records")
    rep = preprocess(files, records, min_freq=a.min_freq, line_per_sample=100, test_ratio=0.1,
                     seed=2022, workers=2)  # fmt: skip
    print(rep.summary())
    dims = [int(x) for x in a.deep_layers.split(",")]
    cfg = ModelConfig(emb_dim=a.emb_dim, deep_layer_dims=dims)
    out = train(records, cfg, epochs=a.epochs, batch_size=a.batch_size, seed=a.seed,
                adam_lr=a.adam_lr)  # fmt: skip
    out.pop("net")
    pre = {"train_rows": rep.train_rows, "test_rows": rep.test_rows, "vocab": rep.vocab_size}
    result = {"files": files, "preprocess": pre, "sporeling": out}
    if not a.no_torch:
        result["pytorch"] = run_torch(records, out["config"], a.epochs, a.batch_size, a.adam_lr,
                                      a.seed)  # fmt: skip
    s = out["epochs"][-1]
    print("\n| framework | test AUC | test log loss |\n|---|---|---|")
    print(f"| Sporeling (FTRL + Adam) | {s['eval_auc']:.4f} | {s['eval_logloss']:.4f} |")
    if "pytorch" in result:
        t = result["pytorch"]["epochs"][-1]
        print(f"| PyTorch (SparseAdam + Adam) | {t['eval_auc']:.4f} | {t['eval_logloss']:.4f} |")
    with open(os.path.join(a.out, "result.json"), "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
