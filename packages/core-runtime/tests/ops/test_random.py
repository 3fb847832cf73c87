"""Random ops: shapes/dtypes, seeding rules, distributions (moments and KS tests with
fixed seeds), reparameterized gradients and argument errors."""

import numpy as np
import pytest
from scipy import stats

from sporeling.core import Tensor, ops, value_and_grad
from sporeling.core import random_state as rs
from sporeling_testing import check_grad
from sporeling_testing.pytest_plugin import HAS_GPU

N = 20_000


@pytest.fixture(autouse=True)
def _fixed_seed():
    rs.set_seed(1234)
    yield


# ---- shapes and dtypes --------------------------------------------------------------

SHAPE_CASES = [
    ("standard_normal", lambda d: ops.standard_normal((3, 4)), (3, 4), "float32"),
    (
        "standard_normal_tensor_shape",
        lambda d: ops.standard_normal(Tensor([2, 5], device=d)),
        (2, 5),
        "float32",
    ),
    (
        "standard_laplace",
        lambda d: ops.standard_laplace((4, 2), seed=3, seed2=1),
        (4, 2),
        "float32",
    ),
    (
        "uniform",
        lambda d: ops.uniform(
            (3, 1, 2),
            Tensor([[3.0, 4.0], [5.0, 6.0]], device=d),
            Tensor([8.0, 10.0], device=d),
            seed=5,
        ),
        (3, 2, 2),
        "float32",
    ),
    (
        "uniform_int",
        lambda d: ops.uniform(
            (4, 2), Tensor(1, "int32", device=d), Tensor(3, "int32", device=d), dtype="int32"
        ),
        (4, 2),
        "int32",
    ),
    ("uniform_f64", lambda d: ops.uniform((2,), 0.0, 1.0, dtype="float64"), (2,), "float64"),
    (
        "normal",
        lambda d: ops.normal(
            (3, 1, 3), Tensor([[3.0, 4, 3], [3, 5, 6]], device=d), Tensor(1.0, device=d), seed=5
        ),
        (3, 2, 3),
        "float32",
    ),
    (
        "normal_f64",
        lambda d: ops.normal((2, 2), Tensor(0.0, "float64", device=d), 1.0),
        (2, 2),
        "float64",
    ),
    ("normal_int_params", lambda d: ops.normal((2,), Tensor(1, device=d), 2), (2,), "float32"),
    (
        "laplace",
        lambda d: ops.laplace((2, 3), Tensor(1.0, device=d), Tensor(1.0, device=d)),
        (2, 3),
        "float32",
    ),
    (
        "gamma",
        lambda d: ops.gamma(
            (3, 1, 2), Tensor([[3.0, 4.0], [5.0, 6.0]], device=d), Tensor([1.0], device=d), seed=5
        ),
        (3, 2, 2),
        "float32",
    ),
    (
        "random_gamma",
        lambda d: ops.random_gamma(Tensor([7, 5], device=d), Tensor([0.5, 1.5], device=d), seed=5),
        (7, 5, 2),
        "float32",
    ),
    (
        "random_gamma_f64",
        lambda d: ops.random_gamma((3,), Tensor([[1.0]], "float64", device=d)),
        (3, 1, 1),
        "float64",
    ),
    (
        "poisson",
        lambda d: ops.poisson((4, 1), Tensor([5.0, 10.0], device=d), seed=5),
        (4, 2),
        "float32",
    ),
    (
        "multinomial_1d",
        lambda d: ops.multinomial(Tensor([0.0, 9.0, 4.0, 0.0], device=d), 2),
        (2,),
        "int32",
    ),
    (
        "multinomial_2d",
        lambda d: ops.multinomial(
            Tensor(np.ones((3, 5), np.float32), device=d), 4, replacement=False
        ),
        (3, 4),
        "int32",
    ),
    (
        "random_categorical",
        lambda d: ops.random_categorical(Tensor(np.zeros((10, 5), np.float32), device=d), 8),
        (10, 8),
        "int64",
    ),
    (
        "random_categorical_int32",
        lambda d: ops.random_categorical(
            Tensor(np.zeros((2, 3), np.float32), device=d), 1, dtype="int32"
        ),
        (2, 1),
        "int32",
    ),
    ("bernoulli_int8", lambda d: ops.bernoulli(Tensor([1, 2, 3], "int8", device=d)), (3,), "int8"),
    (
        "bernoulli_float",
        lambda d: ops.bernoulli(
            Tensor(np.zeros((2, 3), np.float32), device=d), Tensor([0.1, 0.5, 0.9], device=d)
        ),
        (2, 3),
        "float32",
    ),
]


