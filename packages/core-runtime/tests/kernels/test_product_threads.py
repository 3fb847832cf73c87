"""The eager products' thread choice (kernels/cpu/product_threads.py): the default ``load``
mode on scripted CPU counters (how many threads the other processes leave room for, the
margins, the reading interval), the ``measure`` mode on a scripted clock (which way each call
takes, when probes run), that the BLAS's thread count is restored, and that results equal
NumPy's either way. No timing is measured."""

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
    monkeypatch.setattr(product_threads, "MODE", "measure")  # (the load mode: below)
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


def test_modes_from_the_environment(monkeypatch):
    import importlib

    try:
        monkeypatch.delenv("SPORELING_PRODUCT_THREADS", raising=False)
        mod = importlib.reload(product_threads)
        assert mod.MODE == "load" and mod.enabled is True
        monkeypatch.setenv("SPORELING_PRODUCT_THREADS", "measure")
        assert importlib.reload(product_threads).MODE == "measure"
        monkeypatch.setenv("SPORELING_PRODUCT_THREADS", "blas")
        assert importlib.reload(product_threads).enabled is False
        monkeypatch.setenv("SPORELING_PRODUCT_THREADS", "fast")
        with pytest.raises(ValueError, match="SPORELING_PRODUCT_THREADS.*'fast'"):
            importlib.reload(product_threads)
    finally:
        monkeypatch.delenv("SPORELING_PRODUCT_THREADS", raising=False)
        importlib.reload(product_threads)


class Counters:
    """Scripted ``/proc/stat`` and ``os.times``: ``advance(seconds, own, foreign)`` moves the
    machine's busy and total ticks (100 a second per CPU) and this process's CPU seconds."""

    def __init__(self, cpus=2):
        self.cpus, self.busy, self.total, self.own_s = cpus, 0, 0, 0.0
        self.reads = 0
        self.broken = False

    def read(self):
        self.reads += 1
        return None if self.broken else (self.busy, self.total)

    def own(self):
        return self.own_s

    def advance(self, seconds, own, foreign):
        self.total += round(100 * seconds * self.cpus)
        self.busy += round(100 * seconds * (own + foreign))
        self.own_s += seconds * own


def load_after(c, steps, now=0.0, load=None):
    """Feed ``steps`` of (seconds, own cores, foreign cores) to a ForeignLoad; return it."""
    load = load or product_threads.ForeignLoad(c.read, c.own, cpus=c.cpus, tick=0.01)
    load.limit(now)
    for seconds, own, foreign in steps:
        c.advance(seconds, own, foreign)
        now += seconds
        load.limit(now)
    return load


def test_load_idle_machine_and_own_threads_keep_every_thread():
    c = Counters()
    # this process busy on both cores (its BLAS threads, Numba, PyTorch in a benchmark)
    load = load_after(c, [(0.2, 2.0, 0.0), (0.2, 1.0, 0.1), (0.2, 0.0, 0.2)])
    assert load.allowed == 2 and load.foreign == pytest.approx(0.2)


def test_load_a_busy_neighbour_takes_a_thread_with_margins():
    c = Counters()
    load = load_after(c, [(0.2, 1.0, 1.0)])
    assert load.foreign == pytest.approx(1.0) and load.allowed == 1
    load = load_after(c, [(0.2, 1.0, 0.4)], now=1.0, load=load)
    assert load.allowed == 1  # back to two only below 0.25 foreign cores
    load = load_after(c, [(0.2, 1.0, 0.2)], now=2.0, load=load)
    assert load.allowed == 2
    load = load_after(c, [(0.2, 1.0, 0.45)], now=3.0, load=load)
    assert load.allowed == 2  # fewer only from half a foreign core
    load = load_after(c, [(0.2, 1.0, 0.6)], now=4.0, load=load)
    assert load.allowed == 1
    c4 = Counters(cpus=4)
    assert load_after(c4, [(0.2, 1.0, 2.0)]).allowed == 2
    assert load_after(c4, [(0.2, 0.0, 4.0)]).allowed == 1  # never fewer than one


