"""The graph passes on small graphs: CSE, constant folding, elementwise fusion (chains,
broadcasts, reduction epilogues; forward and gradients; every op codegen supports; the CUDA
simulator), buffer reuse, and the enable_graph_kernel switch."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from sporeling.core import Parameter, Tensor, grad, ops, set_context
from sporeling.core import dtype as dtypes
from sporeling.core._primitive import REGISTRY
from sporeling.core.compiler import jit
from sporeling.core.compiler.graph import Eqn, Var
from sporeling.core.compiler.passes.fusion import fusible_expression
from sporeling.core.kernels.codegen_rows import RowProgram
from sporeling.core.ops._core import assign_inplace


def t(*shape, seed=0, lo=-1.0, hi=1.0):
    rng = np.random.default_rng(seed)
    return Tensor(rng.uniform(lo, hi, shape).astype(np.float32))


def graph_of(jf):
    return next(iter(jf._cache.values())).graph


def names(graph):
    return [e.prim.name for e in graph.eqns]


def members(graph):
    return [m.prim.name for e in graph.eqns for m in getattr(e.prim, "members", [e])]


@pytest.fixture
def no_fusion():
    set_context(enable_graph_kernel=False)
    yield
    set_context(enable_graph_kernel=True)


def unfused(fn, *args):
    set_context(enable_graph_kernel=False)
    try:
        return jit(fn)(*args)
    finally:
        set_context(enable_graph_kernel=True)


def close(a, b, rtol=1e-6, atol=1e-6):
    a = a if isinstance(a, (tuple, list)) else [a]
    b = b if isinstance(b, (tuple, list)) else [b]
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x.asnumpy(), y.asnumpy(), rtol=rtol, atol=atol)


# ---- common-subexpression elimination ----------------------------------------------------


def test_cse_merges_duplicates(no_fusion):
    jf = jit(lambda x: ops.exp(x * 2.0) + ops.exp(x * 2.0))
    x = t(4)
    close(jf(x), ops.exp(x * 2.0) * 2.0)
    g = graph_of(jf)
    assert names(g).count("exp") == 1 and names(g).count("mul") == 1  # equal constants merge
    assert any(n.startswith("cse merged 2") for n in g.notes)


def test_cse_keeps_random_ops(no_fusion):
    jf = jit(lambda x: ops.standard_normal((4,)) + ops.standard_normal((4,)) + x)
    out = jf(t(4)).asnumpy()
    assert names(graph_of(jf)).count("random_standard_normal") == 2
    assert out.shape == (4,)


def test_cse_does_not_merge_across_effects(no_fusion):
    p = Parameter(Tensor(np.ones(3, np.float32)), name="p")

    def f(x):
        before = p * 3.0
        assign_inplace(p, x)
        after = p * 3.0  # same prim, inputs and params: but p changed in between
        return before, after

    jf = jit(f)
    before, after = jf(t(3))
    np.testing.assert_allclose(before.asnumpy(), 3.0)
    np.testing.assert_allclose(after.asnumpy(), t(3).asnumpy() * 3.0, rtol=1e-6)
    assert names(graph_of(jf)).count("mul") == 2


# ---- constant folding --------------------------------------------------------------------


def test_folding_evaluates_constants(no_fusion):
    def f(x):
        c = ops.exp(Tensor(2.0)) * Tensor(3.0)  # all constant: computed once at compile time
        return x * c

    jf = jit(f)
    x = t(5)
    close(jf(x), f(x))
    g = graph_of(jf)
    assert names(g) == ["mul"]
    assert any(n.startswith("fold evaluated 2") for n in g.notes)


def test_folding_never_folds_parameters(no_fusion):
    w = Parameter(Tensor(np.float32(2.0)), name="w")
    held = Tensor(np.float32(5.0))  # a plain tensor held by the closure may change too
    jf = jit(lambda x: x * ops.exp(w) + held * 1.0)
    x = t(3)
    close(jf(x), x * ops.exp(w) + held)
    assert "exp" in names(graph_of(jf))
    w.set_data(Tensor(np.float32(-1.0)))
    assign_inplace(held, Tensor(np.float32(7.0)))
    close(jf(x), x * ops.exp(w) + held)
    assert jf.compile_count == 1


# ---- elementwise fusion ------------------------------------------------------------------


def test_fusion_chain_and_broadcast_forward_and_grad():
    def f(x, w, b):
        return ops.tanh(ops.sigmoid(x * w + b) * 2.0 - 0.5)

    x, w, b = t(8, 16), t(16, seed=1), t(1, 16, seed=2)
    fused = jit(f)
    close(fused(x, w, b), unfused(f, x, w, b))
    close(fused(x, w, b), f(x, w, b))
    g = graph_of(fused)
    assert len(g.eqns) == 1 and g.eqns[0].prim.kind == "fused"
    loss = lambda x, w, b: ops.reduce_sum(f(x, w, b) * f(x, w, b))  # noqa: E731
    gf = jit(grad(loss, (0, 1, 2)))
    close(gf(x, w, b), unfused(grad(loss, (0, 1, 2)), x, w, b), rtol=1e-5)
    close(gf(x, w, b), grad(loss, (0, 1, 2))(x, w, b), rtol=1e-5)
    set_context(enable_graph_kernel=False)
    try:
        plain = jit(grad(loss, (0, 1, 2)))
        plain(x, w, b)
    finally:
        set_context(enable_graph_kernel=True)
    assert len(graph_of(gf).eqns) < len(graph_of(plain).eqns)


def test_fusion_reduction_epilogue_softmax_and_moments():
    def softmax(x):
        e = ops.exp(x - ops.amax(x, -1, keep_dims=True))
        return e / ops.reduce_sum(e, -1, keep_dims=True)

    def moments(x, w):
        y = x * w + 1.0
        mean = ops.reduce_sum(y, -1, keep_dims=True) / y.shape[-1]
        var = ops.reduce_sum(ops.square(y - mean), -1) / y.shape[-1]
        return mean, var, ops.amax(ops.abs(y), -1)

    x, w = t(6, 33), t(33, seed=1)
    close(jit(softmax)(x), unfused(softmax, x))
    close(jit(moments)(x, w), unfused(moments, x, w))
    jm = jit(moments)
    jm(x, w)
    g = graph_of(jm)  # one row kernel: sum, then squared deviations from the mean, and max
    assert [e.prim.kind for e in g.eqns] == ["fused"]
    assert isinstance(g.eqns[0].prim.program, RowProgram)
    assert g.eqns[0].prim.program.n_passes == 2
    js = jit_cached(softmax, x)
    assert [e.prim.kind for e in graph_of(js).eqns] == ["fused"]
    loss = lambda x: ops.reduce_sum(softmax(x) * x)  # noqa: E731
    close(jit(grad(loss))(x), unfused(grad(loss), x), rtol=1e-5)


def test_fusion_column_epilogues_bias_grads_and_loss():
    """Sums over every axis but the last (bias/scale gradients) and over every axis (a loss)
    join the group that produced the summed value; elementwise members keep joining after
    them, and a reader of a column sum is never fused into the kernel that makes it."""

    def f(g, x, w):
        d = ops.tanh(g) * (1.0 - x * x)
        db = ops.reduce_sum(d, 0)  # column epilogue
        dx = d * w  # joins after the column sum
        dw = ops.reduce_sum(d * x, 0)  # second column epilogue
        loss = ops.reduce_sum(dx * x)  # full sum: a column epilogue summed up
        return dx, db, dw, loss, db * 2.0  # db's reader cannot join its own kernel

    g, x, w = t(300, 33), t(300, 33, seed=1), t(33, seed=2)
    jf = jit(f)
    close(jf(g, x, w), unfused(f, g, x, w), rtol=1e-5, atol=1e-5)
    close(jf(g, x, w), f(g, x, w), rtol=1e-5, atol=1e-5)
    fused = [e for e in graph_of(jf).eqns if e.prim.kind == "fused"]
    assert len(fused[0].prim.program.columns) == 3
    assert [m.prim.name for m in fused[0].prim.members].count("reduce_sum") == 3
    # a 3-d value summed over its two leading axes, and keep_dims
    h = lambda a: ops.reduce_sum(ops.exp(a) * 2.0, (0, 1), keep_dims=True)  # noqa: E731
    a = t(4, 70, 9)
    close(jit(h)(a), h(a), rtol=1e-5)
    assert any(e.prim.program.columns for e in graph_of(jit_cached(h, a)).eqns
               if e.prim.kind == "fused")  # fmt: skip
    # gradients of a bias+activation through the fused column sums
    loss = lambda x, w, b: ops.reduce_sum(ops.sigmoid(x * w + b) * x)  # noqa: E731
    b = t(33, seed=3)
    close(jit(grad(loss, (0, 1, 2)))(x, w, b), grad(loss, (0, 1, 2))(x, w, b), rtol=1e-5)


def test_simplify_drops_multiplication_by_ones():
    """grad(sum(y * r)) seeds backward with broadcast ones: the pass removes the multiply;
    a graph output computed as ``x * 1`` is kept (it must not alias the input)."""
    r = t(64, 32, seed=5)
    loss = lambda x: ops.reduce_sum(ops.exp(x) * r)  # noqa: E731
    x = t(64, 32)
    g = jit_cached(grad(loss), x)
    close(g(x), grad(loss)(x), rtol=1e-6)
    assert any("simplify dropped 1" in n for n in graph_of(g).notes)

    def keep(x):
        return x * ops.ones((64, 32), dtypes.float32)

    k = jit_cached(keep, x)
    out = k(x)
    close(out, x)
    assert out.asnumpy() is not x.asnumpy()
    out.asnumpy()[0, 0] += 1.0
    assert out.asnumpy()[0, 0] != x.asnumpy()[0, 0]


def jit_cached(fn, *args):
    jf = jit(fn)
    jf(*args)
    return jf


def test_fusion_keeps_effects_and_randoms_in_order():
    p = Parameter(Tensor(np.zeros(4, np.float32)), name="p")

    def f(x):
        a = x * 2.0
        assign_inplace(p, a + 1.0)
        return (p + x) * 3.0

    jf = jit(f)
    x = t(4)
    out = jf(x)
    np.testing.assert_allclose(out.asnumpy(), ((x.asnumpy() * 2 + 1) + x.asnumpy()) * 3, rtol=1e-6)
    kinds = [e.prim.kind for e in graph_of(jf).eqns]
    assert "effect" in kinds
    eff = kinds.index("effect")
    assert all(k != "fused" or i != eff for i, k in enumerate(kinds))


def test_fusion_merged_groups_stay_merged_across_effects():
    """Two groups merged by a reader (exp(x) and x*x*2, joined by their sum) are one kernel,
    even when an effect later closes every open group (it once revived the merged one)."""
    p = Parameter(Tensor(np.zeros(4, np.float32)), name="p")

    def f(x):
        s = ops.exp(x) * 3.0 + x * x * 2.0
        assign_inplace(p, s)
        return s

    x = t(4)
    jf = jit_cached(f, x)
    close(jf(x), f(x))
    fused = [e for e in graph_of(jf).eqns if e.prim.kind == "fused"]
    assert len(fused) == 1
    assert sorted(m.prim.name for m in fused[0].prim.members) == ["add", "exp", "mul", "mul", "mul"]


def _cases():
    out = []
    for name, prim in sorted(REGISTRY.items()):
        if prim.kind != "elementwise" or not prim.scalar:
            continue
        out.append(name)
    return out


@pytest.mark.parametrize("name", _cases())
def test_every_fusible_op_matches_unfused(name):
    """Each op with a scalar form, fused into a chain (x*1.5 -> op -> +0.25), forward and
    with gradients, against the unfused graph."""
    prim = REGISTRY[name]
    rng = np.random.default_rng(0)
    for dt in (np.float32, np.int64, np.bool_):
        probe = _probe(prim, dt)
        if probe is None or fusible_expression(probe) is None:
            continue
        n_in = len(probe.inputs)
        break
    else:
        pytest.skip(f"{name}: no fusible float32/int64/bool form without parameters")
    if dt is np.float32:
        low, high = _DOMAINS.get(name, (0.1, 0.9))
        arrays = [rng.uniform(low, high, (5, 7)).astype(dt) for _ in range(n_in)]
    elif dt is np.int64:
        arrays = [rng.integers(1, 7, (5, 7)).astype(dt) for _ in range(n_in)]
    else:
        arrays = [rng.random((5, 7)) < 0.5 for _ in range(n_in)]
    if name == "select":
        arrays[0] = rng.random((5, 7)) < 0.5
    xs = [Tensor(a) for a in arrays]

    def chain(*xs):
        ys = list(xs)
        if ys[-1].dtype.category == 2:
            ys[-1] = ys[-1] * 1.5
        out = prim.bind(*ys, **PARAMS.get(name, {}))
        return out + 1 if out.dtype.category >= 1 else ops.logical_not(out)

    fused = jit(chain)
    close(fused(*xs), unfused(chain, *xs), rtol=1e-6, atol=1e-6)
    assert any(e.prim.kind == "fused" for e in graph_of(fused).eqns)
    if (
        prim.vjp is not None
        and dt is np.float32
        and name not in ("floor", "ceil", "round", "trunc", "sign")
    ):
        loss = lambda *xs: ops.reduce_sum(chain(*xs) * chain(*xs))  # noqa: E731
        close(jit(grad(loss))(*xs), unfused(grad(loss), *xs), rtol=1e-5, atol=1e-5)


PARAMS = {
    "gelu": {"approximate": "none"},
    "leaky_relu": {"alpha": 0.2},
    "elu": {"alpha": 1.0},
    "celu": {"alpha": 1.5},
    "hardshrink": {"lambd": 0.5},
    "soft_shrink": {"lambd": 0.5},
    "softplus": {"beta": 2.0, "threshold": 1.0},
    "cast": {"dtype": dtypes.float64},
    "isclose": {"rtol": 1e-5, "atol": 1e-8, "equal_nan": True},
}


#: float inputs (before the chain's * 1.5) where the op is defined
_DOMAINS = {"acosh": (1.1, 1.9), "asin": (0.1, 0.6), "acos": (0.1, 0.6), "atanh": (0.1, 0.6)}


def _probe(prim, dt):
    for n in (1, 2, 3):
        ins = [Var((5, 7), dt) for _ in range(n)]
        if prim.name == "select":
            ins[0] = Var((5, 7), np.bool_)
        try:
            params = PARAMS.get(prim.name, {})
            aval = prim.abstract_eval(tuple((v.shape, v.dtype) for v in ins), params)
        except (TypeError, ValueError):
            continue
        e = Eqn(prim, ins, params, [Var(aval.shape, aval.dtype.np)])
        if fusible_expression(e) is not None:
            return e
    return None


def _in_cuda_simulator(code):
    """Run ``code`` in a subprocess under Numba's CUDA simulator; the JSON list it prints last."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_fused_kernels_in_cuda_simulator():
    code = (
        "import json, numpy as np\n"
        "from sporeling.core.kernels.codegen import FusedProgram, run_fused\n"
        "p = FusedProgram(2, ((True, True), (False, True)), (('float32', 'v0 * v1'),"
        " ('float32', 'exp(t0)')), (1,))\n"
        "a = np.random.rand(5, 7).astype(np.float32); b = np.random.rand(7).astype(np.float32)\n"
        "o = np.empty((5, 7), np.float32)\n"
        "run_fused(p, (5, 7), [a, b], [o], 'cuda')\n"
        "e = np.exp(a * b)\n"
        "q = FusedProgram(1, ((True,), (False,)), (('float32', 'where(v0 > v1, v0, v1 * 2)'),),"
        " (0,))\n"
        "x = np.linspace(-1, 1, 9).astype(np.float32); y = np.float32([0.5])\n"
        "z = np.empty(9, np.float32); run_fused(q, (9,), [x, y], [z], 'cuda')\n"
        "c = FusedProgram(2, ((True, True),), (('float32', 'v0 * 2'),), (), (0,))\n"
        "k = np.empty(7); run_fused(c, (5, 7), [a], [], 'cuda', columns=[k])\n"
        "print(json.dumps([float(np.abs(o - e).max()),"
        " float(np.abs(z - np.where(x > 0.5, x, 1.0)).max()),"
        " float(np.abs(k - 2 * a.sum(0)).max())]))\n"
    )
    errs = _in_cuda_simulator(code)
    assert max(errs) < 1e-5, errs


