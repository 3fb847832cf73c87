"""The custom-op bad-input sweep (hardening issue #20), run by test_bad_inputs.py in a
subprocess under a memory cap: every kernel of the DSL suite, as a ``Custom`` op on the
CPU and interpreted, called with None, strings, wrong dtypes, wrong ranks, 0-d, empty and
mismatched shapes and non-finite values. Each call must succeed (non-finite inputs: with
the interpreted kernel's result) or raise TypeError/ValueError/IndexError naming the kernel
or the op. Prints one JSON line: the number of calls and the failures.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dsl_suite import SUITE, as_tuple  # noqa: E402

from sporeling.core import Tensor  # noqa: E402
from sporeling.customop import Custom  # noqa: E402

ALLOWED = (TypeError, ValueError, IndexError)


def _cases(good: list[np.ndarray]) -> list[tuple[str, list, bool]]:
    """(name, arguments, compare with the interpreted kernel)."""
    out: list[tuple[str, list, bool]] = []
    for i, g in enumerate(good):

        def swap(value, i=i):  # noqa: ANN001, ANN202
            return [value if j == i else a for j, a in enumerate(good)]

        out += [
            (f"arg{i}=None", swap(None), False),
            (f"arg{i}='abc'", swap("abc"), False),
            (f"arg{i} 0-d", swap(np.array(g.flat[0])), False),
            (f"arg{i} empty", swap(np.zeros((0,) + g.shape[1:], g.dtype)), False),
            (f"arg{i} extra dim", swap(g[..., None]), False),
            (f"arg{i} shorter", swap(g[:1]), False),
            (f"arg{i} longer", swap(np.concatenate([g, g])), False),
        ]
        bad = g.copy()
        bad.flat[0], bad.flat[-1] = np.nan, np.inf
        out.append((f"arg{i} nan/inf", swap(bad), True))
    return out


# Each compiled specialization costs seconds: these kernels also run compiled (hybrid),
# the others interpreted only (the same checks run before either), and one takes dtypes.
COMPILED = ("elementwise", "row_sum_sq", "matmul", "two_outputs", "stencil")
DTYPE_KERNELS = ("row_sum_sq",)


def main() -> None:
    failures: list[str] = []
    calls = 0
    for name, (k, make, _ref, _exact) in SUITE.items():
        cases = _cases(make())
        if name in DTYPE_KERNELS:
            good = make()
            for i, g in enumerate(good):
                for dt in (np.bool_, np.float64):
                    args = [g.astype(dt) if j == i else a for j, a in enumerate(good)]
                    cases.append((f"arg{i} {np.dtype(dt).name}", args, False))
        modes = ("hybrid", "pyfunc") if name in COMPILED else ("pyfunc",)
        for case, args, compare in cases:
            for mode in modes:
                calls += 1
                op = Custom(k) if mode == "hybrid" else Custom(k, func_type="pyfunc")
                try:
                    with warnings.catch_warnings(), np.errstate(all="ignore"):
                        warnings.simplefilter("ignore")
                        ins = [Tensor(a) if isinstance(a, np.ndarray) else a for a in args]
                        got = as_tuple(op(*ins))
                except ALLOWED as exc:
                    msg = str(exc)
                    if name not in msg and k.name not in msg and "Custom" not in msg:
                        failures.append(f"{name} {mode} [{case}]: names no kernel: {msg[:200]}")
                    continue
                except Exception as exc:  # noqa: BLE001
                    failures.append(f"{name} {mode} [{case}]: {type(exc).__name__}: {exc}"[:300])
                    continue
                if compare:
                    with np.errstate(all="ignore"):
                        want = as_tuple(k.run(*[a.copy() for a in args], target="pyfunc"))
                    for w, g in zip(want, got, strict=True):
                        if not np.allclose(g.asnumpy(), w, rtol=1e-5, atol=1e-5, equal_nan=True):
                            failures.append(f"{name} {mode} [{case}]: differs from interpreted")
    print(json.dumps({"calls": calls, "failures": failures}))


if __name__ == "__main__":
    main()
