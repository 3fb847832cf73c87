"""Walks the op registry: everything the graph compiler reads from a Primitive is there and true.

The compiler keeps no tables keyed by op names; it reads each primitive's fields (see
``sporeling.core._primitive``). This test checks those fields against the ops themselves,
so a wrong or missing field fails here instead of silently skipping an optimisation:

* every kind is one of :class:`Kind`, and unknown kinds are refused;
* every elementwise primitive has a scalar form, or is on :data:`NO_SCALAR_FORM` with a reason;
* ``ufunc`` names a real ufunc that computes what the impl computes, also with ``out=``;
* ``cpu_into`` writes the impl's result into the given buffer;
* ``fresh`` results never share memory with an input;
* ``reduction`` is the monoid the op computes, ``same_order`` keeps the elements in order;
* every decomposition matches its op numerically, and ``with_bias`` is the op plus a bias;
* effects, random draws and collectives are ``pinned``.

Primitives with such fields need an entry in :data:`EXAMPLES`: a new op that declares one
without an example fails :func:`test_every_declared_field_has_an_example`.
"""

import ast

import numpy as np
import pytest
from _core_registry import core_registry

import sporeling.core  # noqa: F401  (registers every op)
from sporeling.core import Tensor, dtype
from sporeling.core._primitive import REGISTRY as _LIVE
from sporeling.core._primitive import Decomposition, Kind, Primitive, ShapedArray
from sporeling.core.kernels.codegen import expression_inputs

#: elementwise primitives without a scalar form, and why (they never fuse)
NO_SCALAR_FORM = {
    # no closed form in Python's math module or CUDA's libdevice that the codegen can call;
    # their CPU kernels are hand-written Numba series (kernels/cpu/special.py)
    "erfinv": "special function",
    "bessel_i0": "special function",
    "bessel_i0e": "special function",
    "bessel_i1": "special function",
    "bessel_i1e": "special function",
    "bessel_j0": "special function",
    "bessel_j1": "special function",
    "bessel_y0": "special function",
    "bessel_y1": "special function",
    "bessel_k0": "special function",
    "bessel_k0e": "special function",
    "bessel_k1": "special function",
    "bessel_k1e": "special function",
    # ties to even needs rint, which neither math nor the codegen offers exactly
    "round": "no exact expression",
    # integer division by zero: NumPy gives 0, a generated kernel raises; the result for a
    # zero divisor depends on the dtype, which a scalar form cannot see
    "floor_div": "dtype-dependent at zero",
    "floor_mod": "dtype-dependent at zero",
    "truncate_div": "dtype-dependent at zero",
    "truncate_mod": "dtype-dependent at zero",
    # a bit count depends on the integer width (int8 -1 has 8 bits set)
    "population_count": "dtype-dependent",
    # any number of inputs: a scalar form has a fixed arity
    "addn": "variadic",
    # complex inputs or results: the fuser compiles real dtypes only
    "real": "complex",
    "imag": "complex",
    "complex": "complex",
    "complex_abs": "complex",
    "angle": "complex",
}

#: the core's primitives (tests register their own in the same process)
REGISTRY = core_registry()
_RNG = np.random.default_rng(0)


def _f(*shape):
    return _RNG.uniform(0.1, 0.9, shape)


def _ln_stats(x):
    mean = x.mean(-1, keepdims=True)
    return mean, ((x - mean) ** 2).mean(-1, keepdims=True)


_X = _f(3, 5)
_MEAN, _VAR = _ln_stats(_X)
_LN = {"begin_norm_axis": 1, "begin_params_axis": 1, "epsilon": 1e-5}

#: name -> (float64 input arrays, params), for the primitives whose fields are checked
EXAMPLES = {
    "matmul": ([_f(3, 4), _f(4, 5)], {}),
    "dense": ([_f(3, 4), _f(5, 4)], {}),
    "dense_bias": ([_f(3, 4), _f(5, 4), _f(5)], {}),
    "getitem_grad_sum": (
        [_f(2, 4), _f(2, 4), _f(2, 4)],
        {"templates": ((("i", 0),), (("i", 1),), (("i", 2),)), "shape": (3, 2, 4)},
    ),
    "reduce_sum": ([_f(3, 4)], {"axis": (1,), "keep_dims": False}),
    "reduce_max": ([_f(3, 4)], {"axis": (1,), "keep_dims": True}),
    "reduce_min": ([_f(3, 4)], {"axis": (0,), "keep_dims": False}),
    "reshape": ([_f(3, 4)], {"shape": (2, 6)}),
    "softmax": ([_f(3, 5) * 4], {"axis": (1,)}),
    "log_softmax": ([_f(3, 5) * 4], {"axis": (1,)}),
    "gelu": ([_f(3, 5) * 4 - 2], {"approximate": "none"}),
    "layer_norm": ([_X, _f(5), _f(5)], _LN),
    "layer_norm_grad": ([_f(3, 5), _f(3, 1), _f(3, 1), _X, _f(5), _MEAN, _VAR], _LN),
}
for _name, _p in REGISTRY.items():
    if _p.ufunc is not None and _name not in EXAMPLES:
        _n = len(expression_inputs(_p.scalar)) if _p.scalar else 1
        EXAMPLES[_name] = ([_f(3, 4) for _ in range(_n)], {})


def _impl(prim):
    return prim.impls.get("cpu", prim.impls.get("any"))


def _results(r):
    return r if isinstance(r, tuple) else (r,)