def test_row_kernels_cpu_and_cuda_simulator():
    """A three-pass row program (softmax of x * 0.5 + m, its row sums and column sums) on the
    CPU and, in a subprocess, in Numba's CUDA simulator, against NumPy."""
    code = (
        "import json, numpy as np\n"
        "from sporeling.core.kernels.codegen_rows import RowProgram, RowStep as S, run_rows\n"
        "p = RowProgram(3, ((True, True, True), (False, True, True)), ("
        "S('elem', 0, 'float32', 'v0 * 0.5 + v1'), S('max', 0, 'float32', source=0),"
        "S('elem', 1, 'float32', 'exp(t0 - t1)'), S('sum', 1, 'float32', source=2),"
        "S('row', 2, 'float32', '1.0 / t3'), S('elem', 2, 'float32', 't2 * t4')),"
        " outputs=(5,), row_outputs=(3,), columns=(5,))\n"
        "x = np.random.rand(2, 3, 5).astype(np.float32)\n"
        "m = np.random.rand(3, 5).astype(np.float32)\n"
        "z = x * 0.5 + m; e = np.exp(z - z.max(-1, keepdims=True))\n"
        "ref = e / e.sum(-1, keepdims=True)\n"
        "errs = []\n"
        "for target in ('cpu', 'cuda'):\n"
        "    o = np.empty((2, 3, 5), np.float32); r = np.empty((2, 3), np.float32)\n"
        "    c = np.empty(5)\n"
        "    run_rows(p, (2, 3, 5), [x, m], [o], [r], [c], target)\n"
        "    errs += [float(np.abs(o - ref).max()), float(np.abs(r - e.sum(-1)).max()),"
        " float(np.abs(c - ref.sum((0, 1))).max())]\n"
        "print(json.dumps(errs))\n"
    )
    errs = _in_cuda_simulator(code)
    assert len(errs) == 6 and max(errs) < 1e-5, errs


