"""Step-by-step check that ``gpt_shakespeare_char`` trains as the nanoGPT re-implementation
(``nanogpt_torch.py``) does: the same initial weights (copied from the PyTorch model), the
same batches, the same learning-rate schedule; prints both losses per step and their largest
difference. Both float32; Sporeling in graph mode with operator fusion, as the training run.
Then both evaluate the trained weights on the windows tiling the validation split
(``nanogpt_torch``'s ``whole_split_loss`` and ``sporeling-transformer eval --whole``).

``--split train`` trains on the training split (the first 90%, nanoGPT's ``get_batch``
starts) instead of the first 200,000 characters; ``--every K`` scores both models on the
whole validation split every K steps and records how far their weights have moved apart
(``--log PATH``: per-step losses of both and those records, as JSON). ``--peer torch``
replaces the Sporeling side by a second PyTorch model whose initial weights differ by a
relative 1e-6 (round-off sized): how far two runs of one implementation drift apart from
float noise alone, the yardstick for the Sporeling-vs-PyTorch drift.

Needs torch beside the suite (not a dependency):
    python benchmarks/transformer/nanogpt_equivalence.py ../shared/data/tinyshakespeare/input.txt \
        [--steps 100] [--no-fusion] [--split train] [--every 250] [--log PATH] [--peer torch]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import tempfile

import numpy as np
import torch
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nanogpt_torch import GPT as TorchGPT  # noqa: E402
from nanogpt_torch import get_lr, whole_split_loss  # noqa: E402

from sporeling.core import (  # noqa: E402
    GRAPH_MODE,
    PYNATIVE_MODE,
    Tensor,
    load_param_into_net,
    nn,
    save_checkpoint,
    set_context,
)
from sporeling.transformer.models.gpt import GPTWithLoss  # noqa: E402
from sporeling.transformer.runner import build_gpt, evaluate, make_optimizer  # noqa: E402
from sporeling.transformer.settings import load_config  # noqa: E402
from sporeling.transformer.tokenizer import CharTokenizer  # noqa: E402


def copy_weights(tm: TorchGPT, n_layer: int) -> dict[str, Tensor]:
    """The PyTorch model's weights under the suite's names (1.8 layouts: attention dense
    weights (out, in), feed-forward weights (in, out))."""
    w = {k: v.detach().numpy().copy() for k, v in tm.state_dict().items()}
    h = w["wte.weight"].shape[1]
    out = {
        "backbone.word_embedding.embedding_table": w["wte.weight"],
        "backbone.position_embedding.embedding_table": w["wpe.weight"],
        "backbone.layernorm.gamma": w["ln_f.weight"],
    }
    for i in range(n_layer):
        s, d = f"h.{i}.", f"backbone.transformer.encoder.blocks.{i}."
        qkv = w[s + "attn.c_attn.weight"]  # (3h, h)
        for j, name in enumerate(("dense1", "dense2", "dense3")):
            out[d + f"attention.{name}.weight"] = qkv[j * h : (j + 1) * h]
        out[d + "attention.projection.weight"] = w[s + "attn.c_proj.weight"]
        out[d + "output.mapping.weight"] = w[s + "c_fc.weight"].T.copy()
        out[d + "output.projection.weight"] = w[s + "c_proj.weight"].T.copy()
        out[d + "layernorm1.gamma"] = w[s + "ln_1.weight"]
        out[d + "layernorm2.gamma"] = w[s + "ln_2.weight"]
    return {k: Tensor(np.ascontiguousarray(v)) for k, v in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--no-fusion", action="store_true", help="graph mode without operator fusion")
    ap.add_argument("--split", choices=("head", "train"), default="head")
    ap.add_argument("--every", type=int, default=0, help="whole-split evaluation interval")
    ap.add_argument("--log", default="", help="write the curves as JSON here")
    ap.add_argument("--peer", choices=("sporeling", "torch"), default="sporeling")
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument(
        "--stream",
        choices=("numpy", "nanogpt"),
        default="numpy",
        help="nanogpt: the batches and evaluations nanogpt_torch.py draws for --seed (torch's "
        "generator; implies --split train), both sides scored on nanoGPT's 20 random batches",
    )
    a = ap.parse_args()
    if a.stream == "nanogpt":
        a.split = "train"
    torch.set_num_threads(1)
    torch.manual_seed(a.seed)
    with open(a.data, encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    full = np.array([chars.index(c) for c in text], np.int64)
    ids = full[: int(0.9 * len(full))] if a.split == "train" else full[:200_000]
    val = torch.from_numpy(full[int(0.9 * len(full)) :])
    cfg = load_config("gpt_shakespeare_char", [])
    opt_cfg = cfg["optimizer"]
    tm = TorchGPT(len(chars), 64, 4, 4, 128)
    params = list(tm.parameters())
    topt = torch.optim.AdamW(
        [
            {"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
            {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
        ],
        lr=1e-3,
        betas=(0.9, 0.99),
    )
    steps_total = int(cfg["train"]["max_iters"])
    if a.peer == "torch":
        twin = copy.deepcopy(tm)
        with torch.no_grad():
            gen = torch.Generator().manual_seed(a.seed + 1)
            for p in twin.parameters():
                p.mul_(1.0 + 1e-6 * torch.randn(p.shape, generator=gen))
        twin_opt = torch.optim.AdamW(
            [
                {"params": [p for p in twin.parameters() if p.dim() >= 2], "weight_decay": 0.1},
                {"params": [p for p in twin.parameters() if p.dim() < 2], "weight_decay": 0.0},
            ],
            lr=1e-3,
            betas=(0.9, 0.99),
        )
        twin_lr = [get_lr(it, 1e-3, 1e-4, 100, steps_total) for it in range(steps_total)]

        def step(x: Tensor) -> np.ndarray:
            it = len(losses["peer"])
            for g in twin_opt.param_groups:
                g["lr"] = twin_lr[it]
            b = torch.from_numpy(x.asnumpy().astype(np.int64))
            loss = twin(b[:, :-1].contiguous(), b[:, 1:].contiguous())
            twin_opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(twin.parameters(), 1.0)
            twin_opt.step()
            return Tensor(np.float32(loss.item()))

        def peer_state() -> dict[str, np.ndarray]:
            return {k: v.detach().numpy() for k, v in copy_weights(twin, 4).items()}

        def peer_whole() -> float:
            return whole_split_loss(twin, val, 64, 12)[0]

        @torch.no_grad()
        def peer_loss(rows: np.ndarray) -> float:
            b = torch.from_numpy(rows.astype(np.int64))
            return twin(b[:, :-1].contiguous(), b[:, 1:].contiguous()).item()
    else:
        net = build_gpt(cfg, len(chars))
        missing = load_param_into_net(net, copy_weights(tm, 4), strict_load=False)[0]
        assert not [m for m in missing if not m.endswith(("bias", "beta"))], missing
        step = nn.TrainOneStepWithClipCell(
            GPTWithLoss(net), make_optimizer(net, opt_cfg, steps_total), clip_norm=1.0
        )
        with_loss = GPTWithLoss(net)

        def peer_state() -> dict[str, np.ndarray]:
            return {p.name: p.asnumpy() for p in net.trainable_params()}

        def peer_whole() -> float:
            # the windows tiling the validation split, as `eval --whole` takes them
            v = val.numpy().astype(np.int32)
            starts = range(0, len(v) - 64, 64)
            total = 0.0
            for i in range(0, len(starts), 12):
                rows = np.stack([v[j : j + 65] for j in starts[i : i + 12]])
                total += float(with_loss(Tensor(rows)).asnumpy()) * len(rows)
            return total / len(starts)

        def peer_loss(rows: np.ndarray) -> float:
            return float(with_loss(Tensor(rows.astype(np.int32))).asnumpy())

    def torch_state() -> dict[str, np.ndarray]:
        return {k: v.numpy() for k, v in copy_weights(tm, 4).items()}

    def drift() -> dict[str, float]:
        """Relative distance ||peer - torch|| / ||torch|| per parameter, and over all."""
        ts, ps = torch_state(), peer_state()
        out, num, den = {}, 0.0, 0.0
        for k, v in ts.items():
            d = float(np.sum((ps[k].astype(np.float64) - v) ** 2))
            n = float(np.sum(v.astype(np.float64) ** 2))
            out[k], num, den = (d / n) ** 0.5, num + d, den + n
        out["all"] = (num / den) ** 0.5
        return out

    losses: dict[str, list[float]] = {"torch": [], "peer": []}
    records: list[dict[str, object]] = []
    rng = np.random.default_rng(0 if a.seed == 1337 else a.seed)  # the batches
    splits = {"train": ids, "val": val.numpy()}

    def draw(split: str) -> np.ndarray:
        """A batch of 12 windows of 65 tokens: nanoGPT's ``get_batch`` on torch's generator
        (``--stream nanogpt``) or starts from NumPy's."""
        d = splits[split]
        if a.stream == "nanogpt":
            starts = torch.randint(len(d) - 64, (12,)).tolist()
        else:
            starts = rng.integers(0, len(d) - 64, 12)
        return np.stack([d[s : s + 65] for s in starts])

    evals: list[dict[str, float]] = []

    @torch.no_grad()
    def estimate(it: int) -> None:
        """nanoGPT's ``estimate_loss``: 20 fresh batches of each split, the same batches
        scored by both models (drawn in nanogpt_torch.py's order)."""
        rec: dict[str, float] = {"step": it}
        for split in ("train", "val"):
            t, p = [], []
            for _ in range(20):
                rows = draw(split)
                b = torch.from_numpy(rows)
                t.append(tm(b[:, :-1].contiguous(), b[:, 1:].contiguous()).item())
                p.append(peer_loss(rows))
            rec[f"{split}_torch"], rec[f"{split}_peer"] = float(np.mean(t)), float(np.mean(p))
        evals.append(rec)
        print(
            f"step {it}: nanoGPT's estimate, val torch {rec['val_torch']:.4f} peer "
            f"{rec['val_peer']:.4f}, train torch {rec['train_torch']:.4f} peer "
            f"{rec['train_peer']:.4f}",
            flush=True,
        )

    # as the training run: graph mode with operator fusion (the runner's default in graph mode)
    set_context(mode=GRAPH_MODE, enable_graph_kernel=not a.no_fusion)
    worst = 0.0
    try:
        for it in range(a.steps):
            if a.stream == "nanogpt" and it % 250 == 0:
                estimate(it)
            batch = draw("train")
            for g in topt.param_groups:
                g["lr"] = get_lr(it, 1e-3, 1e-4, 100, steps_total)
            x = torch.from_numpy(batch)
            loss_t = tm(x[:, :-1].contiguous(), x[:, 1:].contiguous())
            topt.zero_grad(set_to_none=True)
            loss_t.backward()
            torch.nn.utils.clip_grad_norm_(tm.parameters(), 1.0)
            topt.step()
            loss_s = float(step(Tensor(batch.astype(np.int32))).asnumpy())
            diff = abs(loss_s - loss_t.item())
            worst = max(worst, diff)
            losses["torch"].append(loss_t.item())
            losses["peer"].append(loss_s)
            if a.every and ((it + 1) % a.every == 0 or it == a.steps - 1):
                d = drift()
                rec = {
                    "step": it + 1,
                    "whole_torch": whole_split_loss(tm, val, 64, 12)[0],
                    "whole_peer": peer_whole(),
                    "drift_all": d["all"],
                    "drift": d,
                    "train_loss_mean_last_k": [
                        float(np.mean(losses[s][-a.every :])) for s in ("torch", "peer")
                    ],
                }
                records.append(rec)
                print(
                    f"step {it + 1}: whole val torch {rec['whole_torch']:.4f} peer "
                    f"{rec['whole_peer']:.4f}; weights apart {d['all']:.2e}; train-loss means "
                    "{:.4f} / {:.4f}".format(*rec["train_loss_mean_last_k"]),
                    flush=True,
                )
                if a.log:
                    with open(a.log, "w") as f:
                        json.dump(
                            {"args": vars(a), "losses": losses, "records": records, "evals": evals},
                            f,
                        )
            if it % 10 == 0 or it == a.steps - 1:
                print(
                    f"step {it}: torch {loss_t.item():.6f}  sporeling {loss_s:.6f}  |d| {diff:.2e}"
                )
        if a.stream == "nanogpt":
            estimate(a.steps)
            if a.log:
                with open(a.log, "w") as f:
                    json.dump(
                        {"args": vars(a), "losses": losses, "records": records, "evals": evals}, f
                    )
    finally:
        set_context(mode=PYNATIVE_MODE, enable_graph_kernel=False)
    print(f"largest loss difference over {a.steps} steps: {worst:.2e}")
    if a.peer == "torch":
        return
    # the evaluation both sides report: the windows tiling the validation split of the whole
    # text, through nanogpt_torch's loop and through `sporeling-transformer eval --whole`
    loss_t = whole_split_loss(tm, val, 64, 12)[0]
    with tempfile.TemporaryDirectory() as run:
        cfg["data"]["path"] = a.data
        save_checkpoint(net, os.path.join(run, "model.safetensors"))
        CharTokenizer(text).save(os.path.join(run, "tokenizer.json"))
        with open(os.path.join(run, "config.yaml"), "w") as f:
            yaml.safe_dump(cfg, f)
        loss_s = evaluate(run, "val", whole=True)
    print(f"whole validation split: torch {loss_t:.6f}  sporeling {loss_s:.6f}")


if __name__ == "__main__":
    main()
