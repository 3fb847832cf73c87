"""Hugging Face T5 folders: a randomly initialised checkpoint written here with safetensors,
loaded by ``load_hf_t5`` and compared with a NumPy float64 forward written from the Hugging
Face weight layout (T5 1.0 relu and 1.1 gated-gelu, tied and untied heads, padded sources).

The comparison against ``transformers`` itself is the last test: it SKIPS unless torch and
transformers are installed (neither is a test dependency)."""

import json
import math

import numpy as np
import pytest
from safetensors.numpy import save_file

from sporeling.core import Tensor
from sporeling.transformer.hf import load_hf_t5
from sporeling.transformer.models.hf_t5 import RMSNorm, relative_position_bucket
from sporeling_testing import check_grad

CFG = {
    "model_type": "t5", "vocab_size": 40, "d_model": 16, "d_kv": 4, "d_ff": 24,
    "num_layers": 2, "num_decoder_layers": 3, "num_heads": 3,
    "relative_attention_num_buckets": 8, "relative_attention_max_distance": 20,
    "layer_norm_epsilon": 1e-6, "feed_forward_proj": "relu", "tie_word_embeddings": True,
    "decoder_start_token_id": 0, "pad_token_id": 0, "eos_token_id": 1,
}  # fmt: skip


def t5_folder(tmp_path, rng, **changes):
    cfg = dict(CFG, **changes)
    d, inner, ff, nb = cfg["d_model"], cfg["num_heads"] * cfg["d_kv"], cfg["d_ff"], 8
    gated = cfg["feed_forward_proj"] == "gated-gelu"
    w = {"shared.weight": rng.standard_normal((cfg["vocab_size"], d))}
    for stack, layers in (("encoder", cfg["num_layers"]), ("decoder", cfg["num_decoder_layers"])):
        for i in range(layers):
            p = f"{stack}.block.{i}.layer."
            attns = ["0.SelfAttention"] + (["1.EncDecAttention"] if stack == "decoder" else [])
            for a in attns:
                for m in "qkv":
                    w[f"{p}{a}.{m}.weight"] = rng.standard_normal((inner, d)) * 0.3
                w[f"{p}{a}.o.weight"] = rng.standard_normal((d, inner)) * 0.3
            if i == 0:
                w[f"{p}0.SelfAttention.relative_attention_bias.weight"] = rng.standard_normal(
                    (nb, cfg["num_heads"]))  # fmt: skip
            f = len(attns)
            for wi in ("wi_0", "wi_1") if gated else ("wi",):
                w[f"{p}{f}.DenseReluDense.{wi}.weight"] = rng.standard_normal((ff, d)) * 0.3
            w[f"{p}{f}.DenseReluDense.wo.weight"] = rng.standard_normal((d, ff)) * 0.3
            for j in range(f + 1):
                w[f"{p}{j}.layer_norm.weight"] = 1 + 0.2 * rng.standard_normal(d)
        w[f"{stack}.final_layer_norm.weight"] = 1 + 0.2 * rng.standard_normal(d)
    w32 = {k: v.astype(np.float32) for k, v in w.items()}
    # what save_pretrained writes for a tied model: the embedding copies and the head too
    w32["encoder.embed_tokens.weight"] = w32["shared.weight"]
    if cfg["tie_word_embeddings"]:
        w32["lm_head.weight"] = w32["shared.weight"]
    else:
        w32["lm_head.weight"] = rng.standard_normal((cfg["vocab_size"], d)).astype(np.float32)
    save_file(w32, str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    return {k: v.astype(np.float64) for k, v in w32.items()}, cfg


def bucket_reference(rel, bidirectional, num_buckets, max_distance):
    """T5's bucket rule for one relative position, in plain Python."""
    b = 0
    if bidirectional:
        num_buckets //= 2
        if rel > 0:
            b = num_buckets
        rel = abs(rel)
    else:
        rel = -min(rel, 0)
    max_exact = num_buckets // 2
    if rel < max_exact:
        return b + rel
    large = max_exact + int(
        math.log(rel / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    )
    return b + min(large, num_buckets - 1)


def t5_reference(w, cfg, ids, dec_ids, mask):
    """T5ForConditionalGeneration's logits in NumPy float64 from the HF weight layout."""
    heads, dkv, eps = cfg["num_heads"], cfg["d_kv"], cfg["layer_norm_epsilon"]
    gated = cfg["feed_forward_proj"] == "gated-gelu"
    neg = np.finfo(np.float64).min

    def rms(x, g):
        return g * x / np.sqrt((x**2).mean(-1, keepdims=True) + eps)

    def attn(p, x, kv, bias):
        def split(t):
            return t.reshape(t.shape[0], t.shape[1], heads, dkv).transpose(0, 2, 1, 3)

        q, k, v = (split(t @ w[f"{p}.{m}.weight"].T) for m, t in (("q", x), ("k", kv), ("v", kv)))
        s = q @ k.transpose(0, 1, 3, 2) + bias
        a = np.exp(s - s.max(-1, keepdims=True))
        a /= a.sum(-1, keepdims=True)
        ctx = (a @ v).transpose(0, 2, 1, 3).reshape(x.shape[0], x.shape[1], -1)
        return ctx @ w[f"{p}.o.weight"].T

    def ff(p, x):
        if gated:
            h = x @ w[f"{p}.wi_0.weight"].T
            g = 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h**3)))
            return (g * (x @ w[f"{p}.wi_1.weight"].T)) @ w[f"{p}.wo.weight"].T
        return np.maximum(x @ w[f"{p}.wi.weight"].T, 0) @ w[f"{p}.wo.weight"].T

    def pos_bias(table, n, bidirectional):
        md = cfg["relative_attention_max_distance"]
        b = np.array([[bucket_reference(j - i, bidirectional, 8, md) for j in range(n)]
                      for i in range(n)])  # fmt: skip
        return table[b].transpose(2, 0, 1)[None]

    emb = w["shared.weight"]
    enc_mask = np.where(mask[:, None, None, :] > 0, 0.0, neg)
    x = emb[ids]
    bias = pos_bias(w["encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"],
                    ids.shape[1], True) + enc_mask  # fmt: skip
    for i in range(cfg["num_layers"]):
        p = f"encoder.block.{i}.layer."
        x = x + attn(p + "0.SelfAttention", rms(x, w[p + "0.layer_norm.weight"]),
                     rms(x, w[p + "0.layer_norm.weight"]), bias)  # fmt: skip
        x = x + ff(p + "1.DenseReluDense", rms(x, w[p + "1.layer_norm.weight"]))
    memory = rms(x, w["encoder.final_layer_norm.weight"])
    t = dec_ids.shape[1]
    y = emb[dec_ids]
    causal = np.where(np.tril(np.ones((t, t))) > 0, 0.0, neg)[None, None]
    bias = pos_bias(w["decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"],
                    t, False) + causal  # fmt: skip
    for i in range(cfg["num_decoder_layers"]):
        p = f"decoder.block.{i}.layer."
        h = rms(y, w[p + "0.layer_norm.weight"])
        y = y + attn(p + "0.SelfAttention", h, h, bias)
        y = y + attn(p + "1.EncDecAttention", rms(y, w[p + "1.layer_norm.weight"]), memory,
                     enc_mask)  # fmt: skip
        y = y + ff(p + "2.DenseReluDense", rms(y, w[p + "2.layer_norm.weight"]))
    y = rms(y, w["decoder.final_layer_norm.weight"])
    if cfg["tie_word_embeddings"]:
        return (y * cfg["d_model"] ** -0.5) @ emb.T
    return y @ w["lm_head.weight"].T