def test_row_fusion_attention_softmax_and_its_gradient():
    """softmax(q k^T * s + mask) with a mask broadcast over batch and heads: the scale, the
    mask add and the softmax are one row kernel, and so is the softmax gradient."""
    mask = Tensor(np.triu(np.full((8, 8), -1e9, np.float32), 1))

    def att(s, v):
        e = ops.exp(s * 0.125 + mask - ops.amax(s * 0.125 + mask, -1, keep_dims=True))
        p = e / ops.reduce_sum(e, -1, keep_dims=True)
        return ops.reduce_sum(p * v)

    s, v = t(2, 3, 8, 8), t(2, 3, 8, 8, seed=1)
    jf = jit_cached(att, s, v)
    close(jf(s, v), att(s, v), rtol=1e-5)
    kinds = [e.prim.kind for e in graph_of(jf).eqns]
    assert kinds == ["fused"], kinds
    jg = jit_cached(grad(att, (0, 1)), s, v)
    close(jg(s, v), grad(att, (0, 1))(s, v), rtol=1e-5, atol=1e-6)
    assert all(not getattr(e.prim, "_fallback", False) for e in graph_of(jg).eqns)


def test_expand_row_ops_fuse_with_neighbours_and_keep_numerics():
    """softmax / log_softmax / layer norm over the last axis are expanded and fused with
    their neighbours; huge logits, fully masked rows and a large common offset give what the
    hand-written kernels give (eager mode)."""
    big = Tensor(np.array([[1e30, -1e30, 3.0], [-np.inf, -np.inf, -np.inf], [1, 2, 3]], np.float32))

    def sm(x):
        return ops.softmax(x * 1.0, -1), ops.log_softmax(x * 1.0, -1)

    jf = jit_cached(sm, big)
    for a, b in zip(jf(big), sm(big)):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-6, atol=1e-6)
    assert "softmax" not in names(graph_of(jf)) and "log_softmax" not in names(graph_of(jf))

    gamma, beta = t(40, seed=3), t(40, seed=4)

    def ln(x, w):
        y, mean, var = ops.layer_norm(ops.gelu(x * w + 1e4, "none"), gamma, beta, 2, 2, 1e-5)
        return ops.reduce_sum(y * y), mean, var

    x, w = t(3, 5, 40), t(40, seed=1)
    jl = jit_cached(ln, x, w)
    close(jl(x, w), ln(x, w), rtol=2e-5, atol=1e-3)
    assert [e.prim.kind for e in graph_of(jl).eqns] == ["fused"]
    lg = jit_cached(grad(lambda x, w: ln(x, w)[0], (0, 1)), x, w)
    close(lg(x, w), grad(lambda x, w: ln(x, w)[0], (0, 1))(x, w), rtol=1e-4, atol=1e-4)
    assert "layer_norm_grad" not in names(graph_of(lg))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_maxima_propagate_nan_and_handle_infinities(dtype):
    """Row maxima vectorise with a no-NaN max and count NaNs apart: a NaN anywhere in a
    row (vector body or remainder) makes that row's max NaN, infinities stay exact."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((7, 301)).astype(dtype)
    a[0, 5] = np.nan  # in the vectorised body
    a[1, 300] = np.nan  # in the remainder
    a[2, :] = -np.inf
    a[3, 17] = np.inf
    a[4, ::2] = -np.inf
    x = Tensor(a)

    def f(x):
        y = x * 2.0
        return ops.amax(y, -1, keep_dims=True) - y, ops.softmax(y, -1), ops.log_softmax(y, -1)

    jf = jit_cached(f, x)
    assert any(e.prim.kind == "fused" and "reduce_max" in e.prim.name for e in graph_of(jf).eqns)
    with np.errstate(invalid="ignore"):
        want = f(x)
    for got, ref in zip(jf(x), want):
        np.testing.assert_allclose(got.asnumpy(), ref.asnumpy(), rtol=1e-6, atol=1e-6)
        assert np.isnan(got.asnumpy()[0]).all() and np.isnan(got.asnumpy()[1]).all()


def test_exact_gelu_shares_phi_between_forward_and_gradient():
    """Exact GELU expands to ``x * Phi(x)`` (as eager computes it): a training graph then
    evaluates ``Phi`` once, in the forward kernel, and its gradient reads it back."""
    w, b = t(32, 48, seed=1), t(48, seed=2)

    def loss(x):
        return ops.reduce_sum(ops.gelu(ops.matmul(x, w) + b, "none") ** 2)

    x = t(16, 32)
    jf = jit_cached(loss, x)
    close(jf(x), loss(x), rtol=1e-5)
    g = grad(loss)
    jg = jit_cached(g, x)
    close(jg(x), g(x), rtol=1e-5, atol=1e-6)
    assert members(graph_of(jg)).count("_ndtr") == 1 and "gelu" not in members(graph_of(jg))


def test_expand_row_ops_only_with_fusion(no_fusion):
    x = t(4, 6)
    jf = jit_cached(lambda x: ops.softmax(x, -1), x)
    assert names(graph_of(jf)) == ["softmax"]


def test_slice_gradients_merge_into_one_sum():
    """The backward of a qkv[0], qkv[1], qkv[2] split is one getitem_grad_sum, equal to eager;
    the op's own gradient (a getitem per term) matches finite differences."""

    def f(x):
        qkv = x * 2.0
        q, k, v = qkv[0], qkv[1], qkv[2]
        return ops.reduce_sum(q * k + ops.exp(v))

    x = t(3, 4, 5)
    g = jit_cached(grad(f), x)
    close(g(x), grad(f)(x), rtol=1e-6)
    assert "getitem_grad" not in members(graph_of(g))
    assert "getitem_grad_sum" in members(graph_of(g))
    from sporeling.core.ops._indexing import getitem_grad_sum_p

    a, b = t(4, 5, seed=1), t(2, 4, 5, seed=2)
    templates = ((("i", 0),), (("s", 1, 3, None),))  # x[0] and x[1:3]
    out = getitem_grad_sum_p.bind(a, b, templates=templates, shape=(3, 4, 5))
    want = np.zeros((3, 4, 5), np.float32)
    want[0] += a.asnumpy()
    want[1:3] += b.asnumpy()
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6)
    r = t(3, 4, 5, seed=3)

    def h(a, b):
        return ops.reduce_sum(
            getitem_grad_sum_p.bind(a, b, templates=templates, shape=(3, 4, 5)) * r
        )

    ga, gb = grad(h, (0, 1))(a, b)
    np.testing.assert_allclose(ga.asnumpy(), r.asnumpy()[0], rtol=1e-6)
    np.testing.assert_allclose(gb.asnumpy(), r.asnumpy()[1:3], rtol=1e-6)


