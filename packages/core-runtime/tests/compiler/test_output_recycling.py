"""A large graph output of a fused kernel is written into again at the next call once the
caller has dropped it (compiler/executor.py, ``Executable._recycled``), never while the
caller holds it, a view of it or its NumPy array; values always as eager."""

import threading

import numpy as np

from sporeling.core import Tensor, ops
from sporeling.core.compiler import jit


def t(*shape, seed=0):
    return Tensor(np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32))


def f(x, w):
    return ops.exp(x * w) + 1.0  # one fused kernel; its output is the graph's


def address(a):
    return a.__array_interface__["data"][0]


def want(x, w):
    return np.exp(x.asnumpy().astype(np.float64) * w.asnumpy()) + 1


def test_a_dropped_output_is_written_into_again():
    x, w = t(256, 128), t(128, seed=1)  # 128 KiB: above the planned minimum
    jf = jit(f)
    jf(x, w)
    first = address(jf(x, w).asnumpy())  # only its address is kept
    x2 = t(256, 128, seed=2)
    out = jf(x2, w)
    exe = next(iter(jf._cache.values())).exe
    assert any(exe.recyclable)  # the fused kernel's output
    assert address(out.asnumpy()) == first
    np.testing.assert_allclose(out.asnumpy(), want(x2, w), rtol=1e-6)


def test_an_output_still_held_is_never_written_into():
    x, w = t(256, 128), t(128, seed=1)
    jf = jit(f)
    jf(x, w)
    held = jf(x, w)  # the Tensor
    array = jf(x, w).asnumpy()  # its NumPy array
    view = jf(x, w).asnumpy()[3:5, ::2]  # a view of another one
    kept = [held.asnumpy().copy(), array.copy(), view.copy()]
    outs = [jf(t(256, 128, seed=s), w) for s in range(3, 6)]
    np.testing.assert_array_equal(held.asnumpy(), kept[0])
    np.testing.assert_array_equal(array, kept[1])
    np.testing.assert_array_equal(view, kept[2])
    taken = {address(held.asnumpy()), address(array), address(view.base)}
    assert not taken & {address(o.asnumpy()) for o in outs}
    for s, o in zip(range(3, 6), outs, strict=True):
        np.testing.assert_allclose(o.asnumpy(), want(t(256, 128, seed=s), w), rtol=1e-6)


def test_small_outputs_and_threads():
    """Outputs below the planned minimum are fresh arrays; runs on several threads each get
    a buffer of their own (results as eager)."""
    jf = jit(f)
    x, w = t(8, 8), t(8, seed=1)
    assert not any(jf(x, w) is None for _ in range(2))
    exe = next(iter(jf._cache.values())).exe
    assert not any(exe.recyclable)
    big = jit(f)
    xs = [t(256, 128, seed=s) for s in range(4)]
    w = t(128, seed=1)
    big(xs[0], w)
    errors = []

    def work(k):
        for _ in range(20):
            got = big(xs[k], w).asnumpy()
            if not np.allclose(got, want(xs[k], w), rtol=1e-6):
                errors.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