def test_relative_position_buckets_against_python():
    rel = np.arange(-60, 61)
    for bidirectional in (True, False):
        for nb, md in ((8, 20), (32, 128)):
            got = relative_position_bucket(rel, bidirectional, nb, md)
            want = [bucket_reference(int(r), bidirectional, nb, md) for r in rel]
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "changes",
    [{}, {"feed_forward_proj": "gated-gelu", "tie_word_embeddings": False}],
    ids=["t5-1.0-relu-tied", "t5-1.1-gated-untied"],
)
def test_load_hf_t5_against_numpy_forward(tmp_path, changes):
    rng = np.random.default_rng(0)
    w, cfg = t5_folder(tmp_path, rng, **changes)
    ids = rng.integers(2, 40, (2, 7))
    mask = np.ones((2, 7))
    mask[1, 4:] = 0  # a padded source row
    dec = rng.integers(2, 40, (2, 5))
    dec[:, 0] = 0
    want = t5_reference(w, cfg, ids, dec, mask)
    for dtype, tol in (("float64", 1e-9), ("float32", 2e-4)):
        net = load_hf_t5(tmp_path, dtype=dtype)
        got = net(Tensor(ids.astype(np.int32)), Tensor(dec.astype(np.int32)),
                  Tensor(mask.astype(np.float32))).asnumpy()  # fmt: skip
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    # the key/value cache: each step's logits equal the full decoder on the prefix (float64)
    net64 = load_hf_t5(tmp_path, dtype="float64")
    src, m = Tensor(ids.astype(np.int32)), Tensor(mask)
    memory = net64.encode(src, m)
    cache = net64.start_cache(memory)
    for t in range(dec.shape[1]):
        step = net64.decode_step(Tensor(dec[:, t : t + 1].astype(np.int32)), cache, m)
        full = net64.decode(Tensor(dec[:, : t + 1].astype(np.int32)), memory, m)
        np.testing.assert_allclose(step.asnumpy()[:, 0], full.asnumpy()[:, -1], rtol=1e-9,
                                   atol=1e-9, err_msg=f"cached step {t}")  # fmt: skip
    np.testing.assert_array_equal(net64.generate_greedy(src, 6, m),
                                  net64.generate_greedy(src, 6, m, use_cache=False))  # fmt: skip
    # greedy decoding: each step's token is the argmax of the full forward on the prefix
    out = net.generate_greedy(Tensor(ids.astype(np.int32)), 4, Tensor(mask.astype(np.float32)))
    prefix = np.zeros((2, 1), np.int64)
    for step in range(out.shape[1]):
        logits = t5_reference(w, cfg, ids, prefix, mask)[:, -1]
        live = ~np.any(prefix[:, 1:] == 1, axis=1)
        np.testing.assert_array_equal(out[live, step], logits.argmax(-1)[live])
        prefix = np.concatenate([prefix, out[:, step : step + 1]], 1)


