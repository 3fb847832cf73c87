"""The eager products' thread choice (kernels/cpu/product_threads.py), on a scripted clock:
which way each call takes, when probes run, that the BLAS's thread count is restored, and
that results equal NumPy's either way. No timing is measured."""

import numpy as np
import pytest

from sporeling.core.kernels.cpu import blas, product_threads


class FakeLib:
    """A BLAS controller that records the thread counts it was set to."""

    def __init__(self, n):
        self.n = n
        self.seen = []

    def get_num_threads(self):
        return self.n

    def set_num_threads(self, n):
        self.n = n


class Clock:
    """``perf_counter`` stand-in: each product advances it by the time scripted for the way
    it runs (the fake BLAS's thread count tells which)."""

    def __init__(self, lib, multi, single):
        self.t, self.lib, self.cost = 0.0, lib, {False: multi, True: single}
        self.ways = []

    def __call__(self):
        return self.t

    def product(self):
        one = self.lib.n == 1
        self.ways.append(one)
        self.t += self.cost[one]
        return one


@pytest.fixture
def fresh(monkeypatch):
    product_threads.reset()
    yield
    product_threads.reset()


def drive(monkeypatch, multi, single, calls, work=1 << 22):
    lib = FakeLib(2)
    clock = Clock(lib, multi, single)
    monkeypatch.setattr(product_threads, "_clock", clock)
    for _ in range(calls):
        product_threads.run(clock.product, work, lambda: [lib])
        assert lib.n == 2  # restored after every call
    return clock


def test_a_busy_machine_moves_products_to_one_thread_and_probes_rarely(monkeypatch, fresh):
    # 2 threads: 8 ms a call (waiting for the busy core); 1 thread: 0.1 ms
    clock = drive(monkeypatch, 8e-3, 1e-4, 400)
    assert clock.ways[:2] == [False, True]  # each way timed once
    assert all(clock.ways[2:10])
    probes = clock.ways[2:].count(False)
    # a probe of 8 ms is followed by >= 0.4 s of calls: ~0.4 / 0.1e-3 = 4000 calls
    assert probes == 0 or (probes == 1 and clock.ways.index(False, 2) > 20)


def test_an_idle_machine_keeps_the_blas_threads_and_notices_a_change(monkeypatch, fresh):
    lib = FakeLib(2)
    clock = Clock(lib, 1e-4, 1.8e-4)
    monkeypatch.setattr(product_threads, "_clock", clock)
    for _ in range(300):
        product_threads.run(clock.product, 1 << 22, lambda: [lib])
    ways = clock.ways[2:]
    assert ways.count(True) >= 1  # probes of one thread run now and then
    assert ways.count(True) <= 0.03 * len(ways) + 1  # ... and cost <= ~2% of the time
    clock.cost[False] = 5e-3  # the other core became busy
    start = len(clock.ways)
    for _ in range(300):
        product_threads.run(clock.product, 1 << 22, lambda: [lib])
    assert all(clock.ways[-50:])  # moved to one thread after the next probe
    assert len(clock.ways) - start == 300


def test_size_classes_are_separate_and_small_products_are_not_timed(monkeypatch, fresh):
    monkeypatch.setattr(product_threads, "enabled", True)
    drive(monkeypatch, 8e-3, 1e-4, 5, work=1 << 22)
    assert list(product_threads._POLICY.stats) == [23]
    x = np.ones((8, 8), np.float32)
    blas.matmul(x, x)  # far below MIN_WORK: not timed
    assert list(product_threads._POLICY.stats) == [23]


def test_no_controllable_blas_means_the_blas_threads(monkeypatch, fresh):
    lib = FakeLib(2)
    clock = Clock(lib, 8e-3, 1e-4)
    monkeypatch.setattr(product_threads, "_clock", clock)
    for _ in range(20):
        product_threads.run(clock.product, 1 << 22, lambda: [])
    assert not any(clock.ways)


@pytest.mark.parametrize("one_thread", [False, True])
def test_eager_products_equal_numpy_either_way(monkeypatch, fresh, one_thread):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((130, 257)).astype(np.float32)
    w = rng.standard_normal((300, 257)).astype(np.float32)
    b = rng.standard_normal(300).astype(np.float32)
    monkeypatch.setattr(product_threads, "MIN_WORK", 1)
    monkeypatch.setattr(product_threads, "enabled", True)
    st = [1.0, 0.5, True, 1e30] if one_thread else [0.5, 1.0, False, 1e30]
    product_threads._POLICY.stats[(130 * 257 * 300).bit_length()] = st
    before = [lib.get_num_threads() for lib in blas._controllers()]
    got = blas.matmul(x, w.T, bias=b)
    want = x.astype(np.float64) @ w.T.astype(np.float64) + b
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    g = rng.standard_normal((130, 300)).astype(np.float32)
    np.testing.assert_allclose(
        blas.matmul(g.T, x), g.T.astype(np.float64) @ x, rtol=1e-4, atol=1e-3
    )
    assert [lib.get_num_threads() for lib in blas._controllers()] == before


def test_off_by_default(monkeypatch, fresh):
    import importlib

    monkeypatch.delenv("SPORELING_PRODUCT_THREADS", raising=False)
    try:
        assert importlib.reload(product_threads).enabled is False
        monkeypatch.setenv("SPORELING_PRODUCT_THREADS", "measure")
        assert importlib.reload(product_threads).enabled is True
    finally:
        monkeypatch.delenv("SPORELING_PRODUCT_THREADS", raising=False)
        importlib.reload(product_threads)
