"""ReLU forward and same-shape add on row blocks: bit-equal to NumPy's maximum(x, 0) and
x + y (NaN payloads, signed zeros, infinities, odd sizes and block bounds), None where they
do not apply (small, strided, broadcast, integer, one thread, switched off), and the ops
(eager and graph mode) taking them for large inputs and NumPy for the rest. ReLU forwards
from RELU_MIN elements also run on one thread (one Numba loop, no blocks)."""

import numpy as np
import pytest

from sporeling.core import Tensor, ops
from sporeling.core.compiler import jit
from sporeling.core.kernels.cpu import _jobs, _rows, relu_add

BIG = relu_add.PARALLEL_MIN


@pytest.fixture
def two_blocks(monkeypatch):
    """Two row blocks whatever this machine's thread count; the blocks each call used."""
    calls = []
    real = _rows.run_blocks

    def run_blocks(fn, rows, blocks, chunks=None):
        calls.append((rows, blocks))
        real(fn, rows, blocks, chunks)

    real_job = _jobs.run

    def run_job(fn, args, rows, blocks, chunks=None):  # float32: workers without the GIL
        calls.append((rows, blocks))
        real_job(fn, args, rows, blocks, chunks)

    monkeypatch.setattr(relu_add, "n_blocks", lambda rows, elements: 2)
    monkeypatch.setattr(relu_add, "SPLIT_MIN", 0)
    monkeypatch.setattr(relu_add, "run_blocks", run_blocks)
    monkeypatch.setattr(_jobs, "run", run_job)
    monkeypatch.setattr(relu_add, "ENABLED", True)
    return calls


def _specials(dtype, size, rng):
    x = rng.standard_normal(size).astype(dtype)
    ints = np.int32 if dtype == np.float32 else np.int64
    nan_payload = np.array([0x7FC00123 if dtype == np.float32 else 0x7FF8000000000123], ints)
    special = np.array([-0.0, 0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-40, -1e-40], dtype)
    special = np.concatenate([special, nan_payload.view(dtype), (-nan_payload.view(dtype))])
    # at the start, the end, around the middle (a block bound) and at random places
    at = np.concatenate([np.arange(11), size - 11 + np.arange(11), size // 2 - 5 + np.arange(11)])
    at = np.concatenate([at, rng.integers(0, size, 200)])
    x[at] = np.resize(special, at.size)
    return x


def _bits(a):
    return a.view(np.int32 if a.dtype == np.float32 else np.int64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(BIG,), (BIG + 7,), (3, 7, 12487), (64, 16, 32, 32)])
def test_bit_equal_to_numpy(two_blocks, dtype, shape):
    rng = np.random.default_rng(sum(shape))
    size = int(np.prod(shape))
    x = _specials(dtype, size, rng).reshape(shape)
    y = _specials(dtype, size, rng)[::-1].copy().reshape(shape)
    got = relu_add.relu(x)
    assert got is not None and got.shape == shape and got.dtype == dtype
    np.testing.assert_array_equal(_bits(got), _bits(np.maximum(x, dtype(0))))
    got = relu_add.add(x, y)
    assert got is not None and got.shape == shape and got.dtype == dtype
    np.testing.assert_array_equal(_bits(got), _bits(np.add(x, y)))
    assert two_blocks == [(size, 2)] * 2


def test_not_applicable_returns_none(two_blocks, monkeypatch):
    x = np.ones((2, BIG), np.float32)
    assert relu_add.relu(np.ones(relu_add.RELU_MIN - 1, np.float32)) is None  # small
    assert relu_add.relu(x[:, ::2]) is None  # strided
    assert relu_add.relu(x.T) is None  # F order
    assert relu_add.relu(np.ones(BIG, np.int32)) is None  # integers
    assert relu_add.relu(np.ones(BIG, np.float16)) is None
    assert relu_add.add(x, x[:1]) is None  # broadcasting
    assert relu_add.add(x, x.astype(np.float64)) is None  # mixed dtypes
    assert relu_add.add(x, x.T.copy().T) is None  # one strided
    assert two_blocks == []
    monkeypatch.setattr(relu_add, "ENABLED", False)
    assert relu_add.relu(x) is None and relu_add.add(x, x) is None
    monkeypatch.setattr(relu_add, "ENABLED", True)
    monkeypatch.setattr(relu_add, "n_blocks", lambda rows, elements: 1)  # one thread
    assert relu_add.add(x, x) is None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [1 << 16, (1 << 16) + 5, 301_056])
