"""RNN/LSTM/GRU layers and cells against a loop-based float64 NumPy reference."""

import numpy as np
import pytest

from sporeling.core import Tensor, grad, ops
from sporeling.core.nn.layers.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from sporeling_testing import check_grad

# ---- NumPy reference ------------------------------------------------------------------------


def _sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def np_step(mode, x, state, w_ih, w_hh, b_ih, b_hh):
    """One step in float64, written from the formulas (no shared code with the layer)."""
    b_ih = np.zeros(w_ih.shape[0]) if b_ih is None else b_ih
    b_hh = np.zeros(w_hh.shape[0]) if b_hh is None else b_hh
    if mode == "LSTM":
        h, c = state
        gates = x @ w_ih.T + b_ih + h @ w_hh.T + b_hh
        i, f, g, o = np.split(gates, 4, axis=1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        return _sigmoid(o) * np.tanh(c), c
    h = state
    if mode == "GRU":
        gi = x @ w_ih.T + b_ih
        gh = h @ w_hh.T + b_hh
        hs = w_hh.shape[1]
        r = _sigmoid(gi[:, :hs] + gh[:, :hs])
        z = _sigmoid(gi[:, hs : 2 * hs] + gh[:, hs : 2 * hs])
        n = np.tanh(gi[:, 2 * hs :] + r * gh[:, 2 * hs :])
        return (1 - z) * n + z * h
    pre = x @ w_ih.T + b_ih + h @ w_hh.T + b_hh
    return np.tanh(pre) if mode == "RNN_TANH" else np.maximum(pre, 0)


def np_rnn(mode, params, x, h0, c0, num_layers, bidirectional, batch_first, lengths):
    """Stacked recurrence; per batch row, steps >= length are skipped (state kept, output 0)
    and the reverse direction starts at the row's last valid step."""
    x = np.asarray(x, np.float64)
    if batch_first:
        x = x.transpose(1, 0, 2)
    steps, batch, _ = x.shape
    lengths = np.full(batch, steps) if lengths is None else np.asarray(lengths)
    dirs = 2 if bidirectional else 1
    hidden = params["weight_hh_l0"].shape[1]
    h_n, c_n = [], []
    layer_in = x
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            sfx = f"l{layer}" + ("_reverse" if d else "")
            w = [params.get(f"{k}_{sfx}") for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
            k = layer * dirs + d
            out = np.zeros((steps, batch, hidden))
            hf, cf = np.zeros((batch, hidden)), np.zeros((batch, hidden))
            for b in range(batch):
                h = h0[k, b : b + 1].astype(np.float64)
                c = c0[k, b : b + 1].astype(np.float64) if c0 is not None else None
                order = range(lengths[b] - 1, -1, -1) if d else range(lengths[b])
                for t in order:
                    xt = layer_in[t, b : b + 1]
                    if mode == "LSTM":
                        h, c = np_step(mode, xt, (h, c), *w)
                    else:
                        h = np_step(mode, xt, h, *w)
                    out[t, b] = h[0]
                hf[b] = h[0]
                if c is not None:
                    cf[b] = c[0]
            outs.append(out)
            h_n.append(hf)
            c_n.append(cf)
        layer_in = np.concatenate(outs, axis=2)
    out = layer_in.transpose(1, 0, 2) if batch_first else layer_in
    return out, np.stack(h_n), np.stack(c_n)


def params_of(net):
    return {name: p.asnumpy().astype(np.float64) for name, p in net.parameters_and_names()}


def make(cls, *args, **kwargs):
    return {"RNN_TANH": RNN, "RNN_RELU": RNN, "LSTM": LSTM, "GRU": GRU}[cls](*args, **kwargs)


MODES = ["RNN_TANH", "RNN_RELU", "LSTM", "GRU"]


def build(mode, *args, **kwargs):
    if mode.startswith("RNN"):
        kwargs["nonlinearity"] = mode[4:].lower()
    return make(mode, *args, **kwargs)


# ---- forward ------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "num_layers,bidirectional,batch_first,has_bias",
    [
        (1, False, False, True),
        (2, True, False, True),
        (2, False, True, False),
        (1, True, True, True),
    ],
)
def test_forward_matches_reference(mode, num_layers, bidirectional, batch_first, has_bias):
    rng = np.random.default_rng(0)
    net = build(
        mode,
        3,
        4,
        num_layers,
        has_bias=has_bias,
        batch_first=batch_first,
        bidirectional=bidirectional,
    )
    dirs = 2 if bidirectional else 1
    x = rng.standard_normal((2, 5, 3) if batch_first else (5, 2, 3)).astype(np.float32)
    h0 = rng.standard_normal((num_layers * dirs, 2, 4)).astype(np.float32)
    c0 = rng.standard_normal(h0.shape).astype(np.float32)
    hx = (Tensor(h0), Tensor(c0)) if mode == "LSTM" else Tensor(h0)
    out, state = net(Tensor(x), hx)
    ref_out, ref_h, ref_c = np_rnn(
        mode,
        params_of(net),
        x,
        h0,
        c0 if mode == "LSTM" else None,
        num_layers,
        bidirectional,
        batch_first,
        None,
    )
    assert out.dtype == x.dtype
    np.testing.assert_allclose(out.asnumpy(), ref_out, rtol=1e-5, atol=1e-5)
    if mode == "LSTM":
        np.testing.assert_allclose(state[0].asnumpy(), ref_h, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(state[1].asnumpy(), ref_c, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_allclose(state.asnumpy(), ref_h, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bidirectional", [False, True])
def test_seq_length_masks_outputs_and_takes_state_at_length(mode, bidirectional):
    rng = np.random.default_rng(1)
    net = build(mode, 3, 4, 2, bidirectional=bidirectional, batch_first=True)
    x = rng.standard_normal((3, 6, 3))
    lengths = np.array([6, 2, 4], np.int32)
    dirs = 2 if bidirectional else 1
    h0 = rng.standard_normal((2 * dirs, 3, 4))
    c0 = rng.standard_normal(h0.shape)
    hx = (Tensor(h0), Tensor(c0)) if mode == "LSTM" else Tensor(h0)
    out, state = net(Tensor(x), hx, Tensor(lengths))
    ref_out, ref_h, ref_c = np_rnn(
        mode,
        params_of(net),
        x,
        h0,
        c0 if mode == "LSTM" else None,
        2,
        bidirectional,
        True,
        lengths,
    )
    assert out.dtype == x.dtype  # float64 in, float64 out
    np.testing.assert_allclose(out.asnumpy(), ref_out, rtol=1e-10, atol=1e-12)
    assert np.all(out.asnumpy()[1, 2:] == 0) and np.all(out.asnumpy()[2, 4:] == 0)
    h = state[0] if mode == "LSTM" else state
    np.testing.assert_allclose(h.asnumpy(), ref_h, rtol=1e-10, atol=1e-12)
    if mode == "LSTM":
        np.testing.assert_allclose(state[1].asnumpy(), ref_c, rtol=1e-10, atol=1e-12)


def test_full_seq_length_equals_no_seq_length():
    rng = np.random.default_rng(2)
    net = GRU(2, 3, bidirectional=True)
    x = Tensor(rng.standard_normal((4, 2, 2)).astype(np.float32))
    a, ha = net(x)
    b, hb = net(x, seq_length=Tensor(np.array([4, 4], np.int64)))
    np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(ha.asnumpy(), hb.asnumpy(), rtol=1e-6, atol=1e-7)


def test_zero_initial_state_by_default():
    rng = np.random.default_rng(3)
    net = LSTM(3, 2)
    x = rng.standard_normal((4, 2, 3)).astype(np.float32)
    out, (h, c) = net(Tensor(x))
    zeros = np.zeros((1, 2, 2))
    ref_out, ref_h, ref_c = np_rnn("LSTM", params_of(net), x, zeros, zeros, 1, False, False, None)
    np.testing.assert_allclose(out.asnumpy(), ref_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c.asnumpy(), ref_c, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "cls,mode", [(RNNCell, "RNN_TANH"), (RNNCell, "RNN_RELU"), (LSTMCell, "LSTM"), (GRUCell, "GRU")]
)
def test_cells_match_one_reference_step(cls, mode):
    rng = np.random.default_rng(4)
    kwargs = {"nonlinearity": mode[4:].lower()} if mode.startswith("RNN") else {}
    cell = cls(3, 5, **kwargs)
    p = {n: v.asnumpy().astype(np.float64) for n, v in cell.parameters_and_names()}
    x = rng.standard_normal((2, 3)).astype(np.float32)
    h = rng.standard_normal((2, 5)).astype(np.float32)
    c = rng.standard_normal((2, 5)).astype(np.float32)
    w = (p["weight_ih"], p["weight_hh"], p["bias_ih"], p["bias_hh"])
    if mode == "LSTM":
        h1, c1 = cell(Tensor(x), (Tensor(h), Tensor(c)))
        rh, rc = np_step(mode, x, (h, c), *w)
        np.testing.assert_allclose(h1.asnumpy(), rh, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(c1.asnumpy(), rc, rtol=1e-5, atol=1e-6)
    else:
        h1 = cell(Tensor(x), Tensor(h))
        np.testing.assert_allclose(h1.asnumpy(), np_step(mode, x, h, *w), rtol=1e-5, atol=1e-6)


def test_dropout_between_layers_only_in_training():
    net = LSTM(3, 4, num_layers=2, dropout=0.5)
    x = Tensor(np.ones((3, 2, 3), np.float32))
    a, _ = net(x)
    b, _ = net(x)
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())  # eval mode: deterministic
    net.set_train()
    outs = {net(x)[0].asnumpy().tobytes() for _ in range(4)}
    assert len(outs) > 1  # statistical: dropout draws differ; 4 alike is all but impossible


# ---- parameters ---------------------------------------------------------------------------------


def test_parameter_names_shapes_and_init_range():
    net = GRU(3, 4, num_layers=2, bidirectional=True)
    shapes = {n: p.shape for n, p in net.parameters_and_names()}
    assert shapes["weight_ih_l0"] == (12, 3)
    assert shapes["weight_ih_l1_reverse"] == (12, 8)
    assert shapes["weight_hh_l1"] == (12, 4)
    assert shapes["bias_hh_l0_reverse"] == (12,)
    assert len(shapes) == 16
    assert all(p.name == n for n, p in net.parameters_and_names())
    for _, p in net.parameters_and_names():
        assert np.abs(p.asnumpy()).max() <= 0.5  # 1 / sqrt(4)
    assert len(LSTM(3, 4, has_bias=False).trainable_params()) == 2
    assert [n for n, _ in LSTMCell(2, 3).parameters_and_names()] == [
        "weight_ih",
        "weight_hh",
        "bias_ih",
        "bias_hh",
    ]
    assert "nonlinearity=relu" in repr(RNN(2, 3, nonlinearity="relu"))
    assert "bidirectional=True" in repr(net)


# ---- gradients ----------------------------------------------------------------------------------


def _with_weights(net, names, fn):
    """Run ``fn`` with the named parameters replaced by the given tensors."""

    def call(x, *ws):
        saved = {n: net._params[n] for n in names}
        try:
            for n, w in zip(names, ws):
                net._params[n] = w
            return fn(x)
        finally:
            net._params.update(saved)

    return call


@pytest.mark.parametrize("mode", MODES)
def test_grad_wrt_input_and_weights_bidirectional_masked(mode):
    rng = np.random.default_rng(5)
    net = build(mode, 2, 2, 1, bidirectional=True)
    names = [n for n, _ in net.parameters_and_names()]
    lengths = Tensor(np.array([3, 2], np.int32))

    def run(x):
        out, state = net(x, None, lengths)
        return out, state

    fn = _with_weights(net, names, run)
    x = rng.standard_normal((3, 2, 2))
    ws = [p.asnumpy().astype(np.float64) for _, p in net.parameters_and_names()]
    if mode == "RNN_RELU":  # steer pre-activations away from the kink at 0
        ws = [w + 0.3 * np.sign(w) for w in ws]
    check_grad(fn, [x, *ws], atol=1e-6, rtol=1e-5)


def test_grad_two_layer_lstm_with_initial_state():
    rng = np.random.default_rng(6)
    net = LSTM(2, 2, num_layers=2, batch_first=True)
    check_grad(
        lambda x, h, c: net(x, (h, c)),
        [
            rng.standard_normal((2, 3, 2)),
            rng.standard_normal((2, 2, 2)),
            rng.standard_normal((2, 2, 2)),
        ],
        atol=1e-6,
    )


@pytest.mark.parametrize("cls", [RNNCell, LSTMCell, GRUCell])
def test_cell_grads(cls):
    rng = np.random.default_rng(7)
    cell = cls(2, 3)
    names = [n for n, _ in cell.parameters_and_names()]
    ws = [p.asnumpy().astype(np.float64) for _, p in cell.parameters_and_names()]
    h = rng.standard_normal((2, 3))
    if cls is LSTMCell:
        fn = _with_weights(cell, names, lambda x: cell(x[0], (x[1], x[2])))
        fn2 = lambda x, *ws: fn((x, Tensor(h), Tensor(h * 0.5)), *ws)  # noqa: E731
    else:
        fn = _with_weights(cell, names, lambda x: cell(x, Tensor(h)))
        fn2 = fn
    check_grad(fn2, [rng.standard_normal((2, 2)), *ws], atol=1e-6)


def test_grad_reaches_parameters():
    rng = np.random.default_rng(8)
    net = GRU(2, 3)
    x = Tensor(rng.standard_normal((4, 1, 2)).astype(np.float32))
    params = net.trainable_params()
    grads = grad(lambda x: ops.reduce_sum(net(x)[0]), None, params)(x)
    assert len(grads) == len(params)
    assert all(g.shape == p.shape and np.abs(g.asnumpy()).sum() > 0 for g, p in zip(grads, params))


# ---- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs,exc,text",
    [
        ({"input_size": 0}, ValueError, "input_size"),
        ({"hidden_size": 2.0}, TypeError, "hidden_size"),
        ({"num_layers": True}, TypeError, "num_layers"),
        ({"has_bias": 1}, TypeError, "has_bias"),
        ({"batch_first": "yes"}, TypeError, "batch_first"),
        ({"dropout": 1.0}, ValueError, "dropout"),
        ({"dropout": "0.1"}, TypeError, "dropout"),
        ({"bidirectional": None}, TypeError, "bidirectional"),
    ],
)
def test_constructor_errors(kwargs, exc, text):
    args = {"input_size": 2, "hidden_size": 3, **kwargs}
    with pytest.raises(exc, match=f"LSTM: argument '{text}'"):
        LSTM(**args)


def test_nonlinearity_errors():
    with pytest.raises(ValueError, match="RNN: argument 'nonlinearity'"):
        RNN(2, 3, nonlinearity="sigmoid")
    with pytest.raises(TypeError, match="by keyword"):
        RNN(2, 3, 1, "relu")
    with pytest.raises(ValueError, match="RNNCell: argument 'nonlinearity'"):
        RNNCell(2, 3, nonlinearity="gelu")


def test_input_errors():
    net = LSTM(3, 4, num_layers=2)
    x = Tensor(np.zeros((5, 2, 3), np.float32))
    with pytest.raises(ValueError, match="3-d"):
        net(Tensor(np.zeros((5, 3), np.float32)))
    with pytest.raises(ValueError, match="input_size"):
        net(Tensor(np.zeros((5, 2, 4), np.float32)))
    with pytest.raises(TypeError, match="floating"):
        net(Tensor(np.zeros((5, 2, 3), np.int32)))
    with pytest.raises(TypeError, match="tuple"):
        net(x, Tensor(np.zeros((2, 2, 4), np.float32)))
    with pytest.raises(ValueError, match=r"hx\[0\].*shape \(2, 2, 4\)"):
        h = Tensor(np.zeros((1, 2, 4), np.float32))
        net(x, (h, h))
    with pytest.raises(TypeError, match="dtype"):
        h = Tensor(np.zeros((2, 2, 4), np.float64))
        net(x, (h, h))
    with pytest.raises(TypeError, match="int32 or int64"):
        net(x, seq_length=Tensor(np.array([1.0, 2.0], np.float32)))
    with pytest.raises(ValueError, match=r"shape \(2,\)"):
        net(x, seq_length=Tensor(np.array([1, 2, 3], np.int32)))
    with pytest.raises(ValueError, match=r"\[0, 5\]"):
        net(x, seq_length=Tensor(np.array([1, 6], np.int32)))
    with pytest.raises(ValueError, match="time steps"):
        net(Tensor(np.zeros((0, 2, 3), np.float32)))
    with pytest.raises(ValueError, match="GRUCell: input 'x'"):
        GRUCell(3, 4)(Tensor(np.zeros((2, 4), np.float32)))
    with pytest.raises(TypeError, match="LSTMCell: input 'hx'"):
        LSTMCell(3, 4)(Tensor(np.zeros((2, 3), np.float32)), Tensor(np.zeros((2, 4), np.float32)))
