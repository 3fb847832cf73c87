"""The same DSL kernel gives identical results interpreted, compiled for the CPU (Numba)
and compiled for the GPU (Numba CUDA, run by the simulator in a subprocess)."""
# ruff: noqa: F821 - Hybrid DSL intrinsics (output_tensor, parallel, ...) are injected

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from dsl_suite import SUITE, as_tuple, compare

from sporeling.customop import kernel, ms_hybrid, ms_kernel

HERE = Path(__file__).parent


@pytest.mark.parametrize("name", list(SUITE))
def test_interpreted_matches_numpy_reference(name):
    k, make, ref, _ = SUITE[name]
    if ref is None:
        return
    got = as_tuple(k(*make()))
    want = as_tuple(ref(*make()))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_suite_cpu_compiled_identical_to_interpreted():
    report = compare("cpu")
    assert not report["failed"], "\n".join(report["failed"])
    assert len(report["passed"]) == len(SUITE)


def test_suite_cuda_simulator_identical_to_interpreted():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    proc = subprocess.run(
        [sys.executable, str(HERE / "dsl_suite.py"), "cuda"],
        env=env, capture_output=True, text=True, timeout=600, cwd=HERE,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not report["failed"], "\n".join(report["failed"])
    assert len(report["passed"]) == len(SUITE)


@pytest.mark.gpu
def test_suite_real_gpu_identical_to_interpreted():
    report = compare("cuda")
    assert not report["failed"], "\n".join(report["failed"])


def test_inplace_direct_call_mutates_and_returns_input():
    k = SUITE["inplace"][0]
    x = np.arange(4, dtype=np.float32)
    out = k.run(x, target="cpu")
    assert out is x
    np.testing.assert_array_equal(x, np.arange(4, dtype=np.float32) * 3 - 1)


@kernel
def _grid_double(a):
    b = output_tensor(a.shape, a.dtype)
    for idx in grid(a.shape):
        b[idx] = a[idx] * 2.0
    return b


def test_grid_loops_interpreted_and_cpu():
    a = np.random.default_rng(1).standard_normal((3, 4, 2)).astype(np.float32)
    np.testing.assert_array_equal(_grid_double(a), a * 2)
    np.testing.assert_array_equal(_grid_double.run(a, target="cpu"), a * 2)
    assert "np.ndindex" in _grid_double.source("cpu")


def test_generated_sources():
    src = SUITE["matmul"][0].source("cpu")
    assert "prange(a.shape[0])" in src and "parallel=True" in src and "cache=True" in src
    cuda = SUITE["matmul"][0].source("cuda")
    assert "cuda.grid(2)" in cuda and "def launch(a, b)" in cuda
    serial = SUITE["serial_cumsum"][0].source("cpu")
    assert "prange" not in serial.split("def serial_cumsum")[1] and "parallel=False" in serial


def test_shape_dtype_inference_does_not_run_loops():
    k = SUITE["matmul"][0]
    shapes, dtypes = k.infer([(10_000, 3000), (3000, 20_000)], ["float64", "float64"])
    assert shapes == [(10_000, 20_000)] and dtypes == [np.float64]
    shapes, dtypes = SUITE["two_outputs"][0].infer([(5,)], ["float32"])
    assert shapes == [(5,), (5,)] and dtypes == [np.float32, np.float32]


def _mm_hinted(attrs):
    def mm(a, b):
        c = output_tensor((a.shape[0], b.shape[1]), a.dtype)
        for i in parallel(a.shape[0]):
            for j in range(b.shape[1]):
                acc = 0.0
                for k in reduce(a.shape[1]):
                    acc = acc + a[i, k] * b[k, j]
                c[i, j] = acc
        return c

    return kernel(mm, compile_attrs=attrs)


@pytest.mark.parametrize(
    "attrs",
    [
        {"tile": {"i": 4, "j": 3}},
        {"unroll": {"k": 4}},
        {"order": ["j", "i"]},
        {"tile": {"i": 2}, "unroll": {"k": 3}, "parallel": False},
    ],
)
def test_scheduling_hints_keep_results(attrs):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((7, 10)).astype(np.float32)
    b = rng.standard_normal((10, 5)).astype(np.float32)
    k = _mm_hinted(attrs)
    np.testing.assert_array_equal(k.run(a, b, target="cpu"), k(a, b))


def test_order_hint_needs_a_perfect_nest():
    k = _mm_hinted({"order": ["i", "k"]})
    with pytest.raises(ValueError, match="perfectly nested"):
        k.source("cpu")


def test_aliases_and_compile_attrs():
    assert ms_kernel is kernel
    with pytest.warns(DeprecationWarning, match="ms_hybrid is deprecated"):
        k = ms_hybrid(SUITE["inplace"][0].func)
    assert k.ms_kernel_flag
    with pytest.raises(ValueError, match="unknown keys"):
        kernel(SUITE["inplace"][0].func, compile_attrs={"bogus": 1})


def test_wrong_number_of_inputs():
    with pytest.raises(TypeError, match="takes 2 inputs"):
        SUITE["matmul"][0](np.zeros((2, 2)))
