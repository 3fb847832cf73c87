"""Hugging Face folders: GPT-2 and ViT weights against a NumPy forward written from the
Hugging Face layouts, and against ``transformers`` itself when it is installed (it needs
torch, so it is not a test dependency: those tests skip without it)."""

import json

import naive
import numpy as np
import pytest
from safetensors.numpy import save_file

from sporeling.core import Tensor
from sporeling.transformer.hf import load_hf_gpt2, load_hf_vit


def gpt2_folder(tmp_path, rng, h=16, L=2, heads=2, vocab=30, npos=10, prefix=""):
    w = {
        "wte.weight": rng.standard_normal((vocab, h)) * 0.3,
        "wpe.weight": rng.standard_normal((npos, h)) * 0.3,
        "ln_f.weight": 1 + 0.1 * rng.standard_normal(h),
        "ln_f.bias": 0.1 * rng.standard_normal(h),
    }
    for i in range(L):
        p = f"h.{i}."
        for name, shape in (
            ("attn.c_attn.weight", (h, 3 * h)),
            ("attn.c_attn.bias", (3 * h,)),
            ("attn.c_proj.weight", (h, h)),
            ("attn.c_proj.bias", (h,)),
            ("mlp.c_fc.weight", (h, 4 * h)),
            ("mlp.c_fc.bias", (4 * h,)),
            ("mlp.c_proj.weight", (4 * h, h)),
            ("mlp.c_proj.bias", (h,)),
            ("ln_1.bias", (h,)),
            ("ln_2.bias", (h,)),
        ):
            w[p + name] = rng.standard_normal(shape) * 0.3
        w[p + "ln_1.weight"] = 1 + 0.1 * rng.standard_normal(h)
        w[p + "ln_2.weight"] = 1 + 0.1 * rng.standard_normal(h)
    save_file(
        {prefix + k: v.astype(np.float32) for k, v in w.items()},
        str(tmp_path / "model.safetensors"),
    )
    cfg = {
        "model_type": "gpt2",
        "n_embd": h,
        "n_layer": L,
        "n_head": heads,
        "n_positions": npos,
        "vocab_size": vocab,
        "layer_norm_epsilon": 1e-5,
        "activation_function": "gelu_new",
    }
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    return {k: v.astype(np.float32).astype(np.float64) for k, v in w.items()}, cfg


def gpt2_reference(w, cfg, ids):
    """GPT-2's forward from the Hugging Face weight layout (Conv1D: x @ W + b)."""
    h, heads = cfg["n_embd"], cfg["n_head"]
    d = h // heads
    x = w["wte.weight"][ids] + w["wpe.weight"][np.arange(ids.shape[1])]
    b, s = ids.shape
    causal = np.tril(np.ones((s, s)))
    for i in range(cfg["n_layer"]):
        p = f"h.{i}."
        a = naive.layer_norm(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"])
        qkv = a @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
        q, k, v = (
            qkv[..., j * h : (j + 1) * h].reshape(b, s, heads, d).transpose(0, 2, 1, 3)
            for j in range(3)
        )
        sc = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d)
        sc = np.where(causal > 0, sc, -1e30)
        ctx = (naive.softmax(sc) @ v).transpose(0, 2, 1, 3).reshape(b, s, h)
        x = x + ctx @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        m = naive.layer_norm(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"])
        x = (
            x
            + naive.gelu(m @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"])
            @ w[p + "mlp.c_proj.weight"]
            + w[p + "mlp.c_proj.bias"]
        )
    x = naive.layer_norm(x, w["ln_f.weight"], w["ln_f.bias"])
    return x @ w["wte.weight"].T


@pytest.mark.parametrize("prefix", ["", "transformer."])
def test_gpt2_folder_matches_reference(tmp_path, prefix):
    w, cfg = gpt2_folder(tmp_path, np.random.default_rng(0), prefix=prefix)
    net = load_hf_gpt2(tmp_path, dtype="float64")
    ids = np.random.default_rng(1).integers(0, 30, (2, 10)).astype(np.int32)
    got = net(Tensor(ids)).asnumpy().reshape(2, 10, 30)
    np.testing.assert_allclose(got, gpt2_reference(w, cfg, ids), rtol=1e-8, atol=1e-8)


def test_gpt2_folder_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no config.json"):
        load_hf_gpt2(tmp_path)
    gpt2_folder(tmp_path, np.random.default_rng(0))
    cfg = json.loads((tmp_path / "config.json").read_text())
    cfg["model_type"] = "llama"
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="holds a 'llama' model, not gpt2"):
        load_hf_gpt2(tmp_path)


def _torch():
    torch = pytest.importorskip(
        "torch", reason="needs torch and transformers (not test dependencies)"
    )
    transformers = pytest.importorskip(
        "transformers", reason="needs transformers (not a test dependency)"
    )
    return torch, transformers


def test_gpt2_against_transformers(tmp_path):
    torch, tr = _torch()
    torch.manual_seed(0)
    model = tr.GPT2LMHeadModel(
        tr.GPT2Config(n_embd=32, n_layer=2, n_head=4, n_positions=16, vocab_size=50)
    )
    model.eval()
    model.save_pretrained(tmp_path, safe_serialization=True)
    ids = np.random.default_rng(0).integers(0, 50, (2, 16))
    with torch.no_grad():
        want = model(torch.tensor(ids)).logits.numpy()
    got = load_hf_gpt2(tmp_path)(Tensor(ids.astype(np.int32))).asnumpy().reshape(want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_vit_against_transformers(tmp_path):
    torch, tr = _torch()
    torch.manual_seed(0)
    cfg = tr.ViTConfig(
        image_size=8,
        patch_size=4,
        num_channels=3,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        num_labels=5,
    )
    model = tr.ViTForImageClassification(cfg)
    model.eval()
    model.save_pretrained(tmp_path, safe_serialization=True)
    x = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)
    with torch.no_grad():
        want = model(torch.tensor(x)).logits.numpy()
    got = load_hf_vit(tmp_path)(Tensor(x)).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
