"""The eager interpreter's fast path (memoized plans per signature, _eager.py) gives the
same results, dtypes, errors and gradients as the generic path it skips."""

from __future__ import annotations

import numpy as np
import pytest

from sporeling.core import Parameter, Tensor, grad, no_grad, ops
from sporeling.core._primitive import REGISTRY, Primitive, ShapedArray
from sporeling.core.ops._core import reduce_sum_p
from sporeling.core.ops._elementwise import add_p


def _t(*shape, dtype=np.float32, seed=0):
    return Tensor(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


def test_second_call_takes_the_plan_and_matches_numpy():
    x, y = _t(3, 4), _t(3, 4, seed=1)
    first = (x + y).asnumpy()
    key = (x._device, (3, 4), np.dtype(np.float32), (3, 4), np.dtype(np.float32))
    assert add_p._eager_plans[key][1] == np.float32  # the plan the second call takes
    for _ in range(2):
        np.testing.assert_array_equal((x + y).asnumpy(), first)
    np.testing.assert_array_equal(first, x.asnumpy() + y.asnumpy())


def test_plan_keeps_dtypes_and_numpy_scalars_become_arrays():
    xi = Tensor(np.arange(6, dtype=np.int32).reshape(2, 3))
    for _ in range(2):  # the generic path, then the plan
        s = xi.sum()
        assert type(s._data) is np.ndarray and s._data.dtype == np.int64 and s.shape == ()
        assert s.item() == 15
    xf = _t(2, 3)
    for _ in range(2):
        s = xf.sum(keepdims=True)
        assert s.shape == (1, 1) and s._data.dtype == np.float32
        np.testing.assert_allclose(s.asnumpy(), xf.asnumpy().sum(keepdims=True), rtol=1e-6)


def test_bad_input_after_a_plan_still_gets_the_generic_error():
    x = _t(2, 3)
    x + x
    with pytest.raises(ValueError, match="add: shapes"):
        x + _t(4, 5)
    with pytest.raises(TypeError, match="expected a Tensor"):
        add_p.bind(x, np.ones((2, 3), np.float32))
    with pytest.raises(TypeError, match="must share a dtype"):
        add_p.bind(x, _t(2, 3, dtype=np.float64))


def test_gradients_through_the_fast_path_and_parameters():
    w = Parameter(_t(3, 3), name="w")
    x = _t(3, 3, seed=2)
    f = lambda w: (ops.exp(w * x) + w).sum()  # noqa: E731
    g1 = grad(f)(w).asnumpy()
    g2 = grad(f)(w).asnumpy()  # every op now runs on a plan
    expect = np.exp(w.asnumpy() * x.asnumpy()) * x.asnumpy() + 1
    np.testing.assert_allclose(g1, expect, rtol=1e-5)
    np.testing.assert_array_equal(g1, g2)
    with no_grad():
        assert (w * x)._node is None


@pytest.fixture
def make_primitive():
    """Primitives made for one test, taken out of the registry afterwards (the registry
    tests walk it and would find them)."""
    made: list[str] = []

    def make(name, *args, **kwargs):
        made.append(name)
        return Primitive(name, *args, **kwargs)

    yield make
    for name in made:
        REGISTRY.pop(name, None)


def test_a_new_impl_drops_the_plans(make_primitive):
    p = make_primitive(
        "test_fast_path_twice",
        "opaque",
        lambda x: ShapedArray(x.shape, x.dtype),
        impl=lambda xp, x: x * 2,
    )
    x = _t(2)
    p.bind(x), p.bind(x)
    assert p._eager_plans
    p.def_impl("any")(lambda xp, x: x * 3)
    assert not p._eager_plans
    np.testing.assert_allclose(p.bind(x).asnumpy(), x.asnumpy() * 3)


def test_unhashable_params_take_the_generic_path(make_primitive):
    p = make_primitive(
        "test_fast_path_unhashable",
        "opaque",
        lambda x, *, scale: ShapedArray(x.shape, x.dtype),
        impl=lambda xp, x, *, scale: x * scale[0],
    )
    x = _t(3)
    for _ in range(2):
        np.testing.assert_allclose(p.bind(x, scale=[2.0]).asnumpy(), x.asnumpy() * 2)
    assert not p._eager_plans


@pytest.mark.parametrize(
    "index",
    [1, -1, slice(1, 3), slice(None, None, -1), (1, 2), (slice(0, 4, 2), -2), (0, slice(1, None))],
)
def test_static_indices_match_numpy(index):
    a = np.arange(20, dtype=np.float32).reshape(4, 5)
    x = Tensor(a)
    for _ in range(2):
        np.testing.assert_array_equal(x[index].asnumpy(), a[index])


def test_static_index_errors_and_other_indices():
    x = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    with pytest.raises(IndexError, match="getitem"):
        x[5]
    with pytest.raises(ValueError, match="step cannot be zero"):
        x[::0]
    a = x.asnumpy()
    np.testing.assert_array_equal(x[np.int64(1)].asnumpy(), a[1])  # NumPy ints: general path
    np.testing.assert_array_equal(x[..., 1].asnumpy(), a[..., 1])


@pytest.mark.parametrize("shapes", [((4, 4), (4, 4)), ((1, 7), (7, 3)), ((5, 2), (2, 1))])
def test_small_products_match_matmul(shapes):
    a = np.random.default_rng(0).standard_normal(shapes[0]).astype(np.float32)
    b = np.random.default_rng(1).standard_normal(shapes[1]).astype(np.float32)
    for _ in range(2):
        np.testing.assert_allclose(
            ops.matmul(Tensor(a), Tensor(b)).asnumpy(), a @ b, rtol=1e-6, atol=1e-6
        )
    at, bt = Tensor(a.T.copy()).T, Tensor(b.T.copy()).T  # non-contiguous operands
    np.testing.assert_allclose(ops.matmul(at, bt).asnumpy(), a @ b, rtol=1e-6, atol=1e-6)


def test_full_reduction_plan_params_in_key():
    x = _t(2, 3)  # (Tensor.sum of a float tensor skips the plans: the ops function)
    ops.reduce_sum(x), ops.reduce_sum(x, (), True)
    keys = [k for k in reduce_sum_p._eager_plans if k[1] == (2, 3)]
    assert len(keys) >= 2  # keep_dims is part of the key
    assert all(reduce_sum_p._eager_plans[k][4] for k in keys)  # parameters bound (specialized)


def test_reshape_and_transpose_shortcuts_keep_checks():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = Tensor(a)
    for _ in range(2):  # the first call checks and memoizes, the second takes the shortcut
        np.testing.assert_array_equal(x.reshape(2, 6).asnumpy(), a.reshape(2, 6))
        np.testing.assert_array_equal(ops.transpose(x, (1, 0)).asnumpy(), a.T)
        np.testing.assert_array_equal(ops.transpose(x, (-1, 0)).asnumpy(), a.T)
        assert ops.transpose(x, (0, 1)) is x and ops.reshape(x, (3, 4)) is x
    np.testing.assert_array_equal(x.reshape(-1, 3).asnumpy(), a.reshape(-1, 3))
    with pytest.raises(ValueError, match="reshape"):
        x.reshape(5, 3)
    with pytest.raises(ValueError, match="transpose"):
        ops.transpose(Tensor(np.zeros((2, 2, 2), np.float32)), (1, 0))  # memoized for 2-d only
    with pytest.raises(ValueError, match="axis"):
        ops.softmax(x, 2)
    np.testing.assert_allclose(x.mean(-1).asnumpy(), a.mean(-1), rtol=1e-6)


def test_default_elementwise_plans_call_numpy_itself():
    x, y = _t(3, 4), _t(3, 4, seed=1)
    for _ in range(2):
        np.testing.assert_array_equal((x * y).asnumpy(), x.asnumpy() * y.asnumpy())
        np.testing.assert_array_equal((x > y).asnumpy(), x.asnumpy() > y.asnumpy())
        np.testing.assert_array_equal(ops.exp(x).asnumpy(), np.exp(x.asnumpy()))
    key = (x._device, (3, 4), np.dtype(np.float32), (3, 4), np.dtype(np.float32))
    assert add_p._eager_plans[key][0] is np.add  # the ufunc, no impl frame
    assert (x > y).dtype == "bool"


def test_a_new_impl_of_a_default_elementwise_op_is_not_bypassed():
    from sporeling.core.ops._elementwise import unary_op

    p = unary_op("test_fast_path_ufunc", "negative", scalar="-x")
    try:
        x = _t(2, 3)
        for _ in range(2):
            np.testing.assert_array_equal(p.bind(x).asnumpy(), -x.asnumpy())
        assert next(iter(p._eager_plans.values()))[0] is np.negative
        p.def_impl("cpu")(lambda xp, x: x * 3)
        for _ in range(2):
            np.testing.assert_array_equal(p.bind(x).asnumpy(), x.asnumpy() * 3)
    finally:
        REGISTRY.pop("test_fast_path_ufunc", None)


def test_parameters_take_the_fast_paths_with_the_same_results_and_gradients():
    a = np.random.default_rng(3).standard_normal((4, 5)).astype(np.float32)
    b = np.random.default_rng(4).standard_normal((4, 5)).astype(np.float32)
    w, v = Parameter(Tensor(a), name="w"), Parameter(Tensor(b), name="v")
    x = Tensor(b)
    for _ in range(2):
        for op, ref in ((ops.add, a + b), (ops.sub, a - b), (ops.mul, a * b), (ops.div, a / b)):
            np.testing.assert_array_equal(op(w, x).asnumpy(), ref)
            np.testing.assert_array_equal(op(w, v).asnumpy(), ref)
        m = w.mean(1).asnumpy()  # float32 sums: an absolute tolerance near zero
        np.testing.assert_allclose(m, a.astype(np.float64).mean(1), rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal((w + 2.0).asnumpy(), a + np.float32(2.0))
    gw, gv = grad(lambda w, v: ((w * v) / (v + 3.0) - w).mean(), (0, 1))(w, v)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_allclose(gw.asnumpy(), (b64 / (b64 + 3) - 1) / a.size, rtol=1e-5)
    np.testing.assert_allclose(gv.asnumpy(), a64 * 3 / (b64 + 3) ** 2 / a.size, rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("axis,keep", [(1, False), (0, True), ((0, 1), False), ((), True)])
def test_mean_fast_path_matches_numpy_and_its_gradient(dtype, axis, keep):
    a = np.random.default_rng(5).standard_normal((3, 5)).astype(dtype)
    x = Tensor(a)
    np_axis = None if axis == () else axis
    for _ in range(2):  # the generic path, then the plans (and the cached divisor)
        m = x.mean(axis, keep)
        assert m._data.dtype == dtype and m.shape == a.mean(np_axis, keepdims=keep).shape
        tol = 1e-6 if dtype == np.float32 else 1e-13
        ref = a.astype(np.float64).mean(np_axis, keepdims=keep)
        np.testing.assert_allclose(m.asnumpy(), ref, rtol=tol, atol=tol)
    w = Parameter(Tensor(a), name="w")
    g = grad(lambda w: (ops.mean(w * w, axis, keep) * 3).sum())(w)
    n = a.size if axis in ((0, 1), ()) else a.shape[axis if isinstance(axis, int) else 0]
    np.testing.assert_allclose(g.asnumpy(), 6 * a.astype(np.float64) / n, rtol=1e-6)


def test_movement_and_relu_plans_are_bound_views_and_match_numpy():
    from sporeling.core.ops._core import reshape_p, transpose_p
    from sporeling.core.ops.activation.elementwise import relu_p

    a = np.array([[-1.5, -0.0, 0.0, 2.0], [np.nan, np.inf, -np.inf, 3.0]], np.float32)
    x = Tensor.from_numpy(a)  # shares a (Tensor(a) copies)
    for _ in range(2):
        r = x.reshape(4, 2)
        assert np.shares_memory(r._data, a) and r.shape == (4, 2)
        t = ops.transpose(x, (1, 0))
        assert np.shares_memory(t._data, a)
        np.testing.assert_array_equal(t.asnumpy(), a.T)
        y = ops.relu(x)
        np.testing.assert_array_equal(y.asnumpy(), np.maximum(a, np.float32(0)))
        assert np.array_equal(np.signbit(y.asnumpy()), np.signbit(np.maximum(a, np.float32(0))))
    for prim in (reshape_p, transpose_p, relu_p):
        assert all(plan[4] for plan in prim._eager_plans.values())  # specialized kernels
    xi = Tensor(np.array([-2, 3], np.int32))
    for _ in range(2):
        assert ops.relu(xi).tolist() == [0, 3] and ops.relu(xi).dtype == "int32"
    w = Parameter(Tensor(a[:, [0, 3]].copy()), name="w")  # finite entries
    for _ in range(2):
        g = grad(lambda w: (ops.transpose(ops.relu(w), (1, 0)).reshape(4) * 2).sum())(w)
        np.testing.assert_array_equal(g.asnumpy(), np.where(w.asnumpy() > 0, 2.0, 0.0))


def test_static_params_key_plans_by_token_and_stay_ordinary_dicts():
    from sporeling.core._primitive import StaticParams
    from sporeling.core.ops._core import reduce_params

    p1 = reduce_params((0, 1), False)
    assert reduce_params((0, 1), False) is p1  # memoized
    assert p1 == {"axis": (0, 1), "keep_dims": False} and isinstance(p1, dict)
    assert StaticParams(p1).token != p1.token
    x = _t(3, 2)
    for _ in range(2):
        np.testing.assert_allclose(ops.reduce_sum(x).asnumpy(),
                                   x.asnumpy().astype(np.float64).sum(), rtol=1e-6)  # fmt: skip
        np.testing.assert_allclose(ops.reduce_sum(x, 1, True).asnumpy(),
                                   x.asnumpy().sum(1, keepdims=True), rtol=1e-6)  # fmt: skip
    tokens = [k[3] for k in reduce_sum_p._eager_plans if k[1] == (3, 2)]
    assert p1.token in tokens  # the plan under the token (after the generic first call)
    w = Parameter(_t(3, 2), name="w")  # gradients through StaticParams nodes
    g = grad(lambda w: (w.reshape(2, 3) * 2).sum() + ops.transpose(w, (1, 0)).sum())(w)
    np.testing.assert_array_equal(g.asnumpy(), np.full((3, 2), 3.0, np.float32))


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tiny_softmax_plans_match_numpy_float64(log, dtype):
    from sporeling.core.ops.activation.softmax_family import log_softmax_p, softmax_p

    op = ops.log_softmax if log else ops.softmax
    prim = log_softmax_p if log else softmax_p
    a = (np.random.default_rng(6).standard_normal((3, 4, 5)) * 4).astype(dtype)
    a[0, 0, :] = [1e4, -1e4, 0.0, 3.0, 1e4]  # large logits: the shift must hold
    a64 = a.astype(np.float64)
    shifted = a64 - a64.max(-1, keepdims=True)
    lse = np.log(np.exp(shifted).sum(-1, keepdims=True))
    ref = shifted - lse if log else np.exp(shifted - lse)
    tol = 1e-6 if dtype == np.float32 else 1e-13
    x = Tensor(a)
    for _ in range(2):
        out = op(x, -1)
        assert out._data.dtype == dtype
        np.testing.assert_allclose(out.asnumpy(), ref, rtol=tol, atol=tol)
    assert any(plan[4] for plan in prim._eager_plans.values())  # the row kernel's plan
    xt = ops.transpose(Tensor(np.ascontiguousarray(a.transpose(0, 2, 1))), (0, 2, 1))
    for _ in range(2):
        np.testing.assert_allclose(op(xt, 2).asnumpy(), ref, rtol=tol, atol=tol)
        axis1 = op(x, 1).asnumpy()  # another axis: no tiny-kernel plan, the general kernel
        m = a64 - a64.max(1, keepdims=True)
        ref1 = m - np.log(np.exp(m).sum(1, keepdims=True))
        np.testing.assert_allclose(axis1, ref1 if log else np.exp(ref1), rtol=tol, atol=tol)
    w = Parameter(Tensor(a[1]), name="w")  # the gradient through the plan, vs float64
    c = np.random.default_rng(7).standard_normal((4, 5))
    g = grad(lambda w: (op(w, -1) * Tensor(c.astype(dtype))).sum())(w).asnumpy()
    s64 = np.exp(a64[1] - a64[1].max(-1, keepdims=True))
    s64 /= s64.sum(-1, keepdims=True)
    expect = (
        c - s64 * c.sum(-1, keepdims=True) if log else s64 * (c - (c * s64).sum(-1, keepdims=True))
    )
    np.testing.assert_allclose(g, expect, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)


def test_comparison_fast_path_and_promotion():
    a = np.array([[1.0, 2.0], [3.0, -1.0]], np.float32)
    x, w = Tensor(a), Parameter(Tensor(a[::-1].copy()), name="w")
    for _ in range(2):
        for op, ref in ((ops.greater, np.greater), (ops.less_equal, np.less_equal),
                        (ops.equal, np.equal), (ops.not_equal, np.not_equal)):  # fmt: skip
            np.testing.assert_array_equal(op(x, w).asnumpy(), ref(a, a[::-1]))
        np.testing.assert_array_equal((x > 1.5).asnumpy(), a > 1.5)  # a weak scalar
        xi = Tensor(np.array([[1, 2], [3, 4]], np.int32))
        np.testing.assert_array_equal((x > xi).asnumpy(), a > np.array([[1, 2], [3, 4]]))


def test_small_product_plans_call_ndarray_dot_and_large_ones_blas():
    from sporeling.core.ops._matmul import matmul_p

    rng = np.random.default_rng(8)
    for m, k, n in ((4, 4, 4), (3, 5, 2), (80, 16, 64)):
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        w = Parameter(Tensor(b), name="w")
        for _ in range(2):
            np.testing.assert_allclose(ops.matmul(Tensor(a), Tensor(b)).asnumpy(),
                                       a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)  # fmt: skip
        key = (Tensor(a)._device, (m, k), np.dtype(np.float32), (k, n), np.dtype(np.float32))
        assert (matmul_p._eager_plans[key][0] is np.ndarray.dot) == (m * n < 4096)
        g = grad(lambda w, a=a: ops.matmul(Tensor(a), w).sum())(w).asnumpy()
        np.testing.assert_allclose(g, np.repeat(a.sum(0)[:, None], n, 1), rtol=1e-5, atol=1e-5)
    with pytest.raises(TypeError, match="bool"):
        ops.matmul(Tensor(np.ones((2, 2), bool)), Tensor(np.ones((2, 2), bool)))


def _generic_sum(x, keep):
    """``x.sum()`` through the interpreter's generic path (no plan, no shortcut)."""
    from sporeling.core._eager import EagerInterpreter
    from sporeling.core.ops._core import reduce_params

    axes = tuple(range(x.ndim))
    return EagerInterpreter()._generic(reduce_sum_p, (x,), reduce_params(axes, keep))


@pytest.mark.parametrize(
    "shape", [(4, 4), (), (0,), (3, 0, 2), (7,), (2, 3, 5), (1, 1, 1, 1, 1, 1, 1, 1)]
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.complex64])
@pytest.mark.parametrize("keep", [False, True, 1, np.bool_(True)])
def test_full_sum_shortcut_matches_the_generic_path(shape, dtype, keep):
    rng = np.random.default_rng(3)
    a = rng.standard_normal(shape).astype(dtype)
    for x in (Tensor(a), Tensor(a.T.copy()).transpose() if a.ndim > 1 else Tensor(a)):
        for _ in range(2):
            got, want = x.sum(keepdims=keep), _generic_sum(x, bool(keep))
            assert type(got._data) is np.ndarray and got._data.dtype == want._data.dtype
            assert got.shape == want.shape
            np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())
            assert got._node is None


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.bool_, np.uint8])
def test_full_sum_of_ints_and_bools_stays_int64(dtype):
    x = Tensor(np.arange(12).reshape(3, 4).astype(dtype))
    for keep in (False, True):
        got, want = x.sum(keepdims=keep), _generic_sum(x, keep)
        assert got._data.dtype == np.int64 == want._data.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())


