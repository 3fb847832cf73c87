"""Generated CPU kernels launched as GIL-free jobs (kernels/codegen_jobs.py): the job's
wrapper source, the fused ln(gelu) chain and a flat kernel with column sums through jobs
equal to the same kernels on the Python row workers (elementwise bit-equal, column sums up
to their float64 order) and to eager and float64 references, odd shapes; launches a job
cannot take (a dtype it has no view for, one block) run the kernel itself."""

import math

import numpy as np
import pytest
from scipy.special import ndtr

from sporeling.core import Tensor, grad, ops
from sporeling.core.compiler import jit
from sporeling.core.kernels import codegen, codegen_jobs
from sporeling.core.kernels.cpu import _jobs, _rows

pytestmark = pytest.mark.skipif(_jobs._libc() is None, reason="no glibc: row workers only")


@pytest.fixture
def two_threads(monkeypatch):
    """Two threads and a job worker whatever this machine has, small inputs split; the
    launches each path made: ("job", rows, blocks, chunks) or ("rows", ...)."""
    seen = []
    real_job, real_rows = _jobs.run, _rows.run_blocks

    def job(fn, args, rows, blocks, chunks=None):
        seen.append(("job", rows, blocks, chunks))
        real_job(fn, args, rows, blocks, chunks)

    def rows_(fn, rows, blocks, chunks=None):
        seen.append(("rows", rows, blocks, chunks))
        real_rows(fn, rows, blocks, chunks)

    monkeypatch.setattr(_rows, "max_blocks", lambda: 2)
    monkeypatch.setattr(_rows, "PARALLEL_MIN", 1)
    monkeypatch.setattr(codegen, "JOB_MIN_ELEMENTS", 1)
    monkeypatch.setattr(_jobs, "max_blocks", lambda: 2)
    monkeypatch.setattr(_jobs, "_CPUS", max(2, _jobs._CPUS))
    monkeypatch.setattr(_jobs, "run", job)
    monkeypatch.setattr(_rows, "run_blocks", rows_)
    return seen


def test_job_source_unpacks_sizes_arrays_and_this_threads_partials():
    src = codegen_jobs.job_source(2, [("float32", 2), ("float64", 1)], 1)
    assert src.startswith("def job(args, k, lo, hi):\n    p = _jb.block(args)\n")
    for part in (
        "_jb.integer(p, 0)",
        "_jb.integer(p, 1)",
        "_jb.view2(p, 2, np.float32)",
        "_jb.view1(p, 3, np.float64)",
        "_jb.view2(p, 4, np.float64)[k]",
    ):
        assert part in src, src
    assert src.index("lo,") < src.index("hi,") < src.index("integer(p, 0)")


def _chain(rows, n, seed):
    rng = np.random.default_rng(seed)
    xs, ws, bs, rs = (
        rng.standard_normal(s).astype(np.float32) for s in ((rows, n), n, n, (rows, n))
    )
    r = Tensor(rs)
    ones, zeros = Tensor(np.ones(n, np.float32)), Tensor(np.zeros(n, np.float32))

    def loss(x, w, b):
        y, _, _ = ops.layer_norm(ops.gelu(x * w + b, "none"), ones, zeros, 1, 1, 1e-5)
        return ops.reduce_sum(y * r)

    return loss, (xs, ws, bs, rs)


def _reference(xs, ws, bs, rs):
    """Float64 gradients (x, w, b) of sum(layer_norm(gelu(x*w+b)) * r)."""
    hd = xs.astype(np.float64) * ws + bs
    g = hd * ndtr(hd)
    mu, var = g.mean(-1, keepdims=True), g.var(-1, keepdims=True)
    rstd = 1 / np.sqrt(var + 1e-5)
    xhat = (g - mu) * rstd
    dxh = rs.astype(np.float64)
    dg = rstd * (dxh - dxh.mean(-1, keepdims=True) - xhat * (dxh * xhat).mean(-1, keepdims=True))
    dh = dg * (ndtr(hd) + hd * np.exp(-0.5 * hd * hd) / math.sqrt(2 * math.pi))
    return dh * ws, (dh * xs).sum(0), dh.sum(0)