def test_load_reads_the_counters_at_most_every_interval_and_needs_enough_ticks():
    c = Counters()
    load = product_threads.ForeignLoad(c.read, c.own, cpus=2, tick=0.01)
    for i in range(100):  # 100 products within 0.05 s: one reading
        load.limit(i * 5e-4)
    assert c.reads == 1
    c.advance(0.01, 0.0, 2.0)  # 2 ticks per CPU: too few to tell, ignored
    load.limit(0.2)
    assert c.reads == 2 and load.allowed == 2
    c.advance(0.2, 0.0, 2.0)
    load.limit(0.4)
    assert load.allowed == 1


def test_load_without_counters_keeps_the_blas_threads():
    c = Counters()
    c.broken = True
    load = load_after(c, [(0.2, 0.0, 2.0)])
    assert load.allowed == 2 and not load.available


def test_load_reader_on_this_machine():
    got = product_threads._read_proc_stat()
    if got is None:
        pytest.skip("no /proc/stat here")
    busy, total = got
    assert 0 <= busy <= total and product_threads._own_seconds() >= 0


def _scripted_load(monkeypatch):
    """The load mode on scripted counters and clock (2 CPUs): a test advances the counters
    (``c.advance``) and sets ``now[0]`` to the reading's time."""
    c = Counters()
    monkeypatch.setattr(product_threads, "MODE", "load")
    monkeypatch.setattr(
        product_threads, "_LOAD", product_threads.ForeignLoad(c.read, c.own, cpus=2, tick=0.01)
    )
    now = [0.0]
    monkeypatch.setattr(product_threads, "_clock", lambda: now[0])
    return c, now


def test_load_mode_runs_products_on_the_allowed_threads(monkeypatch):
    c, now = _scripted_load(monkeypatch)
    lib = FakeLib(2)
    seen = []
    product = lambda: seen.append(lib.n)  # noqa: E731
    product_threads.run(product, 1 << 22, lambda: [lib])
    c.advance(0.2, 1.0, 1.0)
    now[0] = 0.2
    product_threads.run(product, 1 << 22, lambda: [lib])
    c.advance(0.2, 1.0, 0.0)
    now[0] = 0.4
    product_threads.run(product, 1 << 22, lambda: [lib])
    assert seen == [2, 1, 2] and lib.n == 2
    lib1 = FakeLib(1)  # a BLAS held to one thread is left alone
    product_threads.run(lambda: seen.append(lib1.n), 1 << 22, lambda: [lib1])
    assert seen[-1] == 1 and lib1.n == 1


@pytest.mark.parametrize(("m", "k", "n"), [(4, 4, 4), (8, 1 << 16, 8), (1, 1 << 22, 1)])
def test_small_results_of_long_products_reach_the_thread_choice(monkeypatch, m, k, n):
    calls = []
    real = product_threads.run
    monkeypatch.setattr(product_threads, "enabled", True)
    monkeypatch.setattr(product_threads, "run", lambda p, w, c: calls.append(w) or real(p, w, c))
    rng = np.random.default_rng(1)
    x = rng.standard_normal((m, k)).astype(np.float32)
    y = rng.standard_normal((k, n)).astype(np.float32)
    got = blas.matmul(x, y)
    np.testing.assert_allclose(got, x.astype(np.float64) @ y, rtol=1e-4, atol=1e-2)
    assert calls == ([] if m * k * n < product_threads.MIN_WORK else [m * k * n])


def test_graph_products_below_the_split_size_reach_the_thread_choice(monkeypatch):
    calls = []
    real = product_threads.run
    monkeypatch.setattr(product_threads, "enabled", True)
    monkeypatch.setattr(product_threads, "run", lambda p, w, c: calls.append(w) or real(p, w, c))
    rng = np.random.default_rng(2)
    x = rng.standard_normal((128, 200)).astype(np.float32)
    w = rng.standard_normal((96, 200)).astype(np.float32)
    b = rng.standard_normal(96).astype(np.float32)
    with blas.split_products():  # what the graph executor enters
        got = blas.matmul(x, w.T, bias=b)
        xi = np.arange(6 * 4, dtype=np.int64).reshape(6, 4)
        np.testing.assert_array_equal(blas.matmul(xi, xi.T), xi @ xi.T)  # integers: as they are
    np.testing.assert_allclose(got, x.astype(np.float64) @ w.T + b, rtol=1e-4, atol=1e-3)
    assert calls == [128 * 200 * 96]


