"""The bad-input sweep (hardening issue #20), run by test_bad_inputs.py in a subprocess
under a memory cap, so that a crash or a runaway allocation fails the test, not the run.

Every record of the op tables (tests/ops/test_*.py, as graph mode loads them) is called
with wrong dtypes, mismatched shapes, None, strings, 0-d and empty tensors and non-finite
values; shape- and axis-taking ops get huge shapes and out-of-range axes. Each call must
either succeed (with the reference result, for the non-finite, bool, 0-d, empty and
mismatched-shape cases, where the reference gives a result of the same shape and dtype
kind: the records' references are written for their own shapes) or raise
TypeError/ValueError/IndexError (MemoryError for huge shapes) whose message starts with
``name:`` where ``name`` is the op that was called, never an internal op, NumPy or Numba.
Prints one JSON line: the number of calls and the failures.
"""

from __future__ import annotations

import json
import os
import re
import sys
import traceback
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "compiler"))

from _records import load_records  # noqa: E402

from sporeling.core import Tensor, ops  # noqa: E402

ALLOWED = (TypeError, ValueError, IndexError)
NAMED = re.compile(r"^([A-Za-z_][\w.]*)(\(\))?: ")
# names used in messages that differ from a record's name (the record tests the op itself)
ALIASES = {"reduce_sum": "sum", "select": "where", "matmul": "dense"}


def _names_the_op(msg: str, op: str) -> bool:
    m = NAMED.match(msg)
    if m is None:
        return False
    named = m.group(1).split(".")[-1]
    tokens = set(op.split("_"))
    return named in op or named.split("_")[0] in tokens or ALIASES.get(named, "") in op


def _entered_sporeling(exc: BaseException) -> bool:
    """Whether the error came from inside the library: a record's lambda may itself fail on
    a bad value (``x > 0`` on None) before it calls the op, which says nothing of the op."""
    tb = exc.__traceback__
    while tb is not None:
        if f"{os.sep}sporeling{os.sep}" in tb.tb_frame.f_code.co_filename:
            return True
        tb = tb.tb_next
    return False


def _check_error(op: str, case: str, exc: BaseException, failures: list[str]) -> None:
    if isinstance(exc, ALLOWED) and _names_the_op(str(exc), op):
        return
    if not _entered_sporeling(exc):
        return
    where = "".join(traceback.format_exception_only(type(exc), exc)).strip()[:200]
    failures.append(f"{op} [{case}]: {where}")


def _comparable(o: np.ndarray, r: np.ndarray) -> bool:
    """Whether a reference result on an off-table input (bool, 0-d, empty, other shape) says
    anything: refs are written for the record's shapes and dtypes (hard-coded sizes, NumPy's
    bool arithmetic, np.cumsum's 0-d -> (1,)), so a different shape or kind is skipped."""
    kinds = {o.dtype.kind, r.dtype.kind}
    return o.shape == r.shape and (len(kinds) == 1 or kinds <= {"f", "i", "u"})


def _agrees(out: object, ref: object, off_table: bool = False) -> bool:
    outs = out if isinstance(out, (tuple, list)) else (out,)
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)
    for o, r in zip(outs, refs, strict=False):
        if not isinstance(o, Tensor):
            continue
        if off_table and not _comparable(o.asnumpy(), np.asarray(r)):
            continue
        a, b = o.asnumpy().astype(np.float64), np.asarray(r, np.float64)
        if a.shape != b.shape:
            return False
        if not np.allclose(a, b, rtol=1e-2, atol=1e-2, equal_nan=True):
            # both non-finite in the same places is agreement enough for inf/nan inputs
            if not np.array_equal(np.isfinite(a), np.isfinite(b)):
                return False
            fin = np.isfinite(a)
            if not np.allclose(a[fin], b[fin], rtol=1e-2, atol=1e-2):
                return False
    return True


def _call(rec, args, op, case, failures, ref_args=None) -> None:  # noqa: ANN001
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            out = rec.fn(*args)
    except Exception as exc:  # noqa: BLE001 - judged below
        _check_error(op, case, exc, failures)
        return
    if ref_args is None:
        return
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            ref = rec.ref(*ref_args)
    except Exception:  # noqa: BLE001 - the reference does not define this input
        return
    if not _agrees(out, ref, off_table="nan/inf" not in case):
        failures.append(f"{op} [{case}]: succeeded with a result that differs from the reference")


