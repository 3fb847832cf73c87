"""Op-table tests for linear algebra (sporeling.core.ops.linalg)."""

import numpy as np
import pytest
from scipy.spatial.distance import cdist as sp_cdist

from sporeling.core import Tensor, ops
from sporeling_testing import OpRecord, check_backward, check_forward, check_grad, records_params

F = ("float16", "float32", "float64")
LOOSE16 = {"float16": (2e-2, 5e-2)}


def _well_conditioned(r, s, d):
    a = r.standard_normal(s) * 0.3
    return (a + np.eye(s[-1]) * 2).astype(d)


def _np_dot(a, b):
    return np.tensordot(a, b, axes=([a.ndim - 1], [b.ndim - 2]))


def _np_batch_dot(a, b, axes):
    out = np.stack(
        [np.tensordot(a[i], b[i], axes=([axes[0] - 1], [axes[1] - 1])) for i in range(a.shape[0])]
    )
    return out.reshape(a.shape[0], 1) if out.ndim == 1 else out


def _np_cdist(x, y, p):
    if x.ndim == 2:
        return sp_cdist(x, y, "minkowski", p=p) if 1 <= p < np.inf else _np_cdist_any(x, y, p)
    return np.stack([_np_cdist(a, b, p) for a, b in zip(x, y)])


def _np_cdist_any(x, y, p):
    d = np.abs(x[:, None, :] - y[None, :, :])
    if p == 0:
        return (d != 0).sum(-1).astype(x.dtype)
    if p == np.inf:
        return d.max(-1)
    return (d**p).sum(-1) ** (1 / p)


def _np_renorm(x, p, dim, maxnorm):
    axes = tuple(i for i in range(x.ndim) if i != dim)
    n = np.sum(np.abs(x) ** p, axis=axes, keepdims=True) ** (1 / p)
    return np.where(n > maxnorm, x * maxnorm / (n + 1e-7), x)


def _np_stft(x, n_fft, hop, win, center, mode, normalized, onesided):
    pad = n_fft // 2
    if center:
        widths = [(0, 0)] * (x.ndim - 1) + [(pad, pad)]
        x = np.pad(x, widths, mode="reflect" if mode == "REFLECT" else "constant")
    frames = 1 + (x.shape[-1] - n_fft) // hop
    segs = np.stack([x[..., t * hop : t * hop + n_fft] for t in range(frames)], -2)
    w = np.ones(n_fft) if win is None else win
    spec = np.fft.rfft(segs * w, axis=-1) if onesided else np.fft.fft(segs * w, axis=-1)
    if normalized:
        spec = spec / np.sqrt(n_fft)
    spec = np.swapaxes(spec, -1, -2)  # (..., freq, frames)
    return np.stack([spec.real, spec.imag], -1)