def test_slice_gradient_sum_stored_in_its_readers_order():
    """A QKV split's backward (the sum transposed back and reshaped) stores the sum in the
    transpose's order: the transpose is a contiguous view and the reshape copies nothing.
    With a given buffer, with and without full tiling, the values match eager."""
    from sporeling.core.ops._indexing import _slices_impl

    def attention_like(x):  # (tokens, 3 * heads * d) -> q, k, v of (heads, tokens, d)
        qkv = ops.transpose(ops.reshape(x, (6, 3, 2, 4)), (1, 2, 0, 3))
        q, k, v = qkv[0], qkv[1], qkv[2]
        s = ops.matmul(q, ops.transpose(k, (0, 2, 1)))
        return ops.reduce_sum(ops.matmul(ops.softmax(s, -1), v) ** 2)

    x = t(6, 24)
    g = jit_cached(grad(attention_like), x)
    close(g(x), grad(attention_like)(x), rtol=1e-5, atol=1e-6)
    sums = [e for e in graph_of(g).eqns if e.prim.name == "getitem_grad_sum"]
    assert len(sums) == 1 and sums[0].params["order"] == (2, 0, 1, 3)

    rng = np.random.default_rng(0)
    gs = [rng.standard_normal((2, 6, 4)).astype(np.float32) for _ in range(3)]
    tiles = ((("i", 2),), (("i", 0),), (("i", -2),))
    want = np.stack([gs[1], gs[2], gs[0]])
    out = np.full(3 * 2 * 6 * 4, np.nan, np.float32)  # stale values: no zero fill needed
    res = _slices_impl(np, *gs, templates=tiles, shape=(3, 2, 6, 4), order=(2, 0, 1, 3), out=out)
    np.testing.assert_array_equal(res, want)
    assert res.transpose(2, 0, 1, 3).flags.c_contiguous and np.shares_memory(res, out)
    partial = ((("i", 0),), (("i", 0),))  # repeats and leaves x[1], x[2]: zero fill and add
    res = _slices_impl(np, *gs[:2], templates=partial, shape=(3, 2, 6, 4), order=(1, 0, 2, 3))
    np.testing.assert_allclose(res, np.stack([gs[0] + gs[1], 0 * gs[0], 0 * gs[0]]))


