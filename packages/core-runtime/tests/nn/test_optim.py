"""Optimizers against NumPy float64 references of MindSpore 1.8's update formulas."""

from __future__ import annotations

import math
import re
from types import SimpleNamespace

import numpy as np
import pytest

from sporeling.core import Parameter, ParameterTuple, Tensor, nn
from sporeling.core.nn.optim.optimizer import _Bank

SHAPES = {"fc.weight": (4, 3), "fc.bias": (3,), "bn.gamma": (2, 2, 2)}


def make_params(seed=0):
    rng = np.random.default_rng(seed)
    return [Parameter(rng.standard_normal(s).astype(np.float32), name=n) for n, s in SHAPES.items()]


def make_grads(seed, params):
    rng = np.random.default_rng(100 + seed)
    return [rng.standard_normal(p.shape) for p in params]


# ---- float64 references: one parameter at a time, written from the documented formulas ----
def ref_sgd(w, g, st, t, lr, wd, ls, momentum=0.0, dampening=0.0, nesterov=False):
    g = g / ls + wd * w
    if momentum > 0:
        st["a"] = g.copy() if t == 1 else momentum * st["a"] + (1 - dampening) * g
        g = g + momentum * st["a"] if nesterov else st["a"]
    return w - lr * g


def ref_momentum(w, g, st, t, lr, wd, ls, momentum=0.9, use_nesterov=False):
    g = g / ls + wd * w
    st["a"] = momentum * st.get("a", 0.0) + g
    return w - lr * (g + momentum * st["a"] if use_nesterov else st["a"])


def ref_adam(w, g, st, t, lr, wd, ls, beta1=0.9, beta2=0.999, eps=1e-8, use_nesterov=False):
    g = g / ls + wd * w
    st["m"] = beta1 * st.get("m", 0.0) + (1 - beta1) * g
    st["v"] = beta2 * st.get("v", 0.0) + (1 - beta2) * g * g
    lr_t = lr * math.sqrt(1 - beta2**t) / (1 - beta1**t)
    num = st["m"] * beta1 + (1 - beta1) * g if use_nesterov else st["m"]
    return w - lr_t * num / (np.sqrt(st["v"]) + eps)


def ref_adam_wd(w, g, st, t, lr, wd, ls, beta1=0.9, beta2=0.999, eps=1e-6):
    st["m"] = beta1 * st.get("m", 0.0) + (1 - beta1) * g
    st["v"] = beta2 * st.get("v", 0.0) + (1 - beta2) * g * g
    return w - lr * (st["m"] / (np.sqrt(st["v"]) + eps) + wd * w)


def ref_adamw(w, g, st, t, lr, wd, ls, beta1=0.9, beta2=0.999, eps=1e-8):
    w = w * (1 - lr * wd)
    st["m"] = beta1 * st.get("m", 0.0) + (1 - beta1) * g
    st["v"] = beta2 * st.get("v", 0.0) + (1 - beta2) * g * g
    mhat = st["m"] / (1 - beta1**t)
    vhat = st["v"] / (1 - beta2**t)
    return w - lr * mhat / (np.sqrt(vhat) + eps)


def ref_lamb(w, g, st, t, lr, wd, ls, beta1=0.9, beta2=0.999, eps=1e-6):
    st["m"] = beta1 * st.get("m", 0.0) + (1 - beta1) * g
    st["v"] = beta2 * st.get("v", 0.0) + (1 - beta2) * g * g
    u = (st["m"] / (1 - beta1**t)) / (np.sqrt(st["v"] / (1 - beta2**t)) + eps) + wd * w
    wn, un = np.linalg.norm(w), np.linalg.norm(u)
    ratio = wn / un if wn > 0 and un > 0 else 1.0
    return w - lr * ratio * u


def ref_adagrad(w, g, st, t, lr, wd, ls, accum=0.1, update_slots=True):
    g = g / ls + wd * w
    st.setdefault("a", np.full_like(w, accum))
    if update_slots:
        st["a"] = st["a"] + g * g
    return w - lr * g / np.sqrt(st["a"])


