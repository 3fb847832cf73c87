"""Op-table tests for ``sporeling.core.ops.math`` and the special-function kernels."""

import numpy as np
import pytest
import scipy.special as sp

from sporeling.core import Tensor, grad, ops
from sporeling.core.kernels.cpu import special as kcpu
from sporeling.core.kernels.gpu import special as kgpu
from sporeling_testing import OpRecord, check_backward, check_forward, records_params
from sporeling_testing.optable import away_from_integers, default_make, positive, unit

BCAST = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (2, 3))]
UNARY = [((3, 4),), ((),), ((2, 0, 3),)]
FLOATS = ("float16", "float32", "float64")
INTS = ("int8", "int32", "int64", "uint8")
#: float64 forward tolerance of the special functions against SciPy (see also
#: test_special_accuracy, which covers wide ranges at 1e-13)
SPECIAL_TOL = {"float64": (1e-12, 1e-14)}


def _above_one(rng, shape, dtype):
    return (rng.random(shape) * 2 + 1.2).astype(dtype)


def _bessel_any(rng, shape, dtype):
    """Both signs, crossing the interval boundaries at 5 and 8, away from 0."""
    mag = rng.random(shape) * 9.5 + 0.3
    return (mag * rng.choice([-1.0, 1.0], shape)).astype(dtype)


def _bessel_pos(rng, shape, dtype):
    return (rng.random(shape) * 9.5 + 0.3).astype(dtype)


def _nonzero(rng, shape, dtype):
    """Divisors: magnitudes in [0.5, 2.5] (floats) or 1..5 (integers), both signs."""
    kind = np.dtype(dtype).kind
    if kind == "f":
        mag = rng.random(shape) * 2 + 0.5
    else:
        mag = rng.integers(1, 6, shape)
    if kind == "u":
        return mag.astype(dtype)
    return (mag * rng.choice([-1, 1], shape)).astype(dtype)


def _dividend(rng, shape, dtype):
    kind = np.dtype(dtype).kind
    if kind == "f":
        return (rng.standard_normal(shape) * 4).astype(dtype)
    if kind == "u":
        return rng.integers(0, 50, shape).astype(dtype)
    return rng.integers(-50, 51, shape).astype(dtype)


