"""Regression tests for the custom-op defects of the hardening issue (#20): compiled
kernels indexing out of bounds, a rank mismatch surfacing as a raw Numba error, fastmath
failing to compile, a float silently truncated into an int output."""
# ruff: noqa: F821 - Hybrid DSL intrinsics (output_tensor, parallel, ...) are injected

import re

import numpy as np
import pytest

from sporeling.core import Tensor
from sporeling.customop import Custom, DSLTypeError, DSLValueError, kernel


@kernel
def shifted(x):
    y = output_tensor(x.shape, x.dtype)
    for i in range(x.shape[0]):
        y[i] = x[i + 3]
    return y


@kernel
def shifted_parallel(x):
    y = output_tensor(x.shape, x.dtype)
    for i in parallel(x.shape[0]):
        for j in range(x.shape[1]):
            y[i, j] = x[i, j + 1]
    return y


@kernel
def writes_past_end(x):
    y = output_tensor(x.shape, x.dtype)
    for i in parallel(x.shape[0]):
        y[i + 1] = x[i]
    return y


@kernel(compile_attrs={"boundscheck": False})
def unchecked(x):
    y = output_tensor(x.shape, x.dtype)
    for i in parallel(x.shape[0]):
        y[i] = x[i]
    return y


@kernel
def two_indices_into_1d(x):
    y = output_tensor(x.shape, x.dtype)
    for i in range(x.shape[0]):
        y[i, 0] = x[i]
    return y


@kernel(compile_attrs={"fastmath": True})
def fast_double(x):
    y = output_tensor(x.shape, x.dtype)
    for i in parallel(x.shape[0]):
        y[i] = x[i] * 2.0
    return y


@kernel
def float_into_int(x):
    y = output_tensor(x.shape, "int32")
    for i in range(x.shape[0]):
        y[i] = x[i] * 2.5
    return y


@kernel
def cast_into_int(x):
    y = output_tensor(x.shape, "int32")
    for i in range(x.shape[0]):
        y[i] = int32(x[i] * 2.5)
    return y


@pytest.mark.parametrize(
    ("k", "shape", "line"),
    [
        (shifted, (8,), "y[i] = x[i + 3]"),
        (shifted_parallel, (64, 5), "y[i, j] = x[i, j + 1]"),
        (writes_past_end, (64,), "y[i + 1] = x[i]"),
    ],
)
@pytest.mark.parametrize("target", ["cpu", "pyfunc"])
def test_out_of_bounds_index_raises_with_the_kernel_line(k, shape, line, target):
    x = np.ones(shape, np.float32)
    with pytest.raises(IndexError, match=r"(?s)out of bounds.*" + re.escape(line)):
        k.run(x, target=target) if target == "cpu" else Custom(k, func_type="pyfunc")(Tensor(x))
    with pytest.raises(IndexError, match="out of bounds"):
        Custom(k)(Tensor(x))


def test_bounds_checks_are_generated_unless_switched_off():
    assert "_ck(" in shifted_parallel.source("cpu")
    assert "_ck(" not in unchecked.source("cpu")
    np.testing.assert_array_equal(unchecked.run(np.arange(4.0), target="cpu"), np.arange(4.0))


def test_in_bounds_kernel_still_runs_parallel():
    # the checks record instead of raising inside prange, so Numba keeps the loop parallel
    # (a NumbaPerformanceWarning, an error under the suite's filterwarnings, would say not)
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(fast_double.run(x[:, 0].copy(), target="cpu"), x[:, 0] * 2)
    assert fast_double._parallel and "prange" in fast_double.source("cpu")


@pytest.mark.parametrize("target", ["cpu", "pyfunc"])
def test_wrong_number_of_indices_names_the_line(target):
    with pytest.raises(DSLValueError, match=r"(?s)'y' has 1 dimension.*2 indices.*y\[i, 0\]"):
        two_indices_into_1d.run(np.ones(4, np.float32), target=target)


def test_fastmath_kernel_compiles_and_runs():
    x = np.arange(6, dtype=np.float32)
    np.testing.assert_array_equal(fast_double.run(x, target="cpu"), x * 2)


@pytest.mark.parametrize("target", ["cpu", "pyfunc"])
def test_float_stored_into_int_output_is_refused(target):
    x = np.arange(4, dtype=np.float32)
    with pytest.raises(DSLTypeError, match=r"(?s)float value is stored into 'y'.*x\[i\] \* 2.5"):
        float_into_int.run(x, target=target)
    np.testing.assert_array_equal(cast_into_int.run(x, target=target), [0, 2, 5, 7])
