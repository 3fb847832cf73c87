"""Op-table tests for reductions and cumulative ops (sporeling.core.ops.reduction)."""

import numpy as np
import pytest

from sporeling.core import Tensor, ops
from sporeling_testing import (
    OpRecord,
    check_backward,
    check_forward,
    check_grad,
    check_grad_grad,
    records_params,
)
from sporeling_testing.optable import distinct

F = ("float16", "float32", "float64")
FI = F + ("int32",)
S = [((3, 4),), ((2, 3, 4),)]


def _ax(fn, axis, keep):
    return lambda x: fn(x, axis, keep)


def _lse(x, axis, keep):
    m = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keep else np.squeeze(out, axis=axis)


def _norm(x, axis, p, keep):
    a = np.abs(x)
    if p == 0:
        return np.sum(a != 0, axis=axis, keepdims=keep).astype(x.dtype)
    return np.sum(a**p, axis=axis, keepdims=keep) ** (1.0 / p)


def _cumext(x, axis, want_max):
    xm = np.moveaxis(x, axis, 0)
    vals = np.empty_like(xm)
    idx = np.zeros(xm.shape, np.int64)
    best, bi = xm[0].copy(), np.zeros(xm.shape[1:], np.int64)
    for j in range(xm.shape[0]):
        take = xm[j] >= best if want_max else xm[j] <= best
        best = np.where(take, xm[j], best)
        bi = np.where(take, j, bi)
        vals[j], idx[j] = best, bi
    return np.moveaxis(vals, 0, axis), np.moveaxis(idx, 0, axis)


def _segmean(x, idx, seg):
    n = seg[-1] + 1
    out = np.zeros((n,) + x.shape[1:])
    for s in range(n):
        rows = idx[seg == s]
        if rows.size:
            out[s] = x[rows].mean(0)
    return out


def _int_idx(r, s, d):
    return r.integers(0, 3, s).astype(np.int64)


def _sorted_seg(r, s, d):
    return np.sort(r.integers(0, 3, s)).astype(np.int64)


RECORDS = []
for axis, keep in [((), False), (1, False), ((0, -1), True), (-1, True)]:
    tag = f"{axis}-{keep}"
    RECORDS += [
        OpRecord(
            f"amax{tag}",
            _ax(ops.amax, axis, keep),
            lambda x, a=axis, k=keep: np.max(x, axis=a or None, keepdims=k),
            S,
            FI,
            make=distinct,
        ),
        OpRecord(
            f"amin{tag}",
            _ax(ops.amin, axis, keep),
            lambda x, a=axis, k=keep: np.min(x, axis=a or None, keepdims=k),
            S,
            FI,
            make=distinct,
        ),
        OpRecord(
            f"mean{tag}",
            _ax(ops.mean, axis, keep),
            lambda x, a=axis, k=keep: np.mean(x, axis=a or None, keepdims=k),
            S,
            F,
            order=2,
        ),
        OpRecord(
            f"prod{tag}",
            _ax(ops.prod, axis, keep),
            lambda x, a=axis, k=keep: np.prod(x, axis=a or None, keepdims=k),
            S,
            FI,
            order=2,
            tol={"float16": (2e-2, 2e-2)},
        ),
        OpRecord(
            f"logsumexp{tag}",
            _ax(ops.logsumexp, axis, keep),
            lambda x, a=axis, k=keep: _lse(x, a or None, k),
            S,
            F,
            order=2,
        ),
        OpRecord(
            f"reduce_max{tag}",
            _ax(ops.reduce_max, axis, keep),
            lambda x, a=axis, k=keep: np.max(x, axis=a or None, keepdims=k),
            S[:1],
            make=distinct,
        ),
    ]