@pytest.mark.parametrize("keep", [False, True])
def test_full_sum_shortcut_records_the_generic_node_and_gradient(keep):
    w = Parameter(_t(3, 5), name="w")
    x = _t(3, 5, seed=4)
    x.requires_grad = True
    for t in (w, x, w * x):
        got, want = t.sum(keepdims=keep), _generic_sum(t, keep)
        assert got._node is not None and want._node is not None
        assert got._node.prim is want._node.prim and got._node.params == want._node.params
        assert got._node.needs == want._node.needs and got._node.inputs[0] is t
    g_fast = grad(lambda w: (w * x).sum(keepdims=keep) * 3.0)(w).asnumpy()
    g_slow = grad(lambda w: _generic_sum(w * x, keep) * 3.0)(w).asnumpy()
    np.testing.assert_array_equal(g_fast, g_slow)
    np.testing.assert_allclose(g_fast, 3.0 * x.asnumpy(), rtol=1e-6)
    with no_grad():
        assert w.sum()._node is None


def test_full_sum_with_axis_dtype_or_in_graph_mode_takes_the_other_paths():
    from sporeling.core import jit

    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = Tensor(a)
    np.testing.assert_array_equal(x.sum(axis=-1).asnumpy(), a.sum(-1))
    np.testing.assert_array_equal(x.sum(axis=(0, 1), keepdims=True).asnumpy(), a.sum(keepdims=True))
    s = x.sum(dtype=np.float64)
    assert s._data.dtype == np.float64 and s.item() == 66.0
    traced = jit(lambda t: t.sum() * 2.0)
    for _ in range(2):
        assert traced(x).item() == 132.0


