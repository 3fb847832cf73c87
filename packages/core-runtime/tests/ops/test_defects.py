"""Regression tests for the defects of the hardening issue (#20): each fails on the code
before its fix (a silent wrong result, a crash or an error naming no op)."""

import numpy as np
import pytest

from sporeling.core import Tensor, ops

# ---- silent wrong results ----------------------------------------------------------------


@pytest.mark.parametrize("fn", [ops.reduce_mean, ops.mean])
def test_mean_of_float16_accumulates_in_float32(fn):
    x = np.full((4, 3), 60000, np.float16)
    out = fn(Tensor(x))
    assert out.dtype == Tensor(x).dtype
    assert float(out) == pytest.approx(60000, rel=1e-3)
    np.testing.assert_allclose(fn(Tensor(x), 0).asnumpy(), np.full(3, 60000, np.float16))
    assert np.isfinite(Tensor(x).mean().asnumpy())


def test_mean_of_float16_gradient_stays_float16():
    from sporeling.core import grad

    g = grad(lambda t: ops.mean(t))(Tensor(np.ones((2, 2), np.float16)))
    assert g.dtype == Tensor(np.ones(1, np.float16)).dtype
    np.testing.assert_allclose(g.asnumpy(), np.full((2, 2), 0.25))


def test_cast_to_none_is_refused():
    with pytest.raises(TypeError, match="cast.*dtype.*None"):
        ops.cast(Tensor([1.0, 2.0]), None)


@pytest.mark.parametrize("shape", ["32", (32.0,), 32.0, (4.0, 8), (True, 32), [4, 8.5]])
def test_reshape_refuses_non_int_shapes(shape):
    with pytest.raises(TypeError, match="reshape.*shape"):
        ops.reshape(Tensor(np.arange(32.0)), shape)


def test_reshape_accepts_int_sequences_and_int_tensors():
    x = Tensor(np.arange(32.0))
    assert ops.reshape(x, [4, np.int64(8)]).shape == (4, 8)
    assert ops.reshape(x, Tensor(np.array([8, -1]))).shape == (8, 4)
    assert ops.reshape(x, 32).shape == (32,)


# ---- errors that named no op, valid inputs that were refused -----------------------------

S = Tensor(np.float32(2.0))


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: ops.concat((S, S), 0), ValueError, "concat: input 0 is 0-d"),
        (lambda: ops.amax(S, 1), ValueError, "amax: argument 'axis'"),
        (lambda: ops.logsumexp(S, 1), ValueError, "logsumexp: argument 'axis'"),
        (lambda: ops.zeros((2,), np.str_), TypeError, "zeros: argument .type.*str"),
        (lambda: ops.arange(0, float("nan"), 1), ValueError, "arange: argument 'stop'.*finite"),
        (lambda: ops.arange(float("inf")), ValueError, "arange: argument 'stop'.*finite"),
        (
            lambda: ops.lerp(Tensor([1.0, 2.0]), Tensor([1.0, 2.0, 3.0]), 0.5),
            ValueError,
            "^lerp: shapes",
        ),
        (
            lambda: ops.lerp(Tensor([1.0, 2.0]), Tensor([1.0, 2.0]), Tensor([1.0, 2.0, 3.0])),
            ValueError,
            "^lerp:",
        ),
        (
            lambda: ops.where(Tensor([True, False]), Tensor([1.0, 2.0, 3.0]), Tensor([1.0])),
            ValueError,
            "^where: shapes",
        ),
        (lambda: ops.where(Tensor([1.0, 0.0]), S, S), TypeError, "^where:"),
        (lambda: ops.zeros((10**6, 10**6)), ValueError, "^zeros: argument 'shape'.*GiB"),
        (lambda: ops.ones((2**62, 4)), ValueError, "^ones: argument 'shape'"),
        (lambda: ops.eye(2**31, 2**31, np.float32), ValueError, "^eye:"),
        (lambda: ops.tile(Tensor([1.0]), (2**40,)), ValueError, "^tile: argument 'multiples'"),
    ],
)
def test_errors_name_the_op_called(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


@pytest.mark.parametrize("index", [np.array([5]), np.array(7)])
def test_setitem_out_of_range_tensor_index_names_setitem(index):
    t = Tensor(np.zeros(3))
    with pytest.raises(IndexError, match="^setitem: index"):
        t[Tensor(index)] = 1.0


def test_conv2d_on_an_empty_batch_gives_the_empty_result_and_gradients():
    from sporeling.core import grad

    x = Tensor(np.ones((0, 3, 8, 8), np.float32))
    w = Tensor(np.ones((4, 3, 3, 3), np.float32))
    assert ops.conv2d(x, w).shape == (0, 4, 6, 6)
    gx, gw = grad(lambda a, b: ops.reduce_sum(ops.conv2d(a, b)), (0, 1))(x, w)
    assert gx.shape == (0, 3, 8, 8)
    np.testing.assert_array_equal(gw.asnumpy(), np.zeros((4, 3, 3, 3)))


@pytest.mark.parametrize("axis", [0, 1])
def test_cumsum_on_an_empty_batch(axis):
    out = ops.cumsum(Tensor(np.ones((0, 3), np.float32)), axis)
    assert out.shape == (0, 3)


def test_a_failed_allocation_names_the_op():
    from sporeling.core._primitive import Primitive, ShapedArray

    def impl(xp, x):
        raise MemoryError("Unable to allocate 4 TiB")

    prim = Primitive("huge_op", "opaque", lambda x: ShapedArray(x.shape, x.dtype), impl=impl)
    with pytest.raises(MemoryError, match="^huge_op: not enough memory"):
        prim.bind(Tensor([1.0]))


def test_col2im_refuses_bool_blocks():
    # overlapping blocks are summed; on bool that was a logical or (True + True = True)
    blocks = Tensor(np.ones((1, 1, 4, 4), bool))
    with pytest.raises(TypeError, match="col2im.*input_x"):
        ops.col2im(blocks, (3, 3), 2, 1, 0, 1)
