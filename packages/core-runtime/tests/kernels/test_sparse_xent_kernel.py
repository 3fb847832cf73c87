"""The fused sparse cross-entropy row kernels (loss mean and its logits gradient) against a
float64 NumPy reference: odd shapes, non-contiguous logits, both label dtypes, the threaded
row blocks, special values, a numerical gradient check and the graph-mode GPT-style use."""

import numpy as np
import pytest

from sporeling.core.kernels.cpu.softmax import sparse_xent_grad, sparse_xent_mean


def ref_loss_grad(x, idx):
    x = x.astype(np.float64)
    m = x.max(1, keepdims=True)
    e = np.exp(x - m)
    s = e.sum(1, keepdims=True)
    rows = np.arange(len(x))
    loss = np.mean(np.log(s[:, 0]) + m[:, 0] - x[rows, idx])
    g = e / s
    g[rows, idx] -= 1.0
    return loss, g / len(x)


@pytest.mark.parametrize("dtype, rtol", [("float32", 2e-6), ("float64", 1e-12)])
@pytest.mark.parametrize(
    "shape",
    [(1, 1), (1, 3), (3, 1), (7, 13), (5, 1000), (300, 1024)],  # the last: threaded blocks
)
@pytest.mark.parametrize("label_dtype", ["int32", "int64"])
def test_sparse_xent_matches_float64(shape, dtype, rtol, label_dtype):
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    idx = rng.integers(0, shape[1], shape[0]).astype(label_dtype)
    loss, grad = ref_loss_grad(x, idx)
    got = sparse_xent_mean(x, idx)
    assert got.dtype == x.dtype and got.shape == ()
    np.testing.assert_allclose(float(got), loss, rtol=rtol, atol=rtol)
    g = sparse_xent_grad(x, idx)
    assert g.dtype == x.dtype and g.shape == x.shape
    np.testing.assert_allclose(g, grad, rtol=rtol * 4, atol=rtol / shape[0])


def test_sparse_xent_non_contiguous_logits_and_out():
    rng = np.random.default_rng(3)
    big = rng.standard_normal((40, 66)).astype(np.float32)
    x = big[::2, 1:-1:2]  # strided rows and columns
    idx = rng.integers(0, x.shape[1], x.shape[0])
    loss, grad = ref_loss_grad(x, idx)
    np.testing.assert_allclose(float(sparse_xent_mean(x, idx)), loss, rtol=2e-6)
    out = np.full(x.shape, 7.0, np.float32)
    assert sparse_xent_grad(x, idx, out=out) is out
    np.testing.assert_allclose(out, grad, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(sparse_xent_grad(x.T.copy().T, idx), grad, rtol=1e-5, atol=1e-8)


def test_sparse_xent_special_values():
    x = np.array(
        [
            [1e4, -1e4, 0.0],  # large magnitudes: the row maximum is subtracted
            [-np.inf, 0.0, 1.0],  # a -inf logit is a zero probability
            [np.nan, 0.0, 1.0],
            [np.inf, 0.0, 1.0],
            [-np.inf, -np.inf, -np.inf],
        ],
        np.float32,
    )
    idx = np.array([1, 2, 0, 1, 0])
    with np.errstate(invalid="ignore"):
        _, grad = ref_loss_grad(x[:2], idx[:2])
        per_row = [float(sparse_xent_mean(x[i : i + 1], idx[i : i + 1])) for i in range(5)]
        g = sparse_xent_grad(x, idx)
    np.testing.assert_allclose(per_row[0], 2e4, rtol=1e-6)
    np.testing.assert_allclose(per_row[1], np.log(1 + np.e**-1), rtol=1e-6)
    assert np.isnan(per_row[2:]).all()
    np.testing.assert_allclose(g[:2] * 5 / 2, grad, rtol=1e-6, atol=1e-12)
    assert np.isnan(g[2:]).all()


def test_sparse_xent_gradient_check():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((4, 6))
    idx = np.array([5, 0, 2, 2])
    g = sparse_xent_grad(x, idx)
    num = np.zeros_like(x)
    h = 1e-6
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        num[i] = (float(sparse_xent_mean(xp, idx)) - float(sparse_xent_mean(xm, idx))) / (2 * h)
    np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-9)


def test_sparse_xent_bad_labels_name_the_argument():
    x = np.zeros((3, 4), np.float32)
    with pytest.raises(ValueError, match=r"'labels'.*\[0, 4\).*got -1"):
        sparse_xent_mean(x, np.array([0, -1, 2]))
    with pytest.raises(ValueError, match=r"'labels'.*\[0, 4\).*got 4"):
        sparse_xent_grad(x, np.array([0, 4, 2]))
    with pytest.raises(TypeError, match="'labels' expected integers"):
        sparse_xent_grad(x, np.zeros(3))
    with pytest.raises(ValueError, match=r"\(N, C\).*\(3, 4\).*\(2,\)"):
        sparse_xent_mean(x, np.zeros(2, int))


def test_sparse_xent_op_graph_matches_eager():
    """The op under ``jit(value_and_grad)`` and eagerly, on the fused CPU kernels, against
    the float64 reference (a batch large enough for the threaded row blocks)."""
    from sporeling.core import Tensor, jit, ops, value_and_grad

    rng = np.random.default_rng(5)
    x = rng.standard_normal((512, 640)).astype(np.float32)
    idx = rng.integers(0, 640, 512).astype(np.int32)
    loss, grad = ref_loss_grad(x, idx)
    w = Tensor(np.float32(1.5))

    def f(x, w):
        return ops.sparse_softmax_cross_entropy_with_logits(x * w, Tensor(idx))

    eager = value_and_grad(f, (0,))(Tensor(x / 1.5), w)
    graph = jit(value_and_grad(f, (0,)))(Tensor(x / 1.5), w)
    for v, (g,) in (eager, graph):
        np.testing.assert_allclose(float(v.asnumpy()), loss, rtol=2e-6)
        np.testing.assert_allclose(g.asnumpy(), grad * 1.5, rtol=1e-4, atol=1e-9)
