"""NumPy float64 references and a parameter-gradient helper for the layer tests."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from sporeling_testing import check_grad


def call_with(layer: Any, names: list[str], x: Any, *ws: Any) -> Any:
    """Run ``layer(x)`` with its parameters ``names`` temporarily replaced by ``ws``."""
    saved = {n: layer._params[n] for n in names}
    for n, w in zip(names, ws):
        layer._params[n] = w
    try:
        return layer(x)
    finally:
        layer._params.update(saved)


def check_layer_grad(layer: Any, x: np.ndarray, names: list[str], **kw: Any) -> None:
    """Finite-difference check of d(layer)/d(input) and d(layer)/d(parameters) in float64."""
    arrays = [x] + [layer._params[n].asnumpy() for n in names]
    check_grad(lambda x, *ws: call_with(layer, names, x, *ws), arrays, **kw)


def conv_ref(x, w, b, stride, pads, dilation, groups):
    """N-d cross-correlation: x (N, C, *sp), w (O, C/g, *k), pads [(lo, hi)] per dim."""
    nd = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + list(pads))
    k = w.shape[2:]
    out_sp = [(xp.shape[2 + i] - dilation[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(nd)]
    n, o = x.shape[0], w.shape[0]
    cg, og = w.shape[1], o // groups
    y = np.zeros((n, o, *out_sp))
    for g in range(groups):
        xs = xp[:, g * cg : (g + 1) * cg]
        ws = w[g * og : (g + 1) * og]
        for offs in itertools.product(*(range(kk) for kk in k)):
            sl = tuple(
                slice(
                    offs[i] * dilation[i], offs[i] * dilation[i] + stride[i] * out_sp[i], stride[i]
                )
                for i in range(nd)
            )
            patch = xs[(slice(None), slice(None)) + sl]
            y[:, g * og : (g + 1) * og] += np.einsum(
                "nc...,oc->no...", patch, ws[(slice(None), slice(None)) + offs]
            )
    if b is not None:
        y += b.reshape((1, -1) + (1,) * nd)
    return y


def conv_transpose_ref(x, w, b, stride, pads, dilation, groups, out_sp):
    """Transposed conv: scatter x (N, Cin, *sp) through w (Cin, Cout/g, *k) into out_sp."""
    nd = x.ndim - 2
    n, cin = x.shape[:2]
    cog = w.shape[1]
    cout = cog * groups
    cig = cin // groups
    full = [out_sp[i] + pads[i][0] + pads[i][1] for i in range(nd)]
    big = [
        max(full[i], (x.shape[2 + i] - 1) * stride[i] + dilation[i] * (w.shape[2 + i] - 1) + 1)
        for i in range(nd)
    ]
    y = np.zeros((n, cout, *big))
    for g in range(groups):
        for pos in itertools.product(*(range(s) for s in x.shape[2:])):
            xv = x[(slice(None), slice(g * cig, (g + 1) * cig)) + pos]  # (n, cig)
            for offs in itertools.product(*(range(kk) for kk in w.shape[2:])):
                idx = tuple(pos[i] * stride[i] + offs[i] * dilation[i] for i in range(nd))
                wv = w[(slice(g * cig, (g + 1) * cig), slice(None)) + offs]  # (cig, cog)
                y[(slice(None), slice(g * cog, (g + 1) * cog)) + idx] += xv @ wv
    sl = tuple(slice(pads[i][0], pads[i][0] + out_sp[i]) for i in range(nd))
    y = y[(slice(None), slice(None)) + sl]
    if b is not None:
        y = y + b.reshape((1, -1) + (1,) * nd)
    return y


def same_pads(sp, k, s, d):
    out = []
    for n, kk, ss, dd in zip(sp, k, s, d):
        o = -(-n // ss)
        total = max((o - 1) * ss + dd * (kk - 1) + 1 - n, 0)
        out.append((total // 2, total - total // 2))
    return out


def pool_ref(x, k, s, pads, kind):
    """Max or average pooling (average over taps inside the input only)."""
    nd = x.ndim - 2
    sp = x.shape[2:]
    out_sp = [(sp[i] + pads[i][0] + pads[i][1] - k[i]) // s[i] + 1 for i in range(nd)]
    y = np.zeros(x.shape[:2] + tuple(out_sp))
    for pos in itertools.product(*(range(o) for o in out_sp)):
        sl = []
        for i in range(nd):
            lo = pos[i] * s[i] - pads[i][0]
            sl.append(slice(max(lo, 0), min(lo + k[i], sp[i])))
        win = x[(slice(None), slice(None)) + tuple(sl)].reshape(x.shape[:2] + (-1,))
        y[(slice(None), slice(None)) + pos] = win.max(-1) if kind == "max" else win.mean(-1)
    return y