def ref_rmsprop(w, g, st, t, lr, wd, ls, decay=0.9, momentum=0.0, epsilon=1e-10, centered=False):
    g = g / ls + wd * w
    st["ms"] = decay * st.get("ms", np.ones_like(w)) + (1 - decay) * g * g
    denom = st["ms"] + epsilon
    if centered:
        st["mg"] = decay * st.get("mg", 0.0) + (1 - decay) * g
        denom = denom - st["mg"] ** 2
    st["mom"] = momentum * st.get("mom", 0.0) + lr * g / np.sqrt(denom)
    return w - st["mom"]


def ref_ftrl(w, g, st, t, lr, wd, ls, initial_accum=0.1, lr_power=-0.5, l1=0.0, l2=0.0):
    g = g / ls + wd * w
    acc = st.get("a", np.full_like(w, initial_accum))
    new = acc + g * g
    lin = st.get("l", np.zeros_like(w)) + g - (new ** (-lr_power) - acc ** (-lr_power)) / lr * w
    quad = new ** (-lr_power) / lr + 2 * l2
    st["a"], st["l"] = new, lin
    return np.where(np.abs(lin) > l1, (np.sign(lin) * l1 - lin) / quad, 0.0)


# (id, factory(params), reference, reference kwargs, lr, weight decay, loss scale, name filter)
CASES = [
    ("sgd", lambda p: nn.SGD(p, 0.1), ref_sgd, {}, 0.1, 0.0, 1.0, True),
    (
        "sgd-momentum-wd-scale",
        lambda p: nn.SGD(p, 0.05, momentum=0.9, dampening=0.1, weight_decay=0.01, loss_scale=8.0),
        ref_sgd,
        dict(momentum=0.9, dampening=0.1),
        0.05,
        0.01,
        8.0,
        False,  # SGD hands its weight decay to the kernel: every parameter decays
    ),
    (
        "sgd-nesterov",
        lambda p: nn.SGD(p, 0.05, momentum=0.9, nesterov=True),
        ref_sgd,
        dict(momentum=0.9, nesterov=True),
        0.05,
        0.0,
        1.0,
        True,
    ),
    (
        "momentum-wd",
        lambda p: nn.Momentum(p, 0.1, 0.9, weight_decay=0.05),
        ref_momentum,
        {},
        0.1,
        0.05,
        1.0,
        True,
    ),
    (
        "momentum-nesterov-scale",
        lambda p: nn.Momentum(p, 0.1, 0.8, loss_scale=4.0, use_nesterov=True),
        ref_momentum,
        dict(momentum=0.8, use_nesterov=True),
        0.1,
        0.0,
        4.0,
        True,
    ),
    (
        "adam-wd-scale",
        lambda p: nn.Adam(p, 0.01, weight_decay=0.1, loss_scale=2.0),
        ref_adam,
        {},
        0.01,
        0.1,
        2.0,
        True,
    ),
    (
        "adam-nesterov",
        lambda p: nn.Adam(p, 0.01, beta1=0.8, use_nesterov=True),
        ref_adam,
        dict(beta1=0.8, use_nesterov=True),
        0.01,
        0.0,
        1.0,
        True,
    ),
    ("lazyadam-dense", lambda p: nn.LazyAdam(p, 0.01), ref_adam, {}, 0.01, 0.0, 1.0, True),
    (
        "adamweightdecay",
        lambda p: nn.AdamWeightDecay(p, 0.01, weight_decay=0.1),
        ref_adam_wd,
        {},
        0.01,
        0.1,
        1.0,
        True,
    ),
    ("adamw", lambda p: nn.AdamW(p, 0.01, weight_decay=0.1), ref_adamw, {}, 0.01, 0.1, 1.0, True),
    ("lamb", lambda p: nn.Lamb(p, 0.02, weight_decay=0.01), ref_lamb, {}, 0.02, 0.01, 1.0, True),
    (
        "adagrad",
        lambda p: nn.Adagrad(p, accum=0.2, learning_rate=0.05, weight_decay=0.01),
        ref_adagrad,
        dict(accum=0.2),
        0.05,
        0.01,
        1.0,
        True,
    ),
    (
        "rmsprop",
        lambda p: nn.RMSProp(p, 0.01, momentum=0.5, epsilon=1e-6),
        ref_rmsprop,
        dict(momentum=0.5, epsilon=1e-6),
        0.01,
        0.0,
        1.0,
        True,
    ),
    (
        "rmsprop-centered",
        lambda p: nn.RMSProp(p, 0.01, centered=True, epsilon=1e-6, loss_scale=2.0),
        ref_rmsprop,
        dict(centered=True, epsilon=1e-6),
        0.01,
        0.0,
        2.0,
        True,
    ),
    (
        "ftrl",
        lambda p: nn.FTRL(p, learning_rate=0.1, l1=0.01, l2=0.02, weight_decay=0.01),
        ref_ftrl,
        dict(l1=0.01, l2=0.02),
        0.1,
        0.01,
        1.0,
        True,
    ),
    (
        "ftrl-power",
        lambda p: nn.FTRL(p, learning_rate=0.1, lr_power=-0.7),
        ref_ftrl,
        dict(lr_power=-0.7),
        0.1,
        0.0,
        1.0,
        True,
    ),
]