def test_transposed_products_become_products_of_transposes():
    """``transpose(matmul(a, b))`` over the last two axes is computed as ``b^T a^T`` (a
    contiguous result) where nothing else reads the product; batch axes broadcast as before."""
    a, b = t(3, 5, 4, seed=1), t(4, 6, seed=2)

    def f(a, b):
        return ops.transpose(ops.matmul(a, b), (0, 2, 1)) * 2.0

    jf = jit_cached(f, a, b)
    close(jf(a, b), f(a, b), rtol=1e-6)
    assert "products transposed 1" in graph_of(jf).notes
    products = [e for e in graph_of(jf).eqns if e.prim.name == "matmul"]
    assert [p.inputs[0].shape for p in products] == [(6, 4)]  # b^T first

    def kept(a, b):  # the product is read twice: left alone
        p = ops.matmul(a, b)
        return ops.transpose(p, (0, 2, 1)) * 2.0, p

    jk = jit_cached(kept, a, b)
    close(jk(a, b), kept(a, b), rtol=1e-6)
    assert "products transposed 0" in graph_of(jk).notes

    def other_perm(a, b):  # moves the batch axis: left alone
        return ops.transpose(ops.matmul(a, b), (1, 0, 2)) * 2.0

    jo = jit_cached(other_perm, a, b)
    close(jo(a, b), other_perm(a, b), rtol=1e-6)
    assert "products transposed 0" in graph_of(jo).notes


