"""Load Hugging Face checkpoint folders (``config.json`` + ``model.safetensors``) into the
suite's models: GPT-2 into :class:`GPT`, ViT (``ViTForImageClassification``) into
:class:`ViT`, T5 (``T5ForConditionalGeneration``, 1.0 and gated 1.1) into
:class:`HFT5ForConditionalGeneration`. Tensors are read with the ``safetensors`` library (no
pickle, no code).

T5 gets its own model class: Hugging Face's T5 uses relative position buckets, RMS norms
without biases and (1.1) gated feed-forwards, which the 1.8 blocks this suite's
:class:`T5Model` is built from do not have.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from sporeling.core import Tensor, nn

from .models.gpt import GPT, GPTConfig
from .models.hf_t5 import HFT5Config, HFT5ForConditionalGeneration
from .models.vit import ViT, ViTConfig
from .modules.layers import LayerNorm

__all__ = ["load_hf_gpt2", "load_hf_t5", "load_hf_vit", "read_hf_folder"]


def read_hf_folder(path: str | Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """``config.json`` and every tensor of ``model.safetensors`` (as float32/64 NumPy)."""
    from safetensors.numpy import load_file

    folder = Path(path)
    for name in ("config.json", "model.safetensors"):
        if not (folder / name).exists():
            raise FileNotFoundError(
                f"{folder}: no {name} (a Hugging Face checkpoint folder has both)"
            )
    cfg = json.loads((folder / "config.json").read_text())
    return cfg, load_file(str(folder / "model.safetensors"))


def _strip(weights: dict[str, np.ndarray], prefix: str) -> dict[str, np.ndarray]:
    return {k[len(prefix) :] if k.startswith(prefix) else k: v for k, v in weights.items()}


def _assign(net: nn.Cell, values: dict[str, np.ndarray], what: str) -> None:
    params = net.parameters_dict()
    missing = sorted(set(params) - set(values))
    if missing:
        raise ValueError(
            f"{what}: the checkpoint gives no value for {missing[:5]} ({len(missing)} in all)"
        )
    for name, value in values.items():
        p = params[name]
        if tuple(value.shape) != tuple(p.shape):
            raise ValueError(
                f"{what}: {name} has shape {value.shape} in the checkpoint, {p.shape} in the model"
            )
        p.set_data(Tensor(np.ascontiguousarray(value).astype(p.asnumpy().dtype)))


def _set_eps(net: nn.Cell, eps: float) -> None:
    for _, cell in net.cells_and_names():
        if isinstance(cell, LayerNorm):
            cell.eps = eps


def load_hf_gpt2(path: str | Path, dtype: str = "float32", use_past: bool = False) -> GPT:
    """A :class:`GPT` with the weights of a ``GPT2LMHeadModel``/``GPT2Model`` folder
    (``seq_length`` = ``n_positions``; head tied to ``wte`` as in GPT-2)."""
    cfg, w = read_hf_folder(path)
    if cfg.get("model_type", "gpt2") != "gpt2":
        raise ValueError(f"load_hf_gpt2: {path} holds a {cfg.get('model_type')!r} model, not gpt2")
    act = {"gelu_new": "gelu", "gelu": "gelu_exact", "relu": "relu"}.get(
        cfg.get("activation_function", "gelu_new")
    )
    if act is None:
        raise ValueError(
            f"load_hf_gpt2: activation_function {cfg.get('activation_function')!r} is not supported"
        )
    h, L = cfg["n_embd"], cfg["n_layer"]
    inner = cfg.get("n_inner") or 4 * h
    if inner % h:
        raise ValueError(f"load_hf_gpt2: n_inner {inner} is not a multiple of n_embd {h}")
    gc = GPTConfig(
        seq_length=cfg["n_positions"],
        vocab_size=cfg["vocab_size"],
        embedding_size=h,
        num_layers=L,
        num_heads=cfg["n_head"],
        expand_ratio=inner // h,
        hidden_act=act,
        dropout_rate=0.0,
        compute_dtype=dtype,
        layernorm_dtype=dtype,
        softmax_dtype=dtype,
        param_init_type=dtype,
        use_past=use_past,
    )
    net = GPT(gc)
    _set_eps(net, float(cfg.get("layer_norm_epsilon", 1e-5)))
    w = _strip(w, "transformer.")
    v: dict[str, np.ndarray] = {
        "backbone.word_embedding.embedding_table": w["wte.weight"],
        "backbone.position_embedding.embedding_table": w["wpe.weight"],
        "backbone.layernorm.gamma": w["ln_f.weight"],
        "backbone.layernorm.beta": w["ln_f.bias"],
    }
    for i in range(L):
        src, dst = f"h.{i}.", f"backbone.transformer.encoder.blocks.{i}."
        qkv_w, qkv_b = (
            w[src + "attn.c_attn.weight"],
            w[src + "attn.c_attn.bias"],
        )  # Conv1D: (in, out)
        for j, name in enumerate(("dense1", "dense2", "dense3")):
            v[dst + f"attention.{name}.weight"] = qkv_w[:, j * h : (j + 1) * h].T
            v[dst + f"attention.{name}.bias"] = qkv_b[j * h : (j + 1) * h]
        v[dst + "attention.projection.weight"] = w[src + "attn.c_proj.weight"].T
        v[dst + "attention.projection.bias"] = w[src + "attn.c_proj.bias"]
        v[dst + "output.mapping.weight"] = w[src + "mlp.c_fc.weight"]  # both (in, out)
        v[dst + "output.mapping.bias"] = w[src + "mlp.c_fc.bias"]
        v[dst + "output.projection.weight"] = w[src + "mlp.c_proj.weight"]
        v[dst + "output.projection.bias"] = w[src + "mlp.c_proj.bias"]
        for a, b in (("ln_1", "layernorm1"), ("ln_2", "layernorm2")):
            v[dst + f"{b}.gamma"] = w[src + f"{a}.weight"]
            v[dst + f"{b}.beta"] = w[src + f"{a}.bias"]
    _assign(net, v, "load_hf_gpt2")
    return net


def load_hf_vit(path: str | Path, dtype: str = "float32") -> ViT:
    """A :class:`ViT` with the weights of a ``ViTForImageClassification`` folder."""
    cfg, w = read_hf_folder(path)
    if cfg.get("model_type", "vit") != "vit":
        raise ValueError(f"load_hf_vit: {path} holds a {cfg.get('model_type')!r} model, not vit")
    act = {"gelu": "gelu_exact", "gelu_new": "gelu", "relu": "relu"}.get(
        cfg.get("hidden_act", "gelu")
    )
    if act is None:
        raise ValueError(f"load_hf_vit: hidden_act {cfg.get('hidden_act')!r} is not supported")
    h, L = cfg["hidden_size"], cfg["num_hidden_layers"]
    if cfg["intermediate_size"] % h:
        raise ValueError(
            f"load_hf_vit: intermediate_size {cfg['intermediate_size']} is not a multiple of {h}"
        )
    if not cfg.get("qkv_bias", True):
        raise ValueError("load_hf_vit: qkv_bias=False checkpoints are not supported")
    labels = cfg.get("id2label") or {}
    classes = w["classifier.weight"].shape[0] if "classifier.weight" in w else len(labels)
    vc = ViTConfig(
        image_size=cfg["image_size"],
        patch_size=cfg["patch_size"],
        num_channels=cfg.get("num_channels", 3),
        num_classes=classes,
        hidden_size=h,
        num_layers=L,
        num_heads=cfg["num_attention_heads"],
        mlp_ratio=cfg["intermediate_size"] // h,
        hidden_act=act,
        compute_dtype=dtype,
        param_init_type=dtype,
    )
    net = ViT(vc)
    _set_eps(net, float(cfg.get("layer_norm_eps", 1e-12)))
    w = _strip(w, "vit.")
    v: dict[str, np.ndarray] = {
        "cls_token": w["embeddings.cls_token"],
        "position_embedding": w["embeddings.position_embeddings"],
        "patch_embedding.projection.weight": w["embeddings.patch_embeddings.projection.weight"],
        "patch_embedding.projection.bias": w["embeddings.patch_embeddings.projection.bias"],
        "layernorm.gamma": w["layernorm.weight"],
        "layernorm.beta": w["layernorm.bias"],
        "head.weight": w["classifier.weight"],
        "head.bias": w["classifier.bias"],
    }
    for i in range(L):
        src, dst = f"encoder.layer.{i}.", f"encoder.blocks.{i}."
        for a, b in (("query", "dense1"), ("key", "dense2"), ("value", "dense3")):
            v[dst + f"attention.{b}.weight"] = w[
                src + f"attention.attention.{a}.weight"
            ]  # (out, in)
            v[dst + f"attention.{b}.bias"] = w[src + f"attention.attention.{a}.bias"]
        v[dst + "attention.projection.weight"] = w[src + "attention.output.dense.weight"]
        v[dst + "attention.projection.bias"] = w[src + "attention.output.dense.bias"]
        v[dst + "output.mapping.weight"] = w[src + "intermediate.dense.weight"].T  # to (in, out)
        v[dst + "output.mapping.bias"] = w[src + "intermediate.dense.bias"]
        v[dst + "output.projection.weight"] = w[src + "output.dense.weight"].T
        v[dst + "output.projection.bias"] = w[src + "output.dense.bias"]
        for a, b in (("layernorm_before", "layernorm1"), ("layernorm_after", "layernorm2")):
            v[dst + f"{b}.gamma"] = w[src + f"{a}.weight"]
            v[dst + f"{b}.beta"] = w[src + f"{a}.bias"]
    _assign(net, v, "load_hf_vit")
    return net


def load_hf_t5(path: str | Path, dtype: str = "float32") -> HFT5ForConditionalGeneration:
    """A :class:`HFT5ForConditionalGeneration` with the weights of a
    ``T5ForConditionalGeneration`` folder. The stacks' ``embed_tokens`` copies and a tied
    ``lm_head`` are the shared table (checked equal, then dropped)."""
    cfg, w = read_hf_folder(path)
    if cfg.get("model_type", "t5") != "t5":
        raise ValueError(f"load_hf_t5: {path} holds a {cfg.get('model_type')!r} model, not t5")
    net = HFT5ForConditionalGeneration(HFT5Config.from_hf(cfg), dtype)
    tied = ["encoder.embed_tokens.weight", "decoder.embed_tokens.weight"]
    if net.config.tie_word_embeddings:
        tied.append("lm_head.weight")
    values = dict(w)
    for name in tied:
        if name in values:
            copy = values.pop(name)
            if "shared.weight" in values and not np.array_equal(copy, values["shared.weight"]):
                raise ValueError(f"load_hf_t5: {name} differs from shared.weight, but the config "
                                 "ties them")  # fmt: skip
    unknown = sorted(set(values) - set(net.parameters_dict()))
    if unknown:
        raise ValueError(
            f"load_hf_t5: the checkpoint has tensors this T5 does not: {unknown[:5]} "
            f"({len(unknown)} in all)"
        )
    _assign(net, values, "load_hf_t5")
    return net