@pytest.mark.parametrize("name,fn,shape,dtype", SHAPE_CASES, ids=[c[0] for c in SHAPE_CASES])
def test_shape_dtype_device(name, fn, shape, dtype, device):
    out = fn(device)
    assert out.shape == shape
    assert out.dtype == dtype
    if name not in ("standard_normal", "standard_laplace", "uniform_f64"):
        assert out.device == device


def test_ranges():
    u = ops.uniform((1000,), Tensor(-2.0), Tensor(3.0)).asnumpy()
    assert u.min() >= -2.0 and u.max() < 3.0
    k = ops.uniform((1000,), Tensor(2, "int32"), Tensor(5, "int32"), dtype="int32").asnumpy()
    assert set(np.unique(k).tolist()) == {2, 3, 4}
    g = ops.gamma((1000,), Tensor(0.5), Tensor(2.0)).asnumpy()
    assert g.min() >= 0
    p = ops.poisson((1000,), Tensor(3.0)).asnumpy()
    assert p.min() >= 0 and np.all(p == np.round(p))
    b = ops.bernoulli(Tensor(np.zeros(1000, np.int32)), 0.5).asnumpy()
    assert set(np.unique(b).tolist()) == {0, 1}
    assert ops.bernoulli(Tensor([1, 2, 3]), p=1.0).tolist() == [1, 1, 1]
    assert ops.bernoulli(Tensor([1, 2, 3]), p=0.0).tolist() == [0, 0, 0]
    assert ops.bernoulli(Tensor([1, 2, 3]), Tensor([0.0, 1.0, 1.0])).tolist() == [0, 1, 1]


def test_zero_size_shapes():
    assert ops.standard_normal((0, 3)).shape == (0, 3)
    assert ops.normal((0,), Tensor(0.0), Tensor(1.0)).shape == (0,)


# ---- seeding ------------------------------------------------------------------------

SEEDED = [
    ("standard_normal", lambda **kw: ops.standard_normal((50,), **kw)),
    ("standard_laplace", lambda **kw: ops.standard_laplace((50,), **kw)),
    ("uniform", lambda **kw: ops.uniform((50,), Tensor(0.0), Tensor(1.0), **kw)),
    ("normal", lambda **kw: ops.normal((50,), Tensor(0.0), Tensor(1.0), **kw)),
    ("laplace", lambda **kw: ops.laplace((50,), Tensor(0.0), Tensor(1.0), **kw)),
    ("gamma", lambda **kw: ops.gamma((50,), Tensor(2.0), Tensor(1.0), **kw)),
    ("random_gamma", lambda **kw: ops.random_gamma((50,), Tensor([2.0]), **kw)),
    ("poisson", lambda **kw: ops.poisson((50,), Tensor(4.0), **kw)),
    ("multinomial", lambda **kw: ops.multinomial(Tensor(np.ones(50, np.float32)), 20, False, **kw)),
    ("random_categorical", lambda **kw: ops.random_categorical(Tensor(np.zeros((1, 9))), 50, **kw)),
    ("bernoulli", lambda **kw: ops.bernoulli(Tensor(np.zeros(50)), 0.5, **kw)),
]


@pytest.mark.parametrize("name,fn", SEEDED, ids=[s[0] for s in SEEDED])
def test_set_seed_reproducible(name, fn):
    rs.set_seed(7)
    a, b = fn().asnumpy(), fn().asnumpy()
    assert not np.array_equal(a, b)  # the global stream advances
    rs.set_seed(7)
    np.testing.assert_array_equal(fn().asnumpy(), a)
    np.testing.assert_array_equal(fn().asnumpy(), b)
    rs.set_seed(8)
    assert not np.array_equal(fn().asnumpy(), a)


