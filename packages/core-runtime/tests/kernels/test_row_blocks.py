"""Row blocks on their workers: every chunk runs once on a thread numbered below ``blocks``,
a late worker's chunks go to the caller, errors reach the caller, callers on several threads
share the workers, workers sleep between jobs (at once, or after a bounded linger), and a
forked child gets its own."""

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from sporeling.core.kernels.cpu import _rows, _spin


def test_atomic_flags_and_spin_wait():
    f = np.zeros(3, np.int64)
    _spin.store(f, 1, 41)
    assert _spin.load(f, 1) == 41 and f[1] == 41
    assert _spin.spin_until(f, 1, 41, 1)
    assert not _spin.spin_until(f, 1, 42, 1000)
    threading.Timer(0.01, lambda: _spin.store(f, 2, 7)).start()
    assert _spin.spin_until(f, 2, 7, 1 << 40)


def test_fetch_add_is_atomic_across_threads():
    f = np.zeros(1, np.int64)

    def add():
        for _ in range(10_000):
            _spin.fetch_add(f, 0, 1)

    threads = [threading.Thread(target=add) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert f[0] == 40_000 and _spin.fetch_add(f, 0, 2) == 40_000 and f[0] == 40_002


@pytest.mark.parametrize("blocks, chunks", [(1, None), (2, None), (3, None), (8, None), (2, 7)])
def test_every_chunk_runs_once(blocks, chunks):
    seen = []
    lock = threading.Lock()

    def fn(k, lo, hi):
        with lock:
            seen.append((k, lo, hi))

    n = 1 if blocks == 1 else chunks or 2 * blocks
    want = [(1000 * c // n, 1000 * (c + 1) // n) for c in range(n)]
    for _ in range(50):  # workers awake and asleep
        seen.clear()
        _rows.run_blocks(fn, 1000, blocks, chunks)
        assert sorted((lo, hi) for _, lo, hi in seen) == want
        assert all(0 <= k < blocks for k, _, _ in seen)


def test_a_late_worker_leaves_its_chunks_to_the_caller(monkeypatch):
    """A job posted to a worker still busy with another runs none of the chunks once the
    caller has claimed them all, and the caller does not wait for it."""
    _rows.run_blocks(lambda k, lo, hi: None, 4, 2)  # a worker exists
    assert _asleep()  # and is back in the idle list
    (w,) = _rows._take(1)
    started, release = threading.Event(), threading.Event()
    w.post(lambda: (started.set(), release.wait()))
    assert started.wait(5)
    monkeypatch.setattr(_rows, "_take", lambda n: [w])  # run_blocks posts to the busy worker
    ran_on = []
    _rows.run_blocks(lambda k, lo, hi: ran_on.append(threading.get_ident()), 8, 2)
    assert ran_on == [threading.get_ident()] * 4
    release.set()  # the worker finishes, runs its late (empty) job, and is idle again
    assert _asleep()
    with _rows._LOCK:
        _rows._IDLE[:] = list(dict.fromkeys(_rows._IDLE))  # it re-entered once per job


def test_a_worker_is_idle_again_when_the_caller_goes_on(monkeypatch):
    """Once the caller sees every chunk finished, the workers that ran them are back in the
    idle list, even if a worker is held up right after its report (here: a sleep, in the
    GPT step a wait for the GIL or the core). Back there only after reporting, such a worker
    was missing when the next job began, and that job ran on the caller's thread alone."""
    _rows.run_blocks(lambda k, lo, hi: None, 4, 2)  # a worker exists
    assert _asleep()
    fetch_add, wait, misses = _spin.fetch_add, _rows._wait, []

    def held_up_after_reporting(flags, i, value):
        old = fetch_add(flags, i, value)
        if i == _rows._FINISHED and threading.current_thread().name == "sporeling-rows":
            time.sleep(0.005)
        return old

    def checked_wait(state, n):
        wait(state, n)
        with _rows._LOCK:  # the caller's first step after the wait
            misses.append(len(_rows._IDLE) != len(_rows._ALL))

    monkeypatch.setattr(_spin, "fetch_add", held_up_after_reporting)
    monkeypatch.setattr(_rows, "_wait", checked_wait)
    for _ in range(5):
        worker_ran = threading.Event()

        def fn(k, lo, hi, worker_ran=worker_ran):
            if k:
                worker_ran.set()
            else:  # the caller holds its chunk until the worker has run one
                worker_ran.wait(5)

        _rows.run_blocks(fn, 2, 2, chunks=2)
        assert worker_ran.is_set()
    assert misses == [False] * 5


def test_a_worker_error_reaches_the_caller_and_the_pool_recovers():
    def fn(k, lo, hi):
        if lo == 5:
            raise ValueError("chunk at 5 failed")

    with pytest.raises(ValueError, match="chunk at 5 failed"):
        _rows.run_blocks(fn, 10, 2, chunks=2)
    out = np.zeros(10)
    _rows.run_blocks(lambda k, lo, hi: out.__setitem__(slice(lo, hi), out[lo:hi] + 1), 10, 2)
    assert out.tolist() == [1.0] * 10


@pytest.mark.parametrize("linger_us", [0.0, 3.0, 500.0])
def test_callers_on_several_threads(monkeypatch, linger_us):
    """Many back-to-back jobs from several threads, workers sleeping at once, lingering for
    about as long as a hand-off takes (posts land on both sides of the linger's end) or
    lingering throughout."""
    monkeypatch.setattr(_rows, "LINGER_US", linger_us)
    errors = []

    def caller(c):
        out = np.zeros(400)
        for _ in range(200):
            out[:] = 0
            _rows.run_blocks(lambda k, lo, hi: out.__setitem__(slice(lo, hi), c), 400, 2)
            if not (out == c).all():
                errors.append(c)

    threads = [threading.Thread(target=caller, args=(c,)) for c in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def _asleep(timeout=2.0):
    """Whether every worker is idle, asleep on its semaphore, within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ws = _rows._ALL
        if ws and all(w in _rows._IDLE and _spin.load(w.flags, _rows._SLEEPING) for w in ws):
            return True
        time.sleep(0.001)
    return False


def test_workers_sleep_and_wake_again():
    out = np.zeros(4)
    _rows.run_blocks(lambda k, lo, hi: out.__setitem__(slice(lo, hi), 1), 4, 2)
    assert _asleep()  # asleep right after the block
    _rows.run_blocks(lambda k, lo, hi: out.__setitem__(slice(lo, hi), 2), 4, 2)
    assert out.tolist() == [2.0] * 4


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin", reason="needs fork")
def test_a_forked_child_runs_blocks():
    _rows.run_blocks(lambda k, lo, hi: None, 4, 2)  # the parent has workers
    pid = os.fork()
    if pid == 0:  # child: must not wait on the parent's threads
        ok = False
        try:
            out = np.zeros(4)
            _rows.run_blocks(lambda k, lo, hi: out.__setitem__(slice(lo, hi), out[lo:hi] + 1), 4, 2)
            ok = out.tolist() == [1.0] * 4
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_linger_from_the_environment():
    assert _rows._linger_from_env(None) == 0.0
    assert _rows._linger_from_env(" ") == 0.0
    assert _rows._linger_from_env("0") == 0.0
    assert _rows._linger_from_env("250") == 250.0
    for bad in ("-1", "nan", "fast", "1e9"):
        with pytest.raises(ValueError, match=f"SPORELING_WORKER_LINGER_US .*got '{bad}'"):
            _rows._linger_from_env(bad)


class _CountingSemaphore:
    def __init__(self, sem):
        self.sem, self.releases = sem, 0

    def acquire(self):
        return self.sem.acquire()

    def release(self):
        self.releases += 1
        self.sem.release()


def test_a_lingering_worker_takes_jobs_without_a_wake_then_sleeps(monkeypatch):
    """Back-to-back jobs reach a lingering worker through its flag alone (the poster skips
    the semaphore), every chunk still runs once, and once the linger ends it sleeps."""
    _rows.run_blocks(lambda k, lo, hi: None, 4, 2)  # a worker exists
    assert _asleep()
    monkeypatch.setattr(_rows, "LINGER_US", 50_000.0)  # 50 ms: longer than any gap below
    counters = []
    for w in _rows._ALL:
        counters.append(_CountingSemaphore(w.wake))
        monkeypatch.setattr(w, "wake", counters[-1])
    out = np.zeros(64)
    worker_chunks = 0
    for i in range(200):

        def fn(k, lo, hi, i=i):
            nonlocal worker_chunks
            out[lo:hi] = i
            worker_chunks += k > 0
            if k == 0:  # the chunks are Python: let the worker take the GIL for its own
                time.sleep(0.0002)

        _rows.run_blocks(fn, 64, 2, chunks=8)
        assert (out == i).all()
    assert worker_chunks > 0
    # the first post found the worker asleep; a lingering one needs no release (a loaded
    # machine may deschedule the worker past its linger now and then)
    assert sum(c.releases for c in counters) <= 20
    monkeypatch.setattr(_rows, "LINGER_US", 0.0)
    _rows.run_blocks(lambda k, lo, hi: None, 4, 2)  # ends the 50 ms linger for the next job
    assert _asleep(timeout=5.0)


_STRESS = """
import random, sys, threading, time
import numpy as np
from sporeling.core.kernels.cpu import _rows

_rows._CPUS = 5  # four workers, whatever this machine has
errors = []

def caller(c):
    rng = random.Random(c)
    out = np.zeros(97)
    for j in range(600):
        _rows.LINGER_US = rng.choice([0.0, 1.0, 5.0, 20.0, 100.0])
        out[:] = -1
        _rows.run_blocks(lambda k, lo, hi: out.__setitem__(slice(lo, hi), j), 97, rng.randint(2, 5))
        if not (out == j).all():
            errors.append((c, j))
        if j % 50 == 0:
            time.sleep(rng.random() * 2e-3)  # some posts find the workers asleep again

threads = [threading.Thread(target=caller, args=(c,)) for c in range(3)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("ok" if not errors else errors[:5])
"""


def test_hand_off_stress_with_random_lingers_cannot_hang():
    """Thousands of hand-offs from three callers to four workers whose linger ends at random
    around the posts; a lost wake would hang the child, which the timeout turns into a
    failure instead of a hung suite."""
    env = {**os.environ, "SPORELING_WORKER_LINGER_US": "5"}
    try:
        done = subprocess.run(
            [sys.executable, "-c", _STRESS], env=env, capture_output=True, text=True, timeout=120
        )
    except subprocess.TimeoutExpired:
        pytest.fail("row-block hand-offs hung (a lost wake-up)")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"
