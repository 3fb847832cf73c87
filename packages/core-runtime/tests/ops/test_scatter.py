"""Gathers, scatters, segment reductions and in-place Parameter updates (ops/scatter/)."""

import numpy as np
import pytest

from sporeling.core import Parameter, Tensor, grad, no_grad, ops
from sporeling.core.kernels.cpu import scatter as kscatter
from sporeling.core.kernels.cpu import segment as ksegment
from sporeling.core.ops import scatter as impl
from sporeling_testing import OpRecord, check_backward, check_forward, check_grad, records_params
from sporeling_testing.optable import distinct, positive

FLOATS = ("float32", "float64")
ALL = ("float16", "float32", "float64", "int32", "int64")


def _on(x, arr):
    """A constant index tensor on ``x``'s device."""
    return Tensor(np.asarray(arr), device=x.device)


# ---- NumPy references -------------------------------------------------------------------

ROWS = np.array([3, 0, 3, 1, 3])  # repeated rows: accumulation order matters
ND = np.array([[1, 2], [0, 0], [1, 2], [2, 3]])  # repeats (1, 2)
ND_UNIQUE = np.array([[1, 2], [0, 0], [2, 3]])
SEG = np.array([0, 2, 0, -1, 2, 2])  # segment 1 and 3 empty, one dropped id
SEG_FULL = np.array([0, 2, 0, -1, 1, 2])  # no empty segment of 3 (fills tested apart)


def _at(ufunc, x, idx, u):
    out = x.copy()
    ufunc.at(out, tuple(idx.T), u)
    return out


def _update_ref(x, idx, u):
    out = x.copy()
    for k in range(idx.shape[0]):
        out[tuple(idx[k])] = u[k]
    return out


def _seg_ref(fn, empty):
    def ref(x, ids=SEG, n=4):
        out = []
        for s in range(n):
            rows = x[ids == s]
            out.append(fn(rows, axis=0) if len(rows) else np.full(x.shape[1:], empty(x.dtype)))
        return np.stack(out)

    return ref


def _lowest(dt):
    return np.finfo(dt).min if np.dtype(dt).kind == "f" else np.iinfo(dt).min


def _highest(dt):
    return np.finfo(dt).max if np.dtype(dt).kind == "f" else np.iinfo(dt).max


def _elements_ref(x, idx, axis, u=None, add=False):
    """take_along_axis / a scatter loop for an index smaller than x outside ``axis``."""
    if u is None:
        sub = x[tuple(slice(0, s) if d != axis else slice(None) for d, s in enumerate(idx.shape))]
        return np.take_along_axis(sub, idx % x.shape[axis], axis)
    out = x.copy()
    for pos in np.ndindex(*idx.shape):
        tgt = list(pos)
        tgt[axis] = idx[pos] % x.shape[axis]
        out[tuple(tgt)] = out[tuple(tgt)] + u[pos] if add else u[pos]
    return out


EL_IDX = np.array([[2, 0, -1], [1, 1, 0]])  # for x (3, 4), axis 0, index smaller on axis 1
EL_IDX_UNIQUE = np.array([[2, 0, 1], [1, 2, 0]])
EL_IDX_AXIS1 = np.array([[3, 0], [1, 1], [0, -4]])


def _scatter_record(op, ufunc, dtypes=FLOATS, make=None, grad_ok=True, order=1):
    fn = getattr(ops, f"tensor_scatter_{op}")
    return OpRecord(
        f"tensor_scatter_{op}",
        lambda x, u: fn(x, _on(x, ND), u),
        lambda x, u: _at(ufunc, x, ND, u),
        [((3, 4, 2), (4, 2))],
        dtypes=dtypes,
        make=make or [lambda r, s, d: r.standard_normal(s).astype(d)] * 2,
        grad=grad_ok,
        order=order,
    )


def _ints_or_normal(rng, shape, dtype):
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-5, 6, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


