"""MultiheadAttention (MindSpore 2.x form) against a float64 NumPy reference."""

import numpy as np
import pytest

from sporeling.core import Tensor, grad, ops
from sporeling.core.nn.layers.attention import MultiheadAttention
from sporeling_testing import check_grad

# ---- NumPy reference ------------------------------------------------------------------------


def _softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_mha(p, q, k, v, heads, kpm=None, attn_mask=None, add_zero_attn=False):
    """Batched (L, N, E) inputs; masks already float (added) or bool (True = masked).
    Loops over batch and head; returns output (L, N, E) and per-head weights (N, H, L, S)."""
    q, k, v = (np.asarray(t, np.float64) for t in (q, k, v))
    e = q.shape[-1]
    hd = e // heads
    if "in_proj_weight" in p:
        wq, wk, wv = np.split(p["in_proj_weight"], 3)
    else:
        wq, wk, wv = p["q_proj_weight"], p["k_proj_weight"], p["v_proj_weight"]
    bq, bk, bv = np.split(p["in_proj_bias"], 3) if "in_proj_bias" in p else (0, 0, 0)
    qp, kp, vp = q @ wq.T + bq, k @ wk.T + bk, v @ wv.T + bv
    L, N, _ = qp.shape
    if "bias_k" in p:
        kp = np.concatenate([kp, np.broadcast_to(p["bias_k"], (1, N, e))])
        vp = np.concatenate([vp, np.broadcast_to(p["bias_v"], (1, N, e))])
    S = kp.shape[0]

    def as_float(m, cols):
        if m is None:
            return None
        m = np.where(m, -np.inf, 0.0) if m.dtype == bool else m.astype(np.float64)
        if m.shape[-1] < cols:  # bias_kv / zero_attn columns attend
            m = np.concatenate([m, np.zeros(m.shape[:-1] + (cols - m.shape[-1],))], -1)
        return m

    total = S + (1 if add_zero_attn else 0)
    kpm = as_float(kpm, total)
    attn_mask = as_float(attn_mask, total)
    out = np.zeros((L, N, e))
    weights = np.zeros((N, heads, L, total))
    for n in range(N):
        for h in range(heads):
            sl = slice(h * hd, (h + 1) * hd)
            qh, kh, vh = qp[:, n, sl], kp[:, n, sl], vp[:, n, sl]
            if add_zero_attn:
                kh = np.concatenate([kh, np.zeros((1, hd))])
                vh = np.concatenate([vh, np.zeros((1, hd))])
            s = qh @ kh.T / np.sqrt(hd)
            if attn_mask is not None:
                s = s + (attn_mask if attn_mask.ndim == 2 else attn_mask[n * heads + h])
            if kpm is not None:
                s = s + kpm[n][None, :]
            w = _softmax(s)
            weights[n, h] = w
            out[:, n, sl] = w @ vh
    out = out @ p["out_proj.weight"].T + p.get("out_proj.bias", 0)
    return out, weights


def params_of(net):
    return {n: p.asnumpy().astype(np.float64) for n, p in net.parameters_and_names()}


def randomize(net, rng):
    """Non-zero biases so the reference checks them."""
    for _, p in net.parameters_and_names():
        p.set_data(rng.standard_normal(p.shape).astype(np.float32) * 0.5)


