"""OpenBLAS's parallel jobs on Sporeling's threads: same products, every job concurrent,
the callback removed after, and errors of concurrent parts re-raised."""

import threading

import numpy as np
import pytest

from sporeling.core.kernels.cpu import _rows, blas, openblas_threads, product_threads


@pytest.fixture(autouse=True)
def every_core_free(monkeypatch):
    """Graph products split whatever the machine's load (test_product_threads.py covers a
    taken core, where they do not)."""
    monkeypatch.setattr(product_threads, "threads_free", lambda: 1 << 10)


def _needs_callback():
    if not openblas_threads._find_setters():
        pytest.skip("NumPy's BLAS is not a pthreads OpenBLAS with a threads callback")


def test_parts_run_at_the_same_time_even_beyond_the_idle_workers():
    n = _rows.max_blocks() + 2  # more parts than workers: some get threads of their own
    barrier = threading.Barrier(n, timeout=10)  # breaks (and raises) unless all n arrive
    seen = []
    _rows.run_concurrently(lambda k: seen.append((k, barrier.wait())), n)
    assert sorted(k for k, _ in seen) == list(range(n))


def test_an_error_in_a_part_is_raised_after_every_part_ran():
    ran = []

    def part(k):
        ran.append(k)
        if k == 1:
            raise ValueError("part 1 failed")

    with pytest.raises(ValueError, match="part 1 failed"):
        _rows.run_concurrently(part, 3)
    assert sorted(ran) == [0, 1, 2]


def test_products_run_as_openblas_jobs_on_sporeling_threads_inside_graphs(monkeypatch):
    _needs_callback()
    calls = []
    real = openblas_threads.run_concurrently

    def spy(fn, n):
        calls.append(n)
        return real(fn, n)

    monkeypatch.setattr(openblas_threads, "run_concurrently", spy)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1024, 300)).astype(np.float32)
    w = rng.standard_normal((500, 300)).astype(np.float32)
    bias = rng.standard_normal(500).astype(np.float32)
    want = x.astype(np.float64) @ w.T.astype(np.float64) + bias
    with blas.split_products():
        got = blas.matmul(x, w.T, bias=bias)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
    if blas._controllers()[0].get_num_threads() > 1:
        assert calls and all(n > 1 for n in calls)
    calls.clear()
    np.matmul(x, w.T)  # eager: OpenBLAS's own threads again
    assert calls == []


def test_nested_and_concurrent_graph_scopes_keep_the_callback_until_the_last_leaves():
    _needs_callback()
    rng = np.random.default_rng(1)
    a = rng.standard_normal((600, 400))
    want = a @ a.T
    results = []

    def graph_thread():
        with blas.split_products(), blas.split_products():
            results.append(np.allclose(blas.matmul(a, a.T), want))

    threads = [threading.Thread(target=graph_thread) for _ in range(3)]
    for t in threads:
        t.start()
    with blas.split_products():
        results.append(np.allclose(blas.matmul(a, a.T), want))
    for t in threads:
        t.join(timeout=60)
    assert results == [True] * 4
    assert openblas_threads._STATE["depth"] == 0
