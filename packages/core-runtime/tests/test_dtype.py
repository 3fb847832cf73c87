"""The promotion table written in sporeling.core.dtype's docstring, checked entry by entry."""

import numpy as np
import pytest

from sporeling.core import Tensor, dtype, ops

D = dtype

TENSOR_PAIRS = [
    (D.int8, D.int8, D.int8),
    (D.int8, D.int32, D.int32),
    (D.uint8, D.int8, D.int16),
    (D.uint8, D.int64, D.int64),
    (D.uint16, D.int16, D.int32),
    (D.uint8, D.uint32, D.uint32),
    (D.bool_, D.int8, D.int8),
    (D.bool_, D.float16, D.float16),
    (D.int64, D.float16, D.float16),
    (D.int32, D.float32, D.float32),
    (D.float16, D.float32, D.float32),
    (D.float32, D.float64, D.float64),
]


@pytest.mark.parametrize("a,b,want", TENSOR_PAIRS, ids=lambda v: str(v))
def test_tensor_promotion_is_symmetric(a, b, want):
    assert D.promote_types(a, b) == want
    assert D.promote_types(b, a) == want


@pytest.mark.parametrize("a,b,want", TENSOR_PAIRS, ids=lambda v: str(v))
def test_add_follows_promotion(a, b, want):
    x = Tensor(np.ones(2, a.np))
    y = Tensor(np.ones(2, b.np))
    assert (x + y).dtype == want


@pytest.mark.parametrize(
    "tensor_dtype,scalar,want",
    [
        (D.float16, 1.5, D.float16),
        (D.int8, 3, D.int8),
        (D.int32, 1.5, D.float32),
        (D.bool_, 1, D.int64),
        (D.bool_, 1.0, D.float32),
        (D.float64, 2, D.float64),
        (D.uint8, True, D.uint8),
    ],
)
def test_python_scalars_are_weak(tensor_dtype, scalar, want):
    x = Tensor(np.ones(2, tensor_dtype.np))
    assert (x + scalar).dtype == want
    assert (scalar + x).dtype == want


def test_scalars_alone():
    assert D.result_type(1, 2) == D.int64
    assert D.result_type(1, 2.0) == D.float32
    assert D.result_type(True) == D.bool_


def test_tensor_defaults_match_mindspore():
    assert Tensor(1.0).dtype == D.float32
    assert Tensor([1, 2]).dtype == D.int64
    assert Tensor(True).dtype == D.bool_
    assert Tensor(np.array([1.0])).dtype == D.float64  # NumPy arrays keep their dtype
    assert Tensor([1, 2], dtype=D.float16).dtype == D.float16


def test_division_of_integers_gives_float():
    assert ops.div(Tensor([1, 2]), Tensor([2, 2])).dtype == D.float32


def test_to_dtype_accepts_names_and_numpy():
    assert D.to_dtype("float32") is D.float32
    assert D.to_dtype(np.int16) is D.int16
    assert D.to_dtype(float) is D.float32
    with pytest.raises(TypeError, match="dtype"):
        D.to_dtype("object")


def test_dtype_equality_and_repr():
    assert D.float32 == "float32"
    assert D.float32 == np.float32
    assert repr(D.float32) == "Float32"
    assert repr(D.bool_) == "Bool"
