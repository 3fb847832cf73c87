"""Generated CPU kernels computing in float32 call ``kernels/cpu/vecmath.py`` instead of
``math``, keep float32 accuracy against a float64 evaluation of the same expression
(including where ``1 + e``, ``1 + erf(e)`` would cancel), and vectorise; float64 and CUDA
kernels keep ``math``."""

import re

import numpy as np
import pytest

import sporeling.core  # noqa: F401  (registers every op)
from sporeling.core._primitive import REGISTRY
from sporeling.core.kernels import codegen
from sporeling.core.kernels.codegen import (
    FusedProgram,
    compile_fused,
    expression_inputs,
    fused_source,
    kernel_source,
    run_elementwise,
    run_fused,
)
from sporeling.core.kernels.cpu import vecmath


def test_float32_source_maps_math_functions_and_rewrites_cancellations():
    src = kernel_source("exp(x) + log(x) + tanh(x) + erf(x) + erfc(x)", ("x",), "cpu", float32=True)
    assert "math." not in src
    for fn in ("vexp", "vlog", "vtanh", "verf", "verfc"):
        assert f"_vm.{fn}(x)" in src
    body = codegen.scalar_code
    assert body("log(1 + exp(-abs(x)))", "float32", "cpu") == "_vm.vlog1p(_vm.vexp(-abs(x)))"
    assert body("log(x + 1)", "float32", "cpu") == "_vm.vlog1p(x)"
    assert body("1 + erf(x * 0.5)", "float32", "cpu") == "_vm.verfc(-(x * 0.5))"
    assert body("erf(x) + 1", "float32", "cpu") == "_vm.verfc(-x)"
    assert body("1 - erf(x)", "float32", "cpu") == "_vm.verfc(x)"
    assert body("sqrt(x) + sin(x)", "float32", "cpu") == "math.sqrt(x) + math.sin(x)"
    # float64, CUDA: math as before
    assert body("log(1 + exp(x))", "float64", "cpu") == "math.log(1 + math.exp(x))"
    assert body("1 + erf(x)", "float32", "cuda") == "1 + math.erf(x)"
    # ndtr (the normal CDF, no math function): vecmath's in float32 CPU kernels, else erfc
    assert body("ndtr(x * 2)", "float32", "cpu") == "_vm.vndtr(x * 2)"
    spelled = "0.5 * math.erfc(-(x * 2) * 0.7071067811865476)"
    assert body("ndtr(x * 2)", "float64", "cpu") == spelled
    assert body("ndtr(x * 2)", "float32", "cuda") == spelled
    assert "math.exp" in kernel_source("exp(x)", ("x",), "cuda", float32=True)


def _vecmath_ops():
    """Registered elementwise ops whose scalar form uses a function vecmath replaces."""
    names = "|".join([*vecmath.MATH_EQUIVALENTS, *codegen._COMPOSITES])
    found = []
    for name, prim in sorted(REGISTRY.items()):
        if prim.kind == "elementwise" and prim.scalar and re.search(rf"\b({names})\(", prim.scalar):
            found.append((name, prim.scalar))
    return found


OPS = _vecmath_ops()


def test_f32_parts_compute_in_float32_in_float32_cpu_kernels_only():
    body = codegen.scalar_code
    sig = "f32(1 / (1 + exp(-x)))"
    assert body(sig, "float32", "cpu") == "_as_float32(1) / (_as_float32(1) + _vm.vexp(-x))"
    assert body(sig, "float64", "cpu") == "1 / (1 + math.exp(-x))"
    assert body(sig, "float32", "cuda") == "1 / (1 + math.exp(-x))"
    # the cancellation rewrites still see their literal 1 inside f32()
    assert body("f32(1 + erf(x * 2))", "float32", "cpu") == "_vm.verfc(-(x * _as_float32(2)))"
    assert expression_inputs("f32(x * 0.5) + y") == ("x", "y")
    with pytest.raises(codegen.UnsupportedExpression, match="f32"):
        body("f32(x, 2)", "float32", "cpu")
    # float32 arithmetic: the product rounds 0.1 to float32 first, as NumPy's float32 does
    x = np.linspace(-3, 3, 1001).astype(np.float32)
    f32 = run_elementwise("f32(x * 0.1)", [x], np.float32)
    np.testing.assert_array_equal(f32, x * np.float32(0.1))
    f64 = run_elementwise("x * 0.1", [x], np.float32)
    np.testing.assert_array_equal(f64, (x.astype(np.float64) * 0.1).astype(np.float32))
    assert not np.array_equal(f32, f64)