# ---- forward ------------------------------------------------------------------------------------


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"has_bias": False},
        {"kdim": 3, "vdim": 5},
        {"add_bias_kv": True},
        {"add_zero_attn": True},
    ],
)
def test_forward_matches_reference(batch_first, kwargs):
    rng = np.random.default_rng(0)
    net = MultiheadAttention(8, 2, batch_first=batch_first, **kwargs)
    randomize(net, rng)
    L, S, N = 3, 4, 2
    q = rng.standard_normal((L, N, 8))
    k = rng.standard_normal((S, N, kwargs.get("kdim", 8)))
    v = rng.standard_normal((S, N, kwargs.get("vdim", 8)))
    args = [np.swapaxes(t, 0, 1) if batch_first else t for t in (q, k, v)]
    out, w = net(*(Tensor(a.astype(np.float32)) for a in args), average_attn_weights=False)
    ref_out, ref_w = np_mha(
        params_of(net), q, k, v, 2, add_zero_attn=kwargs.get("add_zero_attn", False)
    )
    if batch_first:
        ref_out = np.swapaxes(ref_out, 0, 1)
    np.testing.assert_allclose(out.asnumpy(), ref_out, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(w.asnumpy(), ref_w, rtol=1e-4, atol=1e-6)


def test_masks_bool_float_and_averaged_weights():
    rng = np.random.default_rng(1)
    net = MultiheadAttention(6, 3)
    randomize(net, rng)
    L, S, N = 4, 5, 2
    q, k, v = (rng.standard_normal(s) for s in ((L, N, 6), (S, N, 6), (S, N, 6)))
    kpm = np.array([[False, False, True, False, True], [False] * 5])
    causal = np.triu(np.ones((L, S), bool), 1)
    float_mask = rng.standard_normal((N * 3, L, S))
    p = params_of(net)
    for km, am in [(kpm, None), (None, causal), (kpm, causal), (kpm, float_mask)]:
        out, w = net(
            Tensor(q),
            Tensor(k),
            Tensor(v),
            key_padding_mask=None if km is None else Tensor(km),
            attn_mask=None if am is None else Tensor(am),
        )
        ref_out, ref_w = np_mha(p, q, k, v, 3, km, am)
        np.testing.assert_allclose(out.asnumpy(), ref_out, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(w.asnumpy(), ref_w.mean(1), rtol=1e-10, atol=1e-12)
        if km is not None:
            assert np.all(w.asnumpy()[0][:, [2, 4]] == 0)
    # float key_padding_mask is added; a -inf entry equals masking it
    fk = np.where(kpm, -np.inf, 0.0)
    a, _ = net(Tensor(q), Tensor(k), Tensor(v), key_padding_mask=Tensor(fk))
    b, _ = net(Tensor(q), Tensor(k), Tensor(v), key_padding_mask=Tensor(kpm))
    np.testing.assert_allclose(a.asnumpy(), b.asnumpy())
    # uint8 attn_mask: non-zero = masked
    c, _ = net(Tensor(q), Tensor(k), Tensor(v), attn_mask=Tensor(causal.astype(np.uint8)))
    d, _ = net(Tensor(q), Tensor(k), Tensor(v), attn_mask=Tensor(causal))
    np.testing.assert_allclose(c.asnumpy(), d.asnumpy())


def test_unbatched_and_need_weights():
    rng = np.random.default_rng(2)
    net = MultiheadAttention(4, 2)
    randomize(net, rng)
    q, k = rng.standard_normal((3, 4)), rng.standard_normal((5, 4))
    kpm = np.array([False, True, False, False, False])
    am = rng.standard_normal((2, 3, 5))  # (num_heads, L, S)
    out, w = net(Tensor(q), Tensor(k), Tensor(k), Tensor(kpm), attn_mask=Tensor(am))
    ref_out, ref_w = np_mha(params_of(net), q[:, None], k[:, None], k[:, None], 2, kpm[None], am)
    assert out.shape == (3, 4) and w.shape == (3, 5)
    np.testing.assert_allclose(out.asnumpy(), ref_out[:, 0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w.asnumpy(), ref_w[0].mean(0), rtol=1e-10, atol=1e-12)
    out2, none = net(Tensor(q), Tensor(k), Tensor(k), need_weights=False)
    assert none is None and out2.shape == (3, 4)


def test_parameters_and_dropout():
    net = MultiheadAttention(8, 4, dropout=0.5, kdim=6)
    names = {n: p.shape for n, p in net.parameters_and_names()}
    assert names == {
        "q_proj_weight": (8, 8),
        "k_proj_weight": (8, 6),
        "v_proj_weight": (8, 8),
        "in_proj_bias": (24,),
        "out_proj.weight": (8, 8),
        "out_proj.bias": (8,),
    }
    assert net.out_proj.weight.name == "out_proj.weight"
    assert np.all(net.in_proj_bias.asnumpy() == 0)
    same = MultiheadAttention(8, 2, add_bias_kv=True, has_bias=False)
    assert [n for n, _ in same.parameters_and_names()] == [
        "in_proj_weight",
        "bias_k",
        "bias_v",
        "out_proj.weight",
    ]
    assert "num_heads=4" in repr(net)
    x = Tensor(np.random.default_rng(3).standard_normal((5, 2, 8)).astype(np.float32))
    k = Tensor(np.random.default_rng(4).standard_normal((5, 2, 6)).astype(np.float32))
    a = net(x, k, x)[0].asnumpy()
    np.testing.assert_array_equal(a, net(x, k, x)[0].asnumpy())  # eval: no dropout
    net.set_train()
    w = net(x, k, x)[1].asnumpy()
    assert not np.allclose(w.sum(-1), 1)  # dropped-out weights no longer sum to 1


# ---- gradients ----------------------------------------------------------------------------------


def _with_weights(net, names, fn):
    def call(*args):
        n_in = len(args) - len(names)
        saved = {}
        cell_of = {}
        for name in names:
            owner, leaf = (net.out_proj, name.split(".")[1]) if "." in name else (net, name)
            cell_of[name] = (owner, leaf)
            saved[name] = owner._params[leaf]
        try:
            for name, w in zip(names, args[n_in:]):
                owner, leaf = cell_of[name]
                owner._params[leaf] = w
            return fn(*args[:n_in])
        finally:
            for name, (owner, leaf) in cell_of.items():
                owner._params[leaf] = saved[name]

    return call


@pytest.mark.parametrize(
    "kwargs", [{}, {"add_bias_kv": True, "add_zero_attn": True}, {"kdim": 3, "vdim": 2}]
)
def test_grad_inputs_and_weights(kwargs):
    rng = np.random.default_rng(5)
    net = MultiheadAttention(4, 2, **kwargs)
    randomize(net, rng)
    names = [n for n, _ in net.parameters_and_names()]
    ws = [p.asnumpy().astype(np.float64) for _, p in net.parameters_and_names()]
    kpm = Tensor(np.array([[False, True, False], [False, False, False]]))
    causal = Tensor(np.triu(np.full((2, 3), -2.0), 1))
    fn = _with_weights(
        net, names, lambda q, k, v: net(q, k, v, key_padding_mask=kpm, attn_mask=causal)
    )
    q = rng.standard_normal((2, 2, 4))
    k = rng.standard_normal((3, 2, kwargs.get("kdim", 4)))
    v = rng.standard_normal((3, 2, kwargs.get("vdim", 4)))
    check_grad(fn, [q, k, v, *ws], atol=1e-6)


def test_self_attention_grad_reaches_parameters():
    net = MultiheadAttention(4, 2, batch_first=True)
    x = Tensor(np.random.default_rng(6).standard_normal((2, 3, 4)).astype(np.float32))
    params = net.trainable_params()
    grads = grad(lambda x: ops.reduce_sum(net(x, x, x)[0] ** 2), None, params)(x)
    assert [g.shape for g in grads] == [p.shape for p in params]


# ---- errors -------------------------------------------------------------------------------------


def test_constructor_errors():
    with pytest.raises(ValueError, match="divisible by num_heads"):
        MultiheadAttention(6, 4)
    with pytest.raises(TypeError, match="'num_heads'"):
        MultiheadAttention(6, 2.0)
    with pytest.raises(ValueError, match="'dropout'"):
        MultiheadAttention(6, 2, dropout=1.5)
    with pytest.raises(TypeError, match="'batch_first'"):
        MultiheadAttention(6, 2, batch_first=1)
    with pytest.raises(ValueError, match="'kdim'"):
        MultiheadAttention(6, 2, kdim=0)


def test_input_errors():
    net = MultiheadAttention(4, 2)
    x = Tensor(np.zeros((3, 2, 4), np.float32))
    with pytest.raises(ValueError, match="'key' expected 4 features"):
        net(x, Tensor(np.zeros((3, 2, 5), np.float32)), x)
    with pytest.raises(ValueError, match="all be batched"):
        net(x, Tensor(np.zeros((3, 4), np.float32)), Tensor(np.zeros((3, 4), np.float32)))
    with pytest.raises(ValueError, match="same batch size"):
        y = Tensor(np.zeros((3, 1, 4), np.float32))
        net(x, y, y)
    with pytest.raises(ValueError, match="same sequence length"):
        net(x, x, Tensor(np.zeros((2, 2, 4), np.float32)))
    with pytest.raises(TypeError, match="floating"):
        net(Tensor(np.zeros((3, 2, 4), np.int32)), x, x)
    with pytest.raises(ValueError, match=r"'attn_mask' expected shape \(3, 3\)"):
        net(x, x, x, attn_mask=Tensor(np.zeros((3, 4), bool)))
    with pytest.raises(ValueError, match=r"\(4, 3, 3\)"):
        net(x, x, x, attn_mask=Tensor(np.zeros((2, 3, 3), bool)))
    with pytest.raises(ValueError, match=r"'key_padding_mask' expected shape \(2, 3\)"):
        net(x, x, x, key_padding_mask=Tensor(np.zeros((3, 2), bool)))
    with pytest.raises(TypeError, match="bool or floating"):
        net(x, x, x, key_padding_mask=Tensor(np.zeros((2, 3), np.int32)))
    with pytest.raises(TypeError, match="bool, uint8 or floating"):
        net(x, x, x, attn_mask=Tensor(np.zeros((3, 3), np.int32)))