def run_reference(ref, kw, lr, wd, ls, name_filter, steps=3):
    params = [p.asnumpy().astype(np.float64) for p in make_params()]
    states = [{} for _ in params]
    for t in range(1, steps + 1):
        grads = make_grads(t, params)
        for i, name in enumerate(SHAPES):
            decay = wd if not name_filter or ("beta" not in name and "gamma" not in name) else 0.0
            params[i] = ref(params[i], grads[i], states[i], t, lr, decay, ls, **kw)
    return params


def run_optimizer(factory, fused=True, steps=3):
    params = make_params()
    opt = factory(params)
    opt.fused_kernel = fused
    for t in range(1, steps + 1):
        grads = tuple(Tensor(g.astype(np.float32)) for g in make_grads(t, params))
        assert bool(opt(grads))
    return params, opt


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("fused", [True, False], ids=["fused", "generic"])
def test_matches_float64_reference(case, fused):
    _, factory, ref, kw, lr, wd, ls, name_filter = case
    params, opt = run_optimizer(factory, fused)
    expect = run_reference(ref, kw, lr, wd, ls, name_filter)
    for p, e in zip(params, expect):
        np.testing.assert_allclose(p.asnumpy(), e, rtol=2e-4, atol=2e-5, err_msg=p.name)
    assert int(opt.global_step.asnumpy()[0]) == 3


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_fused_matches_generic(case):
    fused, _ = run_optimizer(case[1], True, steps=4)
    generic, _ = run_optimizer(case[1], False, steps=4)
    for a, b in zip(fused, generic):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_fused_on_thread_blocks_matches_generic(case, monkeypatch):
    """A flat buffer over the threading threshold runs in blocks whose edge falls inside a
    parameter: the fused update still equals the generic one."""
    from sporeling.core.kernels.cpu import _rows, optim

    monkeypatch.setitem(SHAPES, "fc.weight", (600, 450))
    monkeypatch.setitem(SHAPES, "bn.gamma", (40, 10, 10))
    monkeypatch.setattr(optim, "UPDATE_SPLIT_FACTOR", 1)  # (the updates' own threshold)
    assert sum(int(np.prod(s)) for s in SHAPES.values()) > _rows.PARALLEL_MIN
    split = []
    real = optim.run_blocks
    monkeypatch.setattr(optim, "run_blocks", lambda *a, **k: split.append(a[2]) or real(*a, **k))
    fused, _ = run_optimizer(case[1], True, steps=3)
    assert all(b > 1 for b in split)
    if _rows.max_blocks() > 1 and case[0].startswith(("sgd", "momentum", "adam")):
        assert split  # the blocks did run
    generic, _ = run_optimizer(case[1], False, steps=3)
    for a, b in zip(fused, generic):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-5, atol=1e-6)


def test_updates_split_only_from_their_own_threshold(monkeypatch):
    from sporeling.core.kernels.cpu import _rows, optim

    calls = []
    monkeypatch.setattr(optim, "run_blocks", lambda fn, n, blocks: calls.append((n, blocks)))
    monkeypatch.setattr(optim, "n_blocks", lambda rows, elements: 2)
    seen = []
    small = optim.UPDATE_SPLIT_FACTOR * _rows.PARALLEL_MIN - 1
    optim.on_blocks(np.array([0, small], np.uint64), lambda off: seen.append(off.tolist()))
    assert seen == [[0, small]] and not calls  # one call on this thread
    big = small + 1
    optim.on_blocks(np.array([0, big], np.uint64), lambda off: seen.append(off.tolist()))
    assert calls == [(big, 2)]