def test_tanh_gelu_and_sigmoid_in_float32_stay_accurate():
    """The two ops that opt into f32(): within a few float32 ulp of float64 (an absolute
    floor near 0 and in tanh-GELU's lower tail, where tanh's float32 result sets the error)."""
    from sporeling.core.ops.activation.elementwise import _GELU_TANH_SCALAR

    rng = np.random.default_rng(1)
    x = np.concatenate([rng.standard_normal(5000) * 3, [-30, -9, 0, 1e-30, 9, 30]])
    x32 = x.astype(np.float32)
    xd = x32.astype(np.float64)
    gelu = xd * 0.5 * (1 + np.tanh((xd + 0.044715 * xd**3) * np.sqrt(2 / np.pi)))
    got = run_elementwise(_GELU_TANH_SCALAR, [x32], np.float32)
    np.testing.assert_allclose(got, gelu, rtol=2e-6, atol=1e-6)
    sig = run_elementwise(REGISTRY["sigmoid"].scalar, [x32], np.float32)
    np.testing.assert_allclose(sig, 1 / (1 + np.exp(-xd)), rtol=1e-6, atol=0)


def test_the_ops_using_vecmath_are_found():
    names = {n for n, _ in OPS}
    assert {"exp", "log", "tanh", "sigmoid", "logsigmoid", "gelu", "_ndtr", "mish"} <= names


@pytest.mark.parametrize("scalar", [s for _, s in OPS], ids=[n for n, _ in OPS])
def test_float32_kernels_match_float64_evaluation(scalar):
    """Every op's float32 kernel is within a few float32 ulp (relative, with an absolute
    floor for results near 0 where the float32 input rounding decides) of the float64
    kernel evaluated at the same float32 inputs."""
    expr = codegen.substitute(scalar, {"alpha": "1.2", "beta": "1.5", "threshold": "20.0"})
    names = expression_inputs(expr)
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(4000) * 4, rng.uniform(-30, 30, 4000)])
    if "log(x)" in expr:
        x = np.abs(x) + 1e-3
    arrays = [x.astype(np.float32) for _ in names]
    got = run_elementwise(expr, arrays, np.float32)
    want = run_elementwise(expr, [a.astype(np.float64) for a in arrays], np.float64)
    assert got.dtype == np.float32
    # atol: exp(x) - exp(-x) near 0 and the like cancel, as they did with libm's expf
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=5e-7)


def test_float32_kernels_keep_relative_accuracy_in_tails():
    x = np.array([-12.0, -9.0, -6.0, 20.0, 30.0], np.float32)
    xd = x.astype(np.float64)
    gelu = "x * 0.5 * (1 + erf(x * 0.7071067811865476))"  # gelu's erf form, as fused
    np.testing.assert_allclose(
        run_elementwise(gelu, [x], np.float32)[:3],
        run_elementwise("x * 0.5 * erfc(-x * 0.7071067811865476)", [xd], np.float64)[:3],
        rtol=1e-6,
    )
    logsig = "min(x, 0) - log(1 + exp(-abs(x)))"  # log(1 + 2e-9) must not round to 0
    np.testing.assert_allclose(
        run_elementwise(logsig, [x], np.float32)[3:], -np.log1p(np.exp(-xd[3:])), rtol=1e-6
    )