RECORDS += [
    OpRecord(
        "max_index_value",
        lambda x: ops.max(x, 1),
        lambda x: (np.argmax(x, 1), np.max(x, 1)),
        S,
        FI,
        make=distinct,
    ),
    OpRecord(
        "min_keep",
        lambda x: ops.min(x, -1, True),
        lambda x: (np.argmin(x, -1)[..., None], np.min(x, -1, keepdims=True)),
        S,
        FI,
        make=distinct,
    ),
    OpRecord(
        "argmax",
        lambda x: ops.argmax(x, 1),
        lambda x: np.argmax(x, 1),
        S,
        FI,
        grad=False,
        make=distinct,
    ),
    OpRecord(
        "argmax_flat",
        lambda x: ops.argmax(x),
        lambda x: np.argmax(x),
        S,
        FI,
        grad=False,
        make=distinct,
    ),
    OpRecord(
        "argmin_keep",
        lambda x: ops.argmin(x, 0, True),
        lambda x: np.argmin(x, 0, keepdims=True),
        S,
        FI,
        grad=False,
        make=distinct,
    ),
    OpRecord("norm2", lambda x: ops.norm(x, 1), lambda x: _norm(x, 1, 2, False), S, F, order=2),
    OpRecord(
        "norm1_keep",
        lambda x: ops.norm(x, (0, 1), 1, True),
        lambda x: _norm(x, (0, 1), 1, True),
        S,
        F,
    ),
    OpRecord(
        "norm3", lambda x: ops.norm(x, -1, 3), lambda x: _norm(x, -1, 3, False), S, F, order=2
    ),
    OpRecord("norm0", lambda x: ops.norm(x, 0, 0), lambda x: _norm(x, 0, 0, False), S[:1], F),
    OpRecord(
        "std",
        lambda x: ops.std(x, 1),
        lambda x: (np.std(x, 1, ddof=1), np.mean(x, 1)),
        S,
        F,
        order=2,
    ),
    OpRecord(
        "std_biased_keep",
        lambda x: ops.std(x, (), False, True),
        lambda x: (np.std(x, keepdims=True), np.mean(x, keepdims=True)),
        S,
        F,
    ),
    OpRecord("var", lambda x: ops.var(x), lambda x: np.var(x), S, F, order=2),
    OpRecord(
        "var_ddof",
        lambda x: ops.var(x, (0, 1), 1, True),
        lambda x: np.var(x, (0, 1), ddof=1, keepdims=True),
        S,
        F,
        order=2,
    ),
    OpRecord("all", lambda x: ops.all(x > 0, 1), lambda x: np.all(x > 0, 1), S, FI, grad=False),
    OpRecord(
        "all_int", lambda x: ops.all(x), lambda x: np.all(x), S, ("int32", "float32"), grad=False
    ),
    OpRecord(
        "any_keep",
        lambda x: ops.any(x > 1, (0,), True),
        lambda x: np.any(x > 1, 0, keepdims=True),
        S,
        FI,
        grad=False,
    ),
    OpRecord("reduce_all", lambda x: ops.reduce_all(x > 0), lambda x: np.all(x > 0), S, grad=False),
    OpRecord(
        "reduce_any", lambda x: ops.reduce_any(x > 0, 1), lambda x: np.any(x > 0, 1), S, grad=False
    ),
    OpRecord(
        "reduce_min", lambda x: ops.reduce_min(x, 0), lambda x: np.min(x, 0), S[:1], make=distinct
    ),
    OpRecord(
        "reduce_mean",
        lambda x: ops.reduce_mean(x, 1, True),
        lambda x: np.mean(x, 1, keepdims=True),
        S[:1],
    ),
    OpRecord("reduce_prod", lambda x: ops.reduce_prod(x, 1), lambda x: np.prod(x, 1), S[:1]),
    OpRecord(
        "cumsum",
        lambda x: ops.cumsum(x, 1),
        lambda x: np.cumsum(x, 1),
        S,
        F + ("int32", "int8"),
        order=2,
        tol={"float16": (2e-2, 3e-2)},
    ),
    OpRecord("cumsum_neg", lambda x: ops.cumsum(x, -1), lambda x: np.cumsum(x, -1), S),
    OpRecord("cumsum_scalar", lambda x: ops.cumsum(x, 0), lambda x: x, [((),)]),
    OpRecord(
        "cumprod",
        lambda x: ops.cumprod(x, 0),
        lambda x: np.cumprod(x, 0),
        S,
        FI,
        tol={"float16": (2e-2, 3e-2)},
    ),
    OpRecord("cumprod_last", lambda x: ops.cumprod(x, -1), lambda x: np.cumprod(x, -1), S),
    OpRecord(
        "cummax", lambda x: ops.cummax(x, 1), lambda x: _cumext(x, 1, True), S, FI, make=distinct
    ),
    OpRecord(
        "cummin", lambda x: ops.cummin(x, 0), lambda x: _cumext(x, 0, False), S, FI, make=distinct
    ),
    OpRecord(
        "sparse_segment_mean",
        lambda x, i, s: ops.sparse_segment_mean(x, i, s),
        _segmean,
        [((4, 3), (6,), (6,)), ((5,), (4,), (4,))],
        F,
        make=[lambda r, s, d: r.standard_normal(s).astype(d), _int_idx, _sorted_seg],
        grad_wrt=(0,),
        order=2,
    ),
]

