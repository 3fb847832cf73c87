"""Generated CPU kernels whose loops split into a float32 loop and a float64 loop.

A row-kernel pass that calls a vecmath function in float32 and also sums in float64 (row
sums, columns, float64 values) runs as two loops, and so does a flat fused kernel's row
with column sums (a bias gradient), so LLVM vectorises the float32 work at full width.
The split loops do the same operations on the same values: elementwise results are
bit-equal to the one-loop kernel, the float64 sums equal up to summation order; both
match a float64 NumPy reference."""

import math

import numpy as np
import pytest
from scipy.special import ndtr

from sporeling.core import Tensor, grad, ops
from sporeling.core.compiler import jit
from sporeling.core.kernels import codegen
from sporeling.core.kernels.codegen_rows import _REDUCE_HELPERS, RowProgram, row_source
from sporeling.core.kernels.codegen_rows import RowStep as S

# gelu(x) = x ndtr(x) in pass 0, its row sum (float64) and its column sum; pass 1 centres
# it (y = g - mean) and stores the float32 result
GELU_CENTRED = RowProgram(
    2,
    ((True, True), (False, False)),
    (
        S("elem", 0, "float32", "ndtr(v0)"),
        S("elem", 0, "float32", "t0 * v0"),
        S("elem", 0, "float64", "t1"),
        S("sum", 0, "float64", source=2),
        S("row", 1, "float32", "t3 * v1"),
        S("elem", 1, "float32", "t1 - t4"),
    ),
    outputs=(5,),
    row_outputs=(3,),
    columns=(1,),
)
# exp(x)'s row maximum and a float32 output: nothing works in float64, no split
EXP_MAX = RowProgram(
    2,
    ((True, True),),
    (
        S("elem", 0, "float32", "exp(v0)"),
        S("max", 0, "float32", source=0),
        S("elem", 1, "float32", "t0 - t1"),
    ),
    outputs=(2,),
)


def _passes(src: str) -> int:
    return src.count("for i1 in range(n1):")


def _run(prog: RowProgram, split: bool, x: np.ndarray, extra: list, n_out: int = 1):
    key = (prog, "cpu", "split" if split else "one loop")
    kernel = codegen.build_kernel(
        key, lambda: row_source(prog, "cpu", split=split), "cpu", _REDUCE_HELPERS
    )
    rows, n = x.shape
    outs = [np.empty((rows, n), np.float32) for _ in range(n_out)]
    reds = [np.empty(rows, np.float64) for _ in prog.row_outputs]
    cols = [np.zeros(n) for _ in prog.columns]
    kernel(0, rows, rows, n, x, *extra, *outs, *reds, *cols)
    return outs, reds, cols


def test_split_source_two_loops_for_the_float32_pass():
    src = row_source(GELU_CENTRED, "cpu")
    one = row_source(GELU_CENTRED, "cpu", split=False)
    assert _passes(one) == 2 and _passes(src) == 3, src
    narrow, wide = src.split("for i1 in range(n1):")[1:3]
    assert "_vm.vndtr" in narrow and "_as_float64" not in narrow
    # the float32 column sum adds into its float32 block row in the narrow loop
    assert "s0[i1] += t1" in narrow and "c0[" not in narrow
    assert "_radd" in wide and "+=" not in wide and "vndtr" not in wide
    assert row_source(GELU_CENTRED, "cuda") == row_source(GELU_CENTRED, "cuda", split=False)
    assert _passes(row_source(EXP_MAX, "cpu")) == 2  # float32 only: one loop a pass