@pytest.mark.parametrize(
    "shape, target",
    [((4, 6), (-1, 6)), ((4, 6), (2, -1, 3)), ((4, 6), (24, -1)), ((0, 5), (-1, 5)),
     ((2, 3, 4), (2, -1)), ((6,), (-1,))],
)  # fmt: skip
def test_reshape_with_one_inferred_axis_matches_the_generic_path(shape, target):
    from sporeling.core.ops._core import _resolve_shape, reshape_p

    a = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    x = Tensor(a)
    x.requires_grad = True
    got = ops.reshape(x, target)
    resolved = _resolve_shape("reshape", target, a.size)
    if resolved == shape:  # both paths return the input itself
        assert got is x
        return
    want = reshape_p.bind(x, shape=resolved)
    assert got.shape == want.shape == a.reshape(target).shape
    np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())
    assert got._node.prim is reshape_p and got._node.params == want._node.params
    w = np.arange(a.size, dtype=np.float32).reshape(a.reshape(target).shape)
    g = grad(lambda t: (ops.reshape(t, target) * Tensor(w)).sum())(Tensor(a)).asnumpy()
    np.testing.assert_array_equal(g, w.reshape(shape))


def test_reshape_inferred_axis_errors_unchanged():
    x = _t(4, 6)
    for bad in [(-1, -1), (-2, 12), (-1, 5), (0, -1), (-1, 2.0)]:
        with pytest.raises((ValueError, TypeError), match="reshape"):
            ops.reshape(x, bad)