def test_relu_on_one_thread_below_the_split(two_blocks, monkeypatch, dtype, size):
    """From RELU_MIN elements and below SPLIT_MIN: one loop on this thread (no blocks, no
    job), bit-equal to NumPy's maximum (NaN payloads, signed zeros); the op takes it too."""
    monkeypatch.setattr(relu_add, "SPLIT_MIN", 1 << 20)
    rng = np.random.default_rng(size)
    x = _specials(dtype, size, rng)
    got = relu_add.relu(x)
    np.testing.assert_array_equal(_bits(got), _bits(np.maximum(x, dtype(0))))
    t = Tensor(x.reshape(2, -1) if size % 2 == 0 else x)
    for _ in range(2):  # the plan's first call and its memoized fast path
        np.testing.assert_array_equal(
            _bits(ops.relu(t).asnumpy()).reshape(-1), _bits(np.maximum(x, dtype(0)))
        )
    assert two_blocks == []


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_eager_ops_take_the_blocks_for_large_contiguous_inputs(two_blocks, dtype):
    rng = np.random.default_rng(1)
    size = BIG + 3
    xa = _specials(dtype, size, rng).reshape(1, size)
    ya = rng.standard_normal((1, size)).astype(dtype)
    for _ in range(2):  # the plan's first call and its memoized fast path
        np.testing.assert_array_equal(
            _bits(ops.relu(Tensor(xa)).asnumpy()), _bits(np.maximum(xa, 0))
        )
        np.testing.assert_array_equal(_bits((Tensor(xa) + Tensor(ya)).asnumpy()), _bits(xa + ya))
        np.testing.assert_array_equal(
            _bits(ops.add(Tensor(xa), Tensor(ya)).asnumpy()), _bits(xa + ya)
        )
    assert len(two_blocks) == 6


def test_eager_ops_fall_back_for_strided_broadcast_and_small(two_blocks):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((4, 2 * BIG // 4 + 2)).astype(np.float32)
    strided = Tensor(a)[:, ::2]  # BIG + 4 elements, not contiguous
    assert strided.size >= BIG
    np.testing.assert_array_equal(ops.relu(strided).asnumpy(), np.maximum(a[:, ::2], 0))
    np.testing.assert_array_equal((strided + strided).asnumpy(), a[:, ::2] + a[:, ::2])
    row = rng.standard_normal((1, a.shape[1])).astype(np.float32)
    np.testing.assert_array_equal((Tensor(a) + Tensor(row)).asnumpy(), a + row)  # broadcast
    small = rng.standard_normal((3, 5)).astype(np.float32)
    np.testing.assert_array_equal(ops.relu(Tensor(small)).asnumpy(), np.maximum(small, 0))
    ints = rng.integers(-5, 5, (2, BIG)).astype(np.int32)
    np.testing.assert_array_equal((Tensor(ints) + Tensor(ints)).asnumpy(), ints + ints)
    assert two_blocks == []


def test_graph_mode_relu_and_add_take_the_blocks(two_blocks):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, BIG // 2 + 5)).astype(np.float32)
    y = rng.standard_normal(x.shape).astype(np.float32)

    def f(a, b):  # two groups of one op each: not fused, each runs its own impl
        return ops.relu(a), a + b

    r, s = jit(f)(Tensor(x), Tensor(y))
    np.testing.assert_array_equal(r.asnumpy(), np.maximum(x, 0))
    np.testing.assert_array_equal(s.asnumpy(), x + y)
    assert (x.size, 2) in two_blocks


def test_relu_gradient_through_the_blocks(two_blocks):
    from sporeling.core import grad

    rng = np.random.default_rng(4)
    x = rng.standard_normal(BIG).astype(np.float64)
    g = grad(lambda t: ops.reduce_sum(ops.relu(t) * 3.0))(Tensor(x)).asnumpy()
    np.testing.assert_array_equal(g, np.where(x > 0, 3.0, 0.0))
    assert two_blocks
