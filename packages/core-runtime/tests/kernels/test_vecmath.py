"""The vectorising float32 functions of ``kernels/cpu/vecmath.py``: accuracy sweeps against
float64 NumPy/SciPy (tails and subnormals included), libm's special values, float64
arguments, and that a loop calling them compiles to SIMD code with the call inlined."""

import functools
import math
import re

import numba
import numpy as np
import pytest
import scipy.special as sp

from sporeling.core.kernels.cpu import special, vecmath
from sporeling.core.kernels.cpu.activation import ndtr

NAMES = ["vexp", "vlog", "vlog1p", "vtanh", "verf", "verfc", "vndtr"]
REFS = {
    "vexp": np.exp,
    "vlog": np.log,
    "vlog1p": np.log1p,
    "vtanh": np.tanh,
    "verf": sp.erf,
    "verfc": sp.erfc,
    "vndtr": sp.ndtr,
}
#: where each function is swept (float32 bit patterns, evenly spaced between the ends)
RANGES = {
    "vexp": [(-104.0, 89.0), (-104.0, -87.0)],  # the second: subnormal results
    "vlog": [(0.0, 3.4e38), (0.0, 1.2e-38), (0.5, 2.0)],  # subnormal inputs; around 1
    "vlog1p": [(-1.0, 3.4e38), (-1e-3, 1e-3)],
    "vtanh": [(-12.0, 12.0), (-1e-3, 1e-3)],
    "verf": [(-6.0, 6.0), (-1e-30, 1e-30)],
    "verfc": [(-12.0, 12.0), (4.0, 10.1)],  # the tail, down through the subnormals
    "vndtr": [(-16.0, 12.0), (-14.3, -5.0)],
}


@functools.cache
def _loop(name):
    fn = getattr(vecmath, name)

    @numba.njit(error_model="numpy")
    def kernel(x, out):
        for i in range(x.size):
            out[i] = fn(x[i])

    return kernel


def _run(name, x):
    out = np.empty(x.shape, np.float32)
    _loop(name)(x, out)
    return out


def _ordinal(v):
    i = int(np.array(v, np.float32).view(np.int32))
    return -(i & 0x7FFFFFFF) if i < 0 else i


def _sweep(lo, hi, n):
    """About ``n`` float32 values evenly spaced in bit-pattern order over [lo, hi]."""
    a, b = _ordinal(lo), _ordinal(hi)
    ks = np.unique(np.linspace(a, b, n).astype(np.int64))
    bits = np.where(ks < 0, (-ks) | 0x80000000, ks).astype(np.uint32)
    return bits.view(np.float32)


def _ulp_error(got, want):
    """|got - want| in units of the float32 spacing at ``want`` (subnormal spacing below)."""
    with np.errstate(invalid="ignore", over="ignore"):
        w32 = want.astype(np.float32)
        same = got.astype(np.float64) == want
        err = np.abs(got.astype(np.float64) - want) / np.spacing(np.abs(w32)).astype(np.float64)
    return np.where(same | (np.isinf(got) & np.isinf(w32) & (got == w32)), 0.0, err)


@pytest.mark.parametrize("name", NAMES)
def test_accuracy_sweep(name):
    """Max ulp error over ~1M float32 inputs per range stays within ``MAX_ULP``."""
    for lo, hi in RANGES[name]:
        x = _sweep(lo, hi, 1 << 20)
        with np.errstate(divide="ignore", over="ignore"):
            want = REFS[name](x.astype(np.float64))
        got = _run(name, x)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        err = _ulp_error(got, want)
        worst = int(np.nanargmax(err))
        assert err[worst] <= vecmath.MAX_ULP[name], (
            f"{name}({x[worst]!r}) = {got[worst]!r}, want {want[worst]!r}: "
            f"{err[worst]:.2f} ulp > {vecmath.MAX_ULP[name]}"
        )


INF, NAN = math.inf, math.nan
SPECIAL = {
    "vexp": [(0.0, 1.0), (-0.0, 1.0), (INF, INF), (-INF, 0.0), (NAN, NAN), (88.8, INF)]
    + [(-104.0, 0.0), (-103.0, np.float32(1.4e-45)), (1e-30, 1.0)]
    # far below the underflow: 0 by a select (a causal mask's -1e9), the boundary included
    + [(-104.5, 0.0), (-104.49, 0.0), (-1e9, 0.0), (-3.4e38, 0.0), (-103.9, np.float32(1.4e-45))],
    "vlog": [(1.0, 0.0), (0.0, -INF), (-0.0, -INF), (-1.0, NAN), (-INF, NAN), (INF, INF)]
    + [(NAN, NAN)],
    "vlog1p": [(0.0, 0.0), (-1.0, -INF), (-2.0, NAN), (INF, INF), (NAN, NAN)]
    + [(1e-30, 1e-30), (-INF, NAN)],
    "vtanh": [(0.0, 0.0), (INF, 1.0), (-INF, -1.0), (NAN, NAN), (20.0, 1.0), (-9.5, -1.0)]
    + [(1e-30, 1e-30), (1e-40, 1e-40)],
    "verf": [(0.0, 0.0), (INF, 1.0), (-INF, -1.0), (NAN, NAN), (7.0, 1.0), (-7.0, -1.0)],
    "verfc": [(0.0, 1.0), (INF, 0.0), (-INF, 2.0), (NAN, NAN), (11.0, 0.0), (-11.0, 2.0)]
    + [(1e9, 0.0), (-1e9, 2.0)],
    "vndtr": [(0.0, 0.5), (INF, 1.0), (-INF, 0.0), (NAN, NAN), (-15.0, 0.0), (9.0, 1.0)]
    + [(-1e9, 0.0), (1e9, 1.0)],
}


