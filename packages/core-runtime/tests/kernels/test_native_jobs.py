"""Jobs on workers that never take the GIL (kernels/cpu/_jobs.py): packed arguments, chunks
claimed by the caller and a worker (which does run some), sleeps and wakes, a forked child;
and every kernel with a job wrapper (ReLU, add, ReLU's gradient, batch norm, the per-image
convolutions) bit-equal to the same kernel on the Python row workers, with odd shapes."""

import os

import numba
import numpy as np
import pytest

from sporeling.core.kernels.cpu import _jobs, conv_images, norm, relu_add, relu_grad

pytestmark = pytest.mark.skipif(_jobs._libc() is None, reason="no glibc: row workers only")


def _flag_job(args, k, lo, hi):  # compiled as a job by the tests below
    """(flags int64[2]): the caller's chunk (k == 0) waits until a worker's chunk has run."""
    p = _jobs.block(args)
    flags = _jobs.view1(p, 0, np.int64)
    if k == 0:
        for _ in range(2_000_000_000):  # bounded: about a minute
            if _jobs._spin.load(flags, 0) == 1:
                break
    else:
        _jobs._spin.store(flags, 0, 1)
    _jobs._spin.fetch_add(flags, 1, hi - lo)  # both threads may get here at once


def _fill_job(args, k, lo, hi):
    """(out int64[n], real, integer): out[i] = i * integer + int(real) + 1000 * k."""
    p = _jobs.block(args)
    out = _jobs.view1(p, 0, np.int64)
    r, m = _jobs.real(p, 1), _jobs.integer(p, 2)
    for i in range(lo, hi):
        out[i] = i * m + np.int64(r) + 1000 * k


@pytest.fixture
def jobs_on(monkeypatch):
    """Jobs on, two threads and a worker whatever this machine has; the runs it made."""
    runs = []
    real = _jobs.run

    def run(fn, args, rows, blocks, chunks=None):
        runs.append((rows, blocks))
        real(fn, args, rows, blocks, chunks)

    monkeypatch.setattr(_jobs, "ENABLED", True)
    monkeypatch.setattr(_jobs, "max_blocks", lambda: 2)
    monkeypatch.setattr(_jobs, "_CPUS", max(2, _jobs._CPUS))
    monkeypatch.setattr(_jobs, "run", run)
    return runs


def test_a_worker_runs_chunks_and_the_caller_waits_for_them(jobs_on):
    fn = _jobs.job(_flag_job)
    for linger in (0.0, 200.0):  # asleep on its semaphore between jobs, or spinning
        for w in _jobs._ALL:
            w.ctl[_jobs._LINGER] = 0 if linger == 0 else 10_000
        for _ in range(5):
            flags = np.zeros(2, np.int64)
            _jobs.run(fn, _jobs.pack(flags), 10, 2, chunks=2)
            assert flags[1] == 10  # both chunks ran, and the caller waited for the worker's
    starts, chunks = _jobs.stats()
    assert starts >= 10 and chunks >= 10


@pytest.mark.parametrize("rows,chunks", [(1, None), (7, 3), (100, 64), (5, 9)])
def test_packed_arguments_and_chunk_bounds(jobs_on, rows, chunks):
    out = np.full(rows, -1, np.int64)
    _jobs.run(_jobs.job(_fill_job), _jobs.pack(out, 7.9, 3), rows, 2, chunks)
    base = np.arange(rows) * 3 + 7
    assert np.all((out == base) | (out == base + 1000))  # every row once, by thread 0 or 1


def test_pack_rejects_what_a_job_cannot_read():
    x = np.zeros((4, 6), np.float32)
    with pytest.raises(ValueError, match=r"argument 1 expected a C-contiguous array"):
        _jobs.pack(x, x[:, ::2])
    with pytest.raises(ValueError, match="at most 5 dimensions"):
        _jobs.pack(np.zeros((1,) * 6))
    assert _jobs.pack(x, x.T, strict=False) is None
    p = _jobs.pack(x, 2.5, -3)
    assert p[0] == p.size == 1 + 3 * _jobs.SLOT
    assert p[1 + 1 : 1 + 3].tolist() == [4, 6] and p[1 + 2 * _jobs.SLOT] == -3


@pytest.mark.parametrize("fast", [True, False])
def test_pack_reads_each_arrays_own_address(monkeypatch, fast):
    """Array addresses, read from the object or through ``__array_interface__``, agree for
    fresh arrays, offset views, 0-d and empty arrays; floats keep their bits."""
    if not fast:
        monkeypatch.setattr(_jobs, "_DATA_OFFSET", None)
    elif _jobs._DATA_OFFSET is None:
        pytest.skip("the data pointer's place was not confirmed on this build")
    base = np.arange(60, dtype=np.float64).reshape(6, 10)
    arrays = [base, base[2:], base[3:4, :], np.array(1.5, np.float32), np.empty((0, 3))]
    p = _jobs.pack(*arrays, -0.0, 7)
    for j, a in enumerate(arrays):
        i = 1 + _jobs.SLOT * j
        assert p[i] == a.__array_interface__["data"][0]
        assert p[i + 1 : i + 1 + a.ndim].tolist() == list(a.shape)
    f = 1 + _jobs.SLOT * len(arrays)
    assert p[f : f + 1].view(np.float64)[0] == 0.0 and np.signbit(p[f : f + 1].view(np.float64))
    assert p[f + _jobs.SLOT] == 7


