"""MindSpore's sparse optimizer primitives (FusedSparseAdam, FusedSparseLazyAdam,
SparseApplyFtrl/V2, FusedSparseFtrl, SparseApplyProximalAdagrad, FusedSparseProximalAdagrad,
SparseApplyAdagrad/V2), SparseSlice, SparseGatherV2, LogUniformCandidateSampler and
ComputeAccidentalHits, each against a NumPy float64 reference."""

import numpy as np
import pytest

from sporeling.core import Parameter, Tensor, jit, ops
from sporeling.core.ops import operations as P
from sporeling_testing.gradcheck import check_grad

rng = np.random.default_rng(0)
ROWS, COLS = 5, 3
IDX = np.array([3, 0, 3])  # a repeated index: its gradients add up first
GRAD = rng.standard_normal((3, COLS))


def _param(a, name):
    return Parameter(Tensor(np.array(a, np.float64)), name=name)


def _summed(grad=GRAD, idx=IDX):
    g = np.zeros((ROWS, COLS))
    np.add.at(g, idx, grad)
    return g, np.isin(np.arange(ROWS), idx)[:, None]


def _adam_ref(var, m, v, b1p, b2p, lr, b1, b2, eps, lazy, nesterov=False):
    g, touched = _summed()
    m2 = b1 * m + (1 - b1) * g
    v2 = b2 * v + (1 - b2) * g * g
    step = lr * np.sqrt(1 - b2p) / (1 - b1p)
    num = b1 * m2 + (1 - b1) * g if nesterov else m2
    var2 = var - step * num / (np.sqrt(v2) + eps)
    if lazy:
        return tuple(np.where(touched, new, old) for new, old in ((var2, var), (m2, m), (v2, v)))
    return var2, m2, v2


@pytest.mark.parametrize(
    "cls,lazy,nesterov",
    [
        (P.FusedSparseAdam, False, False),
        (P.FusedSparseAdam, False, True),
        (P.FusedSparseLazyAdam, True, False),
    ],
)
def test_sparse_adam_updates_match_numpy(cls, lazy, nesterov):
    var0 = rng.standard_normal((ROWS, COLS))
    m0, v0 = rng.standard_normal((ROWS, COLS)), rng.uniform(0.1, 1, (ROWS, COLS))
    var, m, v = _param(var0, "var"), _param(m0, "m"), _param(v0, "v")
    consts = (0.9**3, 0.999**3, 0.01, 0.9, 0.999, 1e-8)
    out = cls(use_nesterov=nesterov)(var, m, v, *consts, Tensor(GRAD), Tensor(IDX))
    want = _adam_ref(var0, m0, v0, *consts, lazy, nesterov)
    for got, w, p in zip(out, want, (var, m, v), strict=True):
        assert got is p  # updated in place and returned
        np.testing.assert_allclose(p.asnumpy(), w, rtol=1e-12, atol=1e-14)


def _ftrl_ref(var, accum, linear, lr, l1, l2, p, shrink=0.0):
    g, touched = _summed()
    acc2 = accum + g * g
    lin2 = linear + g + 2 * shrink * var - (acc2 ** (-p) - accum ** (-p)) / lr * var
    quad = acc2 ** (-p) / lr + 2 * l2
    var2 = np.where(np.abs(lin2) > l1, (np.sign(lin2) * l1 - lin2) / quad, 0.0)
    return tuple(
        np.where(touched, new, old) for new, old in ((var2, var), (acc2, accum), (lin2, linear))
    )