def test_a_taken_core_keeps_a_graphs_large_products_off_the_split(monkeypatch):
    """A graph's products from SPLIT_MIN_WORK split over Sporeling's threads only while the
    load leaves every one of them a core; with a core taken (a busy neighbour) they go to
    the load-aware choice, which runs them on the BLAS held to the free threads."""
    c, now = _scripted_load(monkeypatch)
    monkeypatch.setattr(product_threads, "enabled", True)
    monkeypatch.setattr(blas, "SPLIT_MIN_WORK", 1)
    monkeypatch.setattr(blas, "max_blocks", lambda: 2)
    lib = FakeLib(2)
    monkeypatch.setattr(blas, "_controllers", lambda: [lib])
    ways = []
    real_split = blas._split
    monkeypatch.setattr(blas, "_split", lambda *a: ways.append("split") or real_split(*a))
    real_plain = blas._plain
    monkeypatch.setattr(blas, "_plain", lambda *a: ways.append(lib.n) or real_plain(*a))
    monkeypatch.setattr(blas, "openblas_on_sporeling_threads", _no_callback)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((67, 300)).astype(np.float32)
    w = rng.standard_normal((301, 300)).astype(np.float32)[:, ::-1]  # not contiguous
    want = x.astype(np.float64) @ w.T.astype(np.float64)
    with blas.split_products():  # what the graph executor enters
        for foreign in (0.0, 1.0, 0.6, 0.1):  # idle, a core taken, still, free again
            c.advance(0.2, 1.0, foreign)
            now[0] += 0.2
            ways.clear()
            got = blas.matmul(x, w.T)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
            assert ways[0] == ("split" if foreign in (0.0, 0.1) else 1), (foreign, ways)
            assert lib.n == 2  # restored
    assert product_threads.threads_free() == 2


def _no_callback():
    """``openblas_on_sporeling_threads`` with no OpenBLAS switched: the split's blocks."""
    from contextlib import nullcontext

    return nullcontext(False)


@pytest.mark.parametrize("mode", ["load", "measure"])
def test_products_below_one_thread_size_run_on_one_thread_in_every_mode(monkeypatch, mode):
    monkeypatch.setattr(product_threads, "MODE", mode)
    c = Counters()  # an idle machine: the load mode alone would keep both threads
    monkeypatch.setattr(
        product_threads, "_LOAD", product_threads.ForeignLoad(c.read, c.own, cpus=2, tick=0.01)
    )
    lib = FakeLib(2)
    seen = []
    product = lambda: seen.append(lib.n)  # noqa: E731
    for work in (product_threads.MIN_WORK, product_threads.ONE_THREAD_BELOW - 1):
        product_threads.run(product, work, lambda: [lib])
        assert lib.n == 2  # restored
    assert seen == [1, 1]
    if mode == "load":
        product_threads.run(product, product_threads.ONE_THREAD_BELOW, lambda: [lib])
        assert seen[-1] == 2


def test_a_dense_layer_product_on_the_real_blas_is_held_to_one_thread(monkeypatch):
    """64x400 @ 400x120 (a LeNet-5 Dense layer): between OpenBLAS's own threshold and
    ONE_THREAD_BELOW, so it reaches the thread choice and runs on one thread; the BLAS's
    thread count is back afterwards and the result equals the float64 product."""
    monkeypatch.setattr(product_threads, "enabled", True)
    calls = []
    real = product_threads.run
    monkeypatch.setattr(product_threads, "run", lambda p, w, c: calls.append(w) or real(p, w, c))
    rng = np.random.default_rng(5)
    x = rng.standard_normal((64, 400)).astype(np.float32)
    w = rng.standard_normal((120, 400)).astype(np.float32)
    b = rng.standard_normal(120).astype(np.float32)
    before = [lib.get_num_threads() for lib in blas._controllers()]
    got = blas.matmul(x, w.T, bias=b)
    assert calls == [64 * 400 * 120]
    assert product_threads.MIN_WORK <= calls[0] < product_threads.ONE_THREAD_BELOW
    np.testing.assert_allclose(got, x.astype(np.float64) @ w.T + b, rtol=1e-4, atol=1e-3)
    assert [lib.get_num_threads() for lib in blas._controllers()] == before