@pytest.mark.parametrize("name,fn", SEEDED, ids=[s[0] for s in SEEDED])
def test_op_seed_streams(name, fn):
    seed_kw = {"seed": 5}
    rs.set_seed(11)
    a1, a2 = fn(**seed_kw).asnumpy(), fn(**seed_kw).asnumpy()
    assert not np.array_equal(a1, a2)  # a seeded op continues its own stream
    rs.set_seed(11)
    ops.standard_normal((123,))  # consuming the global stream does not shift seeded streams
    np.testing.assert_array_equal(fn(**seed_kw).asnumpy(), a1)
    np.testing.assert_array_equal(fn(**seed_kw).asnumpy(), a2)
    rs.set_seed(11)
    assert not np.array_equal(fn(seed=6).asnumpy(), a1)  # another op seed, another stream
    rs.set_seed(12)
    assert not np.array_equal(fn(**seed_kw).asnumpy(), a1)  # derived from the global seed too


def test_seed2_and_devices():
    rs.set_seed(3)
    a = ops.standard_normal((20,), seed=1, seed2=0).asnumpy()
    b = ops.standard_normal((20,), seed=1, seed2=2).asnumpy()
    c = ops.standard_normal((20,), seed=0, seed2=2).asnumpy()
    assert not np.array_equal(a, b) and not np.array_equal(b, c)
    # one generator per device, each seeded by set_seed: drawing on one leaves the other
    rs.set_seed(3)
    cpu = ops.normal((20,), Tensor(0.0, device="CPU"), 1.0).asnumpy()
    cpu2 = ops.normal((20,), Tensor(0.0, device="CPU"), 1.0).asnumpy()
    gpu = ops.normal((20,), Tensor(0.0, device="GPU"), 1.0).asnumpy()
    assert not np.array_equal(cpu, cpu2)
    if not HAS_GPU:  # the NumPy stand-in and the CPU share the algorithm and the seed
        np.testing.assert_array_equal(gpu, cpu)
    rs.set_seed(3)
    np.testing.assert_array_equal(ops.normal((20,), Tensor(0.0, device="GPU"), 1.0).asnumpy(), gpu)


# ---- distributions ------------------------------------------------------------------

KS_CASES = [
    ("standard_normal", lambda: ops.standard_normal((N,)), ("norm", ())),
    ("normal", lambda: ops.normal((N,), Tensor(1.5), Tensor(2.0)), ("norm", (1.5, 2.0))),
    ("standard_laplace", lambda: ops.standard_laplace((N,)), ("laplace", ())),
    ("laplace", lambda: ops.laplace((N,), Tensor(-1.0), Tensor(0.5)), ("laplace", (-1.0, 0.5))),
    ("uniform", lambda: ops.uniform((N,), Tensor(2.0), Tensor(5.0)), ("uniform", (2.0, 3.0))),
    ("uniform_f64", lambda: ops.uniform((N,), -1.0, 1.0, dtype="float64"), ("uniform", (-1, 2))),
    ("gamma", lambda: ops.gamma((N,), Tensor(2.5), Tensor(1.5)), ("gamma", (2.5, 0, 1.5))),
    ("gamma_small_alpha", lambda: ops.gamma((N,), Tensor(0.3), Tensor(1.0)), ("gamma", (0.3,))),
    (
        "random_gamma",
        lambda: ops.random_gamma((N,), Tensor([4.0])).reshape((N,)),
        ("gamma", (4.0,)),
    ),
]


@pytest.mark.parametrize("name,fn,dist", KS_CASES, ids=[c[0] for c in KS_CASES])
def test_kolmogorov_smirnov(name, fn, dist):
    x = fn().asnumpy().astype(np.float64)
    assert x.shape == (N,)
    result = stats.kstest(x, dist[0], args=dist[1])
    assert result.pvalue > 1e-4, f"{name}: KS statistic {result.statistic} (p={result.pvalue})"