# ---- buffer reuse -------------------------------------------------------------------------


def test_buffer_reuse_adds_a_bias_into_the_matmul_result():
    w, b = t(7, 5, seed=1), t(5, seed=2)

    def f(x):  # (a dense bias would fold into the product: test_bias_folds_into_dense...)
        return ops.reshape(ops.matmul(x, w) + b, (-1,))  # the reshape keeps the add alone

    x = t(6, 7)
    jf = jit_cached(f, x)
    close(jf(x), f(x), rtol=1e-6)
    adds = [e for e in graph_of(jf).eqns if e.prim.name == "add"]
    assert adds and adds[0].out_alias == (0,)


def test_buffer_reuse_is_in_place_and_keeps_inputs():
    def f(x, w):
        a = ops.exp(x * w)  # fused group 1
        m = ops.amax(a, 0)  # reads a (column maxima are not fused): group 1 ends, a is stored
        return ops.sigmoid(a / m) * 2.0  # group 2: a dies here

    x, w = t(6, 6), t(6, seed=1)
    x0, w0 = x.asnumpy().copy(), w.asnumpy().copy()
    jf = jit(f)
    close(jf(x, w), unfused(f, x, w))
    close(jf(x, w), f(x, w))
    np.testing.assert_array_equal(x.asnumpy(), x0)
    np.testing.assert_array_equal(w.asnumpy(), w0)
    # CPU fused kernels never write over an input: a possible overlap stops vectorisation
    # (ufuncs still do: test_buffer_reuse_adds_a_bias_into_the_matmul_result)
    eqns = graph_of(jf).eqns
    assert [e.prim.kind for e in eqns].count("fused") == 2
    assert not any(e.out_alias for e in eqns)


