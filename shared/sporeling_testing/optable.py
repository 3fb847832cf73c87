"""The op-table driver: one :class:`OpRecord` per op drives its parametrized tests.

A record says how to call the op on Tensors (``fn``), the float64 NumPy/SciPy reference
(``ref``), which input shapes to try (broadcasting combinations), which dtypes, how to
draw inputs inside the op's domain (``make``), and whether/how to check gradients. Tests
then read::

    RECORDS = [OpRecord("exp", lambda x: ops.exp(x), np.exp, shapes=[((3, 4),)])]

    @pytest.mark.parametrize("rec,dtype", records_params(RECORDS))
    def test_forward(rec, dtype, device):
        check_forward(rec, dtype, device)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .gradcheck import check_grad, check_grad_grad

Shape = tuple[int, ...]

#: default forward tolerances per dtype (rtol, atol)
TOLERANCES = {
    "float16": (1e-2, 1e-2),
    "float32": (1e-5, 1e-5),
    "float64": (1e-10, 1e-10),
}


def default_make(rng: np.random.Generator, shape: Shape, dtype: str) -> np.ndarray:
    """Standard normal floats; integers in [-5, 5]; random bools."""
    kind = np.dtype(dtype).kind
    if kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if kind == "b":
        return rng.random(shape) < 0.5
    if kind == "u":
        return rng.integers(0, 10, shape).astype(dtype)
    return rng.integers(-5, 6, shape).astype(dtype)


def positive(rng: np.random.Generator, shape: Shape, dtype: str) -> np.ndarray:
    """Inputs for log/sqrt-like ops: in [0.5, 2.5] (off singular points)."""
    return (rng.random(shape) * 2 + 0.5).astype(dtype)


def unit(rng: np.random.Generator, shape: Shape, dtype: str) -> np.ndarray:
    """Inputs for asin/atanh-like ops: in (-0.9, 0.9)."""
    return (rng.random(shape) * 1.8 - 0.9).astype(dtype)


def away_from_integers(rng: np.random.Generator, shape: Shape, dtype: str) -> np.ndarray:
    """For floor/round-like ops: values whose fractional part is in [0.1, 0.4] or [0.6, 0.9]."""
    base = rng.integers(-4, 5, shape)
    frac = rng.choice([0.2, 0.3, 0.7, 0.8], shape)
    return (base + frac).astype(dtype)


def distinct(rng: np.random.Generator, shape: Shape, dtype: str) -> np.ndarray:
    """Values far apart (no ties) for max/min/sort-like ops."""
    n = int(np.prod(shape)) if shape else 1
    return (rng.permutation(n).reshape(shape) * 0.37 - n * 0.15).astype(dtype)


@dataclass
class OpRecord:
    """How to test one op (see the module docstring)."""

    name: str
    fn: Callable[..., Any]
    ref: Callable[..., Any]
    shapes: Sequence[tuple[Shape, ...]] = (((3, 4),),)
    dtypes: Sequence[str] = ("float32", "float64")
    make: Callable[..., np.ndarray] | Sequence[Callable[..., np.ndarray]] = default_make
    grad: bool = True
    grad_wrt: Sequence[int] | None = None
    order: int = 1
    tol: dict[str, tuple[float, float]] = field(default_factory=dict)
    grad_tol: tuple[float, float] = (1e-4, 1e-5)
    check_dtype: bool = True

    def __repr__(self) -> str:
        return self.name


def make_inputs(
    rec: OpRecord, shapes: tuple[Shape, ...], dtype: str, seed: int = 0
) -> list[np.ndarray]:
    """Inputs for one call of ``rec`` (a different maker per input if ``make`` is a list)."""
    rng = np.random.default_rng(seed)
    makers = rec.make if isinstance(rec.make, (list, tuple)) else [rec.make] * len(shapes)
    return [mk(rng, s, dtype) for mk, s in zip(makers, shapes)]


def records_params(records: Sequence[OpRecord], dtypes: bool = True) -> list[Any]:
    """pytest params: ``(record, dtype)`` pairs (or records alone) with readable ids."""
    import pytest

    if not dtypes:
        return [pytest.param(r, id=r.name) for r in records]
    return [pytest.param(r, d, id=f"{r.name}-{d}") for r in records for d in r.dtypes]


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (tuple, list)) else [value]


def check_forward(rec: OpRecord, dtype: str, device: str = "CPU") -> None:
    """Every shape combination: op output vs the float64 reference, and output dtypes."""
    from sporeling.core import Tensor

    for k, shapes in enumerate(rec.shapes):
        arrays = make_inputs(rec, shapes, dtype, seed=k)
        got = _as_list(rec.fn(*[Tensor(a, device=device) for a in arrays]))
        ref_in = [a.astype(np.float64) if a.dtype.kind == "f" else a for a in arrays]
        want = _as_list(rec.ref(*ref_in))
        assert len(got) == len(want), f"{rec.name}: {len(got)} outputs, reference has {len(want)}"
        rtol, atol = rec.tol.get(dtype, TOLERANCES.get(dtype, (0, 0)))
        for g, w in zip(got, want):
            w = np.asarray(w)
            g_np = g.asnumpy()
            assert g_np.shape == w.shape, (
                f"{rec.name}{shapes}: shape {g_np.shape} != reference {w.shape}"
            )
            if rec.check_dtype and np.dtype(dtype).kind == "f" and w.dtype.kind == "f":
                assert g_np.dtype == np.dtype(dtype), (
                    f"{rec.name}: dtype {g_np.dtype}, expected {dtype}"
                )
            np.testing.assert_allclose(
                g_np.astype(np.float64) if g_np.dtype.kind in "fc" else g_np,
                w,
                rtol=rtol,
                atol=atol,
                err_msg=f"{rec.name} with shapes {shapes} and dtype {dtype}",
            )


def check_backward(rec: OpRecord, device: str = "CPU") -> None:
    """Finite-difference gradient check in float64 (and second order if ``order >= 2``)."""
    rtol, atol = rec.grad_tol
    for k, shapes in enumerate(rec.shapes):
        arrays = make_inputs(rec, shapes, "float64", seed=k)
        check_grad(rec.fn, arrays, rec.grad_wrt, rtol=rtol, atol=atol, device=device)
        if rec.order >= 2:
            check_grad_grad(
                rec.fn, arrays, rec.grad_wrt, rtol=rtol * 10, atol=atol * 10, device=device
            )