def test_hf_t5_sampling_through_generation(tmp_path):
    """``generate_hf_t5``: top-k / top-p / temperature sampling, seeded; with or without the
    cache the same draws (float64 logits equal); every sampled token lies in its step's top-k
    and top-p set; top_k=1 is greedy."""
    from sporeling.transformer.generation import generate_hf_t5

    rng = np.random.default_rng(4)
    t5_folder(tmp_path, rng, eos_token_id=-1)  # no end token: every step is sampled
    net = load_hf_t5(tmp_path, dtype="float64")
    ids = rng.integers(2, 40, (3, 6)).astype(np.int32)
    mask = np.ones((3, 6), np.float32)
    mask[2, 3:] = 0
    kw = dict(do_sample=True, top_k=6, top_p=0.8, temperature=0.7, seed=3)
    logits: list[np.ndarray] = []
    out = generate_hf_t5(net, ids, 8, mask, step_logits=logits, **kw)
    assert out.shape == (3, 8) and len(logits) == 8
    np.testing.assert_array_equal(out, generate_hf_t5(net, ids, 8, mask, use_cache=False, **kw))
    assert not np.array_equal(out, generate_hf_t5(net, ids, 8, mask, **{**kw, "seed": 4}))
    for step, z in enumerate(logits):
        z = z / 0.7
        for row in range(3):
            tok = out[row, step]
            assert tok in np.argsort(-z[row])[:6]
            p = np.exp(z[row] - z[row].max())
            p[np.argsort(-z[row])[6:]] = 0
            p /= p.sum()
            before = p[p > p[tok]].sum()  # mass of the tokens ranked above it
            assert before < 0.8
    greedy = net.generate_greedy(Tensor(ids), 8, Tensor(mask))
    top1 = generate_hf_t5(net, ids, 8, mask, do_sample=True, top_k=1, seed=0)
    np.testing.assert_array_equal(top1, greedy)
    with pytest.raises(ValueError, match="top_p"):
        generate_hf_t5(net, ids, 2, mask, do_sample=True, top_p=0.0)


def test_rms_norm_gradient():
    norm = RMSNorm(6, 1e-6, Tensor(np.zeros(1)).dtype)
    norm.weight.set_data(Tensor(1 + 0.3 * np.random.default_rng(1).standard_normal(6)))
    check_grad(lambda x: norm(x), [np.random.default_rng(2).standard_normal((3, 6))])


def test_load_hf_t5_errors(tmp_path):
    rng = np.random.default_rng(0)
    t5_folder(tmp_path, rng)
    cfg = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(dict(cfg, feed_forward_proj="gated-silu")))
    with pytest.raises(ValueError, match="feed_forward_proj expected 'relu' or 'gated-gelu'"):
        load_hf_t5(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(dict(cfg, model_type="mt5")))
    with pytest.raises(ValueError, match="holds a 'mt5' model, not t5"):
        load_hf_t5(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(dict(cfg, num_decoder_layers=4)))
    with pytest.raises(ValueError, match=r"gives no value for \['decoder.block.3"):
        load_hf_t5(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(dict(cfg, num_decoder_layers=2)))
    with pytest.raises(ValueError, match=r"tensors this T5 does not: \['decoder.block.2"):
        load_hf_t5(tmp_path)
    with pytest.raises(ValueError, match="dtype expected one of"):
        load_hf_t5(tmp_path, dtype="int8")


def test_t5_against_transformers(tmp_path):
    """SKIPPED unless torch and transformers are installed (not test dependencies)."""
    torch = pytest.importorskip("torch", reason="needs torch (not a test dependency)")
    tr = pytest.importorskip("transformers", reason="needs transformers (not a test dependency)")
    torch.manual_seed(0)
    conf = {k: v for k, v in CFG.items() if k != "model_type"}
    for ff in ("relu", "gated-gelu"):
        model = tr.T5ForConditionalGeneration(tr.T5Config(**dict(conf, feed_forward_proj=ff)))
        model.eval()
        model.save_pretrained(tmp_path / ff, safe_serialization=True)
        rng = np.random.default_rng(0)
        ids, dec = rng.integers(2, 40, (2, 7)), rng.integers(2, 40, (2, 5))
        mask = np.ones((2, 7), np.int64)
        mask[1, 4:] = 0
        with torch.no_grad():
            want = model(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                         decoder_input_ids=torch.tensor(dec)).logits.numpy()  # fmt: skip
        got = load_hf_t5(tmp_path / ff)(Tensor(ids.astype(np.int32)), Tensor(dec.astype(np.int32)),
                                        Tensor(mask.astype(np.float32))).asnumpy()  # fmt: skip
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