def test_every_kind_is_known_and_unknown_kinds_are_refused():
    assert all(isinstance(p.kind, Kind) for p in REGISTRY.values())
    assert {p.kind for p in REGISTRY.values()} <= set(Kind) - {Kind.FUSED}
    with pytest.raises(ValueError, match=r"argument 'kind' expected one of .*got 'elementwize'"):
        Primitive("_registry_test_typo", "elementwize", lambda x: x)
    with pytest.raises(ValueError, match="generated kernels only"):
        Primitive("_registry_test_fused", "fused", lambda x: x)
    assert "_registry_test_typo" not in _LIVE and "_registry_test_fused" not in _LIVE


def test_every_elementwise_primitive_has_a_scalar_form_or_a_reason():
    elementwise = {n for n, p in REGISTRY.items() if p.kind == Kind.ELEMENTWISE}
    missing = sorted(n for n in elementwise if not REGISTRY[n].scalar)
    assert missing == sorted(NO_SCALAR_FORM), (
        "elementwise primitives without a scalar form must be on NO_SCALAR_FORM with a "
        "reason (and entries leave it when they gain one)"
    )
    assert len(elementwise) - len(NO_SCALAR_FORM) >= 85  # of 105: the fuser inlines these
    for name in elementwise - set(NO_SCALAR_FORM):
        tree = ast.parse(REGISTRY[name].scalar, mode="eval")  # params appear by name
        assert {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} & {"x", "c"}, name


def test_every_declared_field_has_an_example():
    declared = {
        n
        for n, p in REGISTRY.items()
        if p.ufunc
        or p.cpu_into
        or p.fresh
        or p.decomposition
        or p.with_bias
        or p.reduction
        or p.same_order
    }
    assert declared <= set(EXAMPLES), f"add examples for {sorted(declared - set(EXAMPLES))}"


@pytest.mark.parametrize("name", sorted(n for n, p in REGISTRY.items() if p.ufunc))
def test_ufunc_computes_the_impl_also_with_out(name):
    prim = REGISTRY[name]
    ufunc = getattr(np, prim.ufunc)
    assert isinstance(ufunc, np.ufunc), f"{name}: np.{prim.ufunc} is not a ufunc"
    arrays, params = EXAMPLES[name]
    want = _impl(prim)(np, *arrays, **params)
    buf = arrays[0].copy()
    got = ufunc(buf, *arrays[1:], out=buf)
    assert got is buf
    np.testing.assert_array_equal(buf, want)


@pytest.mark.parametrize("name", sorted(n for n, p in REGISTRY.items() if p.cpu_into))
def test_cpu_into_writes_the_result_into_the_given_buffer(name):
    prim = REGISTRY[name]
    arrays, params = EXAMPLES[name]
    want = _impl(prim)(np, *arrays, **params)
    buf = np.full(want.shape, np.nan)
    got = prim.cpu_into(np, *arrays, out=buf, **params)
    np.testing.assert_allclose(buf, want, rtol=1e-12)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(prim.cpu_into(np, *arrays, out=None, **params), want, rtol=1e-12)


@pytest.mark.parametrize("name", sorted(n for n, p in REGISTRY.items() if p.fresh))
def test_fresh_results_never_share_memory_with_an_input(name):
    prim = REGISTRY[name]
    arrays, params = EXAMPLES[name]
    for r in _results(_impl(prim)(np, *arrays, **params)):
        assert not any(np.shares_memory(r, a) for a in arrays), name


@pytest.mark.parametrize("name", sorted(n for n, p in REGISTRY.items() if p.decomposition))
def test_decomposition_matches_the_op(name):
    prim = REGISTRY[name]
    d = prim.decomposition
    assert isinstance(d, Decomposition)
    arrays, params = EXAMPLES[name]
    avals = [ShapedArray(a.shape, dtype.float64) for a in arrays]
    assert d.when(avals, params), f"{name}: the example should be one the rule applies to"
    tensors = [Tensor(a) for a in arrays]
    want = _results(prim.bind(*tensors, **params))
    got = d.rule(*tensors, **{k: params[k] for k in d.params})
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g.asnumpy(), w.asnumpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(n for n, p in REGISTRY.items() if p.with_bias))
def test_with_bias_is_the_op_plus_a_bias(name):
    prim = REGISTRY[name]
    arrays, params = EXAMPLES[name]
    b = _f(_impl(prim)(np, *arrays, **params).shape[-1])
    want = _impl(prim)(np, *arrays, **params) + b
    got = _impl(prim.with_bias)(np, *arrays, b, **params)
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("name", sorted(n for n, p in REGISTRY.items() if p.reduction))
def test_reduction_is_the_monoid_the_op_computes(name):
    prim = REGISTRY[name]
    arrays, params = EXAMPLES[name]
    monoid = {"sum": np.sum, "max": np.max, "min": np.min}[prim.reduction]
    want = monoid(arrays[0], axis=params["axis"], keepdims=params["keep_dims"])
    np.testing.assert_allclose(_impl(prim)(np, *arrays, **params), want, rtol=1e-12)


@pytest.mark.parametrize("name", sorted(n for n, p in REGISTRY.items() if p.same_order))
def test_same_order_keeps_the_elements_in_order(name):
    prim = REGISTRY[name]
    arrays, params = EXAMPLES[name]
    got = np.asarray(_impl(prim)(np, *arrays, **params))
    assert got.shape != arrays[0].shape
    np.testing.assert_array_equal(got.ravel(), arrays[0].ravel())


def test_effects_random_draws_and_collectives_are_pinned():
    pinned = {n for n, p in REGISTRY.items() if p.pinned}
    ordered = {n for n, p in REGISTRY.items() if p.kind in (Kind.EFFECT, Kind.RANDOM)}
    collectives = {n for n, p in REGISTRY.items() if n.startswith("comm_")}
    assert ordered <= pinned and len(collectives) == 5 and collectives <= pinned
    assert pinned - ordered - collectives == {"jit_call", "jit_poly_call"}
