"""Tensor and Parameter: construction, metadata, conversion, devices, in-place updates."""

import numpy as np
import pytest

from sporeling.core import Parameter, Tensor, get_context, grad, ops, set_context
from sporeling.core import dtype as mstype


def test_construction_and_metadata():
    x = Tensor([[1.0, 2.0], [3.0, 4.0]])
    assert x.shape == (2, 2)
    assert x.ndim == 2 and x.size == 4 and len(x) == 2
    assert x.device == "CPU"
    np.testing.assert_array_equal(x.asnumpy(), [[1, 2], [3, 4]])
    assert Tensor(shape=(2, 3), dtype="float16", init="ones").asnumpy().sum() == 6
    assert Tensor([1, 2, 3, 4], shape=(2, 2)).shape == (2, 2)


def test_bad_construction_errors():
    with pytest.raises(ValueError, match="input_data"):
        Tensor()
    with pytest.raises(TypeError, match="input_data"):
        Tensor(["a", "b"])
    with pytest.raises(ValueError, match="init"):
        Tensor(shape=(2,), init="bogus")


def test_python_operators():
    x = Tensor([1.0, 2.0, 4.0])
    assert (x + 1).tolist() == [2, 3, 5]
    assert (1 - x).tolist() == [0, -1, -3]
    assert (x * x).tolist() == [1, 4, 16]
    assert (2 / x).tolist() == [2, 1, 0.5]
    assert (x**2).tolist() == [1, 4, 16]
    assert (-x).tolist() == [-1, -2, -4]
    assert (x @ x).item() == 21
    assert (np.ones(3, np.float32) + x).tolist() == [2, 3, 5]


def test_scalar_conversions():
    t = Tensor(3.5)
    assert float(t) == 3.5 and int(t) == 3 and bool(t)
    with pytest.raises(ValueError, match="ambiguous"):
        bool(Tensor([1.0, 2.0]))


def test_indexing_forward():
    a = np.arange(24.0).reshape(2, 3, 4)
    x = Tensor(a)
    np.testing.assert_array_equal(x[1].asnumpy(), a[1])
    np.testing.assert_array_equal(x[:, 1:, ::2].asnumpy(), a[:, 1:, ::2])
    np.testing.assert_array_equal(x[..., -1].asnumpy(), a[..., -1])
    np.testing.assert_array_equal(x[None, 0, [2, 0]].asnumpy(), a[None, 0, [2, 0]])
    np.testing.assert_array_equal(x[x > 10].asnumpy(), a[a > 10])
    with pytest.raises(IndexError, match="getitem"):
        x[5]


def test_setitem_updates_and_keeps_gradients():
    x = Tensor(np.zeros((2, 3), np.float32))
    x[0, 1:] = 7
    assert x.tolist() == [[0, 7, 7], [0, 0, 0]]

    def f(w):
        y = w * 2
        y[0] = 0.0
        return y.sum()

    g = grad(f)(Tensor(np.ones((2, 3), np.float32)))
    assert g.tolist() == [[0, 0, 0], [2, 2, 2]]


def test_setitem_into_leaf_requiring_grad_is_refused():
    p = Parameter(np.ones(3, np.float32), name="p")
    with pytest.raises(RuntimeError, match="leaf"):
        p[0] = 2.0


def test_parameter_basics():
    p = Parameter(np.ones((2, 2), np.float32), name="w")
    assert p.name == "w" and p.requires_grad
    p.set_data(Tensor(np.zeros((3,), np.float32)))
    assert p.shape == (3,) and p.name == "w"
    q = p.clone()
    q.assign_value(Tensor(np.ones(3, np.float32)))
    assert p.tolist() == [0, 0, 0] and q.tolist() == [1, 1, 1]
    with pytest.raises(ValueError, match="assign_value"):
        q.assign_value(Tensor(np.ones(4, np.float32)))


def test_parameter_does_not_write_into_the_callers_array():
    # MindSpore's Parameter copies its input; in-place updates (assign, the optimizers'
    # fused updates) used to write into the NumPy array a Parameter was built from
    a = np.zeros((2, 3), np.float32)
    p = Parameter(a, name="p")
    ops.assign(p, Tensor(np.ones((2, 3), np.float32)))
    ops.assign_add(p, Tensor(np.ones((2, 3), np.float32)))
    np.testing.assert_array_equal(a, 0.0)
    np.testing.assert_array_equal(p.asnumpy(), 2.0)
    view = np.zeros((4, 3), np.float32)[1:3]  # a view of another array: copied as well
    q = Parameter(view, name="q")
    ops.assign(q, Tensor(np.ones((2, 3), np.float32)))
    np.testing.assert_array_equal(view, 0.0)


