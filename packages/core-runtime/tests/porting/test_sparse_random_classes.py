"""The sparse and random primitive classes of ops/operations_sparse_random.py against NumPy
(values, shapes, seeds, padding, errors; gradients of the dense-result ones)."""

import numpy as np
import pytest

from sporeling.core import CSRTensor, Tensor, set_seed
from sporeling.core.ops import operations as P
from sporeling_testing.gradcheck import check_grad

IDX = np.array([[0, 1], [1, 2], [0, 1]], np.int32)
VAL = np.array([1.0, 2.0, 3.0])
DENSE = np.array([[0.0, 4.0, 0.0], [0.0, 0.0, 2.0]])  # repeated index (0, 1): 1 + 3


def test_sparse_to_dense_and_dense_add_sum_repeats():
    out = P.SparseToDense()(Tensor(IDX), Tensor(VAL), (2, 3))
    np.testing.assert_array_equal(out.asnumpy(), DENSE)
    x2 = np.arange(6.0).reshape(2, 3)
    added = P.SparseTensorDenseAdd()(Tensor(IDX), Tensor(VAL), (2, 3), Tensor(x2))
    np.testing.assert_array_equal(added.asnumpy(), DENSE + x2)
    check_grad(lambda v: P.SparseToDense()(Tensor(IDX), v, (2, 3)), [VAL])
    with pytest.raises(ValueError, match=r"'indices' expected shape \(nnz, 3\)"):
        P.SparseToDense()(Tensor(IDX), Tensor(VAL), (2, 3, 1))


@pytest.mark.parametrize("adjoint_st,adjoint_dt", [(False, False), (True, False), (False, True)])
def test_sparse_tensor_dense_matmul(adjoint_st, adjoint_dt):
    a = DENSE.T if adjoint_st else DENSE
    rows = 2 if adjoint_st else 3
    b = np.arange(rows * 4.0).reshape(rows, 4)
    dense = np.ascontiguousarray(b.T) if adjoint_dt else b
    op = P.SparseTensorDenseMatmul(adjoint_st=adjoint_st, adjoint_dt=adjoint_dt)
    out = op(Tensor(IDX), Tensor(VAL), (2, 3), Tensor(dense))
    np.testing.assert_allclose(out.asnumpy(), a @ b, rtol=1e-12)
    check_grad(lambda v, d: op(Tensor(IDX), v, (2, 3), d), [VAL, dense])


def test_csr_classes_match_the_dense_computation():
    csr = CSRTensor(
        Tensor(np.array([0, 1, 2], np.int32)),
        Tensor(np.array([1, 2], np.int32)),
        Tensor(np.array([4.0, 2.0])),
        (2, 3),
    )
    y = np.arange(1.0, 7.0).reshape(2, 3)
    np.testing.assert_allclose(P.CSRMul()(csr, Tensor(y)).asnumpy(), [4.0 * 2, 2.0 * 6])
    v = np.array([[1.0], [2.0], [3.0]])
    np.testing.assert_allclose(P.CSRMV()(csr, Tensor(v)).asnumpy(), DENSE @ v)
    np.testing.assert_allclose(P.CSRReduceSum()(csr, 1).asnumpy(), DENSE.sum(1, keepdims=True))


def test_randperm_is_a_padded_permutation_and_seeded():
    set_seed(3)
    a = P.Randperm(max_length=8, pad=-1)(Tensor(np.array([5], np.int32))).asnumpy()
    assert a.dtype == np.int32 and sorted(a[:5]) == [0, 1, 2, 3, 4] and (a[5:] == -1).all()
    set_seed(3)
    b = P.Randperm(max_length=8, pad=-1)(Tensor(np.array([5], np.int32))).asnumpy()
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match=r"'n' must be in \[0, max_length=8\], got 9"):
        P.Randperm(max_length=8)(Tensor(np.array([9], np.int32)))


def test_random_choice_with_mask_picks_true_entries():
    x = np.array([[True, False, True], [False, True, False]])
    index, mask = P.RandomChoiceWithMask(count=5, seed=1)(Tensor(x))
    index, mask = index.asnumpy(), mask.asnumpy()
    assert index.shape == (5, 2) and index.dtype == np.int32
    assert mask.tolist() == [True, True, True, False, False]
    assert sorted(map(tuple, index[:3])) == [(0, 0), (0, 2), (1, 1)]
    assert not index[3:].any()
    few, m2 = P.RandomChoiceWithMask(count=2, seed=1)(Tensor(x))
    assert m2.asnumpy().all() and all(x[tuple(i)] for i in few.asnumpy())
    with pytest.raises(TypeError, match="expected a bool tensor"):
        P.RandomChoiceWithMask()(Tensor(np.ones(3)))


def test_random_poisson_shape_dtype_and_mean():
    rate = np.array([1.0, 20.0], np.float32)
    set_seed(11)
    out = P.RandomPoisson(seed=4)((4000,), Tensor(rate)).asnumpy()
    assert out.shape == (4000, 2) and out.dtype == np.int64
    # means within 5 standard errors of the rates (sqrt(rate / n))
    np.testing.assert_allclose(out.mean(0), rate, atol=float(5 * np.sqrt(20 / 4000)))
    set_seed(11)
    again = P.RandomPoisson(seed=4)((4000,), Tensor(rate)).asnumpy()
    np.testing.assert_array_equal(out, again)