def test_buffer_reuse_without_fusion(no_fusion):
    def f(x):
        y = ops.matmul(x, x)
        return ops.exp(y + 1.0) * 2.0

    x = t(4, 4)
    x0 = x.asnumpy().copy()
    jf = jit(f)
    close(jf(x), f(x))
    np.testing.assert_array_equal(x.asnumpy(), x0)
    # the matmul makes a fresh buffer; each ufunc after it writes into its first input's
    aliases = [(e.prim.name, e.out_alias) for e in graph_of(jf).eqns]
    assert aliases == [("matmul", None), ("add", (0,)), ("exp", (0,)), ("mul", (0,))]


# ---- bias folding -------------------------------------------------------------------------


def test_dense_bias_primitive_forward_and_gradients():
    from sporeling.core.ops._matmul import dense_bias_p

    rng = np.random.default_rng(4)
    x = Tensor(rng.standard_normal((2, 5, 7)))
    w = Tensor(rng.standard_normal((3, 7)))
    b = Tensor(rng.standard_normal(3))
    want = x.asnumpy() @ w.asnumpy().T + b.asnumpy()
    np.testing.assert_allclose(dense_bias_p.bind(x, w, b).asnumpy(), want, rtol=1e-12)
    f = lambda x, w, b: ops.reduce_sum(dense_bias_p.bind(x, w, b) ** 2)  # noqa: E731
    grads = grad(f, (0, 1, 2))(x, w, b)
    for k, g in enumerate(grads):  # central differences in float64
        args = [x.asnumpy(), w.asnumpy(), b.asnumpy()]
        num = np.zeros_like(args[k])
        for idx in np.ndindex(args[k].shape):
            for sign in (1, -1):
                moved = [a.copy() for a in args]
                moved[k][idx] += sign * 1e-6
                val = float(f(*map(Tensor, moved)).asnumpy())
                num[idx] += sign * val / 2e-6
        np.testing.assert_allclose(g.asnumpy(), num, rtol=1e-5, atol=1e-6)