def test_tensor_copies_a_numpy_array_and_from_numpy_shares_it():
    # MindSpore's Tensor(array) copies (a batch buffer the caller refills must not change
    # the Tensors made from it); Tensor.from_numpy is its sharing constructor
    buf = np.zeros((2, 3), np.float32)
    kept = [Tensor(buf)]
    buf[:] = 7.0
    kept.append(Tensor(buf[:, 1:]))  # a view is copied as well
    buf[:] = 9.0
    np.testing.assert_array_equal(kept[0].asnumpy(), 0.0)
    np.testing.assert_array_equal(kept[1].asnumpy(), 7.0)
    assert kept[1].asnumpy().flags.c_contiguous
    ops.assign(kept[0], Tensor(np.ones((2, 3), np.float32)))
    np.testing.assert_array_equal(buf, 9.0)  # in-place ops do not reach the caller's array
    same = Tensor(buf, dtype=mstype.float32)  # asarray with the same dtype: still a copy
    assert not np.shares_memory(same.asnumpy(), buf)
    shared = Tensor.from_numpy(buf)
    buf[0, 0] = -1.0
    assert shared.asnumpy()[0, 0] == -1.0 and shared.dtype == mstype.float32
    strided = Tensor.from_numpy(buf[:, ::2])  # not C-contiguous: made contiguous (a copy)
    assert strided.shape == (2, 2) and strided.asnumpy().flags.c_contiguous
    assert Tensor.from_numpy(np.ones((), np.float32)).shape == ()
    with pytest.raises(TypeError, match="from_numpy: argument 'array' expected a numpy.ndarray"):
        Tensor.from_numpy([1.0, 2.0])


def test_set_data_copies_once_and_keeps_the_parameters_dtype():
    p = Parameter(np.zeros(3, np.float32), name="p")
    src = np.arange(3, dtype=np.float64)
    p.set_data(src)
    src[:] = -1.0
    assert p.dtype == mstype.float32 and p.tolist() == [0.0, 1.0, 2.0]


def test_device_moves_keep_values_and_gradients():
    # The GPU device is the NumPy stand-in here unless a real GPU is present.
    x = Tensor([1.0, 2.0])
    y = x.to("GPU")
    assert y.device == "GPU"
    np.testing.assert_array_equal(y.to("CPU").asnumpy(), [1, 2])
    g = grad(lambda t: (t.to("GPU") * 3).to("CPU").sum())(x)
    assert g.tolist() == [3, 3]


def test_mixing_devices_is_a_clear_error():
    with pytest.raises(ValueError, match="add: all inputs must be on one device"):
        Tensor([1.0]) + Tensor([1.0], device="GPU")


def test_set_context_device_target():
    try:
        set_context(device_target="GPU")
        assert Tensor([1.0]).device == "GPU"
    finally:
        set_context(device_target="CPU")
    assert get_context("device_target") == "CPU"
    with pytest.raises(ValueError, match="device_target"):
        set_context(device_target="TPU")
    with pytest.raises(ValueError, match="unknown setting"):
        set_context(bogus=1)


def test_op_errors_name_op_and_argument():
    with pytest.raises(ValueError, match=r"add: shapes \(2,\) and \(3,\) cannot be broadcast"):
        Tensor([1.0, 2.0]) + Tensor([1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="exp: input 0 expected a Tensor|exp: argument 'x'"):
        ops.exp("a")
    with pytest.raises(ValueError, match="reshape: argument 'shape'"):
        ops.reshape(Tensor([1.0, 2.0]), (3,))
    with pytest.raises(ValueError, match="reduce_sum: argument 'axis'"):
        ops.reduce_sum(Tensor([1.0]), 3)
    with pytest.raises(ValueError, match="matmul: contracted dimensions differ"):
        ops.matmul(Tensor(np.ones((2, 3))), Tensor(np.ones((2, 3))))
    with pytest.raises(TypeError, match="select: argument 'cond'"):
        ops.select(Tensor([1.0]), Tensor([1.0]), Tensor([2.0]))