# sizes beyond the first forward test: the record's first shape family for integers
for rec in RECORDS:
    rec.tol.setdefault("float16", (1e-2, 2e-2))


@pytest.mark.parametrize("rec,dtype", records_params(RECORDS))
def test_forward(rec, dtype, device):
    check_forward(rec, dtype, device)


@pytest.mark.parametrize("rec", records_params([r for r in RECORDS if r.grad], dtypes=False))
def test_backward(rec, device):
    check_backward(rec, device)


# ---- gradient rules at special points --------------------------------------------------------


@pytest.mark.parametrize("fn", [ops.amax, lambda x, a: ops.max(x, a)[1], ops.reduce_max])
def test_max_ties_split_gradient_evenly(fn, device):
    x = Tensor([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0]], device=device)
    w = Tensor([1.0, 2.0], device=device)
    g = ops.grad(lambda t: ops.reduce_sum(fn(t, 1) * w))(x)
    np.testing.assert_allclose(g.asnumpy(), [[0, 0.5, 0.5, 0], [0.5, 0.5, 0.5, 0.5]])


def test_min_ties_split_gradient_evenly():
    x = Tensor([[1.0, 1.0, 3.0], [0.0, 5.0, 0.0]])
    g = ops.grad(lambda t: ops.reduce_sum(ops.amin(t, ())))(x)
    np.testing.assert_allclose(g.asnumpy(), [[0, 0, 0], [0.5, 0, 0.5]])
    g = ops.grad(lambda t: ops.reduce_sum(ops.min(t, 1)[1]))(x)
    np.testing.assert_allclose(g.asnumpy(), [[0.5, 0.5, 0], [0.5, 0, 0.5]])


def test_prod_gradient_with_zeros(device):
    x = np.array([[2.0, 0.0, 3.0, 4.0], [0.0, 0.0, 5.0, 1.0], [1.0, 2.0, 3.0, 4.0]])
    g = ops.grad(lambda t: ops.reduce_sum(ops.prod(t, 1)))(Tensor(x, device=device)).asnumpy()
    np.testing.assert_allclose(g, [[0, 24, 0, 0], [0, 0, 0, 0], [24, 12, 8, 6]])
    assert np.isfinite(g).all()
    check_grad(lambda t: ops.prod(t, (0, 1)), [x[:1]], device=device)
    check_grad_grad(lambda t: ops.prod(t, 1), [x[:1]], device=device)


def test_cumprod_grad_with_zeros(device):
    x = np.array([[2.0, 0.0, 3.0, 0.5], [1.5, -1.0, 0.0, 0.0]])
    check_grad(lambda t: ops.cumprod(t, 1), [x], device=device)


