"""The fused fake-quant ops (fq_ops): the Numba kernels and the generic array form against
a NumPy float64 reference, per layer and per channel along any axis (odd shapes, a
non-contiguous input, float64), the straight-through gradient, [0, 0] ranges, bad
arguments, and the quantizers built on them against the op-composed ``fake_quant``."""

import numpy as np
import pytest

from sporeling.core import Tensor, grad, ops
from sporeling.goldenstick.quantization import fake_quant, nudge
from sporeling.goldenstick.quantization.fq_ops import (
    _xp_fq,
    _xp_fq_grad,
    fake_quant_range,
    minmax,
)

RNG = np.random.default_rng(17)


def _ref(x, lo, hi, axis, bits, symmetric, narrow):
    """nudge() per channel, then round((clip(x) - nmin) / scale) * scale + nmin, and the
    straight-through mask, in float64 (channel axis first)."""
    xm = np.moveaxis(x.astype(np.float64), axis, 0) if axis is not None else x.reshape(1, -1)
    xm = xm.reshape(xm.shape[0], -1)
    nmin, nmax, scale, _ = nudge(lo, hi, bits, symmetric, narrow)
    nmin, nmax, scale = nmin[:, None], nmax[:, None], scale[:, None]
    q = np.round((np.clip(xm, nmin, nmax) - nmin) / scale) * scale + nmin
    mask = (xm >= nmin) & (xm <= nmax)
    empty = ((np.asarray(lo) == 0) & (np.asarray(hi) == 0))[:, None]
    q, mask = np.where(empty, xm, q), mask | empty

    def back(a):
        if axis is None:
            return a.reshape(x.shape)
        moved = (x.shape[axis],) + tuple(s for i, s in enumerate(x.shape) if i != axis)
        return np.moveaxis(a.reshape(moved), 0, axis)

    return back(q), back(mask), scale


CASES = [
    ((5, 3, 4), None, 8, False, False),
    ((6, 2, 3, 3), 0, 8, True, False),
    ((4, 7, 5), 1, 8, False, True),
    ((3, 4, 5), 2, 4, True, True),
    ((1, 9), 0, 8, True, False),
]


@pytest.mark.parametrize("shape,axis,bits,symmetric,narrow", CASES)
@pytest.mark.parametrize("dtype", ["f4", "f8"])
def test_forward_and_gradient_match_reference(shape, axis, bits, symmetric, narrow, dtype):
    x = (RNG.standard_normal(shape) * RNG.uniform(0.1, 3)).astype(dtype)
    lo_t, hi_t = minmax(Tensor(x), axis)
    xm = np.moveaxis(x, axis, 0).reshape(x.shape[axis], -1) if axis is not None else x.ravel()
    np.testing.assert_array_equal(lo_t.asnumpy(), xm.min(-1).reshape(-1))
    np.testing.assert_array_equal(hi_t.asnumpy(), xm.max(-1).reshape(-1))
    # ranges narrower than the data, so that clipping (and a zero gradient) happens
    lo = lo_t.asnumpy() * 0.7
    hi = hi_t.asnumpy() * 0.8
    lo[0], hi[0] = 0.0, 0.0  # a channel that has seen nothing passes through
    ref, mask, scale = _ref(x, lo, hi, axis, bits, symmetric, narrow)
    args = (Tensor(lo), Tensor(hi), axis, bits, symmetric, narrow)
    out = fake_quant_range(Tensor(x), *args).asnumpy()
    assert out.dtype == x.dtype
    # the kernel multiplies by 1 / scale (as the op-composed form): a tie may flip a level
    diff = np.abs(out - ref.astype(dtype))
    assert diff.max() <= scale.max() * 1.0001 and np.mean(diff > 1e-6) < 0.01
    u = RNG.standard_normal(shape).astype(dtype)
    g = grad(lambda t: ops.reduce_sum(fake_quant_range(t, *args) * Tensor(u)))(Tensor(x))
    np.testing.assert_array_equal(g.asnumpy(), np.where(mask, u, 0).astype(dtype))
    # the generic (array-module) form gives the same results
    params = dict(axis=axis, num_bits=bits, symmetric=symmetric, narrow_range=narrow)
    np.testing.assert_array_equal(_xp_fq(np, x, lo, hi, **params), out)
    np.testing.assert_array_equal(_xp_fq_grad(np, u, x, lo, hi, **params), g.asnumpy())


def test_non_contiguous_input():
    base = RNG.standard_normal((6, 8, 5)).astype("f4")
    x = ops.transpose(Tensor(base), (1, 0, 2))[:, ::2]  # (8, 3, 5), strided
    xn = x.asnumpy()
    lo, hi = minmax(x, 1)
    out = fake_quant_range(x, lo, hi, 1, 8, True, False).asnumpy()
    ref, _, scale = _ref(xn, lo.asnumpy(), hi.asnumpy(), 1, 8, True, False)
    assert np.abs(out - ref).max() <= scale.max() * 1.0001


def test_same_values_as_the_op_composed_fake_quant():
    """The quantizers moved from ``fake_quant`` (core ops) to the fused op: same levels."""
    x = (RNG.standard_normal((16, 3, 7, 7)) * 2 - 0.3).astype("f4")
    lo, hi = minmax(Tensor(x), 0)
    for symmetric in (False, True):
        nmin, nmax, scale, _ = nudge(lo.asnumpy(), hi.asnumpy(), 8, symmetric)
        shape = (-1, 1, 1, 1)
        old = fake_quant(
            Tensor(x), nmin.reshape(shape), nmax.reshape(shape), scale.reshape(shape)
        ).asnumpy()
        new = fake_quant_range(Tensor(x), lo, hi, 0, 8, symmetric, False).asnumpy()
        np.testing.assert_array_equal(new, old)


def test_bad_arguments():
    x = Tensor(np.ones((2, 3), np.float32))
    r = Tensor(np.zeros(2, np.float32))
    with pytest.raises(ValueError, match="'lo' expected shape \\(3,\\)"):
        fake_quant_range(x, r, Tensor(np.zeros(3, np.float32)), 1)
    with pytest.raises(ValueError, match="'axis'"):
        fake_quant_range(x, r, r, 2)
    with pytest.raises(TypeError, match="floating"):
        fake_quant_range(Tensor(np.ones((2, 3), np.int32)), r, r, 0)
    with pytest.raises(ValueError, match="non-empty"):
        minmax(Tensor(np.ones((0, 3), np.float32)))
