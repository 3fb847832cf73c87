"""Matrix products split over Sporeling's threads equal NumPy's, and the BLAS thread count is
held at one inside and restored after."""

import threading

import numpy as np
import pytest

from sporeling.core.kernels.cpu import blas, openblas_threads, product_threads


@pytest.fixture(autouse=True)
def split_small_products(monkeypatch):
    """Split even these small test products (the default leaves them to NumPy), as the
    graph executor does, with the blocks a BLAS without OpenBLAS's threads callback gets
    (test_openblas_threads.py covers the callback)."""
    monkeypatch.setattr(blas, "SPLIT_MIN_WORK", 1)
    monkeypatch.setattr(openblas_threads, "_find_setters", lambda: [])
    # every core free whatever the machine's load (a taken core: test_product_threads.py)
    monkeypatch.setattr(product_threads, "threads_free", lambda: 1 << 10)
    with blas.split_products():
        yield


CASES = [
    ((512, 300), (300, 400)),  # rows split
    ((40, 300), (300, 3000)),  # columns split (wide)
    ((16, 4, 128, 64), (16, 4, 64, 128)),  # batch split
    ((1, 600, 256), (256, 512)),  # batch of one: rows of every matrix
    ((3, 1, 200, 64), (1, 5, 64, 300)),  # broadcast batch
]


@pytest.mark.parametrize(("xs", "ys"), CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
def test_split_product_equals_numpy(xs, ys, dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(xs).astype(dtype)
    y = rng.standard_normal(ys).astype(dtype)
    want = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64) @ y
    got = blas.matmul(x, y)
    assert got.shape == want.shape and got.dtype == dtype
    tol = 1e-4 if dtype in (np.float32, np.complex64) else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


def test_transposed_and_strided_operands_and_out():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((700, 512)).astype(np.float32)[:, ::2]  # strided columns
    w = rng.standard_normal((384, 256)).astype(np.float32)
    out = np.full((700, 384), np.nan, np.float32)
    got = blas.matmul(x, w.T, out=out)
    assert got is out
    want = x.astype(np.float64) @ w.T.astype(np.float64)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-3)


def test_integer_and_vector_operands_fall_back_to_numpy():
    a = np.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(blas.matmul(a, a.T), a @ a.T)
    v = np.arange(4.0)
    np.testing.assert_array_equal(blas.matmul(a.astype(float), v), a @ v)


def test_blas_threads_held_at_one_and_restored():
    libs = blas._controllers()
    if not libs:
        pytest.skip("no controllable BLAS loaded")
    before = [lib.get_num_threads() for lib in libs]
    with blas.single_threaded_blas() as controlled:
        assert controlled
        assert all(lib.get_num_threads() == 1 for lib in libs)
        with blas.single_threaded_blas():  # nests
            pass
        assert all(lib.get_num_threads() == 1 for lib in libs)
    assert [lib.get_num_threads() for lib in libs] == before


def test_products_outside_graphs_are_not_split(monkeypatch):
    calls = []
    real = blas.run_blocks
    monkeypatch.setattr(blas, "run_blocks", lambda *a, **kw: (calls.append(a), real(*a, **kw)))
    x = np.ones((300, 300), np.float32)
    outside = threading.Thread(target=lambda: blas.matmul(x, x))  # no split_products() there
    outside.start()
    outside.join()
    assert not calls
    np.testing.assert_array_equal(blas.matmul(x, x), x @ x)  # this thread is in the scope
    assert len(calls) == 1


def test_concurrent_callers_restore_the_thread_count():
    libs = blas._controllers()
    if not libs:
        pytest.skip("no controllable BLAS loaded")
    before = [lib.get_num_threads() for lib in libs]
    rng = np.random.default_rng(2)
    x = rng.standard_normal((256, 256)).astype(np.float32)
    want = x.astype(np.float64) @ x
    errors = []

    def work():
        for _ in range(20):
            if not np.allclose(blas.matmul(x, x), want, rtol=1e-4, atol=1e-3):
                errors.append("wrong product")

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert [lib.get_num_threads() for lib in libs] == before


@pytest.mark.parametrize(("xs", "ys"), CASES)
def test_bias_added_in_every_block(xs, ys):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(xs).astype(np.float32)
    y = rng.standard_normal(ys).astype(np.float32)
    b = rng.standard_normal(ys[-1]).astype(np.float32)
    want = x.astype(np.float64) @ y + b
    got = blas.matmul(x, y, bias=b)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
