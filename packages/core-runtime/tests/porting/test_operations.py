"""``ops.operations`` (P): primitive classes over the functional ops, against NumPy float64
references, with numerical gradient checks for the classes whose call is more than a
pass-through; ``PrimitiveWithInfer``/``prim_attr_register`` for users' own primitives."""

import numpy as np
import pytest

from sporeling.core import Parameter, Tensor, ops
from sporeling.core import dtype as mstype
from sporeling.core.ops import operations as P
from sporeling.core.ops.primitive import PrimitiveWithInfer, prim_attr_register
from sporeling_testing.gradcheck import check_grad

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((5, 4))


def T(a):
    return Tensor(np.asarray(a))


def test_matmul_transpose_flags_and_gradient():
    np.testing.assert_allclose(P.MatMul(transpose_b=True)(T(A), T(B)).asnumpy(), A @ B.T)
    np.testing.assert_allclose(P.MatMul(True, False)(T(A), T(A)).asnumpy(), A.T @ A)
    x3, y3 = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 5, 4))
    got = P.BatchMatMul(transpose_b=True)(T(x3), T(y3)).asnumpy()
    np.testing.assert_allclose(got, x3 @ np.swapaxes(y3, -1, -2))
    check_grad(lambda x, y: P.MatMul(transpose_a=True, transpose_b=True)(x, y), [A.T.copy(), B])