RECORDS = [
    OpRecord(
        "gather_rows",
        lambda x: ops.gather(x, _on(x, ROWS), 0),
        lambda x: np.take(x, ROWS, 0),
        [((5, 3),), ((4,),)],
        dtypes=ALL,
        make=_ints_or_normal,
        order=2,
    ),
    OpRecord(
        "gather_axis1_2d_idx",
        lambda x: ops.gather(x, _on(x, [[2, 0], [2, 1]]), 1),
        lambda x: np.take(x, [[2, 0], [2, 1]], 1),
        [((2, 3, 4),)],
        dtypes=ALL,
        make=_ints_or_normal,
    ),
    OpRecord(
        "gather_scalar_idx",
        lambda x: ops.gather(x, _on(x, np.int32(1)), -1),
        lambda x: np.take(x, 1, -1),
        [((2, 3),)],
    ),
    OpRecord(
        "gather_nd",
        lambda x: ops.gather_nd(x, _on(x, ND)),
        lambda x: x[tuple(ND.T)],
        [((3, 4),), ((3, 4, 2),)],
        dtypes=ALL,
        make=_ints_or_normal,
        order=2,
    ),
    OpRecord(
        "gather_nd_leading",
        lambda x: ops.gather_nd(x, _on(x, [[2], [0], [2]])),
        lambda x: x[[2, 0, 2]],
        [((3, 4),)],
    ),
    OpRecord(
        "gather_elements",
        lambda x: ops.gather_elements(x, 0, _on(x, EL_IDX)),
        lambda x: _elements_ref(x, EL_IDX, 0),
        [((3, 4),)],
        dtypes=ALL,
        make=_ints_or_normal,
    ),
    OpRecord(
        "gather_d_axis1",
        lambda x: ops.gather_d(x, 1, _on(x, EL_IDX_AXIS1)),
        lambda x: _elements_ref(x, EL_IDX_AXIS1, 1),
        [((3, 4),)],
        order=2,
    ),
    OpRecord(
        "scatter_nd",
        lambda u: ops.scatter_nd(_on(u, ND), u, (3, 4, 2)),
        lambda u: _at(np.add, np.zeros((3, 4, 2), u.dtype), ND, u),
        [((4, 2),)],
        dtypes=ALL,
        make=_ints_or_normal,
        order=2,
    ),
    _scatter_record("add", np.add, ALL, make=_ints_or_normal, order=2),
    _scatter_record("sub", np.subtract, ("float32", "float64", "int32"), make=_ints_or_normal),
    _scatter_record("mul", np.multiply, ALL, make=_ints_or_normal),
    _scatter_record(
        "div", np.divide, FLOATS, make=[lambda r, s, d: r.standard_normal(s).astype(d), positive]
    ),
    _scatter_record("max", np.maximum, ALL, make=distinct),
    _scatter_record("min", np.minimum, ALL, make=distinct),
    OpRecord(
        "tensor_scatter_update",
        lambda x, u: ops.tensor_scatter_update(x, _on(x, ND_UNIQUE), u),
        lambda x, u: _update_ref(x, ND_UNIQUE, u),
        [((3, 4, 2), (3, 2))],
        dtypes=ALL,
        make=_ints_or_normal,
    ),
    OpRecord(
        "tensor_scatter_elements_add",
        lambda x, u: ops.tensor_scatter_elements(x, _on(x, EL_IDX), u, 0, "add"),
        lambda x, u: _elements_ref(x, EL_IDX, 0, u, add=True),
        [((3, 4), (2, 3))],
        dtypes=ALL,
        make=_ints_or_normal,
    ),
    OpRecord(
        "tensor_scatter_elements_none",
        lambda x, u: ops.tensor_scatter_elements(x, _on(x, EL_IDX_UNIQUE), u, 0),
        lambda x, u: _elements_ref(x, EL_IDX_UNIQUE, 0, u),
        [((3, 4), (2, 3))],
        dtypes=ALL,
        make=_ints_or_normal,
    ),
    OpRecord(
        "unsorted_segment_sum",
        lambda x: ops.unsorted_segment_sum(x, _on(x, SEG), 4),
        _seg_ref(np.sum, lambda d: 0),
        [((6,),), ((6, 2, 3),)],
        dtypes=ALL,
        make=_ints_or_normal,
        order=2,
    ),
    OpRecord(
        "unsorted_segment_max",
        lambda x: ops.unsorted_segment_max(x, _on(x, SEG_FULL), 3),
        lambda x: _seg_ref(np.max, _lowest)(x, SEG_FULL, 3),
        [((6, 3),)],
        dtypes=ALL,
        make=distinct,
    ),
    OpRecord(
        "unsorted_segment_min",
        lambda x: ops.unsorted_segment_min(x, _on(x, SEG_FULL), 3),
        lambda x: _seg_ref(np.min, _highest)(x, SEG_FULL, 3),
        [((6, 3),)],
        dtypes=ALL,
        make=distinct,
    ),
    OpRecord(
        "unsorted_segment_prod",
        lambda x: ops.unsorted_segment_prod(x, _on(x, SEG), 4),
        _seg_ref(np.prod, lambda d: 1),
        [((6, 2),)],
        dtypes=ALL,
        make=_ints_or_normal,
    ),
    OpRecord(
        "unsorted_segment_sum_2d_ids",
        lambda x: ops.unsorted_segment_sum(x, _on(x, SEG.reshape(2, 3)), 4),
        lambda x: _seg_ref(np.sum, lambda d: 0)(x.reshape(6, -1)).reshape(4, *x.shape[2:]),
        [((2, 3, 2),)],
    ),
    OpRecord(
        "inplace_add",
        lambda x, v: ops.inplace_add(x, v, (2, 0, 2)),
        lambda x, v: _at(np.add, x, np.array([[2], [0], [2]]), v),
        [((4, 3), (3, 3))],
        dtypes=ALL,
        make=_ints_or_normal,
    ),
    OpRecord(
        "inplace_sub",
        lambda x, v: ops.inplace_sub(x, v, 1),
        lambda x, v: _at(np.subtract, x, np.array([[1]]), v),
        [((4, 3), (1, 3))],
    ),
    OpRecord(
        "inplace_update",
        lambda x, v: ops.inplace_update(x, v, (3, 1)),
        lambda x, v: _update_ref(x, np.array([[3], [1]]), v),
        [((4, 3), (2, 3))],
        dtypes=ALL,
        make=_ints_or_normal,
    ),
]