RECORDS = [
    OpRecord(
        "baddbmm",
        lambda x, a, b: ops.baddbmm(x, a, b, 0.5, 2.0),
        lambda x, a, b: 0.5 * x + 2.0 * (a @ b),
        [((2, 3, 5), (2, 3, 4), (2, 4, 5)), ((5,), (2, 3, 4), (2, 4, 5))],
        F,
        order=2,
        tol=LOOSE16,
    ),
    OpRecord(
        "baddbmm_default",
        lambda x, a, b: ops.baddbmm(x, a, b),
        lambda x, a, b: x + a @ b,
        [((1, 2, 2), (1, 2, 3), (1, 3, 2))],
        tol=LOOSE16,
    ),
    OpRecord("mv", ops.mv, np.matmul, [((3, 4), (4,))], F, order=2, tol=LOOSE16),
    OpRecord(
        "mv_int", ops.mv, np.matmul, [((3, 4), (4,))], ("int32",), grad=False, check_dtype=False
    ),
    OpRecord("outer", ops.outer, np.outer, [((3,), (4,))], F + ("int32",), order=2),
    OpRecord("ger", ops.ger, np.outer, [((2,), (5,))], F),
    OpRecord(
        "dot",
        ops.dot,
        _np_dot,
        [((2, 3), (1, 3, 2)), ((1, 2, 3), (2, 3, 4)), ((3, 2, 3), (2, 1, 3, 2)), ((4, 5), (5, 2))],
        F,
        order=2,
        tol=LOOSE16,
    ),
    OpRecord(
        "batch_dot_default",
        lambda a, b: ops.batch_dot(a, b),
        lambda a, b: _np_batch_dot(a, b, (a.ndim - 1, b.ndim - 2 if b.ndim > 2 else 1)),
        [((2, 3, 4), (2, 4, 5)), ((3, 4), (3, 4)), ((2, 2, 3, 4), (2, 4, 3))],
        F,
        order=2,
        tol=LOOSE16,
    ),
    OpRecord(
        "batch_dot_axes",
        lambda a, b: ops.batch_dot(a, b, (1, 2)),
        lambda a, b: _np_batch_dot(a, b, (1, 2)),
        [((2, 3, 4), (2, 5, 3))],
        F,
        tol=LOOSE16,
    ),
    OpRecord(
        "batch_dot_int",
        lambda a, b: ops.batch_dot(a, b, 1),
        lambda a, b: _np_batch_dot(a, b, (1, 1)),
        [((2, 3, 4), (2, 3))],
    ),
    OpRecord(
        "tensor_dot_pairs",
        lambda a, b: ops.tensor_dot(a, b, ((1, 2), (1, 0))),
        lambda a, b: np.tensordot(a, b, ((1, 2), (1, 0))),
        [((2, 3, 4), (4, 3, 5))],
        F,
        order=2,
        tol=LOOSE16,
    ),
    OpRecord(
        "tensor_dot_int",
        lambda a, b: ops.tensor_dot(a, b, 1),
        lambda a, b: np.tensordot(a, b, 1),
        [((2, 3), (3, 4)), ((3,), (3,))],
        F,
        tol=LOOSE16,
    ),
    OpRecord(
        "tensor_dot_zero",
        lambda a, b: ops.tensor_dot(a, b, 0),
        lambda a, b: np.tensordot(a, b, 0),
        [((2,), (3,))],
    ),
    OpRecord(
        "renorm",
        lambda x: ops.renorm(x, 2, 0, 1.5),
        lambda x: _np_renorm(x, 2, 0, 1.5),
        [((4, 3),), ((3, 2, 2),)],
        F,
        order=2,
    ),
    OpRecord(
        "renorm_p1_dim1",
        lambda x: ops.renorm(x, 1, 1, 2.0),
        lambda x: _np_renorm(x, 1, 1, 2.0),
        [((3, 4),)],
        F,
    ),
    OpRecord(
        "matrix_solve",
        ops.matrix_solve,
        np.linalg.solve,
        [((3, 3), (3, 2)), ((2, 4, 4), (2, 4, 1))],
        ("float32", "float64"),
        make=[_well_conditioned, lambda r, s, d: r.standard_normal(s).astype(d)],
        order=2,
        tol={"float32": (1e-4, 1e-4)},
    ),
    OpRecord(
        "matrix_solve_adjoint",
        lambda a, b: ops.matrix_solve(a, b, True),
        lambda a, b: np.linalg.solve(np.swapaxes(a, -1, -2), b),
        [((3, 3), (3, 2))],
        F,
        make=[_well_conditioned, lambda r, s, d: r.standard_normal(s).astype(d)],
        tol={"float16": (2e-2, 5e-2), "float32": (1e-4, 1e-4)},
    ),
]
for p in (2.0, 1.0, 3.0, 0.5, 0.0, np.inf):
    RECORDS.append(
        OpRecord(
            f"cdist_p{p}",
            lambda x, y, p=p: ops.cdist(x, y, p),
            lambda x, y, p=p: _np_cdist(x, y, p),
            [((4, 3), (5, 3)), ((2, 3, 2), (2, 4, 2))],
            F,
            grad=p != 0.0,
            order=2 if p == 2.0 else 1,
            tol={"float16": (2e-2, 5e-2)},
        )
    )