def test_bias_folds_into_dense_and_matches_eager():
    w, b, w2 = t(48, 32, seed=1), t(48, seed=2), t(16, 48, seed=3)

    def f(x):
        h = ops.dense(x, w, b)  # add(dense, b) with nothing to fuse: folded
        return ops.reduce_sum(ops.reshape(ops.dense(ops.reshape(h, (-1, 48)), w2), (-1,)) ** 2)

    x = t(20, 32)
    jf = jit_cached(f, x)
    close(jf(x), f(x), rtol=1e-5)
    assert "dense_bias" in names(graph_of(jf))
    g = grad(f)
    jg = jit_cached(g, x)
    close(jg(x), g(x), rtol=1e-5, atol=1e-6)


def test_bias_not_folded_when_the_product_is_read_elsewhere():
    w, b = t(8, 6, seed=1), t(8, seed=2)

    def f(x):
        p = ops.dense(x, w)
        return ops.reshape(p + b, (-1,)), ops.reshape(p, (-1,))  # p is also an output

    x = t(5, 6)
    jf = jit_cached(f, x)
    close(jf(x), f(x), rtol=1e-6)
    assert "dense_bias" not in names(graph_of(jf))


# ---- the switch ---------------------------------------------------------------------------


def test_enable_graph_kernel_switch():
    f = lambda x: ops.exp(x) * 2.0 + 1.0  # noqa: E731
    jf = jit(f)
    x = t(8)
    a = jf(x)
    assert any(e.prim.kind == "fused" for e in graph_of(jf).eqns)
    set_context(enable_graph_kernel=False)
    try:
        b = jf(x)  # the switch is part of the signature: recompiles without fusion
        assert jf.compile_count == 2
        g = list(jf._cache.values())[-1].graph
        assert all(e.prim.kind != "fused" for e in g.eqns)
        assert any("fusion off" in n for n in g.notes)
    finally:
        set_context(enable_graph_kernel=True)
    close(a, b)
    jf(x)
    assert jf.compile_count == 2  # back on: the first graph is a cache hit


def test_tanh_gelu_fuses_and_matches():
    x = Tensor(np.random.default_rng(0).standard_normal((64, 32)).astype(np.float32))

    def f(x):
        return ops.gelu(x * 2.0 + 1.0, approximate="tanh") * 3.0

    jf = jit(f)
    np.testing.assert_allclose(jf(x).asnumpy(), f(x).asnumpy(), rtol=2e-6, atol=1e-6)
    graph = next(iter(jf._cache.values())).graph
    assert not any(e.prim.name == "gelu" for e in graph.eqns)  # inside a fused kernel
