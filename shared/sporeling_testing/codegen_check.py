"""Check kernels generated from every elementwise primitive's scalar expression.

``compare_all(target)`` runs each registered elementwise primitive through its own impl and
through the kernel generated from its ``scalar`` expression, on the same inputs, and reports
mismatches. Run with ``target="cuda"`` under ``NUMBA_ENABLE_CUDASIM=1`` to test the GPU
kernels on a CPU (``python -m sporeling_testing.codegen_check cuda``).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np

#: float inputs for ops defined only outside (0.1, 0.9)
_DOMAINS = {"acosh": (1.1, 1.9)}


def _inputs_for(
    prim: Any, names: tuple[str, ...], size: int
) -> tuple[list[np.ndarray], Any] | None:
    from sporeling.core.dtype import from_numpy

    rng = np.random.default_rng(0)
    for dt in (np.float64, np.int64, np.bool_):
        arrays = []
        for name in names:
            if name == "c" or dt is np.bool_:
                arrays.append(rng.random(size) < 0.5)
            elif dt is np.int64:
                arrays.append(rng.integers(1, 7, size).astype(np.int64))
            else:
                arrays.append(rng.uniform(*_DOMAINS.get(prim.name, (0.1, 0.9)), size))
        try:
            shapes = tuple((a.shape, a.dtype) for a in arrays)
            aval = prim.abstract_eval(shapes, {})
        except (TypeError, ValueError):
            continue
        _ = from_numpy
        return arrays, aval.dtype.np
    return None


def compare_all(target: str = "cpu", size: int = 33) -> dict[str, list[str]]:
    """{"passed": [...], "failed": [...], "skipped": [...]} over all elementwise primitives."""
    import sporeling.core  # noqa: F401  (registers every op)
    from sporeling.core._primitive import REGISTRY
    from sporeling.core.kernels.codegen import (
        UnsupportedExpression,
        expression_inputs,
        run_elementwise,
    )

    report: dict[str, list[str]] = {"passed": [], "failed": [], "skipped": []}
    for name, prim in sorted(REGISTRY.items()):
        if prim.kind != "elementwise" or not prim.scalar:
            continue
        try:
            names = expression_inputs(prim.scalar)
        except UnsupportedExpression as exc:
            report["skipped"].append(f"{name}: {exc}")
            continue
        made = _inputs_for(prim, names, size)
        if made is None:
            report["skipped"].append(f"{name}: no input dtype accepted without parameters")
            continue
        arrays, out_dtype = made
        try:
            want = np.asarray(prim.impls.get("any", prim.impls.get("cpu"))(np, *arrays))
        except TypeError:
            report["skipped"].append(f"{name}: impl needs parameters")
            continue
        try:
            got = run_elementwise(prim.scalar, arrays, out_dtype, target)
            np.testing.assert_allclose(
                got.astype(np.float64),
                want.astype(np.float64),
                rtol=1e-9,
                atol=1e-12,
                equal_nan=True,
            )
        except Exception as exc:  # report every failing op, not just the first
            report["failed"].append(f"{name} ({prim.scalar!r}): {str(exc).strip()[:300]}")
        else:
            report["passed"].append(name)
    return report


if __name__ == "__main__":
    print(json.dumps(compare_all(sys.argv[1] if len(sys.argv) > 1 else "cpu", size=9)))