@pytest.mark.parametrize("shape", [(67, 37), (2, 5), (129, 16)])
def test_chain_as_jobs_equals_row_workers_eager_and_float64(two_threads, monkeypatch, shape):
    rows, n = shape
    loss, (xs, ws, bs, rs) = _chain(rows, n, sum(shape))
    args = (Tensor(xs), Tensor(ws), Tensor(bs))
    monkeypatch.setattr(codegen, "CHUNK_ELEMENTS", 3 * n)  # many chunks of ~3 rows
    step = jit(grad(loss, (0, 1, 2)))
    step(*args)  # the first call compiles (as a job: on one thread)
    as_job = [g.asnumpy() for g in step(*args)]
    jobs = [s for s in two_threads if s[0] == "job"]
    assert jobs and all(s[2] == 2 for s in jobs[1:]), two_threads
    assert not [s for s in two_threads if s[0] == "rows"], two_threads
    monkeypatch.setattr(_jobs, "ENABLED", False)
    on_rows = [g.asnumpy() for g in step(*args)]
    assert two_threads[-1][:3] == ("rows", rows, 2)
    np.testing.assert_array_equal(as_job[0], on_rows[0])  # elementwise: the same code
    for a, b in zip(as_job[1:], on_rows[1:], strict=True):  # float64 partials, any order
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    eager = grad(loss, (0, 1, 2))(*args)
    for g, e, ref in zip(as_job, eager, _reference(xs, ws, bs, rs), strict=True):
        np.testing.assert_allclose(g, e.asnumpy(), rtol=2e-5, atol=2e-5)
        np.testing.assert_allclose(g, ref, rtol=1e-4, atol=1e-4)


# GELU's gradient with its bias gradient (a float32 column sum), flat
GELU_GRAD = codegen.FusedProgram(
    2,
    ((True, True), (True, True)),
    (
        ("float32", "ndtr(v0)"),
        ("float32", "f32(exp(v0 * v0 * -0.5) * 0.3989422804014327)"),
        ("float32", "v1 * (t0 + v0 * t1)"),
    ),
    outputs=(2,),
    columns=(2,),
)


@pytest.mark.parametrize("shape", [(45, 33), (3, 1), (300, 7)])
def test_flat_kernel_with_columns_as_a_job(two_threads, monkeypatch, shape):
    monkeypatch.setattr(codegen, "CHUNK_ELEMENTS", 4 * shape[1])
    rng = np.random.default_rng(shape[0])
    x = (rng.standard_normal(shape) * 2).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    got = []
    for enabled in (True, False):
        monkeypatch.setattr(_jobs, "ENABLED", enabled)
        o, c = np.empty(shape, np.float32), np.empty(shape[1])
        codegen.run_fused(GELU_GRAD, shape, [x, g], [o], columns=[c])
        got.append((o, c))
        assert two_threads[-1][0] == ("job" if enabled else "rows")
    np.testing.assert_array_equal(got[0][0], got[1][0])
    np.testing.assert_allclose(got[0][1], got[1][1], rtol=1e-12, atol=1e-12)
    xd = x.astype(np.float64)
    ref = g * (ndtr(xd) + xd * np.exp(-0.5 * xd * xd) / math.sqrt(2 * math.pi))
    np.testing.assert_allclose(got[0][0], ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[0][1], ref.sum(0), rtol=1e-5, atol=1e-5)


def test_launches_a_job_cannot_take_run_the_kernel(two_threads):
    """A bool input (no view for it) and an int8 output run on the row workers; a launch
    too small for two threads calls the kernel on this thread."""
    prog = codegen.FusedProgram(
        2, ((True, True), (True, True)), (("float32", "where(v1, v0 * 2, v0)"),), outputs=(0,)
    )
    x = np.arange(40 * 9, dtype=np.float32).reshape(40, 9)
    mask = (x % 3 == 0).reshape(40, 9)
    out = np.empty((40, 9), np.float32)
    codegen.run_fused(prog, (40, 9), [x, mask], [out])
    assert two_threads[-1][0] == "rows"
    np.testing.assert_array_equal(out, np.where(mask, x * 2, x))
    assert codegen_jobs.job_address(("k",), lambda: "", "", 1, [np.zeros(3, np.int8)], 0) is None
    assert (
        codegen_jobs.job_address(("k",), lambda: "", "", 1, [np.zeros((3, 4))[:, ::2]], 0) is None
    )


def test_kernels_below_the_job_size_stay_on_the_row_workers(two_threads, monkeypatch):
    monkeypatch.setattr(codegen, "JOB_MIN_ELEMENTS", 45 * 33 + 1)
    x = np.ones((45, 33), np.float32)
    o, c = np.empty((45, 33), np.float32), np.empty(33)
    codegen.run_fused(GELU_GRAD, (45, 33), [x, x], [o], columns=[c])
    assert two_threads[-1][0] == "rows"
    monkeypatch.setattr(codegen, "JOB_MIN_ELEMENTS", 45 * 33)
    codegen.run_fused(GELU_GRAD, (45, 33), [x, x], [o], columns=[c])
    assert two_threads[-1][0] == "job"
