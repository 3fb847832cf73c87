"""Plain float64 NumPy references of the transformer modules, written from the formulas."""

from __future__ import annotations

import numpy as np


def p(cell, name):
    return (
        cell.parameters_dict()[name].asnumpy().astype(np.float64)
        if name in cell.parameters_dict()
        else None
    )


def params(cell):
    return {n: v.asnumpy().astype(np.float64) for n, v in cell.parameters_and_names()}


def gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def layer_norm(x, g, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def linear_t(x, w, b):  # weight (out, in)
    return x @ w.T + b


def mha(P, pre, q, k, v, mask, heads):
    """q (b, s, h), k/v (b, t, h), mask (b, s, t) of 0/1 or None."""
    b, s, h = q.shape
    t = k.shape[1]
    d = h // heads
    Q = (
        linear_t(q, P[pre + "dense1.weight"], P[pre + "dense1.bias"])
        .reshape(b, s, heads, d)
        .transpose(0, 2, 1, 3)
    )
    K = (
        linear_t(k, P[pre + "dense2.weight"], P[pre + "dense2.bias"])
        .reshape(b, t, heads, d)
        .transpose(0, 2, 1, 3)
    )
    V = (
        linear_t(v, P[pre + "dense3.weight"], P[pre + "dense3.bias"])
        .reshape(b, t, heads, d)
        .transpose(0, 2, 1, 3)
    )
    score = Q @ K.transpose(0, 1, 3, 2) / np.sqrt(d)
    if mask is not None:
        score = score + (1.0 - mask[:, None]) * -10000.0
    ctx = (softmax(score) @ V).transpose(0, 2, 1, 3).reshape(b, s, h)
    return linear_t(ctx, P[pre + "projection.weight"], P[pre + "projection.bias"])


def ffn(P, pre, x):
    y = gelu(x @ P[pre + "mapping.weight"] + P[pre + "mapping.bias"])
    return y @ P[pre + "projection.weight"] + P[pre + "projection.bias"]


def encoder_layer(P, pre, x, mask, heads, post=False):
    a = layer_norm(x, P[pre + "layernorm1.gamma"], P[pre + "layernorm1.beta"])
    x = (a if post else x) + mha(P, pre + "attention.", a, a, a, mask, heads)
    o = layer_norm(x, P[pre + "layernorm2.gamma"], P[pre + "layernorm2.beta"])
    return (o if post else x) + ffn(P, pre + "output.", o)


def decoder_layer(P, pre, x, mask, enc, mem_mask, heads):
    a = layer_norm(x, P[pre + "layernorm1.gamma"], P[pre + "layernorm1.beta"])
    x = x + mha(P, pre + "attention.", a, a, a, mask, heads)
    m = layer_norm(
        x, P[pre + "cross_attention_layernorm.gamma"], P[pre + "cross_attention_layernorm.beta"]
    )
    x = x + mha(P, pre + "cross_attention.", m, enc, enc, mem_mask, heads)
    o = layer_norm(x, P[pre + "layernorm2.gamma"], P[pre + "layernorm2.beta"])
    return x + ffn(P, pre + "output.", o)


def cross_entropy(logits, label, mask):
    lp = logits - logits.max(-1, keepdims=True)
    lp = lp - np.log(np.exp(lp).sum(-1, keepdims=True))
    ce = -lp[np.arange(len(label)), label]
    return (ce * mask).sum() / (mask.sum() + 1e-5)


def moe(P, pre, x, E, cap_factor, aux_factor, k=1):
    """Top-k routing with capacity, token order inside each expert, combine by gate."""
    t, h = x.shape
    probs = softmax(x @ P[pre + "router.dense.weight"].T)
    cap = max(1, int(np.ceil(t * cap_factor * k / E)))
    out = np.zeros_like(x)
    filled = np.zeros(E, int)
    remaining = probs.copy()
    choices = []
    for c in range(k):
        idx = remaining.argmax(-1)
        if c == 0:
            density = np.eye(E)[idx].mean(0)
            aux = (density * probs.mean(0)).mean() * E * E * aux_factor
        kept = np.zeros(t, bool)
        for tok in range(t):
            e = idx[tok]
            if filled[e] < cap:
                filled[e] += 1
                kept[tok] = True
        choices.append((idx, kept))
        remaining[np.arange(t), idx] = 0.0
    gates = [np.where(kept, probs[np.arange(t), idx], 0.0) for idx, kept in choices]
    total = sum(gates)
    for (idx, kept), g in zip(choices, gates):
        w = g / (total + 1e-9) if k > 1 else g
        for tok in range(t):
            if kept[tok]:
                e = idx[tok]
                hid = gelu(
                    x[tok] @ P[pre + "ffn.mapping.weight"][e] + P[pre + "ffn.mapping.bias"][e, 0]
                )
                y = hid @ P[pre + "ffn.projection.weight"][e] + P[pre + "ffn.projection.bias"][e, 0]
                out[tok] += w[tok] * y
    return out, aux