@pytest.mark.parametrize("shape", [(7, 37), (1, 1), (3, 16), (5, 1000)])
def test_split_equals_one_loop_and_float64_reference(shape):
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    x.flat[0] = -9.5  # the lower tail, where ndtr keeps its relative accuracy
    inv_n = np.array([1.0 / shape[1]], np.float32)
    (o1,), (r1,), (c1,) = _run(GELU_CENTRED, True, x, [inv_n])
    (o2,), (r2,), (c2,) = _run(GELU_CENTRED, False, x, [inv_n])
    np.testing.assert_array_equal(o1, o2)
    np.testing.assert_allclose(r1, r2, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(c1, c2, rtol=1e-12, atol=1e-300)
    xd = x.astype(np.float64)
    g = xd * ndtr(xd)
    np.testing.assert_allclose(r1, g.sum(-1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(c1, g.sum(0), rtol=1e-5, atol=1e-5)
    ref = g - (g.sum(-1, keepdims=True) * float(inv_n[0]))
    np.testing.assert_allclose(o1, ref, rtol=1e-5, atol=2e-5 * math.sqrt(shape[1]))


def test_split_non_contiguous_rows_and_nan():
    """A strided row view and a NaN: the NaN reaches the output, row and column sums of its
    own row/column only, as in the one-loop kernel."""
    rng = np.random.default_rng(3)
    base = rng.standard_normal((6, 80)).astype(np.float32)
    x = np.ascontiguousarray(base[::2, ::2])
    x[1, 3] = np.nan
    inv_n = np.array([1.0 / 40], np.float32)
    (o1,), (r1,), (c1,) = _run(GELU_CENTRED, True, x, [inv_n])
    (o2,), (r2,), (c2,) = _run(GELU_CENTRED, False, x, [inv_n])
    np.testing.assert_array_equal(o1, o2)
    assert np.isnan(r1[1]) and np.isfinite(np.delete(r1, 1)).all()
    assert np.isnan(c1[3]) and np.isfinite(np.delete(c1, 3)).all()
    np.testing.assert_allclose(c1, c2, rtol=1e-12)


def test_layer_norm_of_gelu_graph_matches_eager():
    """bench_graph's chain, layer_norm(gelu(x*w+b)) with loss sum(y*r): forward and the
    three gradients under jit (one split row kernel) against eager, odd row length."""
    rng = np.random.default_rng(7)
    x = Tensor(rng.standard_normal((5, 37)).astype(np.float32))
    w = Tensor(rng.standard_normal(37).astype(np.float32))
    b = Tensor(rng.standard_normal(37).astype(np.float32))
    r = Tensor(rng.standard_normal((5, 37)).astype(np.float32))
    gamma = Tensor(rng.standard_normal(37).astype(np.float32))
    beta = Tensor(rng.standard_normal(37).astype(np.float32))

    def loss(x, w, b):
        y, _, _ = ops.layer_norm(ops.gelu(x * w + b, "none"), gamma, beta, 1, 1, 1e-5)
        return ops.reduce_sum(y * r)

    eager = grad(loss, (0, 1, 2))(x, w, b)
    graph = jit(grad(loss, (0, 1, 2)))(x, w, b)
    for e, g in zip(eager, graph, strict=True):
        np.testing.assert_allclose(g.asnumpy(), e.asnumpy(), rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(jit(loss)(x, w, b).asnumpy(), loss(x, w, b).asnumpy(), rtol=1e-5)


def test_chunks_per_launch():
    assert codegen._chunks(8192, (8192, 1024), 2) == 8192 * 1024 // codegen.CHUNK_ELEMENTS
    assert codegen._chunks(2048, (2048, 256), 2) == 4  # small: two a thread
    assert codegen._chunks(3, (3, 1 << 22), 2) == 3  # never more than the rows
    assert codegen._chunks(8192, (8192, 1024), 1) == 1


def test_chain_on_many_chunks_a_thread_equals_eager(monkeypatch):
    """The chain's row kernel cut into many chunks a thread (each thread adds several
    chunks' column sums, the weight and bias gradients, into its own partials): the same
    as eager and as the float64 reference, odd sizes. On the Python row workers (the job
    path: tests/kernels/test_codegen_jobs.py)."""
    from sporeling.core.kernels.cpu import _jobs, _rows

    rng = np.random.default_rng(11)
    rows, n = 67, 37
    xs, ws, bs, rs = (
        rng.standard_normal(s).astype(np.float32) for s in ((rows, n), n, n, (rows, n))
    )
    x, w, b, r = Tensor(xs), Tensor(ws), Tensor(bs), Tensor(rs)
    ones, zeros = Tensor(np.ones(n, np.float32)), Tensor(np.zeros(n, np.float32))

    def loss(x, w, b):
        y, _, _ = ops.layer_norm(ops.gelu(x * w + b, "none"), ones, zeros, 1, 1, 1e-5)
        return ops.reduce_sum(y * r)

    monkeypatch.setattr(_jobs, "ENABLED", False)
    monkeypatch.setattr(_rows, "PARALLEL_MIN", 1)  # split even this small input
    monkeypatch.setattr(codegen, "CHUNK_ELEMENTS", 3 * n)  # 22 chunks of ~3 rows
    seen = []
    real = _rows.run_blocks
    monkeypatch.setattr(
        _rows,
        "run_blocks",
        lambda fn, rows_, blocks, chunks=None: (
            seen.append((blocks, chunks)),
            real(fn, rows_, blocks, chunks),
        )[1],
    )
    step = jit(grad(loss, (0, 1, 2)))
    step(x, w, b)  # the first call compiles and runs on this thread
    graph = step(x, w, b)
    if _rows.max_blocks() > 1:
        assert (_rows.max_blocks(), 22) in seen, seen
    eager = grad(loss, (0, 1, 2))(x, w, b)
    for e, g in zip(eager, graph, strict=True):
        np.testing.assert_allclose(g.asnumpy(), e.asnumpy(), rtol=2e-5, atol=2e-5)
    # float64 reference of the bias gradient: d/db sum(ln(gelu(h)) * r)
    hd = xs.astype(np.float64) * ws + bs
    g = hd * ndtr(hd)
    mu, var = g.mean(-1, keepdims=True), g.var(-1, keepdims=True)
    rstd = 1 / np.sqrt(var + 1e-5)
    xhat = (g - mu) * rstd
    dxh = rs.astype(np.float64)
    dg = rstd * (dxh - dxh.mean(-1, keepdims=True) - xhat * (dxh * xhat).mean(-1, keepdims=True))
    dh = dg * (ndtr(hd) + hd * np.exp(-0.5 * hd * hd) / math.sqrt(2 * math.pi))
    np.testing.assert_allclose(graph[2].asnumpy(), dh.sum(0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(graph[1].asnumpy(), (dh * xs).sum(0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(graph[0].asnumpy(), dh * ws, rtol=1e-4, atol=1e-4)


# GELU's gradient with its bias gradient (a column sum), flat: t2 = g * gelu'(x); the
# float32 column adds into a float32 block row in the loop itself
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
# the same with the column summed from a float64 value: added in a second loop
GELU_GRAD64 = codegen.FusedProgram(
    2, GELU_GRAD.inputs, (*GELU_GRAD.temps, ("float64", "t2")), outputs=(2,), columns=(3,)
)


@pytest.mark.parametrize("shape", [(9, 33), (1, 1), (4, 16), (45, 20)])
@pytest.mark.parametrize("prog", [GELU_GRAD, GELU_GRAD64], ids=["float32", "float64"])
def test_flat_kernel_split_columns(shape, prog):
    src = codegen.fused_source(prog, "cpu")
    if prog is GELU_GRAD:  # one loop a row, the block row added in every 16 rows
        assert src.count("for i1 in range(n1):") == 1 and "s0[i1] += t2" in src
        assert f"if nb == {codegen.COLUMN_BLOCK}:" in src and "c0[i_] += s0[i_]" in src
    else:
        assert src.count("for i1 in range(n1):") == 2 and "c0[i1] += b0[i1]" in src
    one = codegen.fused_source(prog, "cpu", split=False)
    assert one.count("for i1 in range(n1):") == 1
    rng = np.random.default_rng(shape[1])
    x = (rng.standard_normal(shape) * 2).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    got = []
    for split in (True, False):
        kernel = codegen.build_kernel(
            (prog, "cpu", split),
            lambda split=split: codegen.fused_source(prog, "cpu", split=split),
            "cpu",
        )
        o, c = np.empty(shape, np.float32), np.zeros(shape[1])
        kernel(0, shape[0], *shape, x, g, o, c)
        got.append((o, c))
    np.testing.assert_array_equal(got[0][0], got[1][0])
    np.testing.assert_array_equal(got[0][1], got[1][1])  # same order: row by row
    xd = x.astype(np.float64)
    ref = g * (ndtr(xd) + xd * np.exp(-0.5 * xd * xd) / math.sqrt(2 * math.pi))
    np.testing.assert_allclose(got[0][0], ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[0][1], ref.sum(0), rtol=1e-5, atol=1e-5)


def test_float32_block_column_sums_over_chunks():
    """Float32 column sums in blocks of 16 rows: a launch cut into uneven chunks (partial
    blocks at each chunk's end) sums like one call, within the block error bound of the
    float64 sum; large values of both signs cancel, a NaN or inf reaches its column only."""
    rows, n = 203, 70
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((rows, n)) * 3).astype(np.float32)
    g = (rng.standard_normal((rows, n)) * np.exp(rng.uniform(-8, 8, (rows, 1)))).astype(np.float32)
    g[5, 4], g[7, 9] = np.nan, np.inf
    kernel = codegen.compile_fused(GELU_GRAD)
    whole = np.zeros(n)
    kernel(0, rows, rows, n, x, g, np.empty((rows, n), np.float32), whole)
    chunked = np.zeros(n)
    for lo, hi in [(0, 5), (5, 40), (40, 41), (41, 203)]:
        kernel(lo, hi, rows, n, x, g, np.empty((rows, n), np.float32), chunked)
    xd = x.astype(np.float64)
    ref = g * (ndtr(xd) + xd * np.exp(-0.5 * xd * xd) / math.sqrt(2 * math.pi))
    assert np.isnan(whole[4]) and np.isnan(chunked[4])
    assert np.isinf(whole[9]) and whole[9] == chunked[9] == ref[:, 9].sum()
    fine = np.isfinite(ref).all(0)
    assert fine.sum() == n - 2
    # each value's float32 rounding, then at most 15 float32 adds a block
    bound = 17 * 2.0**-24 * np.abs(ref[:, fine]).sum(0)
    for got in (whole, chunked):
        assert (np.abs(got[fine] - ref[:, fine].sum(0)) <= bound).all()
    # a float64 sum of the same float32 values would be bound by about 1/16 of that:
    # the blocks' error stays well inside the float32 result's rounding of a typical sum
    np.testing.assert_allclose(whole[fine], ref[:, fine].sum(0), rtol=1e-5, atol=1e-5)