def test_float64_parameters_exact():
    params = [Parameter(np.linspace(-1, 1, 6).reshape(2, 3), name="w")]
    opt = nn.Adam(params, 0.01)
    g = np.full((2, 3), 0.5)
    opt((Tensor(g),))
    st = {}
    expect = ref_adam(np.linspace(-1, 1, 6).reshape(2, 3), g, st, 1, 0.01, 0.0, 1.0)
    np.testing.assert_allclose(params[0].asnumpy(), expect, rtol=1e-6)


def test_updates_in_place_same_objects_no_autograd():
    params = make_params()
    ids = [id(p) for p in params]
    opt = nn.Momentum(params, 0.1, 0.9)
    assert all(a is b for a, b in zip(opt.parameters, params))
    grads = tuple(Tensor(np.ones(p.shape, np.float32)) for p in params)
    before = [p.asnumpy().copy() for p in params]
    opt(grads)
    assert [id(p) for p in opt.parameters] == ids
    for p, b in zip(params, before):
        np.testing.assert_allclose(p.asnumpy(), b - 0.1)
        assert p.is_leaf and p.requires_grad
    # parameters are views into one flat buffer per dtype
    bank = opt._banks[0]
    assert len(opt._banks) == 1 and all(p._data.base is bank.flat for p in params)


def test_state_parameters_named_and_registered():
    params = make_params()
    opt = nn.Adam(params)
    names = [n for n, _ in opt.parameters_and_names()]
    for prefix in ("moment1", "moment2"):
        for pname in SHAPES:
            assert f"{prefix}.{pname}" in names
    assert {"global_step", "learning_rate", "beta1_power", "beta2_power"} <= set(names)
    assert isinstance(opt.moment1, ParameterTuple)
    assert opt.moment1[0].name == "moment1.fc.weight" and opt.moment1[0].shape == (4, 3)
    assert not opt.moment1[0].requires_grad
    assert opt.learning_rate.name == "learning_rate"
    assert opt.learning_rate.dtype == np.float32 or str(opt.learning_rate.dtype) == "Float32"
    assert opt.global_step.asnumpy().dtype == np.int32


def test_rebound_data_is_copied_back():
    params = make_params()
    opt = nn.SGD(params, 0.5)
    params[1].set_data(Tensor(np.zeros(3, np.float32)))  # e.g. load_param_into_net
    opt.moments = None
    opt(tuple(Tensor(np.ones(p.shape, np.float32)) for p in params))
    np.testing.assert_allclose(params[1].asnumpy(), -0.5 * np.ones(3))
    assert params[1]._data.base is opt._banks[0].flat
    # state too: a loaded moment replaces the buffer's contents
    opt2 = nn.Momentum(params, 1.0, 0.5)
    opt2.moments[1].set_data(Tensor(np.full(3, 2.0, np.float32)))
    before = params[1].asnumpy().copy()
    opt2(tuple(Tensor(np.zeros(p.shape, np.float32)) for p in params))
    np.testing.assert_allclose(params[1].asnumpy(), before - 1.0)  # lr * 0.5 * 2
    params[0].set_data(Tensor(np.zeros((2, 2), np.float32)))
    with pytest.raises(ValueError, match="changed from shape"):
        opt2(tuple(Tensor(np.zeros(p.shape, np.float32)) for p in params))


def test_groups_lr_weight_decay_and_order():
    params = make_params()
    w, b, gamma = params
    opt = nn.Momentum(
        [
            {"params": [w], "lr": 0.05, "weight_decay": 0.1},
            {"params": [b, gamma]},
            {"order_params": [gamma, w, b]},
        ],
        learning_rate=0.2,
        momentum=0.9,
        weight_decay=0.01,
    )
    assert list(opt.parameters) == [gamma, w, b]
    assert opt.is_group and opt.is_group_lr
    assert opt.decay_flags == (True, True, True)  # groups: no 'gamma' filter
    assert float(opt.get_lr_parameter(w).asnumpy()) == pytest.approx(0.05)
    assert float(opt.get_lr_parameter([b])[0].asnumpy()) == pytest.approx(0.2)
    start = [p.asnumpy().astype(np.float64) for p in (w, b, gamma)]
    states = [{}, {}, {}]
    settings = [(0.05, 0.1), (0.2, 0.01), (0.2, 0.01)]
    for t in range(1, 4):
        grads = make_grads(t, [w, b, gamma])
        opt(tuple(Tensor(grads[i].astype(np.float32)) for i in (2, 0, 1)))
        for i, (lr, wd) in enumerate(settings):
            start[i] = ref_momentum(start[i], grads[i], states[i], t, lr, wd, 1.0)
    for p, e in zip((w, b, gamma), start):
        np.testing.assert_allclose(p.asnumpy(), e, rtol=2e-4, atol=2e-5)
    lrs = opt.get_lr()
    assert len(lrs) == 3 and float(lrs[1].asnumpy()) == pytest.approx(0.05)


