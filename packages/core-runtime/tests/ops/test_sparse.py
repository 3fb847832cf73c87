"""Sparse tensors and CSR ops: round trips, forward vs dense NumPy references, gradients
w.r.t. the sparse values and the dense operands, and argument errors."""

import numpy as np
import pytest

from sporeling.core import Tensor, ops
from sporeling.core.sparse_tensor import COOTensor, CSRTensor
from sporeling_testing import check_grad, check_grad_grad


def _sparse_dense(shape, density=0.4, seed=0, dtype=np.float64):
    """A dense matrix with about ``density`` non-zeros (values away from 0), incl. an
    empty row when there are at least 3 rows."""
    rng = np.random.default_rng(seed)
    d = rng.standard_normal(shape) + np.sign(rng.standard_normal(shape))
    d[rng.random(shape) > density] = 0
    if shape[0] >= 3:
        d[1] = 0
    return d.astype(dtype)


def _csr_parts(d):
    rows, cols = np.nonzero(d)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=d.shape[0]))])
    return indptr, cols, d[rows, cols], rows


def _csr(d, device="CPU", dtype=None):
    indptr, cols, vals, _ = _csr_parts(d)
    v = Tensor(vals if dtype is None else vals.astype(dtype), device=device)
    return CSRTensor(Tensor(indptr, device=device), Tensor(cols, device=device), v, d.shape)


# ---- classes and conversions --------------------------------------------------------


def test_csr_properties_and_methods(device):
    d = _sparse_dense((4, 6), dtype=np.float32)
    x = _csr(d, device)
    assert x.shape == (4, 6) and x.ndim == 2 and x.dtype == "float32"
    assert x.size == np.count_nonzero(d) and x.itemsize == 4
    ptr, idx, vals, shape = x.to_tuple()
    assert shape == (4, 6) and ptr.shape == (5,) and idx.shape == vals.shape
    np.testing.assert_array_equal(x.to_dense().asnumpy(), d)
    assert x.to_dense().device == device
    np.testing.assert_array_equal(x.abs().to_dense().asnumpy(), np.abs(d))
    np.testing.assert_array_equal((-x).to_dense().asnumpy(), -d)
    y = x.astype("float64")
    assert y.dtype == "float64" and y.indptr is x.indptr
    assert CSRTensor(csr_tensor=x).values is x.values
    assert "CSRTensor(shape=[4, 6]" in repr(x)


def test_coo_properties_and_methods(device):
    idx = Tensor([[0, 1], [1, 2], [0, 1]], "int32", device=device)
    x = COOTensor(idx, Tensor([1.0, 2.0, 3.0], device=device), (3, 4))
    assert x.shape == (3, 4) and x.ndim == 2 and x.size == 3 and x.dtype == "float32"
    want = np.zeros((3, 4), np.float32)
    want[0, 1], want[1, 2] = 4.0, 2.0  # duplicates add up
    np.testing.assert_array_equal(x.to_dense().asnumpy(), want)
    np.testing.assert_array_equal(x.abs().to_dense().asnumpy(), want)
    np.testing.assert_array_equal((-x).to_dense().asnumpy(), -want)
    assert x.astype("float64").values.dtype == "float64"
    assert x.to_tuple()[2] == (3, 4)
    assert COOTensor(coo_tensor=x).indices is x.indices
    # a 3-D COOTensor densifies too
    y = COOTensor(
        Tensor([[0, 1, 2], [1, 0, 0]], device=device), Tensor([5.0, 6.0], device=device), (2, 2, 3)
    )
    want3 = np.zeros((2, 2, 3), np.float32)
    want3[0, 1, 2], want3[1, 0, 0] = 5.0, 6.0
    np.testing.assert_array_equal(y.to_dense().asnumpy(), want3)


