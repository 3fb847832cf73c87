"""Step-by-step check that ``gpt_shakespeare_char`` trains as the nanoGPT re-implementation
(``nanogpt_torch.py``) does: the same initial weights (copied from the PyTorch model), the
same batches, the same learning-rate schedule; prints both losses per step and their largest
difference. Both float32; Sporeling in graph mode with operator fusion, as the training run.
Then both evaluate the trained weights on the windows tiling the validation split
(``nanogpt_torch``'s ``whole_split_loss`` and ``sporeling-transformer eval --whole``).

Needs torch beside the suite (not a dependency):
    python benchmarks/transformer/nanogpt_equivalence.py ../shared/data/tinyshakespeare/input.txt \
        [--steps 100] [--no-fusion]
"""

from __future__ import annotations

import argparse
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
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(1337)
    with open(a.data, encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    ids = np.array([chars.index(c) for c in text[:200_000]], np.int64)
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
    net = build_gpt(cfg, len(chars))
    missing = load_param_into_net(net, copy_weights(tm, 4), strict_load=False)[0]
    assert not [m for m in missing if not m.endswith(("bias", "beta"))], missing
    steps_total = int(cfg["train"]["max_iters"])
    step = nn.TrainOneStepWithClipCell(
        GPTWithLoss(net), make_optimizer(net, opt_cfg, steps_total), clip_norm=1.0
    )
    rng = np.random.default_rng(0)
    # as the training run: graph mode with operator fusion (the runner's default in graph mode)
    set_context(mode=GRAPH_MODE, enable_graph_kernel=not a.no_fusion)
    worst = 0.0
    try:
        for it in range(a.steps):
            starts = rng.integers(0, len(ids) - 64, 12)
            batch = np.stack([ids[s : s + 65] for s in starts])
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
            if it % 10 == 0 or it == a.steps - 1:
                print(
                    f"step {it}: torch {loss_t.item():.6f}  sporeling {loss_s:.6f}  |d| {diff:.2e}"
                )
    finally:
        set_context(mode=PYNATIVE_MODE, enable_graph_kernel=False)
    print(f"largest loss difference over {a.steps} steps: {worst:.2e}")
    # the evaluation both sides report: the windows tiling the validation split of the whole
    # text, through nanogpt_torch's loop and through `sporeling-transformer eval --whole`
    full = np.array([chars.index(c) for c in text], np.int64)
    val = torch.from_numpy(full[int(0.9 * len(full)) :])
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