def test_schedule_lr_and_global_step():
    params = make_params()
    sched = nn.PolynomialDecayLR(0.1, 0.01, 4, 1.0)
    opt = nn.SGD(params, sched)
    assert opt.dynamic_lr and opt.learning_rate is sched
    before = params[1].asnumpy().copy()
    for t in range(6):
        lr = sched.value(t)
        opt(tuple(Tensor(np.ones(p.shape, np.float32)) for p in params))
        before = before - lr
        np.testing.assert_allclose(params[1].asnumpy(), before, rtol=1e-5)
    assert int(opt.global_step.asnumpy()[0]) == 6
    assert float(opt.get_lr().asnumpy()) == pytest.approx(sched.value(6))
    assert int(opt.global_step.asnumpy()[0]) == 7  # get_lr advances the step (MindSpore)


def test_list_lr_and_fixed_lr_parameter_change():
    params = make_params()
    opt = nn.SGD(params, [0.1, 0.2, 0.3])
    start = params[1].asnumpy().copy()
    for _ in range(4):  # past the end the last value stays
        opt(tuple(Tensor(np.ones(p.shape, np.float32)) for p in params))
    np.testing.assert_allclose(params[1].asnumpy(), start - 0.9, rtol=1e-5)
    opt2 = nn.SGD(params, 0.1)
    opt2.learning_rate.set_data(Tensor(np.float32(0.5)))  # what ReduceLROnPlateau does
    start = params[1].asnumpy().copy()
    opt2(tuple(Tensor(np.ones(p.shape, np.float32)) for p in params))
    np.testing.assert_allclose(params[1].asnumpy(), start - 0.5, rtol=1e-6)
    assert float(opt2.get_lr().asnumpy()) == pytest.approx(0.5)


class RowSparse(SimpleNamespace):
    """The row-sparse gradient protocol: indices, values, dense_shape (MindSpore RowTensor)."""


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "generic"])
def test_lazy_adam_sparse_rows(fused):
    rng = np.random.default_rng(3)
    table0 = rng.standard_normal((6, 3)).astype(np.float32)
    table = Parameter(table0.copy(), name="embedding.weight")
    other = Parameter(np.ones(2, np.float32), name="fc.bias")
    opt = nn.LazyAdam([table, other], 0.1, weight_decay=0.01)
    opt.fused_kernel = fused
    idx = np.array([4, 1, 4])
    vals = rng.standard_normal((3, 3))
    grad = RowSparse(
        indices=Tensor(idx), values=Tensor(vals.astype(np.float32)), dense_shape=(6, 3)
    )
    opt((grad, Tensor(np.ones(2, np.float32))))
    untouched = [0, 2, 3, 5]
    np.testing.assert_array_equal(table.asnumpy()[untouched], table0[untouched])
    np.testing.assert_array_equal(opt.moment1[0].asnumpy()[untouched], 0)
    summed = {1: vals[1], 4: vals[0] + vals[2]}
    for row, g in summed.items():
        expect = ref_adam(table0[row].astype(np.float64), g, {}, 1, 0.1, 0.01, 1.0)
        np.testing.assert_allclose(table.asnumpy()[row], expect, rtol=1e-5)
    assert np.all(other.asnumpy() < 1)
    # plain Adam densifies: every row's moments decay, untouched rows with zero gradient
    table2 = Parameter(table0.copy(), name="embedding.weight")
    opt2 = nn.Adam([table2], 0.1)
    opt2((grad,))
    np.testing.assert_array_equal(table2.asnumpy()[untouched], table0[untouched])
    np.testing.assert_allclose(table2.asnumpy()[[1, 4]], table.asnumpy()[[1, 4]], rtol=1e-3)


