"""jit: caching per signature, recompile reasons and budget, mutable inputs, Cells and
GRAPH_MODE, whole training steps in one graph, errors for untraceable code, IR dumps."""

import warnings

import numpy as np
import pytest

from sporeling.core import (
    GRAPH_MODE,
    PYNATIVE_MODE,
    Tensor,
    grad,
    nn,
    ops,
    set_context,
    set_seed,
    value_and_grad,
)
from sporeling.core.compiler import TracingError, compile_stats, jit, mutable


def t(*shape, seed=0):
    return Tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def test_cache_hits_and_recompile_reasons():
    f = jit(lambda x, k: x * k)
    f(t(3), 2.0)
    f(t(3, seed=1), 2.0)  # new values, same signature: no recompile
    assert f.compile_count == 1
    f(t(4), 2.0)
    assert f.compile_count == 2
    assert f.recompile_reasons[-1] == "argument 0 (x): shape (3,) -> (4,)"
    f(t(4), 3.0)  # Python scalars are constants of the signature
    assert f.compile_count == 3
    assert f.recompile_reasons[-1].startswith("argument 1 (k): value 2.0 -> 3.0 (")
    assert "mutable(...)" in f.recompile_reasons[-1]
    before = compile_stats()["cache_hits"]
    f(t(4), 3.0)
    assert compile_stats()["cache_hits"] == before + 1


def test_recompile_reasons_name_the_changed_leaf(caplog, monkeypatch):
    """One line each: dtype, a mutable container's length and leaf shape, a keyword, a
    Tensor inside a plain tuple (a constant by identity), the fusion switch."""
    monkeypatch.setenv("SPORELING_RECOMPILE_BUDGET", "50")
    f = jit(lambda x, pair=(), scale=1.0: x * scale)
    a = t(3)
    f(a)
    f(Tensor(np.zeros(3, np.float64)))
    assert f.recompile_reasons[-1] == "argument 0 (x): dtype float32 -> float64"
    f(a, mutable((t(2),)))
    f(a, mutable((t(2), t(2))))
    assert f.recompile_reasons[-1] == "argument 1 (pair): length 1 -> 2"
    f(a, mutable((t(2), t(5))))
    assert f.recompile_reasons[-1] == "argument 1 (pair)[1]: shape (2,) -> (5,)"
    f(a, scale=2.0)
    f(a, scale=3.0)
    assert f.recompile_reasons[-1].startswith("keyword argument 'scale': value 2.0 -> 3.0")
    f(a, (a,))
    b = t(3)
    with caplog.at_level("INFO", logger="sporeling.jit"):
        f(a, (b,))
    assert "another Tensor object inside a plain" in f.recompile_reasons[-1]
    assert caplog.records[-1].getMessage().endswith(f.recompile_reasons[-1] + ")")
    assert "\n" not in caplog.records[-1].getMessage()
    set_context(enable_graph_kernel=False)
    try:
        f(a, (b,))
    finally:
        set_context(enable_graph_kernel=True)
    assert f.recompile_reasons[-1] == "enable_graph_kernel True -> False"


def test_recompile_budget_warns(monkeypatch):
    monkeypatch.setenv("SPORELING_RECOMPILE_BUDGET", "2")
    f = jit(lambda x, k: x * k)
    with pytest.warns(RuntimeWarning, match="recompile budget"):
        for k in range(4):
            f(t(2), float(k))


def test_mutable_inputs_do_not_recompile_and_take_gradients():
    f = jit(lambda pair, s: (pair[0] * pair[1]).sum() * s)
    a, b = t(3), t(3, seed=1)
    r1 = f(mutable((a, b)), mutable(2.0))
    r2 = f(mutable((b, a)), mutable(5.0))
    assert f.compile_count == 1
    np.testing.assert_allclose(r1.item(), 2 * float((a * b).sum()), rtol=1e-6)
    np.testing.assert_allclose(r2.item(), 5 * float((a * b).sum()), rtol=1e-6)
    ga, gb = grad(lambda p: f(p, 1.0))(mutable((a, b)))
    np.testing.assert_allclose(ga.asnumpy(), b.asnumpy())
    np.testing.assert_allclose(gb.asnumpy(), a.asnumpy())


def test_plain_tuples_are_constants():
    f = jit(lambda pair: pair[0] + pair[1])
    a, b = t(2), t(2, seed=1)
    f((a, b))
    f((b, a))  # new tensor objects inside a plain tuple: a new constant
    assert f.compile_count == 2


def test_mutable_rejects_non_tensor_leaves():
    with pytest.raises(TypeError, match="must be a Tensor"):
        mutable((t(2), "a"))
    with pytest.raises(TypeError, match="input_data"):
        mutable(object())
    assert mutable(t(2)).shape == (2,)