@pytest.mark.parametrize("name", NAMES)
def test_special_values_like_libm(name):
    x = np.array([v for v, _ in SPECIAL[name]], np.float32)
    want = np.array([w for _, w in SPECIAL[name]], np.float32)
    got = _run(name, x)
    np.testing.assert_array_equal(got, want)  # NaN == NaN here
    # signed zeros pass through where libm keeps them
    if name in ("vtanh", "verf", "vlog1p"):
        assert np.signbit(_run(name, np.array([-0.0], np.float32))[0])


def test_float64_arguments_keep_their_precision():
    """exp and erfc of a float64 argument are the float32 rounding of the exact value, not
    of exp/erfc at the argument rounded to float32 (which is ~50-100 ulp off at 80/9)."""
    rng = np.random.default_rng(0)
    cases = [("vexp", np.exp, -100.0, 88.0), ("verfc", sp.erfc, -3.0, 9.0)]
    cases.append(("vndtr", sp.ndtr, -14.0, 8.0))
    for name, ref, lo, hi in cases:
        xd = rng.uniform(lo, hi, 200_000)
        assert np.any(xd.astype(np.float32).astype(np.float64) != xd)
        kernel = _loop(name)
        out = np.empty(xd.shape, np.float32)
        kernel(xd, out)
        assert _ulp_error(out, ref(xd)).max() <= vecmath.MAX_ULP_FLOAT64_ARG[name]


@pytest.mark.parametrize("like", [np.float32, np.float64])
def test_exp_as_follows_the_precision_of_like(like):
    @numba.njit
    def kernel(d, like_arr, out):
        for i in range(d.size):
            out[i] = vecmath.exp_as(d[i], like_arr[i])

    d = np.linspace(-80.0, 80.0, 4001)
    out = np.empty_like(d)
    kernel(d, np.zeros(d.size, like), out)
    if like is np.float64:
        np.testing.assert_allclose(out, [math.exp(v) for v in d], rtol=1e-15, atol=0)
    else:
        assert np.all(out == out.astype(np.float32))  # float32 values
        np.testing.assert_array_less(_ulp_error(out.astype(np.float32), np.exp(d)), 1.1)


@pytest.mark.parametrize("name", NAMES)
def test_loops_vectorise_with_the_call_inlined(name):
    kernel = _loop(name)
    _run(name, np.ones(4, np.float32))
    ir = kernel.inspect_llvm(kernel.signatures[0])
    assert re.search(r"<(4|8|16) x float>", ir), f"{name}: loop did not vectorise"
    called = re.search(r"call [^\n]*@_ZN9sporeling\S*7vecmath", ir)
    assert not called, f"{name}: a call was not inlined"


def test_wide_vectors_asks_llvm_for_512_bit_vectors_in_its_function_only():
    @numba.njit(error_model="numpy")
    def wide(x, out):
        vecmath.wide_vectors()
        for i in range(x.size):
            out[i] = vecmath.vexp(x[i])

    @numba.njit(error_model="numpy")
    def default(x, out):
        for i in range(x.size):
            out[i] = vecmath.vexp(x[i])

    x = np.linspace(-90, 90, 1001, dtype=np.float32)
    a, b = np.empty_like(x), np.empty_like(x)
    wide(x, a)
    default(x, b)
    np.testing.assert_array_equal(a, b)  # same arithmetic, wider registers
    attr = '"prefer-vector-width"="512"'
    assert attr in wide.inspect_llvm(wide.signatures[0])
    assert attr not in default.inspect_llvm(default.signatures[0])


def test_max_ulp_covers_every_function_and_docstring_states_it():
    assert set(vecmath.MAX_ULP) == set(NAMES)
    doc = " ".join((vecmath.__doc__ or "").split())
    for name, bound in vecmath.MAX_ULP.items():
        assert f"{name[1:]} {bound}" in doc


# ---- callers: ndtr kernel, special.apply, softmax ----------------------------------------


def test_ndtr_float32_kernel_keeps_the_lower_tail():
    x = _sweep(-14.0, 8.0, 200_000)
    got = ndtr(x)
    assert got.dtype == np.float32
    assert _ulp_error(got, sp.ndtr(x.astype(np.float64))).max() <= vecmath.MAX_ULP["vndtr"]
    # float64 keeps libm
    xd = np.linspace(-30.0, 8.0, 1001)
    np.testing.assert_allclose(ndtr(xd), sp.ndtr(xd), rtol=1e-12, atol=0)


@pytest.mark.parametrize("name", ["erf", "erfc"])
def test_special_apply_float32_path(name):
    x = _sweep(-9.0, 9.0, 100_000)
    got = special.apply(name, x)
    assert got.dtype == np.float32 and got.shape == x.shape
    err = _ulp_error(got, getattr(sp, name)(x.astype(np.float64)))
    assert err.max() <= vecmath.MAX_ULP["v" + name]
    assert special.apply(name, np.float32(0.5)).shape == ()
    assert special.apply(name, np.zeros((0, 3), np.float32)).shape == (0, 3)


def test_softmax_float32_rows_accurate():
    from sporeling.core.kernels.cpu.softmax import softmax_lastaxis

    x = np.random.default_rng(3).standard_normal((64, 513)).astype(np.float32) * 8
    xd = x.astype(np.float64)
    ref = np.exp(xd - xd.max(-1, keepdims=True))
    ref /= ref.sum(-1, keepdims=True)
    assert _ulp_error(softmax_lastaxis(x), ref).max() < 3
    log_ref = np.log(ref)
    np.testing.assert_allclose(softmax_lastaxis(x, log=True), log_ref, rtol=2e-6, atol=2e-6)
