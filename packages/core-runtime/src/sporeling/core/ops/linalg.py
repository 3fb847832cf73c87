"""Linear algebra: products (baddbmm, mv, outer/ger, dot, batch_dot, tensor_dot), renorm,
matrix_solve, cdist and stft.

Everything but ``matrix_solve`` is a composition of matmul, transpose, reshape, indexing
and reductions, so gradients (and second-order gradients) come from those ops.
``matrix_solve`` is a primitive whose vjp solves with the transposed matrix:
``dB = solve(A^T, G)`` and ``dA = -dB X^T``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtype as _dt
from .._primitive import Primitive, ShapedArray
from ..errors import check_axis, check_int, op_error
from ..tensor import Tensor
from ._compare import greater, select
from ._core import as_tensor, broadcast_shapes, cast, full, reshape, transpose
from ._elementwise import promote_args
from ._join import concat, stack
from ._matmul import matmul
from .complex_numbers import conjugate
from .reduction import _lp_norm

__all__ = [
    "baddbmm",
    "mv",
    "outer",
    "ger",
    "dot",
    "batch_dot",
    "tensor_dot",
    "renorm",
    "matrix_solve",
    "matrix_inverse",
    "matrix_determinant",
    "cdist",
    "stft",
]


def _float_pair(op: str, x: Any, y: Any, names: tuple[str, str]) -> tuple[Tensor, Tensor]:
    for v, n in zip((x, y), names, strict=True):
        if not isinstance(v, Tensor):
            raise op_error(op, n, v, "a Tensor", TypeError)
    a, b = promote_args(op, x, y, names, min_category=2)
    return a, b


def _rank(op: str, arg: str, t: Tensor, ranks: str, ok: bool) -> None:
    if not ok:
        raise op_error(op, arg, t, f"a tensor of rank {ranks}")


def _mT(t: Tensor) -> Tensor:
    perm = tuple(range(t.ndim - 2)) + (t.ndim - 1, t.ndim - 2)
    return transpose(t, perm)


# ---- products ----------


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, beta: Any = 1, alpha: Any = 1) -> Tensor:  # noqa: A002
    """``beta * input + alpha * (batch1 @ batch2)`` for batches of matrices
    ``(b, n, m) @ (b, m, p)``; ``input`` broadcasts to ``(b, n, p)``.

    >>> b = Tensor(np.ones((1, 2, 3), np.float32))
    >>> baddbmm(Tensor(np.ones((1, 2, 2), np.float32)), b, b.transpose((0, 2, 1))).tolist()
    [[[4.0, 4.0], [4.0, 4.0]]]
    """
    op = "baddbmm"
    b1, b2 = _float_pair(op, batch1, batch2, ("batch1", "batch2"))
    _rank(op, "batch1", b1, "3", b1.ndim == 3)
    _rank(op, "batch2", b2, "3", b2.ndim == 3)
    if b1.shape[0] != b2.shape[0] or b1.shape[2] != b2.shape[1]:
        raise ValueError(
            f"{op}: 'batch1' of shape {b1.shape} and 'batch2' of shape {b2.shape} are not "
            "(b, n, m) and (b, m, p)"
        )
    x = as_tensor(input, op, "input", b1)
    out_shape = (b1.shape[0], b1.shape[1], b2.shape[2])
    try:
        ok = broadcast_shapes(op, x.shape, out_shape) == out_shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(
            f"{op}: 'input' of shape {x.shape} does not broadcast to the product's shape "
            f"{out_shape}"
        )
    for name, v in (("beta", beta), ("alpha", alpha)):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise op_error(op, name, v, "a number", TypeError)
    prod = matmul(b1, b2)
    x = cast(x, prod.dtype)
    if beta == 0:
        return prod * alpha if alpha != 1 else prod
    return x * beta + (prod * alpha if alpha != 1 else prod)


def mv(mat: Tensor, vec: Tensor) -> Tensor:
    """Matrix-vector product ``mat @ vec`` for ``(n, m)`` and ``(m,)``.

    >>> mv(Tensor([[1.0, 2.0], [3.0, 4.0]]), Tensor([1.0, 1.0])).tolist()
    [3.0, 7.0]
    """
    op = "mv"
    m, v = _float_pair(op, mat, vec, ("mat", "vec"))
    _rank(op, "mat", m, "2", m.ndim == 2)
    _rank(op, "vec", v, "1", v.ndim == 1)
    if m.shape[1] != v.shape[0]:
        raise ValueError(
            f"{op}: 'mat' of shape {m.shape} and 'vec' of shape {v.shape} do not match "
            f"({m.shape[1]} != {v.shape[0]})"
        )
    return matmul(m, v)


def _outer(op: str, x1: Any, x2: Any) -> Tensor:
    a, b = _float_pair(op, x1, x2, ("x1", "x2"))
    _rank(op, "x1", a, "1", a.ndim == 1)
    _rank(op, "x2", b, "1", b.ndim == 1)
    return reshape(a, (a.shape[0], 1)) * reshape(b, (1, b.shape[0]))


def outer(x1: Tensor, x2: Tensor) -> Tensor:
    """Outer product ``out[i, j] = x1[i] * x2[j]`` of two vectors.

    >>> outer(Tensor([1.0, 2.0]), Tensor([3.0, 4.0, 5.0])).tolist()
    [[3.0, 4.0, 5.0], [6.0, 8.0, 10.0]]
    """
    return _outer("outer", x1, x2)


def ger(x1: Tensor, x2: Tensor) -> Tensor:
    """Outer product of two vectors (BLAS's name for :func:`outer`)."""
    return _outer("ger", x1, x2)


def _contract(a: Tensor, b: Tensor, axes_a: tuple[int, ...], axes_b: tuple[int, ...]) -> Tensor:
    """Sum over ``axes_a`` of ``a`` paired with ``axes_b`` of ``b`` (tensordot), as one
    matmul between ``(free_a, k)`` and ``(k, free_b)``."""
    free_a = tuple(i for i in range(a.ndim) if i not in axes_a)
    free_b = tuple(i for i in range(b.ndim) if i not in axes_b)
    k = math.prod(a.shape[i] for i in axes_a)
    fa = tuple(a.shape[i] for i in free_a)
    fb = tuple(b.shape[i] for i in free_b)
    a2 = reshape(transpose(a, free_a + axes_a), (math.prod(fa), k))
    b2 = reshape(transpose(b, axes_b + free_b), (k, math.prod(fb)))
    return reshape(matmul(a2, b2), fa + fb)


def dot(x1: Tensor, x2: Tensor) -> Tensor:
    """MindSpore's ``dot`` for tensors of rank >= 2: contract ``x1``'s last axis with
    ``x2``'s second-to-last, giving shape ``x1.shape[:-1] + x2.shape[:-2] + x2.shape[-1:]``
    (no batch broadcasting, unlike matmul).

    >>> dot(Tensor(np.ones((2, 3), np.float32)), Tensor(np.ones((1, 3, 2), np.float32))).shape
    (2, 1, 2)
    """
    op = "dot"
    a, b = _float_pair(op, x1, x2, ("x1", "x2"))
    _rank(op, "x1", a, ">= 2", a.ndim >= 2)
    _rank(op, "x2", b, ">= 2", b.ndim >= 2)
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(
            f"{op}: the last dimension of 'x1' (shape {a.shape}) must equal the second-to-last "
            f"dimension of 'x2' (shape {b.shape})"
        )
    return _contract(a, b, (a.ndim - 1,), (b.ndim - 2,))


def batch_dot(x1: Tensor, x2: Tensor, axes: Any = None) -> Tensor:
    """Per-sample contraction for inputs whose axis 0 is the batch: ``out[n] =
    tensordot(x1[n], x2[n])`` over ``axes = (a1, a2)`` (axes of the full tensors).

    ``axes=None`` contracts ``x1``'s last axis with ``x2``'s second-to-last (its last when
    ``x2`` is 2-D); an int ``N`` uses axis ``N`` of both. The output is
    ``(batch,) + x1's free dims + x2's free dims``, and ``(batch, 1)`` when that is 1-D.

    >>> batch_dot(Tensor(np.ones((2, 2, 3), np.float32)), Tensor(np.ones((2, 3, 2), np.float32)),
    ...           (-1, -2)).shape
    (2, 2, 2)
    """
    op = "batch_dot"
    a, b = _float_pair(op, x1, x2, ("x1", "x2"))
    _rank(op, "x1", a, ">= 2", a.ndim >= 2)
    _rank(op, "x2", b, ">= 2", b.ndim >= 2)
    if axes is None:
        ax = (a.ndim - 1, b.ndim - 1 if b.ndim == 2 else b.ndim - 2)
    elif isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        ax = (check_axis(op, axes, a.ndim, "axes"), check_axis(op, axes, b.ndim, "axes"))
    elif isinstance(axes, (tuple, list)) and len(axes) == 2:
        ax = (check_axis(op, axes[0], a.ndim, "axes"), check_axis(op, axes[1], b.ndim, "axes"))
    else:
        raise op_error(op, "axes", axes, "None, an int or a pair of ints", TypeError)
    if 0 in ax:
        raise op_error(op, "axes", axes, "axes other than the batch axis 0")
    if a.shape[0] != b.shape[0]:
        raise ValueError(
            f"{op}: 'x1' of shape {a.shape} and 'x2' of shape {b.shape} have different batch sizes"
        )
    if a.shape[ax[0]] != b.shape[ax[1]]:
        raise ValueError(
            f"{op}: axis {ax[0]} of 'x1' (shape {a.shape}) and axis {ax[1]} of 'x2' (shape "
            f"{b.shape}) must have the same size"
        )
    n = a.shape[0]
    free_a = tuple(i for i in range(1, a.ndim) if i != ax[0])
    free_b = tuple(i for i in range(1, b.ndim) if i != ax[1])
    fa = tuple(a.shape[i] for i in free_a)
    fb = tuple(b.shape[i] for i in free_b)
    k = a.shape[ax[0]]
    a3 = reshape(transpose(a, (0,) + free_a + (ax[0],)), (n, math.prod(fa), k))
    b3 = reshape(transpose(b, (0, ax[1]) + free_b), (n, k, math.prod(fb)))
    out_shape = (n,) + fa + fb
    return reshape(matmul(a3, b3), out_shape if len(out_shape) > 1 else (n, 1))


def tensor_dot(x1: Tensor, x2: Tensor, axes: Any) -> Tensor:
    """Tensor contraction over ``axes``: an int ``N`` pairs ``x1``'s last N axes with
    ``x2``'s first N; a pair of int sequences pairs them one by one (NumPy's tensordot).

    >>> tensor_dot(Tensor(np.ones((2, 3, 4), np.float32)), Tensor(np.ones((4, 3, 5), np.float32)),
    ...            ((1, 2), (1, 0))).shape
    (2, 5)
    """
    op = "tensor_dot"
    a, b = _float_pair(op, x1, x2, ("x1", "x2"))
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        n = check_int(op, "axes", axes, minimum=0)
        if n > a.ndim or n > b.ndim:
            raise op_error(op, "axes", axes, f"at most min(rank) = {min(a.ndim, b.ndim)} axes")
        axa = tuple(range(a.ndim - n, a.ndim))
        axb = tuple(range(n))
    elif isinstance(axes, (tuple, list)) and len(axes) == 2:
        pa = axes[0] if isinstance(axes[0], (tuple, list)) else (axes[0],)
        pb = axes[1] if isinstance(axes[1], (tuple, list)) else (axes[1],)
        if len(pa) != len(pb):
            raise op_error(op, "axes", axes, "two axis lists of the same length")
        axa = tuple(check_axis(op, i, a.ndim, "axes") for i in pa)
        axb = tuple(check_axis(op, i, b.ndim, "axes") for i in pb)
        if len(set(axa)) != len(axa) or len(set(axb)) != len(axb):
            raise op_error(op, "axes", axes, "distinct axes")
    else:
        raise op_error(op, "axes", axes, "an int or a pair of int sequences", TypeError)
    for i, j in zip(axa, axb, strict=True):
        if a.shape[i] != b.shape[j]:
            raise ValueError(
                f"{op}: axis {i} of 'x1' (shape {a.shape}) and axis {j} of 'x2' (shape "
                f"{b.shape}) differ in size"
            )
    return _contract(a, b, axa, axb)


# ---- renorm ----------


def renorm(input_x: Tensor, p: int, dim: int, maxnorm: float) -> Tensor:
    """Rescale each slice ``input_x[..., i, ...]`` along ``dim`` whose p-norm exceeds
    ``maxnorm`` to norm ``maxnorm`` (factor ``maxnorm / (norm + 1e-7)``); others pass.

    >>> renorm(Tensor([[3.0, 4.0], [0.3, 0.4]]), 2, 0, 1.0).tolist()[1]
    [0.30000001192092896, 0.4000000059604645]
    """
    op = "renorm"
    if not isinstance(input_x, Tensor):
        raise op_error(op, "input_x", input_x, "a Tensor", TypeError)
    x = input_x
    if x.dtype.category != 2:
        raise op_error(op, "input_x", x, "a floating tensor", TypeError)
    pp = check_int(op, "p", p, minimum=1)
    d = check_axis(op, dim, x.ndim, "dim")
    if isinstance(maxnorm, bool) or not isinstance(maxnorm, (int, float)) or maxnorm < 0:
        raise op_error(op, "maxnorm", maxnorm, "a non-negative float")
    others = tuple(i for i in range(x.ndim) if i != d)
    if others:
        nrm = _lp_norm(op, x, others, float(pp), True, 1e-12)
    else:  # each slice is one element: its norm is |x|
        nrm = select(greater(x, 0), x, -x)
    ones = full(nrm.shape, 1.0, x.dtype, x._device)
    factor = select(greater(nrm, maxnorm), float(maxnorm) / (nrm + 1e-7), ones)
    return x * factor


# ---- matrix_solve ----------


def _solve_abstract(a: ShapedArray, b: ShapedArray) -> ShapedArray:
    return ShapedArray(b.shape, b.dtype)


def _solve_impl(xp: Any, a: Any, b: Any) -> Any:
    try:
        return xp.linalg.solve(a, b)
    except np.linalg.LinAlgError as exc:
        raise ValueError(
            f"matrix_solve: argument 'matrix' is singular (a tensor of shape {a.shape}): {exc}"
        ) from None


def _mH(t: Tensor) -> Tensor:
    """The (conjugate for complex) transpose of the last two axes."""
    return conjugate(_mT(t))


def _solve_vjp(g: Tensor, a: Tensor, b: Tensor, *, out: Tensor) -> Any:
    gb = solve_p.bind(_mH(a), g)  # A^H dB = G
    return (lambda: -matmul(gb, _mH(out))), gb


solve_p = Primitive("matrix_solve", "opaque", _solve_abstract, impl=_solve_impl, vjp=_solve_vjp)


def matrix_solve(matrix: Tensor, rhs: Tensor, adjoint: bool = False) -> Tensor:
    """Solve ``matrix @ X = rhs`` (``matrix^H @ X = rhs``, the conjugate transpose, when
    ``adjoint``) for batches of square matrices ``(..., M, M)`` and right-hand sides
    ``(..., M, K)``; float or complex.

    >>> matrix_solve(Tensor([[2.0, 0.0], [0.0, 4.0]]), Tensor([[2.0], [2.0]])).tolist()
    [[1.0], [0.5]]
    """
    op = "matrix_solve"
    a, b = _float_pair(op, matrix, rhs, ("matrix", "rhs"))
    if not isinstance(adjoint, (bool, np.bool_)):
        raise op_error(op, "adjoint", adjoint, "a bool", TypeError)
    _rank(op, "matrix", a, ">= 2", a.ndim >= 2)
    if a.shape[-1] != a.shape[-2]:
        raise op_error(op, "matrix", a, "square matrices (..., M, M)")
    if b.ndim != a.ndim or b.shape[:-2] != a.shape[:-2] or b.shape[-2] != a.shape[-1]:
        raise ValueError(
            f"{op}: 'matrix' of shape {a.shape} and 'rhs' of shape {b.shape} do not match; "
            "expected (..., M, M) and (..., M, K)"
        )
    lhs = _mH(a) if adjoint else a
    if a.dtype == _dt.float16:  # LAPACK has no half precision
        return cast(solve_p.bind(cast(lhs, "float32"), cast(b, "float32")), a.dtype)
    return solve_p.bind(lhs, b)


# ---- matrix_inverse / matrix_determinant ----------


def _square_matrices(op: str, x: Any, arg: str = "x") -> Tensor:
    if not isinstance(x, Tensor):
        raise op_error(op, arg, x, "a Tensor", TypeError)
    if x.dtype.category < 2:
        raise op_error(op, arg, x, "a float or complex tensor", TypeError)
    _rank(op, arg, x, ">= 2", x.ndim >= 2)
    if x.shape[-1] != x.shape[-2]:
        raise op_error(op, arg, x, "square matrices (..., M, M)")
    return x


def _square_abstract(x: ShapedArray, **params: Any) -> ShapedArray:
    return ShapedArray(x.shape, x.dtype)


def _inv_impl(xp: Any, x: Any) -> Any:
    try:
        return xp.linalg.inv(x)
    except np.linalg.LinAlgError as exc:
        raise ValueError(
            f"matrix_inverse: argument 'x' is singular (a tensor of shape {x.shape}): {exc}"
        ) from None


def _inv_vjp(g: Tensor, x: Tensor, *, out: Tensor) -> Tensor:
    oh = _mH(out)  # d inv(X) = -inv(X) dX inv(X): the vjp is -inv^H G inv^H
    return -matmul(matmul(oh, g), oh)


inverse_p = Primitive(
    "matrix_inverse", "opaque", _square_abstract, impl=_inv_impl, vjp=_inv_vjp
)  # fmt: skip


def matrix_inverse(x: Tensor, adjoint: bool = False) -> Tensor:
    """The inverse of each square matrix of ``x`` ``(..., M, M)`` (of its conjugate transpose
    when ``adjoint``), MindSpore's ``MatrixInverse``; float or complex.

    >>> matrix_inverse(Tensor([[2.0, 0.0], [0.0, 4.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.25]]
    """
    t = _square_matrices("matrix_inverse", x)
    if not isinstance(adjoint, (bool, np.bool_)):
        raise op_error("matrix_inverse", "adjoint", adjoint, "a bool", TypeError)
    if adjoint:
        t = _mH(t)
    if t.dtype == _dt.float16:  # LAPACK has no half precision
        return cast(inverse_p.bind(cast(t, "float32")), _dt.float16)
    return inverse_p.bind(t)


def _det_impl(xp: Any, x: Any) -> Any:
    return xp.asarray(xp.linalg.det(x))


def _det_vjp(g: Tensor, x: Tensor, *, out: Tensor) -> Tensor:
    # d det(X) = det(X) tr(inv(X) dX): the vjp is g * conj(det) * inv(X)^H (for an
    # invertible X, as MindSpore's MatrixDeterminant gradient)
    scale = reshape(g * conjugate(out), out.shape + (1, 1))
    return scale * _mH(inverse_p.bind(x))


det_p = Primitive(
    "matrix_determinant", "opaque", lambda x: ShapedArray(x.shape[:-2], x.dtype),
    impl=_det_impl, vjp=_det_vjp,
)  # fmt: skip


def matrix_determinant(x: Tensor) -> Tensor:
    """The determinant of each square matrix of ``x`` ``(..., M, M)``, shape ``(...)``;
    float or complex (MindSpore's ``MatrixDeterminant``, ``ops.det``).

    >>> matrix_determinant(Tensor([[2.0, 1.0], [1.0, 3.0]])).item()
    5.0
    """
    t = _square_matrices("matrix_determinant", x)
    if t.dtype == _dt.float16:
        return cast(det_p.bind(cast(t, "float32")), _dt.float16)
    return det_p.bind(t)


# ---- cdist ----------


def cdist(x: Tensor, y: Tensor, p: float = 2.0) -> Tensor:
    """p-norm distances between the rows of ``x`` ``(B, P, M)`` and ``y`` ``(B, R, M)``
    (or 2-D ``(P, M)``, ``(R, M)``): ``out[b, i, j] = ||x[b, i] - y[b, j]||_p``.

    The gradient is 0 where two rows coincide (``p >= 1``; a subgradient).

    >>> cdist(Tensor([[0.0, 0.0]]), Tensor([[3.0, 4.0], [1.0, 0.0]])).tolist()
    [[5.0, 1.0]]
    """
    op = "cdist"
    a, b = _float_pair(op, x, y, ("x", "y"))
    _rank(op, "x", a, "2 or 3", a.ndim in (2, 3))
    _rank(op, "y", b, "2 or 3", b.ndim in (2, 3))
    if a.ndim != b.ndim or a.shape[:-2] != b.shape[:-2] or a.shape[-1] != b.shape[-1]:
        raise ValueError(
            f"{op}: 'x' of shape {a.shape} and 'y' of shape {b.shape} do not match; expected "
            "(B, P, M) and (B, R, M) (or (P, M) and (R, M))"
        )
    if isinstance(p, bool) or not isinstance(p, (int, float)) or p < 0 or math.isnan(p):
        raise op_error(op, "p", p, "a non-negative float")
    lead = a.shape[:-2]
    xa = reshape(a, lead + (a.shape[-2], 1, a.shape[-1]))
    yb = reshape(b, lead + (1, b.shape[-2], b.shape[-1]))
    diff = xa - yb
    return _lp_norm(op, diff, (diff.ndim - 1,), float(p), False, 1e-12)


# ---- stft ----------


def _reflect_index(length: int, pad: int) -> np.ndarray:
    pos = np.arange(-pad, length + pad)
    pos = np.abs(pos)
    return np.where(pos >= length, 2 * (length - 1) - pos, pos)


def stft(
    x: Tensor,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Tensor | None = None,
    center: bool = True,
    pad_mode: str = "REFLECT",
    normalized: bool = False,
    onesided: bool | None = None,
    return_complex: bool | None = None,
) -> Tensor:
    """Short-time Fourier transform of ``x`` ``(L,)`` or ``(B, L)``.

    Frames of ``n_fft`` samples every ``hop_length`` (default ``n_fft // 4``), multiplied
    by ``window`` (default all ones, ``win_length`` long and zero-padded to ``n_fft`` in
    the middle), after padding ``n_fft // 2`` on each side when ``center`` (``pad_mode``
    "REFLECT" or "CONSTANT"). ``X[f, t] = sum_n w[n] x[t * hop + n] exp(-2 pi i f n / n_fft)``,
    scaled by ``1 / sqrt(n_fft)`` when ``normalized``; ``onesided`` (default True) keeps
    ``n_fft // 2 + 1`` frequencies.

    Sporeling has no complex dtype, so the result is always real with the real and
    imaginary parts stacked in a last axis of size 2: ``(B?, n_freq, n_frames, 2)``
    (``return_complex=True`` is rejected). The DFT is a matmul with a cos/sin basis, so
    gradients flow to ``x`` and ``window``.

    >>> stft(Tensor(np.ones(8, np.float32)), 4, center=False).shape
    (3, 5, 2)
    """
    op = "stft"
    t = as_tensor(x, op, "x")
    if t.dtype.category == 3:
        raise op_error(op, "x", t, "a real signal (complex input is not supported)", TypeError)
    if t.dtype.category != 2:
        t = cast(t, _dt.float32)
    _rank(op, "x", t, "1 or 2", t.ndim in (1, 2))
    nfft = check_int(op, "n_fft", n_fft, minimum=1)
    hop = nfft // 4 if hop_length is None else check_int(op, "hop_length", hop_length, 1)
    wl = nfft if win_length is None else check_int(op, "win_length", win_length, 1)
    if wl > nfft:
        raise op_error(op, "win_length", win_length, f"an int <= n_fft ({nfft})")
    if return_complex:
        raise op_error(
            op,
            "return_complex",
            return_complex,
            "False or None (Sporeling has no complex dtype; real and imaginary parts are "
            "stacked in a last axis of size 2)",
        )
    for name, v in (("center", center), ("normalized", normalized)):
        if not isinstance(v, (bool, np.bool_)):
            raise op_error(op, name, v, "a bool", TypeError)
    if onesided is not None and not isinstance(onesided, (bool, np.bool_)):
        raise op_error(op, "onesided", onesided, "a bool or None", TypeError)
    mode = str(pad_mode).upper()
    if mode not in ("REFLECT", "CONSTANT"):
        raise op_error(op, "pad_mode", pad_mode, "'REFLECT' or 'CONSTANT'")
    one = onesided is None or bool(onesided)
    if window is None:
        w = full((wl,), 1.0, t.dtype, t._device)
    else:
        w = cast(as_tensor(window, op, "window", t), t.dtype)
        if w.shape != (wl,):
            raise op_error(op, "window", w, f"a 1-d tensor of length win_length ({wl})")
    if wl < nfft:  # centre the window inside n_fft samples
        left = (nfft - wl) // 2
        zl = full((left,), 0.0, t.dtype, t._device)
        zr = full((nfft - wl - left,), 0.0, t.dtype, t._device)
        w = concat((zl, w, zr))

    batch = t.ndim == 2
    sig = t if batch else reshape(t, (1, t.shape[0]))
    length = sig.shape[1]
    if center:
        pad = nfft // 2
        if mode == "REFLECT":
            if pad >= length:
                raise ValueError(
                    f"{op}: reflect padding of {pad} needs a signal longer than {pad} samples, "
                    f"got x of shape {t.shape}"
                )
            idx = Tensor(_reflect_index(length, pad), device=t._device)
            sig = sig[:, idx]
        elif pad:
            z = full((sig.shape[0], pad), 0.0, t.dtype, t._device)
            sig = concat((z, sig, z), 1)
    padded = sig.shape[1]
    if padded < nfft:
        raise ValueError(f"{op}: x of shape {t.shape} is shorter than n_fft ({nfft})")
    frames = 1 + (padded - nfft) // hop
    fidx = np.arange(frames)[:, None] * hop + np.arange(nfft)[None, :]
    seg = sig[:, Tensor(fidx, device=t._device)]  # (B, frames, n_fft)
    seg = seg * w
    nfreq = nfft // 2 + 1 if one else nfft
    ang = 2.0 * np.pi * np.outer(np.arange(nfft), np.arange(nfreq)) / nfft
    scale = 1.0 / math.sqrt(nfft) if normalized else 1.0
    cos_b = Tensor((np.cos(ang) * scale).astype(t.dtype.np), device=t._device)
    sin_b = Tensor((-np.sin(ang) * scale).astype(t.dtype.np), device=t._device)
    re = transpose(matmul(seg, cos_b), (0, 2, 1))
    im = transpose(matmul(seg, sin_b), (0, 2, 1))
    out = stack((re, im), -1)  # (B, n_freq, frames, 2)
    return out if batch else reshape(out, out.shape[1:])