@pytest.mark.parametrize("make", ["LazyAdam", "Adam", "FTRL", "SGD"])
@pytest.mark.parametrize("fused", [True, False], ids=["fused", "generic"])
def test_sparse_gradient_with_no_rows(make, fused):
    """A row-sparse gradient with no rows (no id of the batch in this table) is valid:
    lazy optimizers (LazyAdam, FTRL) leave the table alone; dense ones see zeros."""
    table0 = np.random.default_rng(7).standard_normal((5, 2)).astype(np.float32)
    table = Parameter(table0.copy(), name="embedding.weight")
    opt = getattr(nn, make)([table], 0.1)
    opt.fused_kernel = fused
    empty = RowSparse(
        indices=Tensor(np.zeros(0, np.int32)),
        values=Tensor(np.zeros((0, 2), np.float32)),
        dense_shape=(5, 2),
    )
    opt((empty,))
    if make in ("LazyAdam", "FTRL"):  # lazy: rows without a gradient are not touched
        np.testing.assert_array_equal(table.asnumpy(), table0)
        return
    table_dense = Parameter(table0.copy(), name="embedding.weight")
    opt_dense = getattr(nn, make)([table_dense], 0.1)
    opt_dense.fused_kernel = fused
    opt_dense((Tensor(np.zeros((5, 2), np.float32)),))
    np.testing.assert_allclose(table.asnumpy(), table_dense.asnumpy(), rtol=1e-6)


def test_ftrl_sparse_rows():
    table0 = np.random.default_rng(5).standard_normal((5, 2)).astype(np.float32)
    table = Parameter(table0.copy(), name="w")
    opt = nn.FTRL([table], learning_rate=0.1, l1=0.001)
    grad = RowSparse(indices=Tensor(np.array([2])), values=Tensor(np.ones((1, 2), np.float32)),
                     dense_shape=(5, 2))  # fmt: skip
    opt((grad,))
    np.testing.assert_array_equal(np.delete(table.asnumpy(), 2, 0), np.delete(table0, 2, 0))
    expect = ref_ftrl(table0[2].astype(np.float64), np.ones(2), {}, 1, 0.1, 0.0, 1.0, l1=0.001)
    np.testing.assert_allclose(table.asnumpy()[2], expect, rtol=1e-5)


def test_grad_centralization_group():
    w = Parameter(np.ones((2, 3, 1, 1), np.float32), name="conv.weight")
    opt = nn.SGD([{"params": [w], "grad_centralization": True}], 1.0)
    g = np.arange(6, dtype=np.float32).reshape(2, 3, 1, 1)
    opt((Tensor(g),))
    centred = g - g.mean(axis=(1, 2, 3), keepdims=True)
    np.testing.assert_allclose(w.asnumpy(), 1 - centred)


def test_float16_uses_generic_path():
    p = Parameter(np.ones(4, np.float16), name="w")
    opt = nn.Momentum([p], 0.5, 0.9)
    assert not opt._banks[0].fused
    opt((Tensor(np.ones(4, np.float16)),))
    np.testing.assert_allclose(p.asnumpy().astype(np.float32), 0.5)


def test_mixed_dtypes_make_two_banks():
    a = Parameter(np.ones(3, np.float32), name="a")
    b = Parameter(np.ones(2, np.float64), name="b")
    opt = nn.SGD([a, b], 0.1)
    assert len(opt._banks) == 2
    opt((Tensor(np.ones(3, np.float32)), Tensor(np.ones(2))))
    np.testing.assert_allclose(a.asnumpy(), 0.9)
    np.testing.assert_allclose(b.asnumpy(), 0.9)


def test_parameter_tuple():
    params = make_params()
    pt = ParameterTuple(params)
    clone = pt.clone("acc", init="zeros")
    assert [p.name for p in clone] == [f"acc.{n}" for n in SHAPES]
    assert all(np.all(p.asnumpy() == 0) for p in clone)
    same = pt.clone("copy")
    np.testing.assert_array_equal(same[0].asnumpy(), params[0].asnumpy())
    assert same[0]._data is not params[0]._data
    with pytest.raises(TypeError, match="ParameterTuple"):
        ParameterTuple([np.ones(2)])


