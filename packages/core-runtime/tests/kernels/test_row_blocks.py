"""Row blocks on their workers: every block runs once, errors reach the caller, callers on
several threads share the workers, workers sleep between blocks, and a forked child gets its
own."""

import os
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


@pytest.mark.parametrize("blocks", [1, 2, 3, 8])
def test_every_block_runs_once(blocks):
    seen = []
    lock = threading.Lock()

    def fn(k, lo, hi):
        with lock:
            seen.append((k, lo, hi))

    for _ in range(50):  # workers spinning and workers asleep
        seen.clear()
        _rows.run_blocks(fn, 1000, blocks)
        want = [(k, 1000 * k // blocks, 1000 * (k + 1) // blocks) for k in range(blocks)]
        assert sorted(seen) == want


def test_a_worker_error_reaches_the_caller_and_the_pool_recovers():
    def fn(k, lo, hi):
        if k == 1:
            raise ValueError("block 1 failed")

    with pytest.raises(ValueError, match="block 1 failed"):
        _rows.run_blocks(fn, 10, 2)
    out = np.zeros(10)
    _rows.run_blocks(lambda k, lo, hi: out.__setitem__(slice(lo, hi), k + 1), 10, 2)
    assert out.tolist() == [1.0] * 5 + [2.0] * 5


def test_callers_on_several_threads():
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
    """Whether every worker sleeps on its semaphore within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _rows._ALL and all(_spin.load(w.flags, _rows._SLEEPING) for w in _rows._ALL):
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
            _rows.run_blocks(lambda k, lo, hi: out.__setitem__(slice(lo, hi), k + 1), 4, 2)
            ok = out.tolist() == [1.0, 1.0, 2.0, 2.0]
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
