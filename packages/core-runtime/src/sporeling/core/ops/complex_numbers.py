"""Complex numbers: ``complex``, ``real``, ``imag``, ``conj``, ``angle``, ``complex_abs``.

Gradients follow MindSpore's (and TensorFlow's) convention: the vjp of ``f`` at ``z`` is
``g * conj(f'(z))``, so for a real loss ``L`` the gradient with respect to ``z = x + iy`` is
``dL/dx + i dL/dy`` (what gradient descent steps along). A real input of an op with a
complex result gets the real part of that gradient.
"""

from __future__ import annotations

from typing import Any

from .. import dtype as _dt
from .._primitive import Primitive, ShapedArray
from ..errors import op_error
from ..tensor import Tensor
from ._core import as_tensor, broadcast_shapes, cast

__all__ = ["complex", "real", "imag", "conj", "angle", "complex_abs"]

#: the ops that accept complex tensors (the errors of the others name this list)
SUPPORTED = (
    "add sub mul div neg square pow exp log sqrt sin cos tan sinh cosh tanh reciprocal conj real "
    "imag angle complex_abs abs "
    "matmul batch_matmul reduce_sum mean prod matrix_solve matrix_inverse matrix_determinant "
    "reshape transpose concat stack squeeze expand_dims gather slicing cast equal not_equal"
)


def _complex_only(op: str, x: ShapedArray) -> None:
    if x.dtype.category != 3:
        raise TypeError(f"{op}: argument 'x' expected a complex dtype, got {x.dtype}")


def conjugate(t: Tensor) -> Tensor:
    """``conj(t)`` for complex tensors, ``t`` itself for real ones (the vjp rules' helper)."""
    return conj_p.bind(t) if t.dtype.category == 3 else t


# ---- real / imag / conj ----------


def _part_abstract(name: str) -> Any:
    def abstract(x: ShapedArray) -> ShapedArray:
        _complex_only(name, x)
        return ShapedArray(x.shape, _dt.real_dtype(x.dtype))

    return abstract


def _real_vjp(g: Tensor, x: Tensor, *, out: Tensor) -> Tensor:
    return cast(g, x.dtype)  # d real(z): the gradient g + 0i


def _imag_vjp(g: Tensor, x: Tensor, *, out: Tensor) -> Tensor:
    return complex_p.bind(g * 0.0, g)  # d imag(z): the gradient 0 + g i


real_p = Primitive(
    "real", "elementwise", _part_abstract("real"), impl=lambda xp, x: xp.real(x).copy(),
    vjp=_real_vjp,
)  # fmt: skip
imag_p = Primitive(
    "imag", "elementwise", _part_abstract("imag"), impl=lambda xp, x: xp.imag(x).copy(),
    vjp=_imag_vjp,
)  # fmt: skip


def _conj_abstract(x: ShapedArray) -> ShapedArray:
    if x.dtype.category == 0:
        raise TypeError(f"conj: argument 'input' expected a numeric dtype, got {x.dtype}")
    return ShapedArray(x.shape, x.dtype)


conj_p = Primitive(
    "conj",
    "elementwise",
    _conj_abstract,
    impl=lambda xp, x: xp.conj(x),
    vjp=lambda g, x, *, out: conjugate(g),
    scalar="x",  # the fuser compiles real dtypes only, where conj is the identity
)


def real(input: Any) -> Tensor:  # noqa: A002 - MindSpore's name
    """The real part of a complex tensor (a real tensor is returned as it is).

    >>> real(Tensor([1 + 2j])).tolist()
    [1.0]
    """
    t = as_tensor(input, "real", "input")
    return real_p.bind(t) if t.dtype.category == 3 else t


def imag(input: Any) -> Tensor:  # noqa: A002 - MindSpore's name
    """The imaginary part of a complex tensor (zeros for a real tensor).

    >>> imag(Tensor([1 + 2j])).tolist()
    [2.0]
    """
    t = as_tensor(input, "imag", "input")
    return imag_p.bind(t) if t.dtype.category == 3 else t * 0


def conj(input: Any) -> Tensor:  # noqa: A002 - MindSpore's name
    """The complex conjugate ``x - iy`` (a real tensor is returned as it is).

    >>> conj(Tensor([1 + 2j])).tolist()
    [(1-2j)]
    """
    t = as_tensor(input, "conj", "input")
    if t.dtype.category == 0:
        raise op_error("conj", "input", t, "a numeric Tensor", TypeError)
    return conjugate(t)