def test_cumprod_second_order_is_rejected():
    x = Tensor([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="cumprod.*second-order"):
        ops.grad(ops.grad(lambda t: ops.reduce_sum(ops.cumprod(t, 0) ** 2)))(x)


def test_cummax_gradient_goes_to_recorded_index(device):
    x = Tensor([[1.0, 3.0, 2.0, 3.0, 0.0]], device=device)
    w = Tensor([[1.0, 2.0, 3.0, 4.0, 5.0]], device=device)
    g = ops.grad(lambda t: ops.reduce_sum(ops.cummax(t, 1)[0] * w))(x)
    # index per position: 0, 1, 1, 3, 3
    np.testing.assert_allclose(g.asnumpy(), [[1, 5, 0, 9, 0]])
    check_grad_grad(lambda t: ops.cummin(t, 1)[0] ** 2, [np.array([[3.0, 1.0, 2.0, -1.0]])])


def test_norm_gradient_at_zero_is_zero(device):
    z = Tensor(np.zeros((2, 3)), device=device)
    for p in (0, 1, 2, 3):
        g = ops.grad(lambda t, p=p: ops.reduce_sum(ops.norm(t, 1, p)))(z).asnumpy()
        assert np.isfinite(g).all() and not g.any(), p


def test_logsumexp_is_stable_and_softmax_weighted():
    x = np.array([[1000.0, 1000.0, -1000.0], [-np.inf, 0.0, 1.0]])
    out = ops.logsumexp(Tensor(x), 1).asnumpy()
    np.testing.assert_allclose(out, [1000 + np.log(2), np.log(1 + np.e)])
    g = ops.grad(lambda t: ops.reduce_sum(ops.logsumexp(t, 1)))(Tensor(x)).asnumpy()
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(g, e / e.sum(1, keepdims=True))


def test_argmax_all_any_have_no_gradient():
    x = Tensor([1.0, 2.0])
    x.requires_grad = True
    for out in (ops.argmax(x), ops.all(x), ops.any(x, 0), ops.max(x)[0]):
        assert out._node is None


# ---- Numba kernels against the generic (GPU-path) implementations --------------------------------


@pytest.mark.parametrize(
    "shape,axis", [((1,), 0), ((7, 1), 1), ((3, 5, 2), 1), ((0, 3), 1), ((4, 0), 0), ((2, 9), -1)]
)
@pytest.mark.parametrize("dtype", ["float16", "float64", "int8", "bool"])
def test_cumulative_kernels_match_generic(shape, axis, dtype):
    from sporeling.core.kernels.cpu import cumulative
    from sporeling.core.ops import reduction as r

    rng = np.random.default_rng(1)
    x = (rng.integers(-3, 4, shape) if dtype != "bool" else rng.random(shape) < 0.5).astype(dtype)
    ax = axis % len(shape)
    np.testing.assert_array_equal(
        cumulative.cumsum(x, ax), r._xp_cumsum(np, x, axis=ax, reverse=False)
    )
    np.testing.assert_array_equal(
        cumulative.cumsum(x, ax, True), r._xp_cumsum(np, x, axis=ax, reverse=True)
    )
    np.testing.assert_array_equal(cumulative.cumprod(x, ax), r._xp_cumprod(np, x, axis=ax))
    if dtype != "bool" and x.shape[ax]:
        for want in (True, False):
            kv, ki = cumulative.cumextreme(x, ax, want)
            gv, gi = r._xp_cumextreme(np, x, axis=ax, want_max=want)
            np.testing.assert_array_equal(kv, gv)
            np.testing.assert_array_equal(ki, gi)
            assert kv.dtype == x.dtype
    if dtype in ("float16", "float64") and x.shape[ax]:
        g = rng.standard_normal(shape).astype(dtype)
        np.testing.assert_allclose(
            cumulative.cumprod_grad(g, x, ax), r._xp_cumprod_grad(np, g, x, axis=ax), rtol=1e-3
        )


def test_cumextreme_nan_sticks():
    from sporeling.core.kernels.cpu import cumulative
    from sporeling.core.ops import reduction as r

    x = np.array([[1.0, np.nan, 5.0, 0.0], [np.nan, 2.0, 3.0, 1.0]])
    for want in (True, False):
        kv, ki = cumulative.cumextreme(x, 1, want)
        gv, gi = r._xp_cumextreme(np, x, axis=1, want_max=want)
        np.testing.assert_array_equal(kv, gv)
        np.testing.assert_array_equal(ki, gi)
        np.testing.assert_array_equal(ki[0], [0, 1, 1, 1])


# ---- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call,exc,pattern",
    [
        (lambda x: ops.amax(x, 2), ValueError, "amax.*axis"),
        (lambda x: ops.amin(x, (0, 0)), ValueError, "amin.*axis"),
        (lambda x: ops.mean(x, 1.5), TypeError, "mean.*axis"),
        (lambda x: ops.prod(x, -3), ValueError, "prod.*axis"),
        (lambda x: ops.amax(x, 1, 1), TypeError, "amax.*keep_dims"),
        (lambda x: ops.max(x, 5), ValueError, "max.*axis"),
        (lambda x: ops.max(x, (0, 1)), TypeError, "max.*axis"),
        (lambda x: ops.argmin(x, 2), ValueError, "argmin.*axis"),
        (lambda x: ops.argmax(x, None, "yes"), TypeError, "argmax.*keepdims"),
        (lambda x: ops.logsumexp(x, 3), ValueError, "logsumexp.*axis"),
        (lambda x: ops.norm(x, 1, -1), ValueError, "norm.*p"),
        (lambda x: ops.norm(x, 1, 1.5), TypeError, "norm.*p"),
        (lambda x: ops.norm(x, ()), ValueError, "norm.*axis"),
        (lambda x: ops.norm(ops.cast(x, "int32"), 1), TypeError, "norm.*input_x"),
        (lambda x: ops.std(x, 4), ValueError, "std.*axis"),
        (lambda x: ops.std(x, 0, 1), TypeError, "std.*unbiased"),
        (lambda x: ops.var(x, 0, -1), ValueError, "var.*ddof"),
        (lambda x: ops.var(x, 0, 3), ValueError, "var.*ddof"),
        (lambda x: ops.all(x, 2), ValueError, "all.*axis"),
        (lambda x: ops.any(x, 0, None), TypeError, "any.*keep_dims"),
        (lambda x: ops.cumsum(x, 2), ValueError, "cumsum.*axis"),
        (lambda x: ops.cumprod(x, "0"), TypeError, "cumprod.*axis"),
        (lambda x: ops.cummax(x, -3), ValueError, "cummax.*axis"),
        (lambda x: ops.cummin(x > 0, 0), TypeError, "cummin.*x"),
        (lambda x: ops.amax(x > 0), TypeError, "amax.*x"),
        (lambda x: ops.amax([1.0, 2.0]), TypeError, "amax.*x"),
        (lambda x: ops.amax(x[:, :0], 1), ValueError, "amax.*axis"),
    ],
)
def test_errors(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call(Tensor(np.ones((3, 4), np.float32)))


def test_sparse_segment_mean_errors():
    x = Tensor(np.ones((3, 2), np.float32))
    i = Tensor([0, 1])
    with pytest.raises(ValueError, match="sparse_segment_mean.*indices.*segment_ids"):
        ops.sparse_segment_mean(x, i, Tensor([0, 0, 1]))
    with pytest.raises(ValueError, match="sparse_segment_mean.*segment_ids"):
        ops.sparse_segment_mean(x, i, Tensor([1, 0]))
    with pytest.raises(ValueError, match="sparse_segment_mean.*indices"):
        ops.sparse_segment_mean(x, Tensor([0, 3]), Tensor([0, 1]))
    with pytest.raises(TypeError, match="sparse_segment_mean.*indices"):
        ops.sparse_segment_mean(x, Tensor([0.0, 1.0]), Tensor([0, 1]))
    with pytest.raises(TypeError, match="sparse_segment_mean.*x"):
        ops.sparse_segment_mean(Tensor([[1, 2]]), Tensor([0]), Tensor([0]))


def test_max_returns_index_then_value_like_mindspore_18():
    index, values = ops.max(Tensor([0.0, 0.4, 0.6, 0.7, 0.1]))
    assert index.dtype == "int32" and index.item() == 3
    assert values.item() == pytest.approx(0.7)
    index, values = ops.max(Tensor([0.0, 0.7, 0.7]), keep_dims=True)
    assert index.tolist() == [1] and values.shape == (1,)
