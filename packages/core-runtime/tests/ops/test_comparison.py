"""Op-table tests for ``sporeling.core.ops.comparison``."""

import numpy as np
import pytest

from sporeling.core import Tensor, grad, ops
from sporeling_testing import OpRecord, check_forward, records_params

BCAST = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (2, 3))]
ALL = ("float16", "float32", "float64", "int32", "uint8")


def _small_ints(rng, shape, dtype):
    """Few distinct values, so that ties (==) occur often."""
    return rng.integers(0, 3, shape).astype(dtype)


def _with_specials(rng, shape, dtype):
    a = rng.standard_normal(shape).astype(dtype)
    if np.dtype(dtype).kind == "f":
        flat = a.reshape(-1)
        flat[::5] = np.inf
        flat[1::7] = -np.inf
        flat[2::6] = np.nan
    return a


def _rec(name, fn, ref, shapes, dtypes=ALL, make=_small_ints):
    return OpRecord(name, fn, ref, shapes, dtypes=dtypes, make=make, grad=False)


RECORDS = [
    _rec("ne", ops.ne, np.not_equal, BCAST),
    _rec("ge", ops.ge, np.greater_equal, BCAST),
    _rec("gt", ops.gt, np.greater, BCAST),
    _rec("le", ops.le, np.less_equal, BCAST),
    _rec(
        "isfinite",
        ops.isfinite,
        np.isfinite,
        [((3, 5),), ((),)],
        make=_with_specials,
        dtypes=ALL + ("bool",),
    ),
    _rec(
        "isnan",
        ops.isnan,
        np.isnan,
        [((3, 5),), ((),)],
        make=_with_specials,
        dtypes=ALL + ("bool",),
    ),
    _rec(
        "isinf",
        ops.isinf,
        np.isinf,
        [((3, 5),), ((),)],
        make=_with_specials,
        dtypes=ALL + ("bool",),
    ),
    _rec("isclose", ops.isclose, np.isclose, BCAST),
    _rec(
        "isclose_near",
        lambda x, y: ops.isclose(x, x + y * 1e-6, rtol=0.0, atol=2e-6),
        lambda x, y: np.abs(y * 1e-6) <= 2e-6,
        [((4, 5), (4, 5))],
        dtypes=("float64",),
        make=lambda r, s, d: (r.standard_normal(s) * 2).astype(d),
    ),
    _rec(
        "approximate_equal",
        lambda x, y: ops.approximate_equal(x, y, 0.5),
        lambda x, y: np.abs(x.astype(np.float64) - y) < 0.5,
        BCAST,
        dtypes=("float32", "float64", "int32"),
        make=lambda r, s, d: (r.integers(0, 4, s) * 0.3 + 0.01).astype(d),
    ),
]


@pytest.mark.parametrize("rec,dtype", records_params(RECORDS))
def test_forward(rec, dtype, device):
    check_forward(rec, dtype, device)


def test_aliases_match_basic_comparisons():
    x = Tensor([1.0, 2.0, 3.0])
    assert ops.ne(x, 2).tolist() == ops.not_equal(x, 2).tolist() == [True, False, True]
    assert ops.ge(x, 2).tolist() == [False, True, True]
    assert ops.gt(2, x).tolist() == [True, False, False]
    assert ops.le(x, 2.0).dtype == "bool"


def test_isclose_special_values():
    nan, inf = float("nan"), float("inf")
    x1 = Tensor([inf, -inf, inf, nan, 1.0, 0.0])
    x2 = Tensor([inf, -inf, -inf, nan, 1.0 + 2e-5, 1e-9])
    assert ops.isclose(x1, x2).tolist() == [True, True, False, False, False, True]
    assert ops.isclose(x1, x2, equal_nan=True).tolist()[3] is True
    assert ops.isclose(x1, x2, rtol=1e-4).tolist()[4] is True
    # asymmetric like MindSpore and NumPy: the tolerance scales with |x2|
    a, b = Tensor([100.0]), Tensor([100.5])
    assert ops.isclose(a, b, rtol=0.005, atol=0.0).tolist() == [True]
    assert ops.isclose(Tensor([0.0]), Tensor([0.5]), rtol=1.0, atol=0.0).tolist() == [True]
    assert ops.isclose(Tensor([0.5]), Tensor([0.0]), rtol=1.0, atol=0.0).tolist() == [False]


def test_isclose_mixed_dtypes_promote():
    out = ops.isclose(Tensor([1, 2], dtype="int32"), Tensor([1.0, 2.5]))
    assert out.tolist() == [True, False]


def test_results_have_no_gradient():
    x = Tensor([1.0, 2.0], dtype="float64")

    def f(t):
        mask = ops.cast(ops.isclose(t, 1.0), "float64") + ops.cast(ops.isfinite(t), "float64")
        return ops.reduce_sum(mask * t)

    assert grad(f)(x).tolist() == [2.0, 1.0]


def test_same_type_shape():
    x = Tensor([[1.0, 2.0]])
    assert ops.same_type_shape(x, Tensor([[3.0, 4.0]])) is x
    with pytest.raises(TypeError, match="same_type_shape.*input_y.*Float32.*Float64"):
        ops.same_type_shape(x, Tensor([[3.0, 4.0]], dtype="float64"))
    with pytest.raises(ValueError, match=r"same_type_shape.*input_y.*\(1, 2\).*\(2,\)"):
        ops.same_type_shape(x, Tensor([3.0, 4.0]))


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda: ops.isclose(Tensor([1.0]), Tensor([1.0]), rtol=-1.0), ValueError, "isclose.*rtol"),
        (lambda: ops.isclose(Tensor([1.0]), Tensor([1.0]), atol="a"), TypeError, "isclose.*atol"),
        (
            lambda: ops.isclose(Tensor([1.0]), Tensor([1.0]), equal_nan=1),
            TypeError,
            "isclose.*equal_nan",
        ),
        (lambda: ops.isclose(Tensor([True]), Tensor([True])), TypeError, "isclose.*x1"),
        (lambda: ops.isclose(Tensor([1.0, 2.0]), Tensor([1.0, 2.0, 3.0])), ValueError, "isclose"),
        (lambda: ops.isclose("a", Tensor([1.0])), TypeError, "isclose.*x1"),
        (
            lambda: ops.approximate_equal(Tensor([1.0]), Tensor([1.0]), "t"),
            TypeError,
            "approximate_equal.*tolerance",
        ),
        (
            lambda: ops.approximate_equal(Tensor([1.0]), Tensor([1.0]), -1.0),
            ValueError,
            "approximate_equal.*tolerance",
        ),
        (
            lambda: ops.approximate_equal(Tensor([True]), Tensor([False])),
            TypeError,
            "approximate_equal.*'x'",
        ),
        (lambda: ops.same_type_shape([1.0], Tensor([1.0])), TypeError, "same_type_shape.*input_x"),
        (lambda: ops.isnan("a"), TypeError, "isnan.*'x'"),
        (lambda: ops.gt(Tensor([1.0, 2.0]), Tensor([1.0, 2.0, 3.0])), ValueError, "greater"),
    ],
)
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
