"""Op-table tests for the primitives the rest of the library builds on."""

import numpy as np
import pytest

from sporeling.core import Tensor, ops
from sporeling_testing import OpRecord, check_backward, check_forward, records_params
from sporeling_testing.optable import positive

BCAST = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (2, 3))]

RECORDS = [
    OpRecord("add", ops.add, np.add, BCAST, dtypes=("float16", "float32", "float64", "int32")),
    OpRecord("sub", ops.sub, np.subtract, BCAST, dtypes=("float32", "float64", "int64")),
    OpRecord("mul", ops.mul, np.multiply, BCAST, dtypes=("float32", "float64", "int8"), order=2),
    OpRecord(
        "div",
        ops.div,
        np.divide,
        BCAST,
        make=[
            np.random.Generator.standard_normal
            and (lambda r, s, d: r.standard_normal(s).astype(d)),
            positive,
        ],
        order=2,
    ),
    OpRecord("neg", ops.neg, np.negative, [((3, 4),)], dtypes=("float32", "int32")),
    OpRecord("exp", ops.exp, np.exp, [((3, 4),), ((),)], order=2),
    OpRecord("log", ops.log, np.log, [((3, 4),)], make=positive, order=2),
    OpRecord("sqrt", ops.sqrt, np.sqrt, [((3, 4),)], make=positive, order=2),
    OpRecord("square", ops.square, np.square, [((3, 4),)]),
    OpRecord("pow", ops.pow, np.power, [((3, 4), (3, 4)), ((3, 4), ())], make=positive, order=2),
    OpRecord(
        "matmul",
        ops.matmul,
        np.matmul,
        [
            ((3, 4), (4, 5)),
            ((2, 3, 4), (4, 2)),
            ((4,), (4, 3)),
            ((3, 4), (4,)),
            ((4,), (4,)),
            ((2, 1, 3, 4), (5, 4, 2)),
        ],
        order=2,
    ),
    OpRecord(
        "dense",
        ops.dense,
        lambda x, w: x @ w.T,
        [((3, 4), (5, 4)), ((2, 3, 4), (5, 4)), ((4,), (2, 4))],
        order=2,
    ),
    OpRecord("dense_bias", ops.dense, lambda x, w, b: x @ w.T + b, [((3, 4), (5, 4), (5,))]),
    OpRecord("reduce_sum", lambda x: ops.reduce_sum(x, 1), lambda x: np.sum(x, 1), [((3, 4),)]),
    OpRecord("reduce_sum_all", lambda x: ops.reduce_sum(x), np.sum, [((3, 4),), ((2, 3, 4),)]),
    OpRecord(
        "reduce_sum_keep",
        lambda x: ops.reduce_sum(x, (0, 2), True),
        lambda x: np.sum(x, (0, 2), keepdims=True),
        [((2, 3, 4),)],
    ),
    OpRecord(
        "reshape", lambda x: ops.reshape(x, (4, -1)), lambda x: x.reshape(4, -1), [((2, 3, 4),)]
    ),
    OpRecord(
        "transpose",
        lambda x: ops.transpose(x, (2, 0, 1)),
        lambda x: x.transpose(2, 0, 1),
        [((2, 3, 4),)],
    ),
    OpRecord(
        "broadcast_to",
        lambda x: ops.broadcast_to(x, (2, 3, 4)),
        lambda x: np.broadcast_to(x, (2, 3, 4)),
        [((3, 1),), ((4,),)],
    ),
    OpRecord(
        "cast",
        lambda x: ops.cast(x, "float64"),
        lambda x: x,
        [((3, 4),)],
        dtypes=("float32",),
        check_dtype=False,
    ),
    OpRecord(
        "select",
        lambda c, x, y: ops.select(c > 0, x, y),
        lambda c, x, y: np.where(c > 0, x, y),
        [((3, 4), (3, 4), (3, 4)), ((3, 4), (4,), ())],
        grad_wrt=(1, 2),
    ),
    OpRecord("maximum", ops.maximum, np.maximum, BCAST),
    OpRecord("minimum", ops.minimum, np.minimum, BCAST),
    OpRecord(
        "concat",
        lambda x, y: ops.concat((x, y), 1),
        lambda x, y: np.concatenate((x, y), 1),
        [((3, 4), (3, 2))],
    ),
    OpRecord(
        "stack",
        lambda x, y: ops.stack((x, y), 1),
        lambda x, y: np.stack((x, y), 1),
        [((3, 4), (3, 4))],
    ),
    OpRecord(
        "split", lambda x: ops.split(x, 1, 2), lambda x: tuple(np.split(x, 2, 1)), [((3, 4),)]
    ),
    OpRecord(
        "getitem_basic",
        lambda x: x[1:, None, ::2, ...],
        lambda x: x[1:, None, ::2, ...],
        [((3, 4, 2),)],
    ),
    OpRecord("getitem_int", lambda x: x[-1, 2], lambda x: x[-1, 2], [((3, 4),)]),
    OpRecord(
        "getitem_advanced",
        lambda x: x[Tensor([0, 2, 0]), 1:],
        lambda x: x[[0, 2, 0], 1:],
        [((3, 4),)],
        order=2,
    ),
    OpRecord("getitem_mask", lambda x: x[x > 0], lambda x: x[x > 0], [((3, 4),)]),
    # a scalar bool adds an axis of length 1 (True) or 0 (False) where it stands
    OpRecord("getitem_true", lambda x: x[True], lambda x: x[True], [((2, 3),)]),
    OpRecord("getitem_false", lambda x: x[False], lambda x: x[False], [((2, 3),)]),
    OpRecord(
        "getitem_bool_mid",
        lambda x: x[:, True, Tensor(np.array(True)), 1:],
        lambda x: x[:, True, np.True_, 1:],
        [((2, 3),)],
    ),
]


@pytest.mark.parametrize("rec,dtype", records_params(RECORDS))
def test_forward(rec, dtype, device):
    check_forward(rec, dtype, device)


@pytest.mark.parametrize("rec", records_params([r for r in RECORDS if r.grad], dtypes=False))
def test_backward(rec, device):
    check_backward(rec, device)


def test_setitem_gradient():
    from sporeling_testing import check_grad

    def fn(x, v):
        y = x * 1.0
        y[1:, 0] = v
        return y * y

    check_grad(fn, [np.random.default_rng(0).standard_normal((3, 4)), np.array([1.5, -2.0])])


def test_comparisons_return_bool():
    x = Tensor([1.0, 2.0, 3.0])
    for out in (x > 2, x >= 2, x < 2, x <= 2, x == 2, x != 2):
        assert out.dtype == "bool"
    assert (x > 2).tolist() == [False, False, True]