def _within(sample_mean, mean, var, n, k=5.0):
    assert abs(sample_mean - mean) < k * np.sqrt(var / n), (sample_mean, mean)


def test_moments_broadcast_parameters():
    mean = Tensor([[0.0], [10.0]])
    std = Tensor([1.0, 3.0, 0.5])
    x = ops.normal((N // 4, 2, 3), mean, std).asnumpy().astype(np.float64)
    for i, m in enumerate((0.0, 10.0)):
        for j, s in enumerate((1.0, 3.0, 0.5)):
            col = x[:, i, j]
            _within(col.mean(), m, s * s, col.size)
            assert abs(col.var() / (s * s) - 1) < 5 * np.sqrt(2 / col.size)
    a = Tensor([0.5, 2.0, 7.0])
    b = Tensor([[1.0], [3.0]])
    g = ops.gamma((N // 4, 1, 1), a, b).asnumpy().astype(np.float64)  # mean a*b, var a*b^2
    for i, sc in enumerate((1.0, 3.0)):
        for j, al in enumerate((0.5, 2.0, 7.0)):
            _within(g[:, i, j].mean(), al * sc, al * sc * sc, g.shape[0])


def test_poisson_moments():
    mu = Tensor([0.5, 4.0, 30.0])
    x = ops.poisson((N, 3), mu).asnumpy().astype(np.float64)
    for j, m in enumerate((0.5, 4.0, 30.0)):
        _within(x[:, j].mean(), m, m, N)
        assert abs(x[:, j].var() / m - 1) < 0.1
    # and the pmf: chi-square of the counts 0..8 for mu = 4
    counts = np.bincount(x[:, 1].astype(np.int64), minlength=9)[:9]
    expected = stats.poisson.pmf(np.arange(9), 4.0) * N
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert stats.chi2.sf(chi2, 8) > 1e-4


def test_uniform_int_frequencies():
    x = ops.uniform((N,), 3, 8, dtype="int64").asnumpy()
    counts = np.bincount(x - 3, minlength=5)
    assert counts.size == 5
    assert stats.chisquare(counts).pvalue > 1e-4


def test_multinomial_with_replacement_frequencies():
    w = np.array([[0.0, 9.0, 4.0, 0.0, 7.0], [1.0, 1.0, 1.0, 1.0, 6.0]], np.float32)
    x = ops.multinomial(Tensor(w), N).asnumpy()
    assert x.shape == (2, N)
    for row in range(2):
        p = w[row] / w[row].sum()
        freq = np.bincount(x[row], minlength=5) / N
        assert np.all(np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / N) + 1e-12)
        assert np.all(freq[p == 0] == 0)


def test_multinomial_without_replacement():
    w = np.array([0.1, 0.0, 3.0, 1.0, 0.5, 2.0], np.float32)
    batch = Tensor(np.tile(w, (N // 4, 1)))
    x = ops.multinomial(batch, 5, replacement=False).asnumpy()
    assert x.shape == (N // 4, 5)
    assert all(len(set(r)) == 5 for r in x[:500])  # distinct indices in every row
    assert not np.any(x == 1)  # zero-weight categories are never drawn
    assert np.all(np.sort(x, axis=1) == np.array([0, 2, 3, 4, 5]))
    first = np.bincount(x[:, 0], minlength=6) / x.shape[0]  # first draw ~ w / sum(w)
    p = w / w.sum()
    assert np.all(np.abs(first - p) <= 5 * np.sqrt(p * (1 - p) / x.shape[0]) + 1e-12)
    # k == number of positive categories: a permutation of them
    y = ops.multinomial(Tensor(w), 5, replacement=False).asnumpy()
    assert sorted(y.tolist()) == [0, 2, 3, 4, 5]


def test_random_categorical_frequencies():
    logits = np.log(np.array([[0.2, 0.5, 0.3], [0.7, 0.0001, 0.2999]]))
    logits[1, 1] = -np.inf  # a class that can never be drawn
    x = ops.random_categorical(Tensor(logits.astype(np.float32)), N).asnumpy()
    for row, p in enumerate(([0.2, 0.5, 0.3], [0.7, 0.0, 0.3])):
        p = np.array(p)
        freq = np.bincount(x[row], minlength=3) / N
        assert np.all(np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / N) + 1e-12)


def test_bernoulli_rates():
    p = Tensor([0.05, 0.3, 0.5, 0.95], "float64")
    x = ops.bernoulli(Tensor(np.zeros((N, 4), np.float32)), p).asnumpy()
    for j, q in enumerate((0.05, 0.3, 0.5, 0.95)):
        _within(x[:, j].mean(), q, q * (1 - q), N)
    scalar = ops.bernoulli(Tensor(np.zeros(N, np.int64)), 0.25).asnumpy()
    _within(scalar.mean(), 0.25, 0.25 * 0.75, N)


# ---- gradients ------------------------------------------------------------------------


def _reseeded(fn):
    """``fn`` with the same noise on every call (check_grad evaluates it many times)."""

    def wrapped(*args):
        rs.set_seed(99)
        return fn(*args)

    return wrapped


GRAD_CASES = [
    ("normal", lambda m, s: ops.normal((3, 4), m, s), [(4,), (3, 1)]),
    ("laplace", lambda m, s: ops.laplace((2, 3), m, s), [(2, 1), ()]),
    ("uniform", lambda lo, hi: ops.uniform((3, 2), lo, hi + 5.0, dtype="float64"), [(2,), (3, 1)]),
    ("normal_seeded_op", lambda m, s: ops.normal((5,), m, s, seed=3), [(), (5,)]),
]


@pytest.mark.parametrize("name,fn,shapes", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_reparameterized_gradients(name, fn, shapes, device):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(shapes[0]), rng.random(shapes[1]) + 0.5]
    check_grad(_reseeded(fn), arrays, device=device)


def test_normal_gradient_matches_formula():
    rs.set_seed(5)
    m, s = Tensor([1.0, -2.0, 0.5]), Tensor([2.0, 0.5, 1.0])
    fn = lambda m, s: ops.reduce_sum(ops.normal((4, 3), m, s) ** 2)  # noqa: E731
    rs.set_seed(5)
    x = ops.normal((4, 3), m, s).asnumpy()
    rs.set_seed(5)
    _, (gm, gs) = value_and_grad(fn, grad_position=(0, 1))(m, s)
    z = (x - m.asnumpy()) / s.asnumpy()
    np.testing.assert_allclose(gm.asnumpy(), (2 * x).sum(0), rtol=1e-5)
    np.testing.assert_allclose(gs.asnumpy(), (2 * x * z).sum(0), rtol=1e-5)


def test_samplers_without_gradients():
    a, b = Tensor([1.0, 2.0]), Tensor([1.5, 0.5])
    for fn in (
        lambda a, b: ops.gamma((3, 2), a, b),
        lambda a, b: ops.random_gamma((3,), a) * 1.0 + 0 * b,
        lambda a, b: ops.poisson((3, 2), a) + 0 * b,
        lambda a, b: ops.bernoulli(Tensor(np.zeros((3, 2))), a / 3) + 0 * b,
    ):
        loss = lambda a, b, fn=fn: ops.reduce_sum(fn(a, b))  # noqa: E731
        _, grads = value_and_grad(loss, grad_position=(0, 1))(a, b)
        assert np.all(grads[0].asnumpy() == 0)


# ---- errors -----------------------------------------------------------------------------

ERRORS = [
    (lambda: ops.normal((2,), Tensor(0.0), Tensor([1.0, -1.0])), ValueError, "normal.*stddev"),
    (lambda: ops.laplace((2,), 0.0, -0.5), ValueError, "laplace.*lambda_param"),
    (lambda: ops.normal((2, 3), Tensor(np.zeros(4)), 1.0), ValueError, "normal.*broadcast"),
    (lambda: ops.normal("3", 0.0, 1.0), TypeError, "normal.*shape"),
    (lambda: ops.normal((2, -1), 0.0, 1.0), ValueError, "normal.*shape"),
    (lambda: ops.normal((2,), 0.0, 1.0, seed=-3), ValueError, "normal.*seed"),
    (lambda: ops.normal((2,), 0.0, 1.0, seed=1.5), TypeError, "normal.*seed"),
    (lambda: ops.standard_normal((2,), seed2=-1), ValueError, "standard_normal.*seed2"),
    (lambda: ops.standard_laplace([2.5]), TypeError, "standard_laplace.*shape"),
    (lambda: ops.uniform((2,), Tensor(1.0), Tensor(1.0)), ValueError, "uniform.*minval"),
    (lambda: ops.uniform((2,), 1, 5, dtype="bool"), TypeError, "uniform.*dtype"),
    (
        lambda: ops.uniform((2,), Tensor([1, 2], "int32"), 5, dtype="int32"),
        TypeError,
        "uniform.*minval",
    ),
    (lambda: ops.uniform((2,), 4, 2, dtype="int32"), ValueError, "uniform.*minval"),
    (lambda: ops.gamma((2,), Tensor(0.0), Tensor(1.0)), ValueError, "gamma.*alpha"),
    (lambda: ops.gamma((2,), Tensor(1.0), Tensor(-1.0)), ValueError, "gamma.*beta"),
    (lambda: ops.random_gamma((2,), Tensor([-1.0])), ValueError, "random_gamma.*alpha"),
    (lambda: ops.random_gamma((2,), [1.0]), TypeError, "random_gamma.*alpha"),
    (lambda: ops.random_gamma((2,), Tensor([1, 2])), TypeError, "random_gamma.*alpha"),
    (lambda: ops.poisson((2,), Tensor(-1.0)), ValueError, "poisson.*mean"),
    (
        lambda: ops.multinomial(Tensor([1.0, 1.0, 0.0]), 3, replacement=False),
        ValueError,
        "multinomial.*num_sample",
    ),
    (lambda: ops.multinomial(Tensor([1.0, -1.0]), 1), ValueError, "multinomial.*inputs"),
    (lambda: ops.multinomial(Tensor([0.0, 0.0]), 1), ValueError, "multinomial.*inputs"),
    (lambda: ops.multinomial(Tensor(np.ones((2, 2, 2))), 1), ValueError, "multinomial.*inputs"),
    (lambda: ops.multinomial(Tensor([1, 2]), 1), TypeError, "multinomial.*inputs"),
    (lambda: ops.multinomial(Tensor([1.0, 2.0]), 0), ValueError, "multinomial.*num_sample"),
    (lambda: ops.multinomial(Tensor([1.0, 2.0]), 1.0), TypeError, "multinomial.*num_sample"),
    (
        lambda: ops.random_categorical(Tensor([1.0, 2.0]), 2),
        ValueError,
        "random_categorical.*logits",
    ),
    (
        lambda: ops.random_categorical(Tensor([[1.0, 2.0]]), 2, dtype="float32"),
        TypeError,
        "random_categorical.*dtype",
    ),
    (lambda: ops.bernoulli(Tensor([1.0, 2.0]), 1.5), ValueError, "bernoulli.*p"),
    (lambda: ops.bernoulli(Tensor([1.0, 2.0]), Tensor([0.5, -0.1])), ValueError, "bernoulli.*p"),
    (lambda: ops.bernoulli(Tensor([1.0, 2.0]), Tensor([1, 0])), TypeError, "bernoulli.*p"),
    (lambda: ops.bernoulli(Tensor([1.0, 2.0]), Tensor([0.5, 0.5, 0.5])), ValueError, "bernoulli.*"),
    (lambda: ops.bernoulli(Tensor([1.0, 2.0]), seed=-2), ValueError, "bernoulli.*seed"),
    (lambda: ops.bernoulli([1.0, 2.0]), TypeError, "bernoulli.*x"),
]


@pytest.mark.parametrize("fn,exc,match", ERRORS, ids=[e[2] for e in ERRORS])
def test_errors(fn, exc, match):
    with pytest.raises(exc, match=match):
        fn()