@pytest.mark.parametrize("value", ["-1", "abc", "1e9", "nan"])
def test_linger_setting_is_checked(value):
    with pytest.raises(ValueError, match="SPORELING_NATIVE_LINGER_US expected microseconds"):
        _jobs._linger_from_env(value)
    assert _jobs._linger_from_env(None) == _jobs._linger_from_env(" ") == 1000.0
    assert _jobs._linger_from_env("0") == 0.0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_forked_child_starts_its_own_worker(jobs_on):
    out = np.zeros(50, np.int64)
    _jobs.run(_jobs.job(_fill_job), _jobs.pack(out, 0.0, 1), 50, 2)  # a worker in the parent
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        ok = False
        try:
            child = np.full(50, -1, np.int64)
            _jobs.run(_jobs.job(_fill_job), _jobs.pack(child, 0.0, 1), 50, 2)
            ok = bool(np.all(child % 1000 == np.arange(50)))
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


def _both(fn):
    """fn() with jobs off (Python row workers) and on."""
    old = _jobs.ENABLED
    try:
        _jobs.ENABLED = False
        a = fn()
        _jobs.ENABLED = True
        b = fn()
    finally:
        _jobs.ENABLED = old
    return a, b


def _equal(a, b):
    for x, y in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x.view(np.uint8), y.view(np.uint8))