# ---- complex(real, imag) ----------


def _complex_abstract(re: ShapedArray, im: ShapedArray) -> ShapedArray:
    for arg, a in (("real", re), ("imag", im)):
        if a.dtype not in (_dt.float32, _dt.float64):
            raise TypeError(f"complex: argument '{arg}' expected float32 or float64, got {a.dtype}")
    if re.dtype != im.dtype:
        raise TypeError(
            f"complex: 'real' and 'imag' must share a dtype, got {re.dtype} and {im.dtype}"
        )
    shape = broadcast_shapes("complex", re.shape, im.shape)
    return ShapedArray(shape, _dt.complex_dtype(re.dtype))


def _complex_impl(xp: Any, re: Any, im: Any) -> Any:
    out = xp.empty(xp.broadcast_shapes(re.shape, im.shape), _dt.complex_dtype(
        _dt.from_numpy(re.dtype)).np)  # fmt: skip
    out.real = re
    out.imag = im
    return out


def _complex_vjp(g: Tensor, re: Tensor, im: Tensor, *, out: Tensor) -> Any:
    from ._core import sum_to

    return (lambda: sum_to(real_p.bind(g), re.shape)), (lambda: sum_to(imag_p.bind(g), im.shape))


complex_p = Primitive("complex", "elementwise", _complex_abstract, impl=_complex_impl,
                      vjp=_complex_vjp)  # fmt: skip


def complex(real: Any, imag: Any) -> Tensor:  # noqa: A001 - MindSpore's name
    """``real + i * imag`` from two float32 (complex64) or float64 (complex128) tensors.

    >>> complex(Tensor([1.0]), Tensor([2.0])).tolist()
    [(1+2j)]
    """
    from ._elementwise import promote_args

    re, im = promote_args("complex", real, imag, ("real", "imag"), min_category=2)
    if re.dtype.category == 3:
        raise op_error("complex", "real", real, "a real Tensor", TypeError)
    if re.dtype == _dt.float16:
        re, im = cast(re, _dt.float32), cast(im, _dt.float32)
    return complex_p.bind(re, im)


# ---- abs and angle ----------


def _abs_vjp(g: Tensor, x: Tensor, *, out: Tensor) -> Tensor:
    from ._compare import equal, select

    # d|z| = z / |z| (0 at z = 0, the subgradient MindSpore uses)
    zero = equal(out, 0)
    denom = cast(select(zero, out + 1, out), x.dtype)
    return cast(select(zero, g * 0, g), x.dtype) * x / denom


def _angle_vjp(g: Tensor, x: Tensor, *, out: Tensor) -> Tensor:
    from ._compare import equal, select

    # d angle(z) = (-y + i x) / |z|^2 = i z / |z|^2 (0 at z = 0)
    sq = real_p.bind(x * conj_p.bind(x))
    zero = equal(sq, 0)
    denom = cast(select(zero, sq + 1, sq), x.dtype)
    gi = complex_p.bind(g * 0.0, select(zero, g * 0, g))
    return gi * x / denom


complex_abs_p = Primitive(
    "complex_abs", "elementwise", _part_abstract("complex_abs"), impl=lambda xp, x: xp.abs(x),
    vjp=_abs_vjp,
)  # fmt: skip
angle_p = Primitive(
    "angle", "elementwise", _part_abstract("angle"), impl=lambda xp, x: xp.angle(x),
    vjp=_angle_vjp,
)  # fmt: skip


def complex_abs(x: Any) -> Tensor:
    """The modulus ``sqrt(x^2 + y^2)`` of a complex tensor, as a real tensor.

    >>> complex_abs(Tensor([3 + 4j])).tolist()
    [5.0]
    """
    t = as_tensor(x, "complex_abs", "x")
    if t.dtype.category != 3:
        raise op_error("complex_abs", "x", t, "a complex Tensor (complex64, complex128)", TypeError)
    return complex_abs_p.bind(t)


def angle(x: Any) -> Tensor:
    """The argument ``atan2(y, x)`` of a complex tensor, in ``(-pi, pi]``.

    >>> angle(Tensor([1j])).tolist()
    [1.5707963705062866]
    """
    t = as_tensor(x, "angle", "x")
    if t.dtype.category != 3:
        raise op_error("angle", "x", t, "a complex Tensor (complex64, complex128)", TypeError)
    return angle_p.bind(t)