def test_argument_errors():
    params = make_params()
    with pytest.raises(ValueError, match="SGD.*'parameters'.*empty"):
        nn.SGD([])
    with pytest.raises(TypeError, match="learning_rate"):
        nn.SGD(params, "0.1")
    with pytest.raises(ValueError, match="learning_rate"):
        nn.SGD(params, -0.1)
    with pytest.raises(ValueError, match="nesterov"):
        nn.SGD(params, nesterov=True)
    with pytest.raises(ValueError, match="Momentum: argument 'momentum'"):
        nn.Momentum(params, 0.1, -0.9)
    with pytest.raises(ValueError, match="Adam: argument 'beta1'"):
        nn.Adam(params, beta1=1.0)
    with pytest.raises(TypeError, match="Adam: argument 'eps'"):
        nn.Adam(params, eps=1)
    with pytest.raises(ValueError, match="weight_decay"):
        nn.Adam(params, weight_decay=-1.0)
    with pytest.raises(ValueError, match="loss_scale"):
        nn.Momentum(params, 0.1, 0.9, loss_scale=0.0)
    with pytest.raises(ValueError, match="FTRL: argument 'lr_power'"):
        nn.FTRL(params, lr_power=0.5)
    with pytest.raises(TypeError, match="FTRL: argument 'learning_rate'"):
        nn.FTRL(params, learning_rate=[0.1, 0.2])
    with pytest.raises(KeyError, match="unknown keys"):
        nn.SGD([{"params": params, "momentum": 0.9}])
    with pytest.raises(RuntimeError, match="more than once"):
        nn.SGD([{"params": params}, {"params": params[:1]}])
    with pytest.raises(ValueError, match="appears twice"):
        nn.SGD([params[0], params[0]])
    with pytest.raises(ValueError, match="order_params"):
        nn.SGD([{"params": params}, {"order_params": params[:2]}])
    with pytest.raises(ValueError, match="learning_rate"):
        nn.SGD(params, Tensor(np.ones((2, 2), np.float32)))
    with pytest.raises(TypeError, match="floating"):
        nn.SGD([Parameter(np.ones(2, np.int32), name="i")])
    opt = nn.SGD(params)
    with pytest.raises(ValueError, match="3 gradients"):
        opt((Tensor(np.ones((4, 3), np.float32)),))
    with pytest.raises(ValueError, match="'fc.bias' expected shape"):
        opt(tuple(Tensor(np.ones(s, np.float32)) for s in [(4, 3), (4,), (2, 2, 2)]))
    with pytest.raises(TypeError, match="get_lr_parameter"):
        opt.get_lr_parameter("fc.weight")
    with pytest.raises(ValueError, match="not in the optimizer"):
        opt.get_lr_parameter(Parameter(np.ones(1, np.float32), name="x"))


def test_bank_internal_offsets():
    params = make_params()
    bank = _Bank("T", params, [0, 1, 2])
    assert bank.off.tolist() == [0, 12, 15, 23]
    assert bank.fused


@pytest.mark.parametrize(
    "kernel",
    ["sgd_kernel", "momentum_kernel", "adam_kernel", "adam_weight_decay_kernel", "adamw_kernel",
     "adagrad_kernel", "rmsprop_kernel"],
)  # fmt: skip
def test_update_loops_load_contiguous_vectors(kernel):
    """The banks' offsets are unsigned, so ``range(off[s], off[s + 1])`` needs no wrap-around
    check and the update loops vectorise as plain loads (with int64 offsets every access
    was a gather or scatter, and AdamW ran 5x slower)."""
    import numba

    from sporeling.core.kernels.cpu import optim as K

    for case in CASES:
        run_optimizer(case[1], True, steps=1)
    assert all(b.off.dtype == np.uint64 for b in run_optimizer(CASES[0][1], True)[1]._banks)
    dispatcher = getattr(K, kernel)
    used = [s for s in dispatcher.signatures if "array(uint64, 1d, C)" in map(str, s)]
    assert used, f"{kernel} never ran with the banks' offsets"
    fresh = numba.njit(**{**K._JIT, "cache": False})(dispatcher.py_func)  # inspectable IR
    for sig in used:
        fresh.compile(sig)
        ir = fresh.inspect_llvm(sig)
        assert re.search(r"load <(2|4|8|16) x (float|double)>", ir), (kernel, sig)
        assert "masked.gather" not in ir and "masked.scatter" not in ir, kernel
