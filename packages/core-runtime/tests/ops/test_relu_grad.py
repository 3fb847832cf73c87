"""ReLU's gradient as one op (``relu_grad``): values, second order, and fusion under jit."""

import numpy as np

from sporeling.core import Tensor, grad, jit, ops
from sporeling_testing import check_grad, check_grad_grad


def test_gradient_is_the_cotangent_where_positive_and_exact_zero_elsewhere():
    x = Tensor(np.array([-2.0, 0.0, 3.0, -1.0, 5.0], np.float32))
    g = Tensor(np.array([np.inf, 7.0, 2.0, np.nan, -4.0], np.float32))
    _, pull = ops.vjp(ops.relu, x)
    # zero where x <= 0 even for an infinite or NaN cotangent (g * mask gave NaN there),
    # as PyTorch's threshold_backward and MindSpore's ReluGrad
    np.testing.assert_array_equal(pull(g)[0].asnumpy(), [0.0, 0.0, 2.0, 0.0, -4.0])


def test_numerical_gradients_first_and_second_order():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 5))
    x[np.abs(x) < 0.1] += 0.3  # away from the kink
    check_grad(lambda a: ops.relu(a) * ops.relu(a), [x])
    check_grad_grad(lambda a: ops.relu(a) * a, [x])


def test_graph_mode_matches_eager():
    x = Tensor(np.random.default_rng(1).standard_normal((8, 16)).astype(np.float32))

    def loss(a):
        return ops.reduce_sum(ops.relu(a * 2.0) * a)

    np.testing.assert_allclose(jit(grad(loss))(x).asnumpy(), grad(loss)(x).asnumpy(), rtol=1e-6)


def test_cpu_kernel_blocks_and_fallback_match_numpy(monkeypatch):
    from sporeling.core.kernels.cpu import relu_grad as kernel

    rng = np.random.default_rng(2)
    for dtype in (np.float32, np.float64):
        g = rng.standard_normal((6, 7, 9)).astype(dtype)
        x = rng.standard_normal((6, 7, 9)).astype(dtype)
        want = np.where(x > 0, g, 0)
        monkeypatch.setattr(kernel, "n_blocks", lambda rows, elements: 3)
        monkeypatch.setattr(kernel, "SPLIT_MIN", 0)  # split however small
        monkeypatch.setattr(kernel, "NUMPY_UP_TO", 0)  # the Numba kernel even when small
        np.testing.assert_array_equal(kernel.relu_grad(g, x), want)
        assert kernel.relu_grad(g[:, ::2], x[:, ::2]) is None  # not contiguous: NumPy path
        _, pull = ops.vjp(ops.relu, Tensor(x[:, ::2]))
        np.testing.assert_array_equal(pull(Tensor(g[:, ::2]))[0].asnumpy(), want[:, ::2])


def test_cpu_kernel_odd_sizes_and_special_values_bit_exact(monkeypatch):
    """The unsigned-index loop: every block bound and tail, NaN/inf/-0 in g and x."""
    from sporeling.core.kernels.cpu import relu_grad as kernel

    rng = np.random.default_rng(3)
    special = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-45, -1e-45])
    for dtype in (np.float32, np.float64):
        for size in (1, 2, 17, 1001):
            g = rng.standard_normal(size).astype(dtype)
            x = rng.standard_normal(size).astype(dtype)
            g[: min(size, 7)] = special[: min(size, 7)]
            x[-min(size, 7) :] = special[: min(size, 7)]
            want = np.where(x > 0, g, dtype(0))
            for blocks in (0, 1, 2, 5):  # 0: the NumPy path of small arrays
                monkeypatch.setattr(kernel, "NUMPY_UP_TO", size if blocks == 0 else 0)
                monkeypatch.setattr(kernel, "n_blocks", lambda rows, elements, b=blocks: b)
                monkeypatch.setattr(kernel, "SPLIT_MIN", 0)
                got = kernel.relu_grad(g, x)
                assert got.dtype == dtype
                np.testing.assert_array_equal(
                    got.view(f"u{got.itemsize}"), want.view(f"u{got.itemsize}")
                )


def test_small_arrays_take_the_numpy_path_bit_exact():
    """Up to NUMPY_UP_TO elements: NumPy's integer-mask path (no Numba kernel call), equal
    bit for bit to where(x > 0, g, 0) for shapes around the bound, both float dtypes."""
    from sporeling.core.kernels.cpu import relu_grad as kernel

    rng = np.random.default_rng(4)
    calls = []
    real = kernel._relu_grad_kernel
    try:
        kernel._relu_grad_kernel = lambda *a: (calls.append(a[3:]), real(*a))
        for dtype in (np.float32, np.float64):
            for shape in (
                (1,),
                (3, 5),
                (64, 256),
                (kernel.NUMPY_UP_TO,),
                (kernel.NUMPY_UP_TO + 1,),
            ):
                g = rng.standard_normal(shape).astype(dtype)
                x = rng.standard_normal(shape).astype(dtype)
                g.flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
                x.flat[:4] = [-1.0, 0.0, -0.0, -2.0]
                x.flat[-1] = np.nan
                want = np.where(x > 0, g, dtype(0))
                before = len(calls)
                got = kernel.relu_grad(g, x)
                assert got.dtype == dtype and got.shape == shape
                u = f"u{got.itemsize}"
                np.testing.assert_array_equal(got.view(u), want.view(u))
                assert (len(calls) > before) == (g.size > kernel.NUMPY_UP_TO)
    finally:
        kernel._relu_grad_kernel = real