def test_fused_programs_use_vecmath_for_float32_temps_only():
    prog = FusedProgram(
        2,
        ((True, True),),
        (("float32", "0.5 * erfc(-v0 * 0.7071067811865476)"), ("float64", "exp(t0)")),
        (0, 1),
    )
    src = fused_source(prog, "cpu")
    assert "_vm.verfc(" in src and "math.exp(t0)" in src
    assert "math.erfc" in fused_source(prog, "cuda")
    assert src.split("\n")[1].strip() == "_vm.wide_vectors()"  # first in the CPU kernel
    assert "wide_vectors" not in fused_source(prog, "cuda")
    assert vecmath.SOURCE_DIGEST in codegen.CPU_PRELUDE
    x = np.linspace(-14, 6, 3 * 1001, dtype=np.float32).reshape(3, 1001)
    o32 = np.empty_like(x)
    o64 = np.empty(x.shape)
    run_fused(prog, x.shape, [x], [o32, o64])
    from scipy.special import ndtr

    want = ndtr(x.astype(np.float64))
    np.testing.assert_allclose(o32, want, rtol=3e-7, atol=3e-45)  # subnormal steps
    # math.exp of a float32 temp is libm's expf in Numba, as before
    np.testing.assert_allclose(o64, np.exp(o32.astype(np.float64)), rtol=2e-7)


def test_fused_float32_kernel_vectorises(monkeypatch, tmp_path):
    monkeypatch.setenv("SPORELING_KERNEL_CACHE", str(tmp_path))  # compiled here, inspectable
    prog = FusedProgram(1, ((True,),), (("float32", "v0 * tanh(v0) + erf(v0) + 0.25"),), (0,))
    kernel = compile_fused(prog)
    x = np.linspace(-3, 3, 64, dtype=np.float32)
    out = np.empty_like(x)
    run_fused(prog, x.shape, [x], [out])
    from scipy.special import erf

    xd = x.astype(np.float64)
    np.testing.assert_allclose(out, xd * np.tanh(xd) + erf(xd) + 0.25, rtol=1e-6, atol=1e-7)
    llvm = kernel.inspect_llvm(kernel.signatures[0])
    assert re.search(r"load <(4|8|16) x float>", llvm)  # contiguous vector loads...
    assert "masked.gather" not in llvm and "masked.scatter" not in llvm  # not gathers
    assert not re.search(r"call [^\n]*@_ZN9sporeling\S*7vecmath", llvm)


def test_tanh_gelu_and_sigmoid_graph_equals_eager_and_float64():
    """Fused in a ``jit`` step (forward and gradient, odd shape, strided input) they agree
    with eager mode and with the float64 reference of the same function."""
    from sporeling.core import Tensor, jit, ops, value_and_grad

    rng = np.random.default_rng(2)  # (conftest turns fusion on)
    base = rng.standard_normal((53, 74)).astype(np.float32) * 2
    x = base[:, ::2].T  # (37, 53), not contiguous
    r = rng.standard_normal(x.shape).astype(np.float32)

    def f(x):
        return ops.reduce_sum(ops.gelu(x, "tanh") * ops.sigmoid(x * 0.7) * Tensor(r))

    eager = value_and_grad(f)(Tensor(x))
    graph = jit(value_and_grad(f))(Tensor(x))
    xd = x.astype(np.float64)
    c = np.sqrt(2 / np.pi)
    t = np.tanh((xd + 0.044715 * xd**3) * c)
    s = 1 / (1 + np.exp(-0.7 * xd))
    g = 0.5 * xd * (1 + t)
    dg = 0.5 * (1 + t) + 0.5 * xd * (1 - t * t) * c * (1 + 3 * 0.044715 * xd**2)
    want = (g * s * r).sum(), (dg * s + g * 0.7 * s * (1 - s)) * r
    for v, grad in (eager, graph):
        np.testing.assert_allclose(float(v.asnumpy()), want[0], rtol=1e-5)
        np.testing.assert_allclose(grad.asnumpy(), want[1], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(graph[1].asnumpy(), eager[1].asnumpy(), rtol=1e-5, atol=1e-6)