def test_three_input_plans_match_the_generic_path():
    from sporeling.core._eager import EagerInterpreter
    from sporeling.core.ops._matmul import dense_bias_p

    x, w, b = _t(5, 4), _t(3, 4, seed=1), _t(3, seed=2)
    want = EagerInterpreter()._generic(dense_bias_p, (x, w, b), {}).asnumpy()
    for _ in range(3):  # the first call leaves the plan, the others take it
        np.testing.assert_array_equal(ops.dense(x, w, b).asnumpy(), want)
    f32 = np.dtype(np.float32)
    sig = ((5, 4), f32, (3, 4), f32, (3,), f32)
    keys = [k for k in dense_bias_p._eager_plans if k[1:] == sig]
    assert keys
    wp, bp = Parameter(w.asnumpy(), name="w3"), Parameter(b.asnumpy(), name="b3")
    for _ in range(2):
        y = ops.dense(x, wp, bp)
        assert y._node is not None and y._node.needs == (False, True, True)
        gw, gb = grad(lambda wp, bp: (ops.dense(x, wp, bp) ** 2).sum(), (0, 1))(wp, bp)
        y64 = x.asnumpy().astype(np.float64) @ w.asnumpy().T + b.asnumpy()
        np.testing.assert_allclose(gw.asnumpy(), 2 * y64.T @ x.asnumpy(), rtol=1e-5)
        np.testing.assert_allclose(gb.asnumpy(), 2 * y64.sum(0), rtol=1e-5)
    with no_grad():
        assert ops.dense(x, wp, bp)._node is None
    with pytest.raises(ValueError):
        ops.dense(x, _t(3, 5), b)  # another signature: the generic path's error