@pytest.mark.parametrize(
    ("cls", "ref"),
    [
        ("ReduceSum", np.sum),
        ("ReduceMean", np.mean),
        ("ReduceMax", np.max),
        ("ReduceMin", np.min),
        ("ReduceProd", np.prod),
    ],  # fmt: skip
)
def test_reductions_keep_dims(cls, ref):
    op = getattr(P, cls)(keep_dims=True)
    np.testing.assert_allclose(op(T(A), 1).asnumpy(), ref(A, 1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(getattr(P, cls)()(T(A)).asnumpy(), ref(A), rtol=1e-12)
    assert op.keep_dims is True and op.attrs["keep_dims"] is True


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("cls", ["CumSum", "CumProd"])
def test_cumulative_exclusive_reverse(cls, exclusive, reverse):
    x = RNG.uniform(0.5, 1.5, (3, 4))
    fn, ident = (np.cumsum, 0.0) if cls == "CumSum" else (np.cumprod, 1.0)
    ref = np.flip(x, 1) if reverse else x
    ref = fn(ref, 1)
    if exclusive:
        ref = np.concatenate([np.full((3, 1), ident), ref[:, :-1]], 1)
    ref = np.flip(ref, 1) if reverse else ref
    op = getattr(P, cls)(exclusive=exclusive, reverse=reverse)
    np.testing.assert_allclose(op(T(x), 1).asnumpy(), ref, rtol=1e-12)
    check_grad(lambda t: op(t, 1), [x])


def test_bias_add_both_layouts_and_gradient():
    x = RNG.standard_normal((2, 3, 4, 4))
    b = RNG.standard_normal(3)
    np.testing.assert_allclose(P.BiasAdd()(T(x), T(b)).asnumpy(), x + b[None, :, None, None])
    xh = RNG.standard_normal((2, 4, 4, 3))
    got = P.BiasAdd(data_format="NHWC")(T(xh), T(b)).asnumpy()
    np.testing.assert_allclose(got, xh + b)
    check_grad(lambda t, c: P.BiasAdd()(t, c), [x[:, :, :2, :2], b])
    with pytest.raises(ValueError, match="input_x"):
        P.BiasAdd()(T(b), T(b))


def test_small_rules_against_numpy_with_gradients():
    x, y = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    np.testing.assert_allclose(P.SquaredDifference()(T(x), T(y)).asnumpy(), (x - y) ** 2)
    check_grad(lambda a, b: P.SquaredDifference()(a, b), [x, y])
    ref = x / np.sqrt(np.maximum(np.sum(x * x, 1, keepdims=True), 1e-4))
    np.testing.assert_allclose(P.L2Normalize(axis=1)(T(x)).asnumpy(), ref, rtol=1e-12)
    check_grad(lambda a: P.L2Normalize(axis=1)(a), [x])
    yz = y.copy()
    yz[0, 0] = 0.0
    got = P.DivNoNan()(T(x), T(yz)).asnumpy()
    np.testing.assert_allclose(got, np.where(yz == 0, 0.0, x / np.where(yz == 0, 1, yz)))
    np.testing.assert_allclose(P.L2Loss()(T(x)).asnumpy(), np.sum(x * x) / 2)
    check_grad(lambda a: P.L2Loss()(a), [x])
    sig = 1 / (1 + np.exp(-x))
    ref = -(y * np.log(sig) + (1 - y) * np.log(1 - sig))
    got = P.SigmoidCrossEntropyWithLogits()(T(x), T(y)).asnumpy()
    np.testing.assert_allclose(got, ref, rtol=1e-10)


def test_attribute_classes_match_functional_ops():
    x = RNG.standard_normal((2, 5))
    np.testing.assert_allclose(P.Softmax(axis=0)(T(x)).asnumpy(),
                               np.exp(x) / np.exp(x).sum(0), rtol=1e-12)  # fmt: skip
    idx, val = P.ArgMaxWithValue(axis=1)(T(x))
    np.testing.assert_array_equal(idx.asnumpy(), x.argmax(1))
    np.testing.assert_allclose(val.asnumpy(), x.max(1))
    assert P.Argmax(axis=1, output_type=mstype.int64)(T(x)).dtype == mstype.int64
    np.testing.assert_allclose(P.Concat(1)((T(x), T(x))).asnumpy(), np.concatenate([x, x], 1))
    parts = P.Split(axis=1, output_num=5)(T(x))
    assert len(parts) == 5 and parts[2].shape == (2, 1)
    oh = P.OneHot()(Tensor(np.array([0, 2], np.int32)), 3, Tensor(1.0), Tensor(0.0))
    np.testing.assert_array_equal(oh.asnumpy(), np.eye(3)[[0, 2]])
    ss = P.StridedSlice(shrink_axis_mask=1)(T(x), (1, 0), (2, 5), (1, 2)).asnumpy()
    np.testing.assert_allclose(ss, x[1, 0:5:2])
    np.testing.assert_allclose(P.Transpose()(T(x), (1, 0)).asnumpy(), x.T)
    np.testing.assert_allclose(P.Reshape()(T(x), (5, 2)).asnumpy(), x.reshape(5, 2))
    np.testing.assert_allclose(P.Add()(T(x), T(x)).asnumpy(), 2 * x)
    assert P.Shape()(T(x)) == (2, 5)
    y, i = P.Unique()(Tensor(np.array([3, 1, 3, 2])))
    assert y.tolist() == [3, 1, 2] and i.tolist() == [0, 1, 0, 2]


def test_conv2d_and_pools_like_the_layers():
    x = RNG.standard_normal((1, 2, 6, 6)).astype(np.float32)
    w = RNG.standard_normal((3, 2, 3, 3)).astype(np.float32)
    got = P.Conv2D(out_channel=3, kernel_size=3, pad_mode="same")(Tensor(x), Tensor(w))
    ref = ops.conv2d(Tensor(x), Tensor(w), None, 1, "same")
    np.testing.assert_allclose(got.asnumpy(), ref.asnumpy())
    mp = P.MaxPool(kernel_size=2, strides=2)(Tensor(x)).asnumpy()
    np.testing.assert_allclose(mp, x.reshape(1, 2, 3, 2, 3, 2).max((3, 5)))
    ap = P.AvgPool(kernel_size=2, strides=2)(Tensor(x)).asnumpy()
    np.testing.assert_allclose(ap, x.reshape(1, 2, 3, 2, 3, 2).mean((3, 5)), rtol=1e-6)


def test_dropout_keep_prob_and_apply_momentum():
    out, mask = P.Dropout(keep_prob=1.0)(Tensor(np.ones((4, 4), np.float32)))
    np.testing.assert_allclose(out.asnumpy(), 1.0)
    var = Parameter(Tensor(np.ones(3, np.float32)), name="v")
    acc = Parameter(Tensor(np.zeros(3, np.float32)), name="a")
    g = Tensor(np.array([1.0, 2.0, 3.0], np.float32))
    P.ApplyMomentum()(var, acc, Tensor(np.float32(0.1)), g, Tensor(np.float32(0.9)))
    np.testing.assert_allclose(acc.asnumpy(), [1, 2, 3])
    np.testing.assert_allclose(var.asnumpy(), 1 - 0.1 * np.array([1, 2, 3]), rtol=1e-6)


def test_every_functional_op_has_a_class_sharing_it():
    assert P.MatMul().fn is ops.matmul and P.Add().fn is ops.add
    assert P.BesselI0().fn is ops.bessel_i0  # generated by name
    np.testing.assert_allclose(
        P.Tril()(
            T(A),
        ).asnumpy(),
        np.tril(A),
    )
    assert ops.MatMul is P.MatMul
    with pytest.raises(TypeError, match="unexpected argument 'transpose_c'"):
        P.MatMul(transpose_c=True)


def test_user_primitive_with_infer():
    class Scale(PrimitiveWithInfer):
        @prim_attr_register
        def __init__(self, factor=2.0):
            self.init_prim_io_names(inputs=["x"], outputs=["y"])

        def infer_shape(self, x_shape):
            if len(x_shape) != 2:
                raise ValueError(f"Scale: x must be 2-D, got {x_shape}")
            return x_shape

        def __call__(self, x):
            return x * self.factor

    op = Scale(factor=3.0)
    assert op.attrs == {"factor": 3.0} and op.name == "Scale"
    np.testing.assert_allclose(op(T(A)).asnumpy(), 3 * A)
    with pytest.raises(ValueError, match="must be 2-D"):
        op(T(A[0]))


def test_primitive_shard_uses_the_sharded_implementation_or_warns():
    op = P.MatMul(transpose_b=True).shard(((1, 1), (1, 1)))
    np.testing.assert_allclose(op(T(A), T(B)).asnumpy(), A @ B.T, rtol=1e-12)
    with pytest.warns(UserWarning, match="no sharded implementation"):
        P.Softplus().shard(((1, 1),))
    with pytest.warns(UserWarning, match="not applied here"):
        out = ops.shard(lambda x: x * 2, in_strategy=((1, 1),))(T(A))
    np.testing.assert_allclose(out.asnumpy(), 2 * A)
    with pytest.raises(TypeError, match="in_strategy"):
        ops.shard(lambda x: x, in_strategy=[1])


def test_float_status_and_summary_ops():
    assert P.FloatStatus()(T(A)).asnumpy().tolist() == [0.0]
    bad = A.copy()
    bad[1, 2] = np.inf
    out = P.FloatStatus()(T(bad))
    assert out.shape == (1,) and out.asnumpy().tolist() == [1.0]
    with pytest.warns(UserWarning, match="record nothing"):
        assert P.ScalarSummary()("loss", T(1.0)) is None
    with pytest.raises(TypeError, match="'name' expected a str"):
        P.TensorSummary()(1, T(A))
