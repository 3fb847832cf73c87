"""complex64/complex128 tensors: creation, promotion, the ops MindSpore supports them for
(forward against NumPy in complex128), gradients in MindSpore's conjugate convention (for a
real loss L, the gradient with respect to z = x + iy is dL/dx + i dL/dy, checked by central
differences on both parts), and clear errors from the ops that do not take them."""

import numpy as np
import pytest

import sporeling.core as sc
from sporeling.core import Tensor, jit, ops
from sporeling.core import dtype as dt
from sporeling.core.common import dtype as mstype
from sporeling.core.ops import operations as P

rng = np.random.default_rng(0)


def _c(shape, dtype=np.complex128):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


A = _c((3, 4))
B = _c((3, 4))
M = _c((3, 3)) + 3 * np.eye(3)  # well conditioned
R = rng.standard_normal((3, 4))


# ---- dtype, creation, promotion ----------


def test_complex_dtypes_are_a_category_above_floating():
    assert sc.complex64 is mstype.complex64 is dt.complex64
    assert dt.complex64.category == dt.complex128.category == 3
    assert (dt.complex64, dt.complex128) == dt.COMPLEX
    assert dt.to_dtype("complex128") is dt.complex128 and dt.to_dtype(np.complex64) is dt.complex64
    assert dt.is_complex(dt.complex64) and dt.is_inexact(dt.complex64) and dt.is_inexact(dt.float16)
    assert not dt.is_floating(dt.complex64)
    assert dt.real_dtype(dt.complex64) is dt.float32 and dt.real_dtype(dt.complex128) is dt.float64
    assert repr(dt.complex64) == "Complex64"


@pytest.mark.parametrize(
    "a,b,expected",
    [
        ("complex64", "float64", "complex128"),  # NumPy: wide enough for both parts
        ("complex64", "float32", "complex64"),
        ("float16", "complex64", "complex64"),
        ("complex64", "complex128", "complex128"),
        ("int64", "complex64", "complex64"),
        ("bool", "complex128", "complex128"),
    ],
)
def test_promotion_with_complex_matches_numpy(a, b, expected):
    got = dt.promote_types(dt.to_dtype(a), dt.to_dtype(b))
    assert got == dt.to_dtype(expected)
    if "bool" not in (a, b) and "int64" not in (a, b):
        assert np.dtype(got.np) == np.promote_types(a, b)
    x, y = Tensor(np.ones(2, a)), Tensor(np.ones(2, b))
    assert (x + y).dtype == dt.to_dtype(expected)


def test_python_complex_scalars_are_weak():
    assert (Tensor([1.0, 2.0]) * 1j).dtype == dt.complex64
    assert (Tensor(np.ones(2)) + 1j).dtype == dt.complex128  # float64 needs complex128
    assert (Tensor([1, 2]) + 2j).dtype == dt.complex64
    assert (Tensor(np.ones(2, np.complex128)) + 1j).dtype == dt.complex128
    assert (Tensor(np.ones(2, np.complex64)) * 2.5).dtype == dt.complex64
    assert dt.result_type(1j, 1.0) == dt.complex64


def test_creation_and_asnumpy_round_trip():
    assert Tensor(1 + 2j).dtype == dt.complex64  # Python numbers: the 32-bit default
    assert Tensor([1 + 2j, 3]).dtype == dt.complex64
    assert Tensor(np.complex128(1j)).dtype == dt.complex128
    t = Tensor(A)
    assert t.dtype == dt.complex128 and t.shape == (3, 4)
    np.testing.assert_array_equal(t.asnumpy(), A)
    assert Tensor(A, dtype=mstype.complex64).asnumpy().dtype == np.complex64
    assert complex(Tensor(1 + 2j)) == 1 + 2j
    assert Tensor([1 + 2j]).tolist() == [1 + 2j]
    z = Tensor(shape=(2, 3), dtype=dt.complex64, init="zeros")
    assert z.dtype == dt.complex64 and not z.asnumpy().any()


def test_cast_between_real_and_complex():
    c = ops.cast(Tensor(R), dt.complex128)
    np.testing.assert_array_equal(c.asnumpy(), R.astype(np.complex128))
    back = ops.cast(Tensor(A), dt.float64)  # drops the imaginary part, without a warning
    np.testing.assert_array_equal(back.asnumpy(), A.real)