@pytest.mark.parametrize("size", [relu_add.PARALLEL_MIN + 13, 64 * 16 * 32 * 32])
def test_elementwise_jobs_bit_equal_to_the_row_workers(jobs_on, monkeypatch, size):
    monkeypatch.setattr(relu_add, "n_blocks", lambda rows, elements: 2)
    monkeypatch.setattr(relu_grad, "n_blocks", lambda rows, elements: 2)
    monkeypatch.setattr(relu_add, "SPLIT_MIN", 0)  # ReLU and its gradient split at any size
    monkeypatch.setattr(relu_grad, "SPLIT_MIN", 0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(size).astype(np.float32)
    y = rng.standard_normal(size).astype(np.float32)
    x[:6] = [-0.0, 0.0, np.nan, -np.nan, np.inf, -np.inf]
    _equal(*_both(lambda: relu_add.relu(x)))
    _equal(*_both(lambda: relu_add.add(x, y)))
    _equal(*_both(lambda: relu_grad.relu_grad(y, x)))
    np.testing.assert_array_equal(relu_add.relu(x), np.maximum(x, 0))
    n = len(jobs_on)
    assert n == 4  # relu, add, relu_grad, relu with jobs on
    assert relu_add.add(x[:-1].reshape(1, -1)[:, ::2], y[:-1].reshape(1, -1)[:, ::2]) is None


@pytest.mark.parametrize("shape", [(6, 7, 40), (1, 3, 11), (64, 16, 1024)])
def test_batch_norm_jobs_bit_equal_to_the_row_workers(jobs_on, monkeypatch, shape):
    monkeypatch.setattr(norm, "n_blocks", lambda rows, elements: 2)
    rng = np.random.default_rng(1)
    c = shape[1]
    x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    w, b = rng.standard_normal(c).astype(np.float32), rng.standard_normal(c).astype(np.float32)
    gy, gm, gv = (rng.standard_normal(s).astype(np.float32) for s in (shape, c, c))
    fwd = _both(lambda: norm.batch_norm_forward(x, w, b, 1e-5))
    _equal(*fwd)
    _, mean, var = fwd[0]
    _equal(*_both(lambda: norm.batch_norm_backward(gy, gm, gv, x, w, mean, var, 1e-3)))
    assert len(jobs_on) == 2
    # float64, or a strided weight: the row workers
    norm.batch_norm_forward(x.astype(np.float64), w * 1.0, b * 1.0, 1e-5)
    norm.batch_norm_forward(x, np.repeat(w, 2)[::2], b, 1e-5)
    assert len(jobs_on) == 2
    # batch norm + ReLU (graph mode's fused pair): the ReLU in the output pass, its mask in
    # the gradient's passes
    fz = _both(lambda: norm.batch_norm_forward(x, w, b, 1e-5, relu=True))
    _equal(*fz)
    z = fz[0][0]
    np.testing.assert_array_equal(z, np.maximum(fwd[0][0], 0))
    _equal(*_both(lambda: norm.batch_norm_backward(gy, gm, gv, x, w, mean, var, 1e-3, z3=z)))
    assert len(jobs_on) == 4


CONV_CASES = [  # x, w, stride, low pads, dilation, groups, output size (float32, micro paths)
    ((3, 16, 6, 16), (16, 16, 3, 3), (1, 1), (1, 1), (1, 1), 1),  # implicit rows of 16
    ((1, 16, 7, 32), (16, 8, 3, 3), (1, 1), (2, 1), (2, 1), 2),  # groups, dilation, batch 1
    ((5, 32, 8, 8), (48, 32, 3, 3), (1, 1), (1, 1), (1, 1), 1),  # pixels, channels-last dw
    ((3, 8, 13, 16), (32, 8, 3, 3), (2, 2), (1, 1), (1, 1), 1),  # pixels, stride 2
    ((4, 16, 9, 16), (32, 16, 3, 3), (1, 1), (1, 1), (1, 1), 1),  # merged taps dw, 9 rows
    ((7, 8, 5, 16), (16, 8, 3, 3), (1, 1), (0, 2), (1, 1), 1),  # one-sided pad, implicit dw
    ((3, 9, 6, 32), (9, 9, 3, 3), (1, 1), (1, 1), (1, 1), 1),  # 9 out: zero-padded rows
    ((2, 12, 5, 32), (18, 6, 3, 3), (1, 1), (1, 1), (1, 1), 2),  # groups of 9: padded rows
    # kernels that call cblas_sgemm: 3 channels in (plain weight and input gradients)
    ((4, 3, 10, 10), (16, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((3, 16, 16, 16), (32, 16, 3, 3), (2, 2), (1, 1), (1, 1), 1),  # stride 2: col2im dx
    ((2, 16, 16, 16), (32, 16, 1, 1), (2, 2), (0, 0), (1, 1), 1),  # 1x1 stride-2 projection
    ((4, 6, 14, 14), (16, 6, 5, 5), (1, 1), (0, 0), (1, 1), 1),  # LeNet-5's second conv
    ((3, 4, 9, 7), (6, 2, 3, 2), (2, 1), (1, 0), (1, 2), 2),  # groups, 6 out: OpenBLAS only
    ((2, 8, 8, 8), (36, 8, 3, 3), (1, 1), (1, 1), (1, 1), 1),  # 36 out on OpenBLAS
]


@pytest.mark.skipif(
    not (conv_images.available(np.float32) and conv_images.microgemm.available()),
    reason="needs OpenBLAS and the AVX-512 micro-kernel",
)
@pytest.mark.parametrize("case", CONV_CASES)
def test_convolution_jobs_bit_equal_to_the_row_workers(jobs_on, monkeypatch, case):
    monkeypatch.setattr(conv_images, "max_blocks", lambda: 3)
    monkeypatch.setattr(conv_images, "PARALLEL_MIN", 0)
    shape, wshape, stride, pads, dilation, groups = case
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape).astype(np.float32)
    w = (rng.standard_normal(wshape) / 8).astype(np.float32)
    geo = (*stride, *pads, *dilation)
    kh, kw = wshape[2:]
    oh = (shape[2] + 2 * pads[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (shape[3] + 2 * pads[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    fwd = _both(lambda: conv_images.conv2d_images(x, w, geo, groups, (oh, ow)))
    _equal(*fwd)
    gy = rng.standard_normal(fwd[0].shape).astype(np.float32)
    _equal(*_both(lambda: conv_images.conv2d_data_grad_images(gy, w, geo, groups, x.shape)))
    # per-thread partial sums: which images a thread claims varies from run to run
    dw_off, dw_on = _both(
        lambda: conv_images.conv2d_weight_grad_images(x, gy, geo, groups, (kh, kw))
    )
    np.testing.assert_allclose(dw_on, dw_off, rtol=1e-5, atol=1e-5)
    assert len(jobs_on) >= (shape[0] > 1)  # the forward at least (batch 1: on this thread)
    # against the float64 reference (the forward and weight gradient)
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    xp = np.pad(x64, ((0, 0), (0, 0), (pads[0], pads[0]), (pads[1], pads[1])))
    cg, og = wshape[1], wshape[0] // groups
    want = np.zeros(fwd[0].shape)
    dw = np.zeros(wshape)
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                win = xp[
                    :,
                    g * cg : (g + 1) * cg,
                    i * dilation[0] : i * dilation[0] + stride[0] * (oh - 1) + 1 : stride[0],
                    j * dilation[1] : j * dilation[1] + stride[1] * (ow - 1) + 1 : stride[1],
                ]
                o = slice(g * og, (g + 1) * og)
                want[:, o] += np.einsum("nchw,oc->nohw", win, w64[o, :, i, j])
                dw[o, :, i, j] = np.einsum("nohw,nchw->oc", gy[:, o].astype(np.float64), win)
    np.testing.assert_allclose(fwd[1], want, rtol=2e-5, atol=2e-5)
    got_dw = conv_images.conv2d_weight_grad_images(x, gy, geo, groups, (kh, kw))
    np.testing.assert_allclose(got_dw, dw, rtol=2e-4, atol=2e-4)


def test_one_thread_never_starts_a_job(monkeypatch):
    monkeypatch.setattr(_jobs, "max_blocks", lambda: 1)
    assert not _jobs.available()
    monkeypatch.setattr(_jobs, "max_blocks", lambda: 2)
    monkeypatch.setattr(_jobs, "ENABLED", False)
    assert not _jobs.available()
    assert numba.get_num_threads() >= 1
