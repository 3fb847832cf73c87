"""Eager reshape and transpose make their view and tape node in the op wrapper
(``ops._core._eager_view``) instead of going through the interpreter: the results, the
recorded nodes and the gradients must be those of the interpreter's path (``bind``), for odd
shapes, batch 1, non-contiguous inputs, integer dtypes, Parameters, ``no_grad``, graph mode
and vmap."""

from __future__ import annotations

import numpy as np
import pytest

from sporeling.core import Parameter, Tensor, grad, jit, no_grad, ops, vmap
from sporeling.core.ops._core import reshape_p, transpose_p
from sporeling_testing.gradcheck import check_grad

CASES = [  # (input shape, new shape, permutation of the input's axes)
    ((1, 7), (7, 1), (1, 0)),
    ((3, 5), (5, 3), (1, 0)),
    ((2, 3, 5), (5, 1, 6), (2, 0, 1)),
    ((1, 1, 1), (1,), (0, 2, 1)),
    ((4, 1, 3, 2), (2, 12), (3, 1, 0, 2)),
]


def _arr(shape, dtype=np.float32, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape) * 4
    return a.astype(dtype)


@pytest.mark.parametrize(("shape", "new", "perm"), CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.bool_, np.complex64])
def test_views_match_the_interpreter_path(shape, new, perm, dtype):
    a = _arr(shape, dtype)
    x = Tensor.from_numpy(a)  # shares a (Tensor(a) copies), so views of x are views of a
    for _ in range(2):  # the first call memoizes the parameters, the second reuses them
        r, t = x.reshape(new), ops.transpose(x, perm)
        r_ref = reshape_p.bind(x, shape=new)
        t_ref = transpose_p.bind(x, perm=perm)
        for got, ref, expect in ((r, r_ref, a.reshape(new)), (t, t_ref, a.transpose(perm))):
            assert type(got) is Tensor and got.shape == ref.shape == expect.shape
            assert got._data.dtype == ref._data.dtype == a.dtype
            np.testing.assert_array_equal(got.asnumpy(), expect)
            assert np.shares_memory(got._data, a)  # a view, never a copy
            assert got._node is None and got.grad is None and not got.requires_grad


def test_non_contiguous_inputs():
    base = _arr((6, 8))
    x = ops.transpose(Tensor(base), (1, 0))[1:7:2]  # (3, 6), strided
    assert not x._data.flags.c_contiguous
    for _ in range(2):
        np.testing.assert_array_equal(x.reshape(2, 9).asnumpy(), base.T[1:7:2].reshape(2, 9))
        np.testing.assert_array_equal(
            ops.transpose(x, (1, 0)).asnumpy(), base.T[1:7:2].transpose(1, 0)
        )
    w = Parameter(Tensor(base.copy()), name="w")
    u = Tensor(_arr((2, 9), seed=3))

    def f(w):
        return (ops.transpose(w, (1, 0))[1:7:2].reshape(2, 9) * u).sum()

    for _ in range(2):
        g = grad(f)(w).asnumpy()
        expect = np.zeros((8, 6), np.float32)
        expect[1:7:2] = _arr((2, 9), seed=3).reshape(3, 6)
        np.testing.assert_allclose(g, expect.T, rtol=1e-6)


@pytest.mark.parametrize(("shape", "new", "perm"), CASES)
def test_gradients_numerically(shape, new, perm):
    u = _arr(new, np.float64, seed=5)
    v = _arr(tuple(shape[p] for p in perm), np.float64, seed=6)
    check_grad(lambda x: (x.reshape(new) * Tensor(u)).sum(), [_arr(shape, np.float64)])
    check_grad(lambda x: (ops.transpose(x, perm) * Tensor(v)).sum(), [_arr(shape, np.float64)])
    # second order: the vjps are the same views again, recorded under create_graph
    x = Tensor(_arr(shape, np.float64))
    x.requires_grad = True

    def inner(y):
        return (ops.transpose(y.reshape(new).reshape(shape), perm) ** 2).sum()

    gg = grad(lambda x: grad(inner)(x).sum())(x)
    np.testing.assert_allclose(gg.asnumpy(), np.full(shape, 2.0))


def test_nodes_follow_grad_mode_and_dtype():
    x = Tensor(_arr((3, 4)))
    x.requires_grad = True
    for _ in range(2):
        r = x.reshape(4, 3)
        assert r._node is not None and r._node.prim is reshape_p
        assert r._node.params["shape"] == (4, 3) and r._node.needs == (True,)
        assert r._node.out_data[0] is r._data
        t = ops.transpose(r, (1, 0))
        assert t._node.prim is transpose_p and t._node.inputs[0] is r
        with no_grad():
            assert x.reshape(4, 3)._node is None and ops.transpose(x, (1, 0))._node is None
    xi = Tensor(np.arange(12, dtype=np.int32).reshape(3, 4))
    xi.requires_grad = True  # integer tensors never record
    assert xi.reshape(12)._node is None and ops.transpose(xi, (1, 0))._node is None


def test_graph_mode_and_vmap_still_trace():
    a = _arr((2, 3, 4))

    @jit
    def f(x):
        return ops.transpose(x.reshape(6, 4), (1, 0)) * 2

    for _ in range(2):
        np.testing.assert_array_equal(f(Tensor(a)).asnumpy(), a.reshape(6, 4).T * 2)
    out = vmap(lambda x: ops.transpose(x.reshape(4, 3), (1, 0)))(Tensor(a))
    np.testing.assert_array_equal(out.asnumpy(), a.reshape(2, 4, 3).transpose(0, 2, 1))


def test_bad_shapes_and_perms_still_raise():
    x = Tensor(_arr((3, 4)))
    x.reshape(2, 6)
    with pytest.raises(ValueError, match="reshape"):
        x.reshape(5, 3)
    with pytest.raises(TypeError, match="reshape"):
        x.reshape(2.0, 6.0)
    with pytest.raises(ValueError, match="transpose"):
        ops.transpose(x, (0, 0))