_COMPARISONS = ["equal", "not_equal", "greater", "greater_equal", "less", "less_equal"]


@pytest.mark.parametrize("name", _COMPARISONS)
@pytest.mark.parametrize(
    "dtype", [np.float32, np.float16, np.float64, np.int32, np.uint8, np.bool_]
)
@pytest.mark.parametrize("shape", [(4, 4), (), (0, 3), (2, 3, 5)])
def test_same_shape_comparisons_match_the_generic_path(name, dtype, shape):
    from sporeling.core._eager import EagerInterpreter
    from sporeling.core.ops import _compare

    prim = getattr(_compare, f"{name}_p")
    rng = np.random.default_rng(6)
    a = (rng.standard_normal(shape) * 3).astype(dtype)
    b = (rng.standard_normal(shape) * 3).astype(dtype)
    if a.size:
        b.reshape(-1)[0] = a.reshape(-1)[0]  # one tie
    x, y = Tensor(a), Parameter(Tensor(b), name="cmp")
    x.requires_grad = dtype in (np.float32, np.float16, np.float64)
    op = getattr(ops, name)
    if dtype == np.bool_ and name not in ("equal", "not_equal"):
        with pytest.raises(TypeError, match=name):
            op(x, y)  # the numeric family's error, from the generic path
        return
    for _ in range(2):
        got = op(x, y)
        want = EagerInterpreter()._generic(prim, (x, y), {})
        assert type(got._data) is np.ndarray and got._data.dtype == np.bool_
        assert got.shape == want.shape == shape and got._node is None
        np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())
        np.testing.assert_array_equal(got.asnumpy(), getattr(np, name)(a, b))


