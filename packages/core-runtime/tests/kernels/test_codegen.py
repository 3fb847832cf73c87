"""Kernels generated from scalar expressions match each elementwise op's own impl,
on the CPU (Numba) and as CUDA kernels run by Numba's CUDA simulator."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from sporeling.core._primitive import REGISTRY
from sporeling.core.kernels.codegen import (
    UnsupportedExpression,
    expression_inputs,
    kernel_source,
    run_elementwise,
)
from sporeling_testing.codegen_check import compare_all


def test_expression_inputs_and_source():
    assert expression_inputs("where(c, x, y)") == ("c", "x", "y")
    src = kernel_source("1/(1+exp(-x))", ("x",), "cpu")
    assert "math.exp" in src and "for i in range(out.size)" in src
    assert "cuda.grid(1)" in kernel_source("x + y", ("x", "y"), "cuda")


def test_unsupported_expressions_are_rejected():
    with pytest.raises(UnsupportedExpression, match="unknown function"):
        expression_inputs("bogus(x)")
    with pytest.raises(UnsupportedExpression, match="Attribute"):
        expression_inputs("x.real")


def test_broadcasting_run():
    x = np.arange(6.0).reshape(2, 3)
    y = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(run_elementwise("x * y + 1", [x, y], np.float64), x * y + 1)


def test_every_elementwise_op_cpu_kernel():
    report = compare_all("cpu")
    assert not report["failed"], "\n".join(report["failed"])
    # every elementwise primitive with a scalar form is accounted for: compiled and compared,
    # or skipped only because its scalar form takes parameters (alpha, lambd, beta, dtype...)
    candidates = {n for n, p in REGISTRY.items() if p.kind == "elementwise" and p.scalar}
    passed = {r.split(":")[0] for r in report["passed"]}
    skipped = {r.split(":")[0] for r in report["skipped"]}
    assert passed | skipped == candidates and not passed & skipped
    for reason in report["skipped"]:
        assert re.search(r"single letters|parameters", reason), reason
    assert {"add", "exp", "tanh", "sigmoid", "select", "xlogy", "pow"} <= passed


def test_every_elementwise_op_cuda_kernel_in_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    proc = subprocess.run(
        [sys.executable, "-m", "sporeling_testing.codegen_check", "cuda"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not report["failed"], "\n".join(report["failed"])
    # the simulator compiles exactly the ops the CPU backend compiles
    cpu = compare_all("cpu")
    assert sorted(report["passed"]) == sorted(cpu["passed"])
    assert sorted(report["skipped"]) == sorted(cpu["skipped"])