@pytest.mark.parametrize("rec,dtype", records_params(RECORDS))
def test_forward(rec, dtype, device):
    check_forward(rec, dtype, device)


@pytest.mark.parametrize("rec", records_params([r for r in RECORDS if r.grad], dtypes=False))
def test_backward(rec, device):
    check_backward(rec, device)


# ---- gradients that need chosen inputs --------------------------------------------------


def test_tensor_scatter_update_grad_zeroes_overwritten():
    x = Tensor(np.arange(6.0).reshape(3, 2))
    u = Tensor([[7.0, 8.0]])
    gx, gu = grad(
        lambda x, u: ops.reduce_sum(ops.tensor_scatter_update(x, Tensor([[1]]), u) * 3.0),
        grad_position=(0, 1),
    )(x, u)
    assert gx.tolist() == [[3.0, 3.0], [0.0, 0.0], [3.0, 3.0]]
    assert gu.tolist() == [[3.0, 3.0]]


def test_tensor_scatter_mul_grad_with_zero_update():
    x = np.array([2.0, 3.0, -1.5])
    u = np.array([0.0, 4.0])
    check_grad(lambda x, u: ops.tensor_scatter_mul(x, Tensor([[0], [2]]), u), [x, u])


def test_tensor_scatter_max_ties_split():
    x = Tensor([1.0, 5.0, 0.0])
    u = Tensor([5.0, 2.0])  # ties with x[1]; u[1] loses to x[2]? no: 2 > 0 wins
    gx, gu = grad(
        lambda x, u: ops.reduce_sum(ops.tensor_scatter_max(x, Tensor([[1], [2]]), u)),
        grad_position=(0, 1),
    )(x, u)
    assert gx.tolist() == [1.0, 0.5, 0.0]
    assert gu.tolist() == [0.5, 1.0]