def test_data_dependent_python_control_flow_compiles_or_is_a_clear_error():
    def f(x):
        if x.sum() > 0:
            return x
        return -x

    np.testing.assert_allclose(jit(f)(t(3)).asnumpy(), f(t(3)).asnumpy())  # a cond primitive
    with pytest.raises(TracingError, match="ops.select"):  # a lambda has no statements to convert
        jit(lambda x: x if float(x.sum()) > 0 else -x)(t(3))
    g = jit(lambda x: ops.select(x.sum() > 0, x, -x))  # the elementwise form
    np.testing.assert_allclose(g(t(3)).asnumpy(), f(t(3)).asnumpy())


def test_python_control_flow_on_constants_unrolls():
    def f(x, n):
        for _ in range(n):
            x = x * 2
        return x

    jf = jit(f)
    np.testing.assert_allclose(jf(t(3), 3).asnumpy(), t(3).asnumpy() * 8)
    graph = next(iter(jf._cache.values())).graph
    ops_run = [m.prim.name for e in graph.eqns for m in getattr(e.prim, "members", [e])]
    assert ops_run.count("mul") == 3  # unrolled (then fused into one kernel)


def _train_step():
    set_seed(0)
    net = nn.SequentialCell([nn.Dense(8, 16), nn.ReLU(), nn.Dense(16, 3)])
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), 0.1, 0.9)
    return nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt), net


def test_graph_mode_train_step_matches_eager_in_one_graph():
    x = t(16, 8)
    y = Tensor(np.random.default_rng(3).integers(0, 3, 16).astype(np.int32))
    step, net = _train_step()
    eager = [float(step(x, y)) for _ in range(4)]
    step2, net2 = _train_step()
    set_context(mode=GRAPH_MODE)
    try:
        graph = [float(step2(x, y)) for _ in range(4)]
    finally:
        set_context(mode=PYNATIVE_MODE)
    np.testing.assert_allclose(graph, eager, rtol=1e-6)
    for p, q in zip(net.trainable_params(), net2.trainable_params()):
        np.testing.assert_allclose(p.asnumpy(), q.asnumpy(), rtol=1e-6, atol=1e-7)
    compiled = step2._graph_call
    assert compiled.compile_count == 1
    names = [e.prim.name for e in next(iter(compiled._cache.values())).graph.eqns]
    assert "matmul" in names and "optimizer_step" in names  # forward, backward, update


def test_jit_of_cell_and_training_flag():
    set_seed(1)
    net = nn.SequentialCell([nn.Dense(4, 4), nn.Dropout(keep_prob=0.5)])
    jn = jit(net)
    x = t(2, 4)
    net.set_train(False)
    np.testing.assert_allclose(jn(x).asnumpy(), net(x).asnumpy(), rtol=1e-6)
    net.set_train(True)
    jn(x)
    assert jn.compile_count == 2 and "training flag" in jn.recompile_reasons[-1]


def test_value_and_grad_of_jitted_network_matches_eager():
    set_seed(2)
    net = nn.Dense(5, 3)
    x = t(4, 5)
    jn = jit(net)
    fe = value_and_grad(lambda x: (net(x) ** 2).sum(), None, net.trainable_params())
    fg = value_and_grad(lambda x: (jn(x) ** 2).sum(), None, net.trainable_params())
    (le, ge), (lg, gg) = fe(x), fg(x)
    np.testing.assert_allclose(lg.item(), le.item(), rtol=1e-6)
    for a, b in zip(ge, gg):
        np.testing.assert_allclose(b.asnumpy(), a.asnumpy(), rtol=1e-6)


def test_second_order_through_jit():
    f = jit(grad(lambda x: (x * x * x).sum()))
    np.testing.assert_allclose(
        grad(lambda x: f(x).sum())(t(3)).asnumpy(), 6 * t(3).asnumpy(), rtol=1e-6
    )


def test_dump_ir(monkeypatch, capsys):
    monkeypatch.setenv("SPORELING_DUMP_IR", "1")
    jit(lambda x: ops.exp(x) + 1)(t(2))
    out = capsys.readouterr().out
    assert "before passes" in out and "exp(" in out and "after passes" in out


def test_dead_code_is_removed_but_effects_stay():
    def f(x):
        _ = ops.exp(x)  # unused
        return x + 1

    jf = jit(f)
    jf(t(2))
    names = [e.prim.name for e in next(iter(jf._cache.values())).graph.eqns]
    assert "exp" not in names


def test_decorator_and_errors():
    @jit
    def f(x):
        return x * 2

    assert f(t(2)).shape == (2,)
    with pytest.raises(TypeError, match="fn"):
        jit(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jit(lambda x: x)(t(1))