# ---- forward against NumPy ----------

UNARY = {
    "neg": (ops.neg, np.negative),
    "square": (ops.square, np.square),
    "exp": (ops.exp, np.exp),
    "log": (ops.log, np.log),
    "sqrt": (ops.sqrt, np.sqrt),
    "sin": (ops.sin, np.sin),
    "cos": (ops.cos, np.cos),
    "tan": (ops.tan, np.tan),
    "sinh": (ops.sinh, np.sinh),
    "cosh": (ops.cosh, np.cosh),
    "tanh": (ops.tanh, np.tanh),
    "reciprocal": (ops.reciprocal, np.reciprocal),
    "conj": (ops.conj, np.conj),
    "real": (ops.real, np.real),
    "imag": (ops.imag, np.imag),
    "abs": (ops.abs, np.abs),
    "complex_abs": (ops.complex_abs, np.abs),
    "angle": (ops.angle, np.angle),
    "reduce_sum": (lambda x: ops.reduce_sum(x, 1), lambda x: x.sum(1)),
    "mean": (lambda x: ops.mean(x, 0), lambda x: x.mean(0)),
    "prod": (lambda x: ops.prod(x, 1), lambda x: x.prod(1)),
    "cumsum": (lambda x: ops.cumsum(x, 1), lambda x: np.cumsum(x, 1)),
    "cumprod": (lambda x: ops.cumprod(x, 1), lambda x: np.cumprod(x, 1)),
    "transpose": (lambda x: ops.transpose(x, (1, 0)), lambda x: x.T),
    "reshape": (lambda x: ops.reshape(x, (4, 3)), lambda x: x.reshape(4, 3)),
    "slicing": (lambda x: x[1:, ::2], lambda x: x[1:, ::2]),
}
BINARY = {
    "add": (ops.add, np.add),
    "sub": (ops.sub, np.subtract),
    "mul": (ops.mul, np.multiply),
    "div": (ops.div, np.divide),
    "pow": (ops.pow, np.power),
    "equal": (ops.equal, np.equal),
    "not_equal": (ops.not_equal, np.not_equal),
    "concat": (lambda x, y: ops.concat((x, y), 0), lambda x, y: np.concatenate((x, y), 0)),
    "stack": (lambda x, y: ops.stack((x, y), 0), lambda x, y: np.stack((x, y), 0)),
}


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_ops_match_numpy(name, dtype):
    ours, ref = UNARY[name]
    x = A.astype(dtype)
    out = ours(Tensor(x))
    expected = ref(A)  # the reference in complex128 / float64
    real_result = name in ("real", "imag", "abs", "complex_abs", "angle")
    expected_dtype = dt.real_dtype(dt.to_dtype(dtype)) if real_result else dt.to_dtype(dtype)
    assert out.dtype == expected_dtype
    tol = 1e-12 if dtype == np.complex128 else 2e-5
    np.testing.assert_allclose(out.asnumpy(), expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_ops_match_numpy(name, dtype):
    ours, ref = BINARY[name]
    out = ours(Tensor(A.astype(dtype)), Tensor(B.astype(dtype)))
    tol = 1e-12 if dtype == np.complex128 else 2e-5
    np.testing.assert_allclose(out.asnumpy(), ref(A, B), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_matmul_and_linalg_match_numpy(dtype):
    tol = 1e-10 if dtype == np.complex128 else 1e-4
    a, b, m = (Tensor(v.astype(dtype)) for v in (A, B, M))
    np.testing.assert_allclose(ops.matmul(a, b.T).asnumpy(), A @ B.T, rtol=tol, atol=tol)
    np.testing.assert_allclose(
        P.MatMul(transpose_b=True)(a, b).asnumpy(), A @ B.T, rtol=tol, atol=tol
    )
    batch = P.BatchMatMul()(ops.stack((m, m)), ops.stack((a, a)))
    np.testing.assert_allclose(batch.asnumpy(), np.stack([M @ A] * 2), rtol=tol, atol=tol)
    np.testing.assert_allclose(
        ops.matrix_inverse(m).asnumpy(), np.linalg.inv(M), rtol=tol, atol=tol
    )
    np.testing.assert_allclose(
        P.MatrixInverse(adjoint=True)(m).asnumpy(), np.linalg.inv(M.conj().T), rtol=tol, atol=tol
    )
    np.testing.assert_allclose(
        ops.matrix_determinant(m).asnumpy(), np.linalg.det(M), rtol=tol, atol=tol
    )
    np.testing.assert_allclose(
        ops.matrix_solve(m, a).asnumpy(), np.linalg.solve(M, A), rtol=tol, atol=tol
    )
    np.testing.assert_allclose(  # adjoint: the conjugate transpose, as MindSpore's
        ops.matrix_solve(m, a, adjoint=True).asnumpy(),
        np.linalg.solve(M.conj().T, A),
        rtol=tol,
        atol=tol,
    )


def test_complex_from_parts_and_operator_classes():
    z = ops.complex(Tensor(R), Tensor(2 * R))
    assert z.dtype == dt.complex128
    np.testing.assert_array_equal(z.asnumpy(), R + 2j * R)
    z32 = P.Complex()(Tensor(R.astype(np.float32)), Tensor(R.astype(np.float32)))
    assert z32.dtype == dt.complex64
    np.testing.assert_array_equal(P.Real()(Tensor(A)).asnumpy(), A.real)
    np.testing.assert_array_equal(P.Imag()(Tensor(A)).asnumpy(), A.imag)
    np.testing.assert_array_equal(P.Conj()(Tensor(A)).asnumpy(), A.conj())
    np.testing.assert_allclose(P.ComplexAbs()(Tensor(A)).asnumpy(), np.abs(A), rtol=1e-12)
    np.testing.assert_allclose(P.Angle()(Tensor(A)).asnumpy(), np.angle(A), rtol=1e-12)
    np.testing.assert_allclose(
        P.MatrixDeterminant()(Tensor(M)).asnumpy(), np.linalg.det(M), rtol=1e-12
    )
    # real tensors: conj and real are the identity, imag is zero
    np.testing.assert_array_equal(ops.conj(Tensor(R)).asnumpy(), R)
    np.testing.assert_array_equal(ops.imag(Tensor(R)).asnumpy(), 0 * R)


def test_jit_runs_complex_graphs_like_eager():
    def f(x, y):
        return ops.reduce_sum(ops.exp(x) * ops.conj(y) + x / y, 1)

    a, b = Tensor(A), Tensor(B)
    np.testing.assert_allclose(jit(f)(a, b).asnumpy(), f(a, b).asnumpy(), rtol=1e-12)
    np.testing.assert_allclose(f(a, b).asnumpy(), (np.exp(A) * B.conj() + A / B).sum(1), rtol=1e-12)


# ---- gradients: MindSpore's conjugate convention, by central differences ----------


def _numeric_grad(loss, arrays, i, eps=1e-6):
    """dL/dx + i dL/dy for a complex input (dL/dx for a real one), element by element."""
    base = [a.copy() for a in arrays]
    g = np.zeros_like(base[i])
    steps = (1.0, 1j) if np.iscomplexobj(base[i]) else (1.0,)
    for idx in np.ndindex(base[i].shape):
        for step in steps:
            plus = [a.copy() for a in base]
            minus = [a.copy() for a in base]
            plus[i][idx] += eps * step
            minus[i][idx] -= eps * step
            d = (loss(*[Tensor(a) for a in plus]) - loss(*[Tensor(a) for a in minus])) / (2 * eps)
            g[idx] += d * (1 if step == 1.0 else 1j)
    return g


def _check_complex_grad(fn, arrays):
    """The gradient of L = sum(Re(conj(w) * fn(...))) (w fixed, random) against finite
    differences, for every input."""
    out = fn(*[Tensor(a) for a in arrays])
    w = Tensor(_c(out.shape) if out.dtype.category == 3 else rng.standard_normal(out.shape))

    def loss_t(*ts):
        o = fn(*ts)
        return ops.reduce_sum(ops.real(ops.conj(w) * o) if o.dtype.category == 3 else w * o)

    def loss(*ts):
        return float(loss_t(*ts).asnumpy())

    grads = ops.grad(loss_t, grad_position=tuple(range(len(arrays))))(*[Tensor(a) for a in arrays])
    grads = grads if isinstance(grads, tuple) else (grads,)
    for i, g in enumerate(grads):
        expected = _numeric_grad(loss, arrays, i)
        assert g.dtype.np == arrays[i].dtype, (i, g.dtype)
        np.testing.assert_allclose(g.asnumpy(), expected, rtol=1e-6, atol=1e-7)


SMALL_A, SMALL_B = _c((2, 3)), _c((2, 3))
SMALL_M = _c((2, 2)) + 2 * np.eye(2)
GRAD_CASES = {
    "add": (ops.add, (SMALL_A, SMALL_B)),
    "sub": (ops.sub, (SMALL_A, SMALL_B)),
    "mul": (ops.mul, (SMALL_A, SMALL_B)),
    "div": (ops.div, (SMALL_A, SMALL_B)),
    "pow": (ops.pow, (SMALL_A, SMALL_B * 0.3)),
    "neg": (ops.neg, (SMALL_A,)),
    "square": (ops.square, (SMALL_A,)),
    "exp": (ops.exp, (SMALL_A,)),
    "log": (ops.log, (SMALL_A,)),
    "sqrt": (ops.sqrt, (SMALL_A,)),
    "sin": (ops.sin, (SMALL_A,)),
    "cos": (ops.cos, (SMALL_A,)),
    "tan": (ops.tan, (SMALL_A * 0.5,)),
    "sinh": (ops.sinh, (SMALL_A,)),
    "cosh": (ops.cosh, (SMALL_A,)),
    "tanh": (ops.tanh, (SMALL_A * 0.5,)),
    "reciprocal": (ops.reciprocal, (SMALL_A,)),
    "conj": (ops.conj, (SMALL_A,)),
    "real": (ops.real, (SMALL_A,)),
    "imag": (ops.imag, (SMALL_A,)),
    "complex_abs": (ops.complex_abs, (SMALL_A,)),
    "angle": (ops.angle, (SMALL_A,)),
    "complex": (ops.complex, (SMALL_A.real.copy(), SMALL_B.real.copy())),
    "broadcast_mul": (ops.mul, (SMALL_A, SMALL_B[:1])),
    "matmul": (lambda x, y: ops.matmul(x, ops.transpose(y, (1, 0))), (SMALL_A, SMALL_B)),
    "reduce_sum": (lambda x: ops.reduce_sum(x, 1), (SMALL_A,)),
    "mean": (lambda x: ops.mean(x, 0), (SMALL_A,)),
    "prod": (lambda x: ops.prod(x, 1), (SMALL_A,)),
    "cumsum": (lambda x: ops.cumsum(x, 1), (SMALL_A,)),
    "cumprod": (lambda x: ops.cumprod(x, 1), (SMALL_A,)),
    "matrix_inverse": (ops.matrix_inverse, (SMALL_M,)),
    "matrix_determinant": (ops.matrix_determinant, (SMALL_M,)),
    "matrix_solve": (ops.matrix_solve, (SMALL_M, SMALL_A[:, :2].T.copy())),
    "real_times_complex": (ops.mul, (SMALL_A.real.copy(), SMALL_B)),  # a real input: Re(grad)
    "cast_real_to_complex": (lambda x: ops.cast(x, dt.complex128) * 1j, (SMALL_A.real.copy(),)),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradients_follow_the_conjugate_convention(name):
    fn, arrays = GRAD_CASES[name]
    _check_complex_grad(fn, [np.array(a) for a in arrays])


def test_holomorphic_gradient_is_the_conjugate_derivative():
    # MindSpore (as TensorFlow): grad(z * z)(z) with sens 1 is conj(2 z)
    z = Tensor(np.array([0.1j, 1 + 1j]))
    g = ops.grad(lambda z: ops.mul(z, z))(z)
    np.testing.assert_allclose(g.asnumpy(), np.conj(2 * z.asnumpy()), rtol=1e-12)


def test_gradients_under_jit_match_eager():
    def loss(x, y):
        return ops.reduce_sum(ops.real(ops.matmul(x, ops.conj(y)) * ops.exp(x[:, :1])))

    x, y = Tensor(SMALL_A), Tensor(SMALL_B.T.copy())
    eager = ops.grad(loss, grad_position=(0, 1))(x, y)
    graph = jit(ops.grad(loss, grad_position=(0, 1)))(x, y)
    for e, g in zip(eager, graph, strict=True):
        np.testing.assert_allclose(g.asnumpy(), e.asnumpy(), rtol=1e-12)


# ---- clear errors ----------


@pytest.mark.parametrize(
    "call",
    [
        lambda z: ops.relu(z),
        lambda z: ops.maximum(z, z),
        lambda z: ops.less(z, z),
        lambda z: ops.amax(z),
        lambda z: ops.argmax(z),
        lambda z: ops.sort(z),
        lambda z: ops.std(z),
        lambda z: ops.sigmoid(z),
        lambda z: ops.cummax(z, 0),
        lambda z: ops.dense(z, z),
    ],
    ids=["relu", "maximum", "less", "amax", "argmax", "sort", "std", "sigmoid", "cummax", "dense"],
)
def test_ops_without_complex_support_say_so(call):
    with pytest.raises(TypeError, match="[Cc]omplex"):
        call(Tensor(A.astype(np.complex64)))


@pytest.mark.parametrize(
    "call",
    [
        lambda z, w: ops.conv2d(z, w),
        lambda z, w: ops.avg_pool2d(z, 2, 2),
        lambda z, w: ops.max_pool2d(z, 2, 2),
        lambda z, w: ops.adaptive_max_pool2d(z, (2, 2)),
        lambda z, w: ops.logsumexp(z, 1),
        lambda z, w: ops.softmax(z, -1),
        lambda z, w: ops.stft(z[0, 0, 0], 2),
    ],
    ids=["conv2d", "avg_pool2d", "max_pool2d", "adaptive_max", "logsumexp", "softmax", "stft"],
)
def test_nn_ops_refuse_complex_instead_of_dropping_the_imaginary_part(call):
    z = Tensor(_c((2, 3, 4, 4), np.complex64))
    w = Tensor(_c((2, 3, 3, 3), np.complex64))
    with pytest.raises(TypeError, match="[Cc]omplex"):
        call(z, w)


def test_complex_only_ops_reject_real_input_by_name():
    with pytest.raises(TypeError, match="complex_abs.*'x'.*complex"):
        ops.complex_abs(Tensor(R))
    with pytest.raises(TypeError, match="angle.*'x'"):
        ops.angle(Tensor(R))
    with pytest.raises(TypeError, match="complex.*'real'"):
        ops.complex(Tensor(A), Tensor(A))
    with pytest.raises(TypeError, match="matrix_inverse.*'x'"):
        ops.matrix_inverse(Tensor(np.eye(2, dtype=np.int64)))
    with pytest.raises(ValueError, match="matrix_determinant.*square"):
        ops.matrix_determinant(Tensor(A))


def test_tensor_methods_conj_real_imag_angle():
    t = Tensor(np.array(1.3 + 0.4j, np.complex64))
    np.testing.assert_array_equal(t.conj().asnumpy(), np.array(1.3 - 0.4j, np.complex64))
    assert t.real().item() == np.float32(1.3) and t.imag().item() == np.float32(0.4)
    assert t.angle().dtype == dt.float32


def test_complex64_parameters_round_trip_through_checkpoints(tmp_path):
    from sporeling.core import Parameter, load_checkpoint, nn, save_checkpoint

    class Holder(nn.Cell):
        def __init__(self, value):
            super().__init__()
            self.w = Parameter(Tensor(value), name="w")

    value = A.astype(np.complex64)
    path = str(tmp_path / "c.ckpt")
    save_checkpoint(Holder(value), path)
    loaded = load_checkpoint(path)["w"]
    assert loaded.dtype == dt.complex64
    np.testing.assert_array_equal(loaded.asnumpy(), value)
    with pytest.raises(TypeError, match="complex128.*safetensors has complex64 only"):
        save_checkpoint(Holder(A), str(tmp_path / "d.ckpt"))
