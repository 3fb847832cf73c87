"""Plain NumPy float64 references: optimizers, the Wide&Deep forward and its gradients."""

from __future__ import annotations

import numpy as np


def ftrl(w, g, accum, linear, lr=5e-2, l1=1e-8, l2=1e-8, lr_power=-0.5):
    """MindSpore's ApplyFtrl on every element given (in place on copies; returns new)."""
    a_new = accum + g * g
    lin = linear + g - (a_new ** (-lr_power) - accum ** (-lr_power)) / lr * w
    quad = a_new ** (-lr_power) / lr + 2 * l2
    w_new = np.where(np.abs(lin) > l1, (np.sign(lin) * l1 - lin) / quad, 0.0)
    return w_new, a_new, lin


def adam(w, g, m, v, t, lr=3.5e-4, b1=0.9, b2=0.999, eps=1e-8):
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    lr_t = lr * np.sqrt(1 - b2**t) / (1 - b1**t)
    return w - lr_t * m / (np.sqrt(v) + eps), m, v


def rows_sum(ids, rows, vocab):
    """Summed row gradients of in-range ids: (unique ids, summed rows)."""
    ids = ids.reshape(-1)
    rows = rows.reshape(len(ids), -1)
    ok = (ids >= 0) & (ids < vocab)
    u = np.unique(ids[ok])
    out = np.zeros((len(u), rows.shape[1]))
    np.add.at(out, np.searchsorted(u, ids[ok]), rows[ok])
    return u, out


def wide_deep_forward(p, ids, vals):
    """p: dict of float64 arrays by parameter name; returns (logits, cache for backward)."""
    W, E = p["wide_embeddinglookup.embedding_table"], p["deep_embeddinglookup.embedding_table"]
    V = W.shape[0]
    ok = ((ids >= 0) & (ids < V))[..., None]
    safe = np.where(ids[..., None] >= 0, np.minimum(ids, V - 1)[..., None], 0)[..., 0]
    mask = vals[..., None].astype(np.float64)
    w = W[safe] * ok
    e = E[safe] * ok
    wide = (w * mask).sum(1) + p["wide_b"]
    x = (e * mask).reshape(len(ids), -1)
    h = np.maximum(x @ p["deep.dense_layer_1.weight"].T + p["deep.dense_layer_1.bias"], 0)
    z = wide + h @ p["deep.dense_layer_2.weight"].T + p["deep.dense_layer_2.bias"]
    return z, (mask, x, h)


def wide_deep_grads(p, ids, vals, y, l2_coef=0.0):
    """Mean sigmoid cross entropy (+ l2_coef * |E|^2 / 2) and its gradients (dense arrays)."""
    z, (mask, x, h) = wide_deep_forward(p, ids, vals)
    B = len(ids)
    loss = np.mean(np.logaddexp(0, z) - y * z)
    dz = (1 / (1 + np.exp(-z)) - y) / B
    g = {}
    g["wide_b"] = dz.sum(0)
    A2 = p["deep.dense_layer_2.weight"]
    g["deep.dense_layer_2.weight"] = dz.T @ h
    g["deep.dense_layer_2.bias"] = dz.sum(0)
    dh = (dz @ A2) * (h > 0)
    g["deep.dense_layer_1.weight"] = dh.T @ x
    g["deep.dense_layer_1.bias"] = dh.sum(0)
    dx = (dh @ p["deep.dense_layer_1.weight"]).reshape(B, ids.shape[1], -1) * mask
    W, E = p["wide_embeddinglookup.embedding_table"], p["deep_embeddinglookup.embedding_table"]
    dw = np.broadcast_to(dz[:, None, :], mask.shape) * mask
    for name, table, d in (("wide_embeddinglookup.embedding_table", W, dw),
                           ("deep_embeddinglookup.embedding_table", E, dx)):  # fmt: skip
        full = np.zeros_like(table)
        u, s = rows_sum(ids, d, table.shape[0])
        full[u] = s
        g[name] = full
    g["deep_embeddinglookup.embedding_table"] += l2_coef * E
    loss_d = loss + l2_coef * (E**2).sum() / 2
    return loss, loss_d, g