@pytest.mark.parametrize("dtype", ALL)
def test_segment_empty_fill(dtype, device):
    x = Tensor(np.ones((2, 2), dtype), device=device)
    ids = _on(x, [0, 0])
    for op, fill in (("max", _lowest(dtype)), ("min", _highest(dtype)), ("sum", 0), ("prod", 1)):
        out = getattr(ops, f"unsorted_segment_{op}")(x, ids, 2).asnumpy()
        assert out.dtype == np.dtype(dtype)
        assert out[1].tolist() == [fill, fill]


def test_segment_max_ties_split_evenly():
    x = Tensor([3.0, 1.0, 3.0, 2.0])
    g = grad(lambda x: ops.reduce_sum(ops.unsorted_segment_max(x, Tensor([0, 0, 0, 1]), 2)))(x)
    assert g.tolist() == [0.5, 0.0, 0.5, 1.0]
    g = grad(lambda x: ops.reduce_sum(ops.unsorted_segment_min(x, Tensor([1, 1, 1, 1]), 2)))(x)
    assert g.tolist() == [0.0, 1.0, 0.0, 0.0]


@pytest.mark.parametrize(
    "x", [[2.0, 0.0, 3.0, 1.5, -2.0], [0.0, 0.0, 3.0, 1.5, -2.0], [2.0, 0.5, 3.0, 1.5, -2.0]]
)
def test_segment_prod_grad_with_zeros(x):
    ids = Tensor([0, 0, 0, 1, -1])
    check_grad(lambda x: ops.unsorted_segment_prod(x, ids, 3), [np.array(x)])
    check_grad(lambda x: ops.unsorted_segment_prod(x, ids, 3) * 1.0, [np.array(x)])


def test_segment_prod_second_order():
    from sporeling_testing import check_grad_grad

    check_grad_grad(
        lambda x: ops.unsorted_segment_prod(x, Tensor([0, 1, 0, 1]), 2),
        [np.array([1.5, -2.0, 0.7, 1.2])],
    )


@pytest.mark.parametrize("red", ["none", "add"])
def test_tensor_scatter_elements_grad_none_and_add(red):
    idx = Tensor([[1, 0, 2]])
    check_grad(
        lambda x, u: ops.tensor_scatter_elements(x, idx, u, 1, red),
        [np.random.default_rng(0).standard_normal((2, 3)), np.array([[1.0, 2.0, 3.0]])],
    )


def test_embedding_gradient_is_row_counts():
    w = Tensor(np.random.default_rng(0).standard_normal((1000, 8)).astype("float32"))
    ids = Tensor([[5, 7, 5], [999, 5, 0]])
    g = grad(lambda w: ops.reduce_sum(ops.gather(w, ids, 0)))(w).asnumpy()
    counts = np.zeros(1000)
    np.add.at(counts, [5, 7, 5, 999, 5, 0], 1)
    np.testing.assert_array_equal(g, np.repeat(counts[:, None], 8, 1))
    assert g.dtype == np.float32


def test_integer_outputs_record_no_gradient():
    x = Tensor([[1, 2], [3, 4]])
    assert ops.gather(x, Tensor([1]), 0)._node is None