def test_comparisons_broadcasting_graph_mode_and_new_impls_take_the_other_paths():
    from sporeling.core import jit
    from sporeling.core.ops._compare import less_p

    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x, row = Tensor(a), Tensor(np.array([1.0, 4.0, 2.0], np.float32))
    np.testing.assert_array_equal((x < row).asnumpy(), a < np.array([1.0, 4.0, 2.0]))
    with pytest.raises(ValueError, match="less"):
        ops.less(x, Tensor(np.ones((3, 2), np.float32)))
    traced = jit(lambda t, u: ops.select(t > u, t, u))
    for _ in range(2):
        np.testing.assert_array_equal(traced(x, x * 0.5).asnumpy(), a)
    old = dict(less_p.impls)
    try:
        less_p.def_impl("cpu")(lambda xp, x, y: xp.greater(x, y))  # a deliberately wrong impl
        for _ in range(2):
            np.testing.assert_array_equal((x < x * 0.5).asnumpy(), a > a * 0.5)
    finally:
        less_p.impls.clear()
        less_p.impls.update(old)
        less_p._impl_by_device.clear()
        less_p._eager_plans.clear()
    for _ in range(2):
        np.testing.assert_array_equal((x < x * 0.5).asnumpy(), a < a * 0.5)


def test_same_shape_comparison_skips_the_interpreter(monkeypatch):
    from sporeling.core._eager import EagerInterpreter

    x, y = _t(3, 3), _t(3, 3, seed=1)
    ops.greater(x, y)  # (the first call fills the impl memo the direct path checks)
    calls = []
    real = EagerInterpreter.process
    monkeypatch.setattr(EagerInterpreter, "process", lambda *a: calls.append(a[1]) or real(*a))
    for op in (ops.equal, ops.not_equal, ops.greater, ops.greater_equal, ops.less, ops.less_equal):
        op(x, y), op(x, y)
    assert len(calls) <= 6  # at most each op's first call
    ops.greater(x, _t(3, 1))  # broadcasting: the interpreter
    assert len(calls) >= 1 and calls[-1].name == "greater"
