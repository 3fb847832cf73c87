"""Every op of the op tables gives the same results in graph mode as eagerly, gradients
included; ops whose output shape depends on data raise a TracingError that says what to do."""

import numpy as np
import pytest
from _records import load_records

from sporeling.core import Tensor, grad, ops
from sporeling.core.compiler import TracingError, jit
from sporeling_testing.optable import make_inputs

RECORDS = load_records()
#: ops whose output shape depends on input values: graph mode cannot trace them
DATA_DEPENDENT = {"getitem_mask", "masked_select", "sparse_segment_mean"}


def _inputs(rec):
    dtype = "float64" if "float64" in rec.dtypes else rec.dtypes[0]
    return [Tensor(a) for a in make_inputs(rec, rec.shapes[0], dtype)]


def _list(value):
    return list(value) if isinstance(value, (tuple, list)) else [value]


def _np(value):
    return np.asarray(value.asnumpy() if hasattr(value, "asnumpy") else value)


def _tol(value, rtol):
    """Fused kernels round float32 transcendental functions within an ulp or two of NumPy's
    (Numba's libm vs NumPy's SIMD loops): float32 results are compared at float32 precision."""
    if _np(value).dtype in (np.float32, np.complex64):
        return {"rtol": 2e-6, "atol": 1e-6}
    return {"rtol": rtol, "atol": 1e-12}


@pytest.mark.parametrize("rec", [r for _, r in RECORDS], ids=[f"{m}:{r.name}" for m, r in RECORDS])
def test_forward_graph_matches_eager(rec):
    xs = _inputs(rec)
    if rec.name in DATA_DEPENDENT:
        with pytest.raises(TracingError, match="ops.select"):
            jit(rec.fn)(*xs)
        return
    eager = _list(rec.fn(*xs))
    jf = jit(rec.fn)
    graph = _list(jf(*xs))
    # the second call runs in the first one's memory arena (and, unlike the first, which
    # compiles, splits kernels over threads: sums may differ in the last bit)
    again = _list(jf(*xs))
    assert len(eager) == len(graph) == len(again)
    for e, g, a in zip(eager, graph, again):
        np.testing.assert_allclose(_np(g), _np(e), **_tol(e, 1e-12))
        np.testing.assert_allclose(_np(a), _np(e), **_tol(e, 1e-12))


def _scalar_loss(rec):
    def loss(*xs):
        outs = [o for o in _list(rec.fn(*xs)) if hasattr(o, "dtype") and o.dtype.category == 2]
        return sum((ops.reduce_sum(o * o) for o in outs), Tensor(0.0, dtype="float64"))

    return loss


GRAD_RECORDS = [(m, r) for m, r in RECORDS if r.grad and r.name not in DATA_DEPENDENT]


@pytest.mark.parametrize(
    "rec", [r for _, r in GRAD_RECORDS], ids=[f"{m}:{r.name}" for m, r in GRAD_RECORDS]
)
def test_gradients_graph_matches_eager(rec):
    xs = _inputs(rec)
    wrt = (
        list(rec.grad_wrt)
        if rec.grad_wrt is not None
        else [i for i, x in enumerate(xs) if x.dtype.category == 2]
    )
    if not wrt:
        pytest.skip("no floating inputs")
    loss = _scalar_loss(rec)
    eager = _list(grad(loss, tuple(wrt))(*xs))
    graph = _list(jit(grad(loss, tuple(wrt)))(*xs))
    via_call = _list(grad(jit(loss), tuple(wrt))(*xs))
    for e, g, c in zip(eager, graph, via_call):
        np.testing.assert_allclose(_np(g), _np(e), **_tol(e, 1e-10))
        np.testing.assert_allclose(_np(c), _np(e), **_tol(e, 1e-10))