def _truncate_div_ref(x, y):
    if np.asarray(x).dtype.kind == "f":
        return np.trunc(x / y)
    return (np.sign(x) * np.sign(y) * (np.abs(x) // np.abs(y))).astype(np.result_type(x, y))


def _xlogy_ref(x, y):
    return np.where(x == 0, 0.0, x * np.log(y))


def _with_zeros(rng, shape, dtype):
    a = rng.standard_normal(shape)
    a[rng.random(shape) < 0.3] = 0.0
    return a.astype(dtype)


def _rec(name, fn, ref, shapes=UNARY, dtypes=FLOATS, **kw):
    return OpRecord(name, fn, ref, shapes, dtypes=dtypes, **kw)


def _special(name, fn, ref, make, order=2):
    return _rec(name, fn, ref, dtypes=FLOATS, make=make, tol=SPECIAL_TOL, order=order)


RECORDS = [
    # trigonometric / hyperbolic / exponential
    _rec("sin", ops.sin, np.sin, order=2),
    _rec("cos", ops.cos, np.cos, order=2),
    _rec("tan", ops.tan, np.tan, make=unit, order=2),
    _rec("sinh", ops.sinh, np.sinh, order=2),
    _rec("cosh", ops.cosh, np.cosh, order=2),
    _rec("tanh", ops.tanh, np.tanh, order=2),
    _rec("asin", ops.asin, np.arcsin, make=unit, order=2),
    _rec("acos", ops.acos, np.arccos, make=unit, order=2),
    _rec("atan", ops.atan, np.arctan, order=2),
    _rec("asinh", ops.asinh, np.arcsinh, order=2),
    _rec("acosh", ops.acosh, np.arccosh, make=_above_one, order=2),
    _rec("atanh", ops.atanh, np.arctanh, make=unit, order=2),
    _rec("exp2", ops.exp2, np.exp2, order=2),
    _rec("expm1", ops.expm1, np.expm1, order=2),
    _rec("log1p", ops.log1p, np.log1p, make=positive, order=2),
    _rec("log2", ops.log2, np.log2, make=positive, order=2),
    _rec("rsqrt", ops.rsqrt, lambda x: 1 / np.sqrt(x), make=positive, order=2),
    _rec("reciprocal", ops.reciprocal, np.reciprocal, make=positive, order=2),
    _rec("inv", ops.inv, np.reciprocal, make=positive),
    _rec("deg2rad", ops.deg2rad, np.deg2rad),
    _rec("rad2deg", ops.rad2deg, np.rad2deg),
    # special functions
    _special("erf", ops.erf, sp.erf, default_make),
    _special("erfc", ops.erfc, sp.erfc, default_make),
    _special("erfinv", ops.erfinv, sp.erfinv, unit),
    _special("bessel_i0", ops.bessel_i0, sp.i0, _bessel_any),
    _special("bessel_i0e", ops.bessel_i0e, sp.i0e, _bessel_any),
    _special("bessel_i1", ops.bessel_i1, sp.i1, _bessel_any),
    _special("bessel_i1e", ops.bessel_i1e, sp.i1e, _bessel_any),
    _special("bessel_j0", ops.bessel_j0, sp.j0, _bessel_any),
    _special("bessel_j1", ops.bessel_j1, sp.j1, _bessel_any),
    _special("bessel_y0", ops.bessel_y0, sp.y0, _bessel_pos),
    _special("bessel_y1", ops.bessel_y1, sp.y1, _bessel_pos),
    _special("bessel_k0", ops.bessel_k0, sp.k0, _bessel_pos),
    _special("bessel_k0e", ops.bessel_k0e, sp.k0e, _bessel_pos),
    _special("bessel_k1", ops.bessel_k1, sp.k1, _bessel_pos),
    _special("bessel_k1e", ops.bessel_k1e, sp.k1e, _bessel_pos),
    # abs, sign, rounding
    _rec("abs", ops.abs, np.abs, dtypes=FLOATS + ("int8", "int32", "int64"), make=_nonzero),
    _rec("absolute", ops.absolute, np.abs, dtypes=("float32",), make=_nonzero),
    _rec("sign", ops.sign, np.sign, dtypes=FLOATS + ("int32",), make=_with_zeros, grad=False),
    _rec("floor", ops.floor, np.floor, dtypes=FLOATS + INTS, make=away_from_integers),
    _rec("ceil", ops.ceil, np.ceil, dtypes=FLOATS + INTS, make=away_from_integers),
    _rec("round", ops.round, np.round, dtypes=FLOATS + INTS, make=away_from_integers),
    _rec("trunc", ops.trunc, np.trunc, dtypes=FLOATS + INTS, make=away_from_integers),
    # binary float ops
    _rec("atan2", ops.atan2, np.arctan2, BCAST, order=2),
    _rec("hypot", ops.hypot, np.hypot, BCAST, make=_nonzero, order=2),
    _rec("logaddexp", ops.logaddexp, np.logaddexp, BCAST, order=2),
    _rec("logaddexp2", ops.logaddexp2, np.logaddexp2, BCAST, order=2),
    # x == 0 is in the forward checks; the gradient there is 0 by definition (MindSpore's
    # rule, see test_xlogy_xdivy_zero_x), not the finite-difference limit
    _rec("xlogy", ops.xlogy, _xlogy_ref, BCAST, make=[_with_zeros, positive], grad=False),
    _rec("xlogy_grad", ops.xlogy, _xlogy_ref, BCAST, make=[default_make, positive], order=2),
    _rec(
        "xdivy",
        ops.xdivy,
        lambda x, y: np.where(x == 0, 0.0, x / y),
        BCAST,
        make=[_with_zeros, _nonzero],
        grad=False,
    ),
    _rec(
        "xdivy_grad", ops.xdivy, lambda x, y: x / y, BCAST, make=[default_make, _nonzero], order=2
    ),
    _rec(
        "lerp",
        ops.lerp,
        lambda s, e, w: s + w * (e - s),
        [((3, 4), (3, 4), (3, 4)), ((3, 4), (4,), ()), ((2, 1), (3,), (2, 3))],
        order=2,
    ),
    _rec(
        "lerp_float_weight", lambda s, e: ops.lerp(s, e, 0.3), lambda s, e: s + 0.3 * (e - s), BCAST
    ),
    _rec(
        "ldexp",
        lambda x, n: ops.ldexp(x, n.astype("int32") if n.dtype.category == 2 else n),
        lambda x, n: np.ldexp(x, np.asarray(n).astype(np.int32)),
        BCAST,
        dtypes=("float32", "float64"),
        make=[default_make, lambda r, s, d: r.integers(-3, 4, s).astype(d)],
        grad_wrt=(0,),
    ),
    # integer division and remainders
    _rec(
        "floor_div",
        ops.floor_div,
        np.floor_divide,
        BCAST,
        dtypes=FLOATS + INTS,
        make=[_dividend, _nonzero],
        grad=False,
    ),
    _rec(
        "floor_mod",
        ops.floor_mod,
        np.remainder,
        BCAST,
        dtypes=FLOATS + INTS,
        make=[_dividend, _nonzero],
        order=2,
    ),
    _rec(
        "truncate_div",
        ops.truncate_div,
        _truncate_div_ref,
        BCAST,
        dtypes=FLOATS + INTS,
        make=[_dividend, _nonzero],
        grad=False,
    ),
    _rec(
        "truncate_mod",
        ops.truncate_mod,
        np.fmod,
        BCAST,
        dtypes=FLOATS + INTS,
        make=[_dividend, _nonzero],
        order=2,
    ),
    # integer, bitwise and logical ops
    _rec("gcd", ops.gcd, np.gcd, BCAST, dtypes=INTS, make=_dividend, grad=False),
    _rec("lcm", ops.lcm, np.lcm, BCAST, dtypes=("int32", "int64", "uint8"), grad=False),
    _rec(
        "bitwise_and",
        ops.bitwise_and,
        np.bitwise_and,
        BCAST,
        dtypes=INTS + ("bool",),
        make=_dividend,
        grad=False,
    ),
    _rec(
        "bitwise_or",
        ops.bitwise_or,
        np.bitwise_or,
        BCAST,
        dtypes=INTS + ("bool",),
        make=_dividend,
        grad=False,
    ),
    _rec(
        "bitwise_xor",
        ops.bitwise_xor,
        np.bitwise_xor,
        BCAST,
        dtypes=INTS + ("bool",),
        make=_dividend,
        grad=False,
    ),
    _rec("invert", ops.invert, np.invert, dtypes=INTS + ("bool",), make=_dividend, grad=False),
    _rec("logical_and", ops.logical_and, np.logical_and, BCAST, dtypes=("bool",), grad=False),
    _rec("logical_or", ops.logical_or, np.logical_or, BCAST, dtypes=("bool",), grad=False),
    _rec("logical_xor", ops.logical_xor, np.logical_xor, BCAST, dtypes=("bool",), grad=False),
    _rec("logical_not", ops.logical_not, np.logical_not, dtypes=("bool",), grad=False),
    # others
    _rec(
        "addn",
        lambda a, b, c: ops.addn([a, b, c]),
        lambda a, b, c: a + b + c,
        [((3, 4),) * 3, ((),) * 3],
        dtypes=FLOATS + ("int32",),
    ),
    _rec("addn_one", lambda a: ops.addn((a,)), lambda a: a, [((3, 4),)]),
    _rec("isreal", ops.isreal, np.isreal, dtypes=("float32", "int32", "bool"), grad=False),
]

# bool inputs of the bitwise ops come from default_make (random bools)
for _r in RECORDS:
    if _r.name.startswith("bitwise") or _r.name == "invert":
        _base = _r.make
        _r.make = (
            lambda base: lambda r, s, d: default_make(r, s, d) if d == "bool" else base(r, s, d)
        )(_base)


@pytest.mark.parametrize("rec,dtype", records_params(RECORDS))
def test_forward(rec, dtype, device):
    check_forward(rec, dtype, device)


@pytest.mark.parametrize("rec", records_params([r for r in RECORDS if r.grad], dtypes=False))
def test_backward(rec, device):
    check_backward(rec, device)


# ---- special functions: accuracy over wide ranges, both implementations -------------------

_SPECIAL_NAMES = [
    "i0",
    "i0e",
    "i1",
    "i1e",
    "j0",
    "j1",
    "y0",
    "y1",
    "k0",
    "k0e",
    "k1",
    "k1e",
    "erf",
    "erfc",
    "erfinv",
]


def _wide_inputs(name, n=4001):
    rng = np.random.default_rng(1)
    if name == "erfinv":
        tails = 1 - np.exp(rng.uniform(-35, -1, n // 4))
        return np.concatenate([rng.uniform(-1, 1, n // 2), tails, -tails])
    # scipy's own j/y lose accuracy past ~50 (they reduce x - pi/4 in double precision)
    top = 50.0 if name[0] in "jy" else 700.0 if name[0] in "ik" else 26.0
    mags = np.concatenate(
        [rng.uniform(0, top, n // 2), np.exp(rng.uniform(-30, np.log(top), n // 2))]
    )
    if name[0] in "yk":
        return mags
    return np.concatenate([mags, -mags[::3]])


@pytest.mark.parametrize("path", ["numba", "array"])
@pytest.mark.parametrize("name", _SPECIAL_NAMES)
def test_special_accuracy(name, path):
    """Relative error <= 1e-13 against SciPy in float64 (plus 1e-15 absolute for the
    oscillating j/y, whose relative error near their zeros is not meaningful)."""
    x = _wide_inputs(name)
    got = kcpu.apply(name, x) if path == "numba" else kgpu.apply(name, np, x)
    want = getattr(sp, name)(x)
    normal = np.abs(want) > 1e-300  # subnormal results have no relative accuracy
    atol = 1e-15 if name[0] in "jy" else 0.0
    np.testing.assert_allclose(got[normal], want[normal], rtol=1e-13, atol=atol)


@pytest.mark.parametrize("name", _SPECIAL_NAMES)
def test_special_values_and_kernel_vs_array(name):
    """inf, nan, 0, negatives and odd sizes/strides agree between both paths and SciPy."""
    x = np.array(
        [0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, 1.0, 5.0, 8.0, 2.0, 1e-310, 1.0 - 2**-53]
    )
    a = kcpu.apply(name, x)
    b = kgpu.apply(name, np, x)
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    np.testing.assert_allclose(a, b, rtol=1e-13, atol=0)
    want = getattr(sp, name)(x)
    # scipy gives NaN for j/y at +-inf (the limit is 0); subnormal results carry no
    # relative accuracy
    keep = np.isfinite(x) & ~((np.abs(want) < 1e-300) & (want != 0))
    np.testing.assert_allclose(a[keep], want[keep], rtol=1e-13)
    if name[0] in "jy":
        assert np.all(a[np.isinf(x) & (x > 0)] == 0)
    strided = np.linspace(0.1, 9.7, 37)[::3]
    np.testing.assert_allclose(kcpu.apply(name, strided), kgpu.apply(name, np, strided), rtol=1e-13)
    assert kcpu.apply(name, np.zeros((0, 3))).shape == (0, 3)
    assert kcpu.apply(name, np.float32(0.5)).dtype == np.float32


def test_special_gpu_impl_falls_back_to_array_path():
    """Without CuPy the "gpu" impl of each special op evaluates the array approximations."""
    from sporeling.core._primitive import REGISTRY

    x = np.linspace(-3, 3, 13).astype(np.float16)
    for name in ("erf", "bessel_j0", "bessel_i1e"):
        impls = REGISTRY[name].impls
        np.testing.assert_array_equal(impls["gpu"](np, x), impls["any"](np, x))


def test_special_ops_keep_dtype_and_promote_ints(device):
    x = Tensor([1, 2, 3], device=device)
    for fn in (ops.erf, ops.bessel_j0, ops.sin, ops.exp2, ops.log1p):
        assert fn(x).dtype == "float32"
    assert ops.bessel_i0(Tensor([1.0], dtype="float16", device=device)).dtype == "float16"


def test_special_gradient_identities():
    """Gradients at 0 take the limits: d/dx i1 = d/dx j1 = 1/2 and d/dx i1e = 1/2."""
    zero = Tensor([0.0], dtype="float64")
    for fn in (ops.bessel_i1, ops.bessel_j1, ops.bessel_i1e):
        assert grad(lambda x, f=fn: ops.reduce_sum(f(x)))(zero).tolist() == [0.5]
    x = Tensor([0.7], dtype="float64")
    assert np.isclose(
        grad(lambda t: ops.reduce_sum(ops.erf(t)))(x).item(), 2 / np.sqrt(np.pi) * np.exp(-0.49)
    )


# ---- semantics ------------------------------------------------------------------------------


def test_rounding_keeps_integers():
    x = Tensor([-3, 0, 7], dtype="int32")
    for fn in (ops.floor, ops.ceil, ops.round, ops.trunc):
        out = fn(x)
        assert out.dtype == "int32" and out.tolist() == [-3, 0, 7]
    assert ops.round(Tensor([0.5, 1.5, 2.5, -0.5])).tolist() == [0.0, 2.0, 2.0, -0.0]


def test_integer_division_by_zero_is_quiet():
    out = ops.floor_div(Tensor([1, -1]), Tensor([0, 0]))
    assert out.tolist() == [0, 0]
    assert np.isinf(ops.floor_div(Tensor([1.0]), 0.0).asnumpy()).all()
    assert ops.truncate_div(Tensor([1, -7]), Tensor([0, 2])).tolist() == [0, -3]


def test_xlogy_xdivy_zero_x():
    assert ops.xlogy(Tensor([0.0, 1.0]), Tensor([0.0, 1.0])).tolist() == [0.0, 0.0]
    assert ops.xdivy(Tensor([0.0]), Tensor([0.0])).tolist() == [0.0]
    x = Tensor([0.0, 2.0], dtype="float64")
    y = Tensor([3.0, 3.0], dtype="float64")
    for fn in (ops.xlogy, ops.xdivy):
        gx, gy = grad(lambda a, b, f=fn: ops.reduce_sum(f(a, b)), grad_position=(0, 1))(x, y)
        assert gx.tolist()[0] == 0.0 and gy.tolist()[0] == 0.0  # no gradient where x == 0


def test_non_differentiable_ops_have_zero_gradient():
    x = Tensor([0.3, 1.7, -2.2], dtype="float64")
    for fn in (
        ops.floor,
        ops.ceil,
        ops.round,
        ops.trunc,
        ops.sign,
        lambda t: ops.floor_div(t, 0.7),
        lambda t: ops.truncate_div(t, 0.7),
    ):
        g = grad(lambda t, f=fn: ops.reduce_sum(f(t) * t))(x)  # d/dt (f(t) t) = f(t)
        np.testing.assert_allclose(g.asnumpy(), fn(x).asnumpy())


def test_floor_mod_gradient_matches_mindspore_rule():
    x = Tensor([5.5, -3.2], dtype="float64")
    y = Tensor([2.0, 1.5], dtype="float64")
    gx, gy = grad(lambda a, b: ops.reduce_sum(ops.floor_mod(a, b)), grad_position=(0, 1))(x, y)
    assert gx.tolist() == [1.0, 1.0]
    assert gy.tolist() == [-2.0, 3.0]


def test_tensor_python_scalars():
    assert ops.atan2(1.0, Tensor([1.0])).tolist() == pytest.approx([np.pi / 4])
    assert ops.bitwise_and(Tensor([6], dtype="uint8"), 3).dtype == "uint8"
    assert ops.logical_or(True, Tensor([False])).tolist() == [True]


# ---- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda: ops.gcd(Tensor([1.0]), Tensor([2])), TypeError, "gcd.*x1"),
        (lambda: ops.lcm(Tensor([1]), Tensor([True])), TypeError, "lcm.*x2"),
        (lambda: ops.bitwise_and(Tensor([1]), 1.5), TypeError, "bitwise_and.*'y'"),
        (lambda: ops.bitwise_xor(Tensor([1.0]), Tensor([1])), TypeError, "bitwise_xor.*'x'"),
        (lambda: ops.invert(Tensor([1.0])), TypeError, "invert.*'x'"),
        (lambda: ops.logical_and(Tensor([1]), Tensor([True])), TypeError, "logical_and.*'x'"),
        (lambda: ops.logical_or(Tensor([True]), 1), TypeError, "logical_or.*'y'"),
        (lambda: ops.logical_not(Tensor([1.0])), TypeError, "logical_not.*'x'"),
        (lambda: ops.addn(Tensor([1.0])), TypeError, "addn.*'x'"),
        (lambda: ops.addn([]), TypeError, "addn.*'x'"),
        (lambda: ops.addn([Tensor([1.0]), 2.0]), TypeError, r"addn.*x\[1\]"),
        (lambda: ops.addn([Tensor([1.0]), Tensor([1.0, 2.0])]), ValueError, "addn.*'x'.*shape"),
        (lambda: ops.addn([Tensor([1.0]), Tensor([1])]), TypeError, "addn.*'x'.*dtype"),
        (lambda: ops.atan2(Tensor([1.0, 2.0]), Tensor([1.0, 2.0, 3.0])), ValueError, "atan2"),
        (lambda: ops.hypot(Tensor([1.0]), "a"), TypeError, "hypot.*other"),
        (lambda: ops.lerp(Tensor([1.0]), Tensor([2.0]), "w"), TypeError, "lerp.*weight"),
        (lambda: ops.ldexp(Tensor([1.0]), Tensor([True])), TypeError, "ldexp.*other"),
        (lambda: ops.bessel_j0("x"), TypeError, "bessel_j0.*'x'"),
        (lambda: ops.erfinv(None), TypeError, "erfinv.*input"),
        (lambda: ops.tanh([1, "a"]), TypeError, "tanh.*input_x"),
        (lambda: ops.abs(Tensor([True])), TypeError, "abs.*'x'"),
        (lambda: ops.floor(Tensor([True])), TypeError, "floor.*'x'"),
        (lambda: ops.floor_div(Tensor([1, 2]), Tensor([1, 2, 3])), ValueError, "floor_div"),
    ],
)
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
