"""``scale_rows``: the models' rows-times-values op against NumPy float64 (forward), exact
equality with the broadcast product, and a numerical gradient check of both inputs."""

from __future__ import annotations

import numpy as np
import pytest

from sporeling.core import Tensor
from sporeling.recommender.models.scale_rows import scale_rows
from sporeling_testing.gradcheck import check_grad


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_forward_equals_the_broadcast_product(dtype):
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((7, 5, 4)).astype(dtype)
    vals = rng.random((7, 5, 1)).astype(dtype)
    got = scale_rows(Tensor(rows), Tensor(vals)).asnumpy()
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, rows * vals)  # the same single products
    want = rows.astype(np.float64) * vals.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == np.float32 else 1e-15)


def test_gradients_of_rows_and_values():
    rng = np.random.default_rng(1)
    check_grad(scale_rows, [rng.standard_normal((3, 4, 2)), rng.random((3, 4, 1))])


def test_other_shapes_fall_back_to_the_broadcast_product():
    rows, vals = np.ones((2, 3, 4), np.float32), np.full((1, 1, 4), 2.0, np.float32)
    np.testing.assert_array_equal(scale_rows(Tensor(rows), Tensor(vals)).asnumpy(), rows * 2)