@pytest.mark.parametrize("shape", [(4, 6), (1, 1), (5, 2), (3, 3)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_round_trips(shape, dtype, device):
    d = (_sparse_dense(shape, seed=sum(shape)) * 3).astype(dtype)
    t = Tensor(d, device=device)
    coo = ops.dense_to_sparse_coo(t)
    rows, cols = np.nonzero(d)
    np.testing.assert_array_equal(coo.indices.asnumpy(), np.stack([rows, cols], 1))
    np.testing.assert_array_equal(coo.values.asnumpy(), d[rows, cols])
    np.testing.assert_array_equal(coo.to_dense().asnumpy(), d)
    csr = ops.dense_to_sparse_csr(t)
    indptr, _, _, _ = _csr_parts(d)
    np.testing.assert_array_equal(csr.indptr.asnumpy(), indptr)
    np.testing.assert_array_equal(csr.indices.asnumpy(), cols)
    np.testing.assert_array_equal(ops.csr_to_dense(csr).asnumpy(), d)
    np.testing.assert_array_equal(ops.csr_to_coo(csr).to_dense().asnumpy(), d)
    np.testing.assert_array_equal(csr.to_coo().indices.asnumpy(), coo.indices.asnumpy())
    back = coo.to_csr()
    np.testing.assert_array_equal(back.indptr.asnumpy(), indptr)
    np.testing.assert_array_equal(back.to_dense().asnumpy(), d)
    assert csr.to_dense().dtype == dtype


def test_coo_to_csr_sorts_unsorted_entries():
    idx = Tensor([[2, 0], [0, 3], [2, 1], [0, 1]])
    x = COOTensor(idx, Tensor([1.0, 2.0, 3.0, 4.0]), (3, 4))
    y = ops.coo_to_csr(x)
    assert y.indptr.tolist() == [0, 2, 2, 4]
    assert y.indices.tolist() == [1, 3, 0, 1]
    assert y.values.tolist() == [4.0, 2.0, 1.0, 3.0]
    np.testing.assert_array_equal(y.to_dense().asnumpy(), x.to_dense().asnumpy())


def test_index_helpers():
    assert ops.csr2coo(Tensor([0, 2, 2, 3]), 3).tolist() == [0, 0, 2]
    assert ops.coo2csr(Tensor([0, 0, 2]), 3).tolist() == [0, 2, 2, 3]
    assert ops.coo2csr(Tensor(np.zeros(0, np.int64)), 2).tolist() == [0, 0, 0]


def test_empty_matrix(device):
    x = ops.dense_to_sparse_csr(Tensor(np.zeros((3, 4), np.float32), device=device))
    assert x.size == 0 and x.indptr.tolist() == [0, 0, 0, 0]
    assert ops.csr_mv(x, Tensor(np.ones(4, np.float32), device=device)).tolist() == [0.0] * 3
    assert ops.csr_reduce_sum(x, 0).shape == (1, 4)


# ---- CSR ops vs dense references ------------------------------------------------------

MUL_SHAPES = [(4, 6), (6,), (4, 1), (1, 6), (1, 1), ()]


@pytest.mark.parametrize("yshape", MUL_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_csr_mul_div(yshape, dtype, device):
    d = _sparse_dense((4, 6), seed=1)
    rng = np.random.default_rng(2)
    y = rng.random(yshape) + 0.5
    x = _csr(d, device, dtype)
    _, _, _, rows = _csr_parts(d)
    cols = np.nonzero(d)[1]
    yb = np.broadcast_to(y, d.shape)
    tol = 1e-6 if dtype == "float32" else 1e-12
    got = ops.csr_mul(x, Tensor(y.astype(dtype), device=device))
    assert got.dtype == dtype and got.shape == (x.size,)
    np.testing.assert_allclose(got.asnumpy(), (d * yb)[rows, cols], rtol=tol)
    got = ops.csr_div(x, Tensor(y.astype(dtype), device=device))
    np.testing.assert_allclose(got.asnumpy(), (d / yb)[rows, cols], rtol=tol)
    prod = x * Tensor(y.astype(dtype), device=device)
    assert isinstance(prod, CSRTensor)
    np.testing.assert_allclose(prod.to_dense().asnumpy(), d * yb, rtol=tol)
    quot = x / Tensor(y.astype(dtype), device=device)
    np.testing.assert_allclose(quot.to_dense().asnumpy(), np.where(d != 0, d / yb, 0), rtol=tol)


def test_csr_mul_python_scalar_and_int_values():
    d = _sparse_dense((3, 3), seed=4)
    x = _csr(d)
    np.testing.assert_allclose(ops.csr_mul(x, 2).asnumpy(), 2 * d[np.nonzero(d)])
    xi = _csr(np.round(d * 3), dtype="int32")
    got = ops.csr_div(xi, Tensor([2, 4, 8], "int32"))
    assert got.dtype == "float32"


@pytest.mark.parametrize("vshape", [(6,), (6, 1)], ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_csr_mv(vshape, dtype, device):
    d = _sparse_dense((4, 6), seed=3)
    v = np.random.default_rng(5).standard_normal(vshape)
    got = ops.csr_mv(_csr(d, device, dtype), Tensor(v.astype(dtype), device=device))
    assert got.shape == (4,) + vshape[1:] and got.dtype == dtype
    np.testing.assert_allclose(got.asnumpy(), d @ v, rtol=1e-5, atol=1e-5)
    got = _csr(d, device, dtype).mv(Tensor(v.astype(dtype), device=device))
    np.testing.assert_allclose(got.asnumpy(), d @ v, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "trans_a,trans_b", [(False, False), (True, False), (False, True), (True, True)]
)
def test_csr_mm_dense(trans_a, trans_b, device):
    d = _sparse_dense((4, 6), seed=6)
    a_op = d.T if trans_a else d
    b = np.random.default_rng(7).standard_normal((a_op.shape[1], 3))
    b_in = b.T if trans_b else b
    got = ops.csr_mm(
        _csr(d, device), Tensor(b_in, device=device), trans_a=trans_a, adjoint_b=trans_b
    )
    np.testing.assert_allclose(got.asnumpy(), a_op @ b, rtol=1e-12, atol=1e-12)


def test_csr_mm_csr(device):
    a = _sparse_dense((4, 6), seed=8)
    b = _sparse_dense((6, 5), seed=9)
    got = ops.csr_mm(_csr(a, device), _csr(b, device))
    assert isinstance(got, CSRTensor) and got.shape == (4, 5)
    np.testing.assert_allclose(got.to_dense().asnumpy(), a @ b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(
        _csr(a, device).mm(Tensor(b, device=device)).asnumpy(), a @ b, rtol=1e-12, atol=1e-12
    )


@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_csr_reduce_sum(axis, device):
    d = _sparse_dense((4, 6), seed=10)
    got = ops.csr_reduce_sum(_csr(d, device), axis)
    np.testing.assert_allclose(got.asnumpy(), d.sum(axis, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(_csr(d, device).sum(axis).asnumpy(), d.sum(axis, keepdims=True))


# ---- gradients ------------------------------------------------------------------------

D = _sparse_dense((4, 5), seed=11)
PTR, COLS, VALS, _ = _csr_parts(D)


def _mk(v):
    return CSRTensor(Tensor(PTR, device=v.device), Tensor(COLS, device=v.device), v, D.shape)


GRADS = [
    ("csr_mv", lambda v, x: ops.csr_mv(_mk(v), x), [(5,)], 2),
    ("csr_mv_column", lambda v, x: ops.csr_mv(_mk(v), x), [(5, 1)], 1),
    ("csr_mul", lambda v, y: ops.csr_mul(_mk(v), y), [(4, 1)], 2),
    ("csr_mul_full", lambda v, y: ops.csr_mul(_mk(v), y), [(4, 5)], 1),
    ("csr_div", lambda v, y: ops.csr_div(_mk(v), y + 3.0), [(5,)], 2),
    ("csr_mm", lambda v, b: ops.csr_mm(_mk(v), b), [(5, 3)], 2),
    ("csr_mm_trans", lambda v, b: ops.csr_mm(_mk(v), b, trans_a=True, trans_b=True), [(2, 4)], 1),
    ("csr_reduce_sum", lambda v: ops.csr_reduce_sum(_mk(v), 0), [], 1),
    ("csr_to_dense", lambda v: ops.csr_to_dense(_mk(v)) * 2.0, [], 2),
    ("coo_to_dense", lambda v: ops.csr_to_coo(_mk(v)).to_dense(), [], 1),
    ("coo_to_csr", lambda v: ops.csr_to_coo(_mk(v)).to_csr().values, [], 1),
    ("mul_operator", lambda v, y: (_mk(v) * y).to_dense(), [(1, 5)], 1),
]


@pytest.mark.parametrize("name,fn,shapes,order", GRADS, ids=[g[0] for g in GRADS])
def test_gradients(name, fn, shapes, order, device):
    rng = np.random.default_rng(12)
    arrays = [VALS.copy()] + [rng.standard_normal(s) for s in shapes]
    check_grad(fn, arrays, device=device)
    if order >= 2:
        check_grad_grad(fn, arrays, device=device)


def test_dense_to_sparse_gradient(device):
    """Gradients of the values flow into the dense input at the non-zero positions."""
    from sporeling.core import grad

    d = Tensor(D, device=device)
    w = np.arange(1.0, np.count_nonzero(D) + 1)
    for conv in (ops.dense_to_sparse_coo, ops.dense_to_sparse_csr):
        g = grad(lambda t, conv=conv: ops.reduce_sum(conv(t).values * Tensor(w, device=device)))(d)
        want = np.zeros_like(D)
        want[np.nonzero(D)] = w
        np.testing.assert_array_equal(g.asnumpy(), want)


def test_csr_mv_gradient_formulas():
    """dL/dx = A^T g and dL/dvalues = g[row] * x[col] (the docstring's formulas)."""
    from sporeling.core import value_and_grad

    x = np.random.default_rng(13).standard_normal(5)
    gvec = np.random.default_rng(14).standard_normal(4)
    loss = lambda v, x: ops.reduce_sum(ops.csr_mv(_mk(v), x) * Tensor(gvec))  # noqa: E731
    _, (gv, gx) = value_and_grad(loss, grad_position=(0, 1))(Tensor(VALS), Tensor(x))
    rows = np.nonzero(D)[0]
    np.testing.assert_allclose(gx.asnumpy(), D.T @ gvec, rtol=1e-12)
    np.testing.assert_allclose(gv.asnumpy(), gvec[rows] * x[COLS], rtol=1e-12)


# ---- errors -----------------------------------------------------------------------------

I2 = Tensor([[0, 1], [1, 2]])
V2 = Tensor([1.0, 2.0])
X = CSRTensor(Tensor([0, 1, 2]), Tensor([0, 1]), V2, (2, 4))

ERRORS = [
    (lambda: COOTensor(Tensor([0, 1]), V2, (3, 4)), ValueError, "COOTensor.*indices"),
    (
        lambda: COOTensor(Tensor([[0.0, 1.0]]), Tensor([1.0]), (3, 4)),
        TypeError,
        "COOTensor.*indices",
    ),
    (lambda: COOTensor(I2, Tensor([1.0]), (3, 4)), ValueError, "COOTensor.*values"),
    (lambda: COOTensor(I2, V2, (3, 4, 5)), ValueError, "COOTensor.*shape"),
    (lambda: COOTensor(I2, V2, (2, 2)), ValueError, "COOTensor.*indices.*outside"),
    (lambda: COOTensor(Tensor([[0, -1]]), Tensor([1.0]), (2, 2)), ValueError, "COOTensor.*indices"),
    (lambda: COOTensor(I2, V2, [3, 0]), ValueError, "COOTensor.*shape"),
    (lambda: COOTensor(I2, V2, "34"), TypeError, "COOTensor.*shape"),
    (lambda: COOTensor(I2, V2, (3, 4), coo_tensor=1), TypeError, "COOTensor.*coo_tensor"),
    (
        lambda: CSRTensor(Tensor([0, 1]), Tensor([0, 1]), V2, (2, 4)),
        ValueError,
        "CSRTensor.*indptr",
    ),
    (
        lambda: CSRTensor(Tensor([0, 2, 1]), Tensor([0, 1]), V2, (2, 4)),
        ValueError,
        "CSRTensor.*indptr",
    ),
    (
        lambda: CSRTensor(Tensor([0, 1, 3]), Tensor([0, 1]), V2, (2, 4)),
        ValueError,
        "CSRTensor.*indptr",
    ),
    (
        lambda: CSRTensor(Tensor([0, 1, 2]), Tensor([0, 4]), V2, (2, 4)),
        ValueError,
        "CSRTensor.*indices",
    ),
    (
        lambda: CSRTensor(Tensor([0, 1, 2]), Tensor([[0, 1]]), V2, (2, 4)),
        ValueError,
        "CSRTensor.*indices",
    ),
    (
        lambda: CSRTensor(Tensor([0, 1, 2]), Tensor([0, 1]), Tensor([1.0]), (2, 4)),
        ValueError,
        "CSRTensor.*values",
    ),
    (
        lambda: CSRTensor(Tensor([0, 1, 2]), Tensor([0, 1]), V2, (2, 4, 1)),
        ValueError,
        "CSRTensor.*shape",
    ),
    (lambda: CSRTensor(Tensor([0, 1, 2]), [0, 1], V2, (2, 4)), TypeError, "CSRTensor.*indices"),
    (
        lambda: ops.dense_to_sparse_coo(Tensor([1.0, 0.0])),
        ValueError,
        "dense_to_sparse_coo.*tensor",
    ),
    (lambda: ops.dense_to_sparse_csr(np.eye(2)), TypeError, "dense_to_sparse_csr.*tensor"),
    (
        lambda: ops.csr_to_coo(ops.dense_to_sparse_coo(Tensor(np.eye(2)))),
        TypeError,
        "csr_to_coo.*tensor",
    ),
    (lambda: ops.csr_to_dense(Tensor(np.eye(2))), TypeError, "csr_to_dense.*csr_tensor"),
    (
        lambda: ops.coo_to_csr(COOTensor(Tensor([[0, 0, 0]]), Tensor([1.0]), (1, 1, 1))),
        ValueError,
        "coo_to_csr.*tensor",
    ),
    (lambda: ops.csr_mul(X, Tensor(np.ones(3))), ValueError, "csr_mul.*y.*broadcast"),
    (lambda: ops.csr_mul(X, Tensor(np.ones((3, 2, 4)))), ValueError, "csr_mul.*y"),
    (lambda: ops.csr_div(X, "a"), TypeError, "csr_div.*y"),
    (lambda: ops.csr_mul(Tensor(np.eye(2)), 2.0), TypeError, "csr_mul.*x"),
    (lambda: ops.csr_mv(X, Tensor(np.ones(3))), ValueError, "csr_mv.*dense"),
    (lambda: ops.csr_mv(X, Tensor(np.ones((4, 2)))), ValueError, "csr_mv.*dense"),
    (lambda: ops.csr_mv(X, [1.0, 1.0, 1.0, 1.0]), TypeError, "csr_mv.*dense"),
    (lambda: ops.csr_mm(X, Tensor(np.ones((3, 2)))), ValueError, "csr_mm.*b"),
    (lambda: ops.csr_mm(X, Tensor(np.ones(4))), ValueError, "csr_mm.*b"),
    (lambda: ops.csr_mm(X, Tensor(np.ones((4, 2))), trans_a=1), TypeError, "csr_mm.*trans_a"),
    (lambda: ops.csr_reduce_sum(X, 2), ValueError, "csr_reduce_sum.*axis"),
    (lambda: ops.csr_reduce_sum(X, 0.5), TypeError, "csr_reduce_sum.*axis"),
    (lambda: ops.coo2csr(Tensor([1, 0]), 2), ValueError, "coo2csr.*row_indices"),
    (lambda: ops.coo2csr(Tensor([0, 5]), 2), ValueError, "coo2csr.*row_indices"),
    (lambda: ops.csr2coo(Tensor([0, 2, 1]), 1), ValueError, "csr2coo.*indptr"),
]


@pytest.mark.parametrize("fn,exc,match", ERRORS, ids=[f"{i}-{e[2]}" for i, e in enumerate(ERRORS)])
def test_errors(fn, exc, match):
    with pytest.raises(exc, match=match):
        fn()