@pytest.mark.parametrize("lr_power", [-0.5, -0.3])
@pytest.mark.parametrize("cls", [P.SparseApplyFtrl, P.FusedSparseFtrl, P.SparseApplyFtrlV2])
def test_sparse_ftrl_matches_numpy(cls, lr_power):
    var0 = rng.standard_normal((ROWS, COLS))
    acc0, lin0 = rng.uniform(0.1, 1, (ROWS, COLS)), rng.standard_normal((ROWS, COLS))
    var, acc, lin = _param(var0, "var"), _param(acc0, "accum"), _param(lin0, "linear")
    if cls is P.SparseApplyFtrlV2:
        op, shrink = cls(lr=0.1, l1=0.2, l2=0.05, l2_shrinkage=0.3, lr_power=lr_power), 0.3
    else:
        op, shrink = cls(lr=0.1, l1=0.2, l2=0.05, lr_power=lr_power), 0.0
    op(var, acc, lin, Tensor(GRAD), Tensor(IDX))
    want = _ftrl_ref(var0, acc0, lin0, 0.1, 0.2, 0.05, lr_power, shrink)
    for p, w in zip((var, acc, lin), want, strict=True):
        np.testing.assert_allclose(p.asnumpy(), w, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("cls", [P.SparseApplyProximalAdagrad, P.FusedSparseProximalAdagrad])
def test_sparse_proximal_adagrad_matches_numpy(cls):
    var0, acc0 = rng.standard_normal((ROWS, COLS)), rng.uniform(0.1, 1, (ROWS, COLS))
    var, acc = _param(var0, "var"), _param(acc0, "accum")
    lr, l1, l2 = 0.1, 0.05, 0.2
    scalars = [Tensor(np.float64(v)) for v in (lr, l1, l2)]
    out = cls()(var, acc, *scalars, Tensor(GRAD), Tensor(IDX))
    g, touched = _summed()
    acc2 = acc0 + g * g
    prox = var0 - lr * g / np.sqrt(acc2)
    var2 = np.sign(prox) * np.maximum(np.abs(prox) - lr * l1, 0) / (1 + lr * l2)
    np.testing.assert_allclose(var.asnumpy(), np.where(touched, var2, var0), rtol=1e-12)
    np.testing.assert_allclose(acc.asnumpy(), np.where(touched, acc2, acc0), rtol=1e-12)
    assert out[0] is var and out[1] is acc


@pytest.mark.parametrize("v2", [False, True])
def test_sparse_apply_adagrad_matches_numpy(v2):
    var0, acc0 = rng.standard_normal((ROWS, COLS)), rng.uniform(0.1, 1, (ROWS, COLS))
    var, acc = _param(var0, "var"), _param(acc0, "accum")
    op = P.SparseApplyAdagradV2(lr=0.1, epsilon=1e-3) if v2 else P.SparseApplyAdagrad(lr=0.1)
    op(var, acc, Tensor(GRAD), Tensor(IDX))
    g, touched = _summed()
    acc2 = acc0 + g * g
    var2 = var0 - 0.1 * g / (np.sqrt(acc2) + (1e-3 if v2 else 0.0))
    np.testing.assert_allclose(var.asnumpy(), np.where(touched, var2, var0), rtol=1e-12)
    np.testing.assert_allclose(acc.asnumpy(), np.where(touched, acc2, acc0), rtol=1e-12)
    frozen_acc = _param(acc0, "accum2")
    P.SparseApplyAdagrad(lr=0.1, update_slots=False)(
        _param(var0, "v"), frozen_acc, Tensor(GRAD), Tensor(IDX)
    )
    np.testing.assert_array_equal(frozen_acc.asnumpy(), acc0)


def test_sparse_updates_compile_under_jit():
    var0 = rng.standard_normal((ROWS, COLS))
    acc0 = rng.uniform(0.1, 1, (ROWS, COLS))
    var, acc = _param(var0, "var"), _param(acc0, "accum")
    op = P.SparseApplyAdagrad(lr=0.1)

    def step(g, i):
        op(var, acc, g, i)
        return ops.reduce_sum(var)

    jit(step)(Tensor(GRAD), Tensor(IDX))
    g, touched = _summed()
    want = np.where(touched, var0 - 0.1 * g / np.sqrt(acc0 + g * g), var0)
    np.testing.assert_allclose(var.asnumpy(), want, rtol=1e-12)


def test_sparse_update_errors_name_the_argument():
    var, acc = _param(np.zeros((ROWS, COLS)), "var"), _param(np.ones((ROWS, COLS)), "accum")
    with pytest.raises(ValueError, match="SparseApplyAdagrad: argument 'grad'"):
        P.SparseApplyAdagrad(lr=0.1)(var, acc, Tensor(np.zeros((2, COLS))), Tensor(IDX))
    with pytest.raises(ValueError, match="rows of shape"):
        P.SparseApplyAdagrad(lr=0.1)(var, acc, Tensor(np.zeros((3, 2))), Tensor(IDX))


# ---- SparseSlice, SparseGatherV2 ----------


def test_sparse_slice_keeps_the_entries_in_the_window():
    indices = np.array([[0, 1], [1, 2], [2, 0], [3, 3], [1, 0]], np.int64)
    values = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    shape, start, size = (4, 4), (1, 0), (2, 5)
    y_idx, y_val, y_shape = P.SparseSlice()(
        Tensor(indices), Tensor(values), Tensor(np.array(shape)), Tensor(np.array(start)),
        Tensor(np.array(size)),
    )  # fmt: skip
    dense = np.zeros(shape)
    dense[tuple(indices.T)] = values
    window = dense[1:3, 0:5]  # size clipped to the shape
    assert y_shape.asnumpy().tolist() == list(window.shape)
    got = np.zeros(window.shape)
    got[tuple(y_idx.asnumpy().T)] = y_val.asnumpy()
    np.testing.assert_array_equal(got, window)
    assert y_idx.asnumpy().tolist() == [[0, 2], [1, 0], [0, 0]]  # the input's order
    with pytest.raises(ValueError, match="SparseSlice.*one entry per dimension"):
        P.SparseSlice()(Tensor(indices), Tensor(values), shape, (0,), (1, 1))


def test_sparse_gather_v2_is_gather_with_its_gradient():
    params = rng.standard_normal((5, 3))
    idx = Tensor(np.array([4, 0, 4]))
    out = P.SparseGatherV2()(Tensor(params), idx, 0)
    np.testing.assert_allclose(out.asnumpy(), params[[4, 0, 4]], rtol=1e-12)
    check_grad(lambda p: P.SparseGatherV2()(p, idx, 0), [params])
    np.testing.assert_allclose(
        P.SparseGatherV2()(Tensor(params), idx, 1 - 1).asnumpy(), params[[4, 0, 4]]
    )


# ---- candidate sampling ----------


def _log_uniform(k, range_max):
    return (np.log(k + 2.0) - np.log(k + 1.0)) / np.log(range_max + 1.0)


def test_log_uniform_sampler_with_replacement_follows_the_distribution():
    sampler = P.LogUniformCandidateSampler(
        num_true=2, num_sampled=20000, unique=False, range_max=10, seed=5
    )
    true = Tensor(np.array([[1, 7], [0, 9]], np.int64))
    sampled, true_exp, sampled_exp = sampler(true)
    s = sampled.asnumpy()
    assert s.dtype == np.int64 and s.shape == (20000,) and s.min() >= 0 and s.max() < 10
    p = _log_uniform(np.arange(10), 10)
    freq = np.bincount(s, minlength=10) / s.size
    np.testing.assert_allclose(freq, p, atol=0.01)  # 20000 draws: sd <= 0.0035
    np.testing.assert_allclose(
        true_exp.asnumpy(), _log_uniform(true.asnumpy(), 10) * 20000, rtol=1e-6
    )
    np.testing.assert_allclose(sampled_exp.asnumpy(), _log_uniform(s, 10) * 20000, rtol=1e-6)
    again = P.LogUniformCandidateSampler(2, 20000, False, 10, seed=5)(true)[0]
    np.testing.assert_array_equal(again.asnumpy(), s)  # a seed fixes the draws


def test_log_uniform_sampler_unique_expected_counts_use_the_number_of_tries():
    sampler = P.LogUniformCandidateSampler(1, 6, True, 20, seed=3)
    sampled, true_exp, sampled_exp = sampler(Tensor(np.array([[2], [15]], np.int64)))
    s = sampled.asnumpy()
    assert len(set(s.tolist())) == 6 and s.min() >= 0 and s.max() < 20
    p = _log_uniform(s.astype(np.float64), 20)
    # 1 - (1 - p)^tries: the same integer number of tries >= 6 explains every entry
    tries = np.log1p(-sampled_exp.asnumpy().astype(np.float64)) / np.log1p(-p)
    assert tries.min() >= 6 - 1e-3
    np.testing.assert_allclose(tries, np.round(tries[0]), rtol=1e-4)
    pt = _log_uniform(np.array([[2.0], [15.0]]), 20)
    np.testing.assert_allclose(
        true_exp.asnumpy(), -np.expm1(np.round(tries[0]) * np.log1p(-pt)), rtol=1e-5
    )
    with pytest.raises(ValueError, match="num_sampled=30 distinct classes exceed range_max=20"):
        P.LogUniformCandidateSampler(1, 30, True, 20)(Tensor(np.array([[1]])))
    with pytest.raises(ValueError, match="true_classes.*num_true=1"):
        sampler(Tensor(np.array([1, 2])))


def test_compute_accidental_hits_finds_true_classes_among_the_samples():
    true = np.array([[1, 2], [0, 4], [3, 3]], np.int64)
    sampled = np.array([4, 1, 3, 1, 9], np.int64)
    idx, ids, w = P.ComputeAccidentalHits(num_true=2)(Tensor(true), Tensor(sampled))
    want = [(i, j) for i in range(3) for c in true[i] for j in range(5) if sampled[j] == c]
    assert list(zip(idx.asnumpy().tolist(), ids.asnumpy().tolist())) == want
    assert idx.asnumpy().dtype == np.int32 and ids.asnumpy().dtype == np.int32
    np.testing.assert_array_equal(w.asnumpy(), np.full(len(want), -np.finfo(np.float32).max))
    none = P.ComputeAccidentalHits(2)(Tensor(true), Tensor(np.array([7, 8])))
    assert [t.shape for t in none] == [(0,), (0,), (0,)]


def test_sparse_update_errors_follow_mindspore_types():
    ones = np.ones((3, 3, 3), np.float32)
    var, acc, lin = (Parameter(Tensor(ones), name=n) for n in ("var", "accum", "linear"))
    op = P.FusedSparseFtrl(lr=0.001, l1=0.0, l2=0.0, lr_power=-0.5)
    idx = Tensor(np.array([0, 1, 2], np.int32))
    short = Parameter(Tensor(np.ones((3, 2, 3), np.float32)), name="short")
    with pytest.raises(ValueError, match="'accum' expected the shape of 'var'"):
        op(var, short, lin, Tensor(ones), idx)
    with pytest.raises(ValueError, match="'grad'"):
        op(var, acc, lin, Tensor(ones), Tensor(np.array(0, np.int32)))
    with pytest.raises(TypeError, match="'indices' expected int32 or int64"):
        op(var, acc, lin, Tensor(ones), Tensor(np.array([0.0, 1.0, 2.0], np.float32)))
    with pytest.raises(TypeError, match="'indices' expected a Tensor"):
        op(var, acc, lin, Tensor(ones), [idx, idx])
    # MindSpore's value for one step from ones (lr 0.001, lr_power -0.5), exactly in float32
    op(var, acc, lin, Tensor(ones), idx)
    assert (var.asnumpy() == np.float32(0.291479)).all()


def test_conv2d_backprop_input_is_also_an_operations_class():
    assert P.Conv2DBackpropInput is P.Conv2DTranspose
    dout = Tensor(np.ones((1, 1, 2, 2)))
    w = Tensor(np.ones((1, 1, 2, 2)))
    dx = P.Conv2DTranspose(1, 2)(dout, w, (1, 1, 3, 3)).asnumpy()
    np.testing.assert_array_equal(dx[0, 0], [[1, 2, 1], [2, 4, 2], [1, 2, 1]])


# ---- CSRSparseMatrix conversions ----------


def _np_csr(dense):
    """The five CSRSparseMatrix tensors of a 2-d or 3-d NumPy array's non-zeros."""
    batched = dense if dense.ndim == 3 else dense[None]
    batch_ptr, row_ptr, cols, vals = [0], [], [], []
    for m in batched:
        rows = [0]
        for r in m:
            nz = np.flatnonzero(r)
            cols += nz.tolist()
            vals += r[nz].tolist()
            rows.append(rows[-1] + len(nz))
        row_ptr += rows
        batch_ptr.append(batch_ptr[-1] + rows[-1])
    return list(dense.shape), batch_ptr, row_ptr, cols, vals


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4)])
def test_csr_sparse_matrix_conversions_match_numpy(shape):
    dense = rng.standard_normal(shape) * (rng.random(shape) < 0.4)
    nz = np.argwhere(dense != 0)
    shuffled = nz[rng.permutation(len(nz))]  # any order in, row-major out
    parts = P.DenseToCSRSparseMatrix()(Tensor(dense), Tensor(shuffled))
    want = _np_csr(dense)
    for got, w in zip(parts, want, strict=True):
        np.testing.assert_allclose(got.asnumpy(), np.asarray(w, dtype=got.asnumpy().dtype))
    back = P.CSRSparseMatrixToDense()(*parts)
    np.testing.assert_array_equal(back.asnumpy(), dense)
    idx, vals, dshape = P.CSRSparseMatrixToSparseTensor()(*parts)
    np.testing.assert_array_equal(idx.asnumpy(), nz)  # argwhere is row-major
    np.testing.assert_array_equal(vals.asnumpy(), dense[tuple(nz.T)])
    assert dshape.asnumpy().tolist() == list(shape)
    again = P.SparseTensorToCSRSparseMatrix()(
        Tensor(shuffled), Tensor(dense[tuple(shuffled.T)]), dshape
    )
    for a, b in zip(again, parts, strict=True):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    # the values carry gradients both ways
    check_grad(lambda v: P.CSRSparseMatrixToDense()(*parts[:4], v), [parts[4].asnumpy()])
    check_grad(lambda d: P.DenseToCSRSparseMatrix()(d, Tensor(shuffled))[4], [dense])


def test_csr_sparse_matrix_errors_name_the_problem():
    with pytest.raises(ValueError, match="DenseToCSRSparseMatrix.*outside the shape"):
        P.DenseToCSRSparseMatrix()(Tensor(np.ones((2, 2))), Tensor(np.array([[0, 2]])))
    with pytest.raises(TypeError, match="'x_row_pointers' expected int32 or int64"):
        P.CSRSparseMatrixToDense()(
            Tensor(np.array([2, 2])), Tensor(np.array([0, 1])), Tensor(np.array([0.0, 1, 1])),
            Tensor(np.array([0])), Tensor(np.array([1.0])),
        )  # fmt: skip
    with pytest.raises(ValueError, match="row pointers count 2 entries, but there are 1"):
        P.CSRSparseMatrixToDense()(
            Tensor(np.array([2, 2])), Tensor(np.array([0, 2])), Tensor(np.array([0, 1, 2])),
            Tensor(np.array([0])), Tensor(np.array([1.0])),
        )  # fmt: skip