def sweep_records(failures: list[str], sample: int) -> int:
    calls = 0
    rng = np.random.default_rng(0)
    records = load_records()
    for _, rec in records:
        op = rec.name
        shapes = rec.shapes[0]
        dtype = "float32" if "float32" in rec.dtypes else rec.dtypes[0]
        makers = rec.make if isinstance(rec.make, (list, tuple)) else [rec.make] * len(shapes)
        good = [mk(rng, s, dtype) for mk, s in zip(makers, shapes, strict=False)]
        cases: list[tuple[str, list, list | None]] = []
        for i, g in enumerate(good):

            def swap(value, i=i, good=good):  # noqa: ANN001, ANN202
                return [value if j == i else Tensor(a) for j, a in enumerate(good)]

            def ref_of(value, i=i, good=good):  # noqa: ANN001, ANN202
                """The reference's arguments for a Tensor swapped in (None: no comparison)."""
                return [np.asarray(value) if j == i else a for j, a in enumerate(good)]

            cases.append((f"arg{i}=None", swap(None), None))
            cases.append((f"arg{i}='abc'", swap("abc"), None))
            if g.dtype.kind == "f":
                cases.append((f"arg{i} bool", swap(Tensor(g > 0)), ref_of(g > 0)))
                bad = np.full_like(g, np.nan) if g.size else g
                if g.size:
                    bad = g.copy()
                    bad.flat[0] = np.nan
                    bad.flat[-1] = np.inf
                args = [bad if j == i else a for j, a in enumerate(good)]
                cases.append((f"arg{i} nan/inf", [Tensor(a) for a in args], args))
            scalar = np.array(g.flat[0] if g.size else 0, g.dtype)
            cases.append((f"arg{i} 0-d", swap(Tensor(scalar)), ref_of(scalar)))
            if g.ndim:
                empty = np.zeros((0,) + g.shape[1:], g.dtype)
                cases.append((f"arg{i} empty", swap(Tensor(empty)), ref_of(empty)))
                other = np.zeros(tuple(d + 3 for d in g.shape), g.dtype)
                cases.append((f"arg{i} mismatched shape", swap(Tensor(other)), ref_of(other)))
        picked = (
            cases
            if len(cases) <= sample
            else [cases[k] for k in sorted(rng.choice(len(cases), sample, replace=False))]
        )
        for case, args, ref_args in picked:
            calls += 1
            _call(rec, args, op, case, failures, ref_args)
    return calls


HUGE = (2**31, 2**31)
X = Tensor(np.ones((3, 4), np.float32))


def sweep_shapes_and_axes(failures: list[str]) -> int:
    """Ops that take shapes or axes, with huge shapes and out-of-range or wrong axes."""
    calls: list[tuple[str, object]] = [
        ("zeros", lambda: ops.zeros(HUGE)),
        ("ones", lambda: ops.ones(HUGE)),
        ("fill", lambda: ops.fill(np.float32, HUGE, 1.0)),
        ("zeros", lambda: ops.zeros((2**62, 4))),
        ("reshape", lambda: ops.reshape(X, HUGE)),
        ("tile", lambda: ops.tile(X, (2**30, 2**30))),
        ("zeros", lambda: ops.zeros((-1, 3))),
        ("zeros", lambda: ops.zeros("34")),
        ("reshape", lambda: ops.reshape(X, (2.0, 6))),
        ("arange", lambda: ops.arange(0, 2**40, 1)),
        ("eye", lambda: ops.eye(2**31, 2**31, np.float32)),
    ]
    axis_ops = {
        "amax": lambda a: ops.amax(X, a),
        "amin": lambda a: ops.amin(X, a),
        "mean": lambda a: ops.mean(X, a),
        "prod": lambda a: ops.prod(X, a),
        "logsumexp": lambda a: ops.logsumexp(X, a),
        "argmax": lambda a: ops.argmax(X, a),
        "cumsum": lambda a: ops.cumsum(X, a),
        "cumprod": lambda a: ops.cumprod(X, a),
        "concat": lambda a: ops.concat((X, X), a),
        "stack": lambda a: ops.stack((X, X), a),
        "softmax": lambda a: ops.softmax(X, a),
        "log_softmax": lambda a: ops.log_softmax(X, a),
        "expand_dims": lambda a: ops.expand_dims(X, a),
        "squeeze": lambda a: ops.squeeze(X, a),
        "flip": lambda a: ops.flip(X, a),
        "std": lambda a: ops.std(X, a),
        "norm": lambda a: ops.norm(X, a),
        "split": lambda a: ops.split(X, a, 1),
        "gather": lambda a: ops.gather(X, Tensor([0]), a),
        "reduce_sum": lambda a: ops.reduce_sum(X, a),
    }
    s = Tensor(np.float32(1.0))
    scalar_ops = {
        "amax": lambda: ops.amax(s, 1),
        "mean": lambda: ops.mean(s, 1),
        "logsumexp": lambda: ops.logsumexp(s, 1),
        "concat": lambda: ops.concat((s, s), 0),
        "cumsum": lambda: ops.cumsum(s, 3),
        "softmax": lambda: ops.softmax(s, 2),
    }
    n = 0
    for op, fn in calls:
        n += 1
        try:
            fn()
        except (MemoryError, *ALLOWED) as exc:
            if not _names_the_op(str(exc), op):
                failures.append(f"{op} [huge/invalid shape]: {type(exc).__name__}: {exc}")
        except Exception as exc:  # noqa: BLE001
            failures.append(f"{op} [huge/invalid shape]: {type(exc).__name__}: {exc}")
        else:
            if op not in ("arange",):
                failures.append(f"{op} [huge/invalid shape]: accepted")
    for op, fn in axis_ops.items():
        for axis in (99, -99, "a", 1.5, None if op in ("cumsum", "concat", "stack") else ()):
            if axis == () or (axis is None and op not in ("cumsum", "concat", "stack")):
                continue
            n += 1
            try:
                fn(axis)
            except Exception as exc:  # noqa: BLE001
                _check_error(op, f"axis={axis!r}", exc, failures)
            else:
                failures.append(f"{op} [axis={axis!r}]: accepted")
    for op, fn in scalar_ops.items():
        n += 1
        try:
            fn()
        except Exception as exc:  # noqa: BLE001
            _check_error(op, "0-d with an axis", exc, failures)
    return n


def main() -> None:
    sample = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    failures: list[str] = []
    calls = sweep_records(failures, sample) + sweep_shapes_and_axes(failures)
    print(json.dumps({"calls": calls, "failures": failures}))


if __name__ == "__main__":
    main()