for kw in [
    dict(hop_length=2),
    dict(hop_length=3, center=False, normalized=True),
    dict(pad_mode="CONSTANT", onesided=False),
    dict(hop_length=4, win_length=6),
]:
    tag = "-".join(f"{k}={v}" for k, v in kw.items())

    def _stft(x, kw=kw):
        return ops.stft(x, 8, **kw)

    def _ref(x, kw=kw):
        win = None
        if "win_length" in kw:
            win = np.zeros(8)
            win[(8 - kw["win_length"]) // 2 : (8 - kw["win_length"]) // 2 + kw["win_length"]] = 1
        return _np_stft(
            x,
            8,
            kw.get("hop_length", 2),
            win,
            kw.get("center", True),
            kw.get("pad_mode", "REFLECT"),
            kw.get("normalized", False),
            kw.get("onesided", True),
        )

    RECORDS.append(
        OpRecord(
            f"stft-{tag}", _stft, _ref, [((20,),), ((2, 17),)], F, tol={"float16": (3e-2, 6e-2)}
        )
    )


@pytest.mark.parametrize("rec,dtype", records_params(RECORDS))
def test_forward(rec, dtype, device):
    check_forward(rec, dtype, device)


@pytest.mark.parametrize("rec", records_params([r for r in RECORDS if r.grad], dtypes=False))
def test_backward(rec, device):
    check_backward(rec, device)


def test_stft_window_gradient():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(16)
    w = np.hanning(8) + 0.1
    check_grad(lambda s, win: ops.stft(s, 8, 2, window=win), [x, w])
    out = ops.stft(Tensor(x), 8, 2, window=Tensor(w)).asnumpy()
    np.testing.assert_allclose(out, _np_stft(x, 8, 2, w, True, "REFLECT", False, True), atol=1e-9)


def test_cdist_gradient_is_zero_for_identical_rows():
    x = Tensor(np.ones((2, 3)))
    g = ops.grad(lambda t: ops.reduce_sum(ops.cdist(t, Tensor(np.ones((1, 3))))))(x).asnumpy()
    assert np.isfinite(g).all() and not g.any()


def test_dot_is_not_numpy_broadcasting_matmul():
    a = Tensor(np.ones((3, 2, 3), np.float32))
    b = Tensor(np.ones((2, 1, 3, 2), np.float32))
    assert ops.dot(a, b).shape == (3, 2, 2, 1, 2)


def test_matrix_solve_singular():
    with pytest.raises(ValueError, match="matrix_solve.*matrix.*singular"):
        ops.matrix_solve(Tensor(np.zeros((2, 2))), Tensor(np.ones((2, 1))))


# ---- errors -----------------------------------------------------------------------------------

T = lambda *s: Tensor(np.ones(s, np.float32))  # noqa: E731


@pytest.mark.parametrize(
    "call,exc,pattern",
    [
        (
            lambda: ops.baddbmm(T(2, 3, 5), T(2, 3, 4), T(2, 3, 5)),
            ValueError,
            r"baddbmm.*batch1.*\(2, 3, 4\).*batch2.*\(2, 3, 5\)",
        ),
        (lambda: ops.baddbmm(T(2, 3, 5), T(3, 4), T(2, 4, 5)), ValueError, "baddbmm.*batch1"),
        (
            lambda: ops.baddbmm(T(4, 4), T(2, 3, 4), T(2, 4, 5)),
            ValueError,
            r"baddbmm.*input.*\(4, 4\)",
        ),
        (
            lambda: ops.baddbmm(T(2, 3, 5), T(2, 3, 4), T(2, 4, 5), beta="1"),
            TypeError,
            "baddbmm.*beta",
        ),
        (lambda: ops.mv(T(3, 4), T(3)), ValueError, r"mv.*mat.*\(3, 4\).*vec.*\(3,\)"),
        (lambda: ops.mv(T(3), T(3)), ValueError, "mv.*mat"),
        (lambda: ops.outer(T(3, 1), T(3)), ValueError, "outer.*x1"),
        (lambda: ops.ger(T(3), 2.0), TypeError, "ger.*x2"),
        (lambda: ops.dot(T(2, 3), T(4, 2)), ValueError, r"dot.*x1.*\(2, 3\).*x2.*\(4, 2\)"),
        (lambda: ops.dot(T(3), T(3, 2)), ValueError, "dot.*x1"),
        (
            lambda: ops.batch_dot(T(2, 3), T(3, 3)),
            ValueError,
            r"batch_dot.*x1.*\(2, 3\).*x2.*\(3, 3\)",
        ),
        (
            lambda: ops.batch_dot(T(2, 3, 4), T(2, 5, 6)),
            ValueError,
            r"batch_dot.*\(2, 3, 4\).*\(2, 5, 6\)",
        ),
        (lambda: ops.batch_dot(T(2, 3), T(2, 3), (0, 1)), ValueError, "batch_dot.*axes"),
        (lambda: ops.batch_dot(T(2, 3), T(2, 3), (1, 5)), ValueError, "batch_dot.*axes"),
        (lambda: ops.batch_dot(T(2, 3), T(2, 3), "x"), TypeError, "batch_dot.*axes"),
        (
            lambda: ops.tensor_dot(T(2, 3), T(2, 3), 1),
            ValueError,
            r"tensor_dot.*x1.*\(2, 3\).*x2.*\(2, 3\)",
        ),
        (lambda: ops.tensor_dot(T(2, 3), T(2, 3), 3), ValueError, "tensor_dot.*axes"),
        (lambda: ops.tensor_dot(T(2, 3), T(2, 3), ((0,), (0, 1))), ValueError, "tensor_dot.*axes"),
        (lambda: ops.renorm(T(2, 3), 0, 0, 1.0), ValueError, "renorm.*p"),
        (lambda: ops.renorm(T(2, 3), 2, 2, 1.0), ValueError, "renorm.*dim"),
        (lambda: ops.renorm(T(2, 3), 2, 0, -1.0), ValueError, "renorm.*maxnorm"),
        (lambda: ops.matrix_solve(T(2, 3), T(2, 1)), ValueError, "matrix_solve.*matrix"),
        (
            lambda: ops.matrix_solve(T(3, 3), T(2, 1)),
            ValueError,
            r"matrix_solve.*matrix.*\(3, 3\).*rhs.*\(2, 1\)",
        ),
        (lambda: ops.matrix_solve(T(3, 3), T(3, 1), 1), TypeError, "matrix_solve.*adjoint"),
        (lambda: ops.cdist(T(3, 2), T(3, 4)), ValueError, r"cdist.*x.*\(3, 2\).*y.*\(3, 4\)"),
        (lambda: ops.cdist(T(3), T(3, 4)), ValueError, "cdist.*x"),
        (lambda: ops.cdist(T(3, 2), T(3, 2), -1.0), ValueError, "cdist.*p"),
        (lambda: ops.stft(T(20), 8, return_complex=True), ValueError, "stft.*return_complex"),
        (lambda: ops.stft(T(20), 8, pad_mode="edge"), ValueError, "stft.*pad_mode"),
        (lambda: ops.stft(T(20), 8, win_length=9), ValueError, "stft.*win_length"),
        (lambda: ops.stft(T(20), 8, window=T(4)), ValueError, "stft.*window"),
        (lambda: ops.stft(T(2, 2, 20), 8), ValueError, "stft.*x"),
        (lambda: ops.stft(T(3), 8), ValueError, "stft.*x"),
        (lambda: ops.stft(T(20), 0), ValueError, "stft.*n_fft"),
    ],
)
def test_errors(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()