# ---- Numba kernels vs the generic path ----------------------------------------------------


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "int64"])
@pytest.mark.parametrize("op", list(kscatter.OPS))
def test_scatter_kernel_matches_generic(op, dtype):
    rng = np.random.default_rng(1)
    for o, n, i, k in [(1, 7, 5, 13), (3, 1, 1, 4), (2, 5, 3, 0), (1, 9, 1, 31)]:
        ids = rng.integers(0, n, k)
        if dtype.startswith("int"):
            base = rng.integers(-20, 20, (o, n, i)).astype(dtype)
            upd = rng.integers(1, 4, (o, k, i)).astype(dtype)
        else:
            base = rng.standard_normal((o, n, i)).astype(dtype)
            upd = (rng.random((o, k, i)) + 0.5).astype(dtype)
        a, b = base.copy(), base.copy()
        impl._scatter_rows(np, a, ids, upd, op, fast=True)
        impl._scatter_rows_xp(np, b, ids, upd, op)
        rtol = 1e-2 if dtype == "float16" else 1e-6
        np.testing.assert_allclose(a.astype(float), b.astype(float), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", ["float16", "float32", "int64"])
def test_gather_kernel_matches_take(dtype):
    rng = np.random.default_rng(2)
    for o, n, i, k in [(1, 11, 7, 5), (4, 3, 1, 9), (2, 5, 3, 0)]:
        src = rng.standard_normal((o, n, i)).astype(dtype)
        ids = rng.integers(0, n, k)
        np.testing.assert_array_equal(kscatter.gather_rows(src, ids), np.take(src, ids, axis=1))
    src = rng.standard_normal((6, 4))[:, ::2].astype(dtype)  # non-contiguous input
    np.testing.assert_array_equal(
        kscatter.gather_rows(src.reshape(1, 6, 2)[:, ::-1], [0, 5]),
        src.reshape(1, 6, 2)[:, ::-1][:, [0, 5]],
    )


@pytest.mark.parametrize("op", ["sum", "prod", "max", "min"])
def test_segment_kernel_matches_generic(op):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((17, 3))
    ids = rng.integers(-1, 5, 17)
    fast = impl._segment_impl(np, x, ids, num_segments=6, op=op, fast=True)
    slow = impl._segment_impl(np, x, ids, num_segments=6, op=op)
    np.testing.assert_allclose(fast, slow, rtol=1e-12)
    assert ksegment.identity("max", np.int32) == np.iinfo(np.int32).min


def test_scatter_kernel_nan_propagates_like_numpy():
    out = np.zeros((1, 2, 1))
    kscatter.scatter_rows(out, np.array([0, 0]), np.array([[[np.nan], [1.0]]]), "max")
    assert np.isnan(out[0, 0, 0])


def test_integer_division_generic_path():
    x = Tensor([7, -7, 5])
    out = ops.tensor_scatter_div(x, Tensor([[0], [1], [2]]), Tensor([2, 2, 0]))
    assert out.tolist() == [3, -4, 0]


# ---- errors -----------------------------------------------------------------------------


def test_index_errors_name_op_argument_and_index(device):
    x = Tensor(np.zeros((3, 4)), device=device)
    cases = [
        (
            lambda: ops.gather(x, _on(x, [0, 3]), 0),
            "gather.*input_indices.*index 3 at position \\(1,\\)",
        ),
        (lambda: ops.gather(x, _on(x, [-1]), 0), "gather.*input_indices.*-1"),
        (lambda: ops.gather_nd(x, _on(x, [[0, 4]])), "gather_nd.*indices.*4.*dimension 1"),
        (lambda: ops.gather_elements(x, 1, _on(x, [[4]])), "gather_elements.*index.*4"),
        (
            lambda: ops.tensor_scatter_add(x, _on(x, [[3]]), _on(x, np.ones((1, 4)))),
            "tensor_scatter_add.*indices.*3",
        ),
        (lambda: ops.scatter_nd(_on(x, [[5]]), _on(x, [1.0]), (3,)), "scatter_nd.*indices.*5"),
        (
            lambda: ops.tensor_scatter_elements(x, _on(x, [[0, -5]]), _on(x, [[1.0, 1.0]]), 1),
            "tensor_scatter_elements.*indices.*-5",
        ),
        (
            lambda: ops.unsorted_segment_sum(x, _on(x, [0, 1, 3]), 3),
            "unsorted_segment_sum.*segment_ids.*3",
        ),
    ]
    for fn, pattern in cases:
        with pytest.raises(IndexError, match=pattern):
            fn()


def test_inplace_index_errors_leave_parameter_untouched(device):
    p = Parameter(Tensor(np.ones((3, 2)), device=device), name="p")
    for fn, pattern in [
        (
            lambda: ops.scatter_add(p, _on(p, [0, 3]), _on(p, np.ones((2, 2)))),
            "scatter_add.*indices.*3",
        ),
        (
            lambda: ops.scatter_nd_update(p, _on(p, [[-1]]), _on(p, np.ones((1, 2)))),
            "scatter_nd_update.*indices.*-1",
        ),
        (
            lambda: ops.index_add(p, _on(p, [7]), _on(p, np.ones((3, 1))), 1),
            "index_add.*indices.*7",
        ),
    ]:
        with pytest.raises(IndexError, match=pattern):
            fn()
    np.testing.assert_array_equal(p.asnumpy(), np.ones((3, 2)))


def test_argument_errors():
    x = Tensor(np.zeros((3, 4)))
    with pytest.raises(TypeError, match="gather.*input_indices.*integer"):
        ops.gather(x, Tensor([0.0]), 0)
    with pytest.raises(ValueError, match="gather.*axis"):
        ops.gather(x, Tensor([0]), 2)
    with pytest.raises(TypeError, match="gather.*input_params"):
        ops.gather(np.zeros(3), Tensor([0]), 0)
    with pytest.raises(ValueError, match="gather_nd.*indices.*\\(\\.\\.\\., M\\)"):
        ops.gather_nd(x, Tensor([[0, 0, 0]]))
    with pytest.raises(ValueError, match="gather_elements.*index.*rank 2"):
        ops.gather_elements(x, 0, Tensor([0, 1]))
    with pytest.raises(ValueError, match="gather_d.*dim"):
        ops.gather_d(x, 3, Tensor([[0]]))
    with pytest.raises(ValueError, match="tensor_scatter_add.*updates.*\\(2, 4\\)"):
        ops.tensor_scatter_add(x, Tensor([[0], [1]]), Tensor(np.ones((2, 3))))
    with pytest.raises(TypeError, match="tensor_scatter_add.*updates.*Float32.*Int64"):
        ops.tensor_scatter_add(Tensor([1, 2]), Tensor([[0]]), Tensor([1.5]))
    with pytest.raises(TypeError, match="tensor_scatter_add.*input_x.*Bool"):
        ops.tensor_scatter_add(Tensor([True]), Tensor([[0]]), Tensor([True]))
    with pytest.raises(ValueError, match="tensor_scatter_elements.*reduction"):
        ops.tensor_scatter_elements(x, Tensor([[0]]), Tensor([[1.0]]), 0, "mul")
    with pytest.raises(ValueError, match="tensor_scatter_elements.*updates.*shape"):
        ops.tensor_scatter_elements(x, Tensor([[0]]), Tensor([[1.0, 2.0]]), 0)
    with pytest.raises(ValueError, match="scatter_nd.*shape"):
        ops.scatter_nd(Tensor([[0]]), Tensor([1.0]), (0,))
    with pytest.raises(TypeError, match="unsorted_segment_sum.*num_segments"):
        ops.unsorted_segment_sum(x, Tensor([0, 1, 2]), 2.0)
    with pytest.raises(ValueError, match="unsorted_segment_max.*segment_ids.*prefix"):
        ops.unsorted_segment_max(x, Tensor([0, 1]), 2)
    with pytest.raises(TypeError, match="unsorted_segment_sum.*segment_ids.*integer"):
        ops.unsorted_segment_sum(x, Tensor([0.0, 1.0, 2.0]), 3)
    with pytest.raises(ValueError, match="inplace_add.*indices.*\\[0, 3\\)"):
        ops.inplace_add(x, Tensor(np.ones((1, 4))), 3)
    with pytest.raises(ValueError, match="inplace_update.*'v'.*\\(2, 4\\)"):
        ops.inplace_update(x, Tensor(np.ones((1, 4))), (0, 1))
    with pytest.raises(TypeError, match="inplace_sub.*indices"):
        ops.inplace_sub(x, Tensor(np.ones((1, 4))), 1.0)
    p = Parameter(Tensor(np.zeros((3, 4))), name="p")
    with pytest.raises(ValueError, match="index_add.*'y'.*outside axis 1"):
        ops.index_add(p, Tensor([0]), Tensor(np.ones((2, 1))), 1)
    with pytest.raises(ValueError, match="index_add.*indices.*1 entries"):
        ops.index_add(p, Tensor([0]), Tensor(np.ones((3, 2))), 1)
    with pytest.raises(TypeError, match="scatter_nd_add.*use_locking"):
        ops.scatter_nd_add(p, Tensor([[0]]), Tensor(np.ones((1, 4))), use_locking=1)
    with pytest.raises(ValueError, match="assign.*value.*\\(2,\\)"):
        ops.assign(p, Tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match="assign_add.*value.*Float"):
        ops.assign_add(Parameter(Tensor([1, 2]), name="q"), Tensor([0.5, 0.5]))


# ---- in-place Parameter updates ---------------------------------------------------------

INPLACE = [
    ("add", np.add),
    ("sub", np.subtract),
    ("mul", np.multiply),
    ("div", np.divide),
    ("max", np.maximum),
    ("min", np.minimum),
    ("update", None),
]


@pytest.mark.parametrize("op,ufunc", INPLACE)
def test_scatter_ops_mutate_parameter_in_place(op, ufunc, device):
    rng = np.random.default_rng(4)
    base = rng.random((5, 3)) + 0.5
    rows = np.array([4, 1, 4]) if op != "update" else np.array([4, 1])
    upd = rng.random((len(rows), 3)) + 0.5
    p = Parameter(Tensor(base, device=device), name="w")
    buf = p._data
    u = Tensor(upd, device=device)
    other = Tensor(base, device=device)  # shares the NumPy input, not p's copy
    out = getattr(ops, f"scatter_{op}")(p, _on(p, rows), u)
    nd = rows[:, None]
    want = _update_ref(base, nd, upd) if ufunc is None else _at(ufunc, base, nd, upd)
    assert out is p and p._data is buf
    np.testing.assert_allclose(p.asnumpy(), want, rtol=1e-12)
    np.testing.assert_array_equal(u.asnumpy(), upd)
    np.testing.assert_array_equal(other.asnumpy(), base)
    assert p._node is None

    q = Parameter(Tensor(base.reshape(5, 3, 1), device=device), name="v")
    getattr(ops, f"scatter_nd_{op}")(q, _on(q, np.stack([rows, rows * 0], 1)), _on(q, upd[:, :1]))
    want_nd = (
        _update_ref(base[..., None], np.stack([rows, rows * 0], 1), upd[:, :1])
        if ufunc is None
        else _at(ufunc, base[..., None], np.stack([rows, rows * 0], 1), upd[:, :1])
    )
    np.testing.assert_allclose(q.asnumpy(), want_nd, rtol=1e-12)


def test_scatter_on_int_parameter_and_embedding_update():
    p = Parameter(Tensor(np.zeros((4, 2), np.int32)), name="counts")
    ops.scatter_add(p, Tensor([[1, 1], [3, 1]]), Tensor(np.ones((2, 2, 2), np.int32)))
    assert p.dtype == "int32"
    assert p.tolist() == [[0, 0], [3, 3], [0, 0], [1, 1]]  # row 1 three times
    # an SGD step on touched embedding rows only
    w = Parameter(Tensor(np.ones((6, 3), np.float32)), name="emb")
    ids = Tensor([2, 4, 2])
    (g,) = grad(lambda: ops.reduce_sum(ops.gather(w, ids, 0)), grad_position=None, weights=[w])()
    ops.assign_sub(w, g * 0.5)
    assert w.asnumpy()[:, 0].tolist() == [1.0, 1.0, 0.0, 1.0, 0.5, 1.0]


def test_assign_family_and_index_add(device):
    p = Parameter(Tensor(np.zeros((2, 3)), device=device), name="p")
    buf = p._data
    assert ops.assign(p, _on(p, [1.0, 2.0, 3.0])) is p
    ops.assign_add(p, _on(p, np.ones((2, 3))))
    ops.assign_sub(p, 0.5)
    np.testing.assert_allclose(p.asnumpy(), [[1.5, 2.5, 3.5]] * 2)
    ops.index_add(p, _on(p, [2, 2, 0]), _on(p, np.arange(6.0).reshape(2, 3)), 1)
    np.testing.assert_allclose(p.asnumpy(), [[3.5, 2.5, 4.5], [6.5, 2.5, 10.5]])
    assert p._data is buf


def test_inplace_on_non_contiguous_or_readonly_parameter():
    p = Parameter(Tensor(np.zeros((3, 2))), name="p")
    p._data = np.asfortranarray(np.zeros((3, 2)))
    ops.scatter_update(p, Tensor([1]), Tensor([[1.0, 2.0]]))
    assert p.tolist() == [[0, 0], [1, 2], [0, 0]]
    p._data = np.broadcast_to(np.zeros(2), (3, 2))  # read-only: rebinds a fresh array
    ops.scatter_add(p, Tensor([0]), Tensor([[1.0, 1.0]]))
    assert p.tolist() == [[1, 1], [0, 0], [0, 0]]


def test_inplace_on_tracked_tensor_keeps_gradients():
    def f(x, u):
        y = x * 2.0
        ops.scatter_update(y, Tensor([1]), u)
        ops.scatter_nd_add(y, Tensor([[0, 0]]), u[0, :1] * 3.0)
        ops.index_add(y, Tensor([0]), u, 0)
        ops.assign_add(y, x)
        return ops.reduce_sum(y * y)

    check_grad(f, [np.random.default_rng(5).standard_normal((3, 2)), np.array([[0.5, -1.0]])])


def test_inplace_on_leaf_requiring_grad_raises():
    x = Tensor([1.0, 2.0]).requires_grad_()
    with pytest.raises(RuntimeError, match="scatter_add.*leaf"):
        ops.scatter_add(x, Tensor([0]), Tensor([1.0]))
    with no_grad():
        ops.scatter_add(x, Tensor([0]), Tensor([1.0]))
    assert x.tolist() == [2.0, 2.0]


def test_parameter_update_is_not_differentiated():
    p = Parameter(Tensor([1.0, 2.0]), name="p")
    u = Tensor([3.0]).requires_grad_()
    ops.scatter_update(p, Tensor([0]), u)
    assert p._node is None and p.tolist() == [3.0, 2.0]


def test_inplace_ops_do_not_modify_x():
    x = Tensor(np.zeros((3, 2)))
    out = ops.inplace_add(x, Tensor(np.ones((1, 2))), 0)
    assert x.tolist() == [[0, 0]] * 3 and out.tolist()[0] == [1, 1]
    out = ops.inplace_update(x, Tensor([5.0, 6.0]), 2)  # v without the leading row axis
    assert out.tolist()[2] == [5.0, 6.0]


def test_assign_family_updates_parameters_under_jit():
    """assign / assign_add / assign_sub on a Parameter are graph-mode effects: a compiled
    function updates the Parameter on every call, as eager code does (regression: they read
    the traced value and raised TracingError)."""
    from sporeling.core import jit

    p = Parameter(Tensor(np.zeros(3, np.float32)), name="p")
    count = Parameter(Tensor(np.zeros(1, np.float32)), name="count")
    acc = Parameter(Tensor(np.zeros(3, np.float32)), name="acc")

    @jit
    def step(x):
        ops.assign(p, x * 2.0)
        ops.assign_add(count, 1.0)
        ops.assign_sub(acc, x)
        return x + 1.0

    for k in range(1, 4):
        x = Tensor(np.arange(3, dtype=np.float32) * k)
        np.testing.assert_array_equal(step(x).asnumpy(), x.asnumpy() + 1.0)
        np.testing.assert_array_equal(p.asnumpy(), x.asnumpy() * 2.0)
        assert count.asnumpy().tolist() == [float(k)]
    np.testing.assert_array_equal(acc.asnumpy(), -np.arange(3) * 6.0)
    assert step.compile_count == 1
