"""Custom as a first-class primitive: eager, grad (user bprop and automatic backward),
inside a trained Cell, and inside jit graphs."""
# ruff: noqa: F821 - Hybrid DSL intrinsics (output_tensor, parallel, ...) are injected

import logging

import numpy as np
import pytest
from dsl_suite import SUITE

from sporeling.core import Tensor, grad, nn, ops
from sporeling.core.extend import registered_primitives
from sporeling.customop import (
    AutodiffError,
    Custom,
    CustomRegOp,
    DataType,
    custom_info_register,
    kernel,
)
from sporeling_testing import check_grad, check_grad_grad

RNG = np.random.default_rng(0)


def _t(*shape):
    return Tensor(RNG.standard_normal(shape).astype(np.float32))


# ---- forward ------------------------------------------------------------------------------


def test_hybrid_custom_is_a_registered_primitive():
    op = Custom(SUITE["matmul"][0])
    assert registered_primitives()[op.prim.name] is op.prim
    a, b = _t(4, 5), _t(5, 3)
    out = op(a, b)
    assert out.shape == (4, 3) and str(out.dtype) == "Float32"
    np.testing.assert_allclose(out.asnumpy(), a.asnumpy() @ b.asnumpy(), rtol=1e-5, atol=1e-6)


def test_akg_is_accepted_as_hybrid_and_plain_functions_are_validated():
    op = Custom(SUITE["broadcast"][0].func, func_type="akg")
    assert op.func_type == "hybrid"
    a, b = _t(2, 3), _t(3)
    np.testing.assert_array_equal(op(a, b).asnumpy(), a.asnumpy() + b.asnumpy())


def test_multiple_outputs_and_inplace_input_untouched():
    lo, hi = Custom(SUITE["two_outputs"][0])(Tensor(np.array([0.0, 1.0], np.float32)))
    assert lo.tolist() == [0.0, 0.5] and hi.tolist() == [0.5, 1.0]
    x = Tensor(np.arange(3, dtype=np.float32))
    y = Custom(SUITE["inplace"][0])(x)
    assert y.tolist() == [-1.0, 2.0, 5.0]
    assert x.tolist() == [0.0, 1.0, 2.0]  # the primitive is pure: it works on a copy


def test_pyfunc_with_value_and_function_out_shape():
    def topk_like(x):
        return np.sort(x, axis=-1)[..., ::-1][..., :2].copy(), np.argsort(x)[..., :2]

    op = Custom(topk_like, out_shape=lambda s: ((s[0], 2), (s[0], 2)),
                out_dtype=lambda d: (d, "int64"), func_type="pyfunc")  # fmt: skip
    vals, idx = op(_t(3, 5))
    assert vals.shape == (3, 2) and str(idx.dtype) == "Int64"
    op2 = Custom(lambda x: x + 1, out_shape=(4,), out_dtype="float32", func_type="pyfunc")
    assert op2(Tensor(np.zeros(4, np.float32))).tolist() == [1.0] * 4


def test_hybrid_kernel_as_pyfunc_runs_interpreted(caplog):
    k = SUITE["elementwise"][0]
    with caplog.at_level(logging.WARNING, logger="sporeling.customop"):
        op = Custom(k, func_type="pyfunc")
    assert "interpreted" in caplog.text
    a, b = _t(2, 3), _t(2, 3)
    np.testing.assert_array_equal(op(a, b).asnumpy(), k(a.asnumpy(), b.asnumpy()))


def test_argument_errors():
    with pytest.raises(ValueError, match="func_type' expected one of"):
        Custom(lambda x: x, func_type="cuda")
    with pytest.raises(ValueError, match="Ascend only"):
        Custom(lambda x: x, func_type="tbe")
    with pytest.raises(ValueError, match="needs out_shape and out_dtype"):
        Custom(lambda x: x, func_type="pyfunc")
    bad = Custom(lambda x: x, out_shape=[[1], "x"], out_dtype="float32", func_type="pyfunc")
    with pytest.raises(ValueError, match="one shape .* per output"):
        bad(_t(1))


def test_reg_info_builder_decorator_and_dtype_check():
    info = (
        CustomRegOp("scale")
        .input(0, "x")
        .output(0, "y")
        .dtype_format(DataType.F32_Default, DataType.F32_Default)
        .target("CPU")
        .get_op_info()
    )
    assert info["dtype_format"] == [[["float32", "DefaultFormat"], ["float32", "DefaultFormat"]]]

    @custom_info_register(info)
    def scale(x):
        return x * 2

    assert scale.reg_info == [info]
    op = Custom(scale, out_shape=lambda s: s, out_dtype=lambda d: d, func_type="pyfunc")
    assert op(Tensor(np.ones(2, np.float32))).tolist() == [2.0, 2.0]
    with pytest.raises(TypeError, match=r"input dtypes \['float64'\] are not registered"):
        op(Tensor(np.ones(2, np.float64)))
    free = Custom(scale, out_shape=lambda s: s, out_dtype=lambda d: d, func_type="pyfunc",
                  reg_info=CustomRegOp().target("CPU"))  # fmt: skip
    assert free(Tensor(np.ones(1, np.float64))).tolist() == [2.0]


# ---- gradients ----------------------------------------------------------------------------


def test_user_bprop_checked_numerically():
    def cube(x):
        return x**3

    def bprop(x, out, dout):
        return (dout * 3 * x * x,)

    op = Custom(cube, out_shape=lambda s: s, out_dtype=lambda d: d, func_type="pyfunc",
                bprop=bprop)  # fmt: skip
    check_grad(lambda x: op(x), [RNG.standard_normal((3, 4))])


def test_user_bprop_multiple_outputs_and_hybrid():
    def bprop(a, out, dout):
        d_lo, d_hi = dout
        return (ops.select(a < 0.5, d_lo, d_hi),)

    op = Custom(SUITE["two_outputs"][0], bprop=bprop)
    x = RNG.standard_normal(7) + 0.5
    x[np.abs(x - 0.5) < 0.05] = 1.0
    check_grad(lambda a: op(a), [x])


def test_bprop_result_errors():
    op = Custom(lambda x: x, out_shape=lambda s: s, out_dtype=lambda d: d, func_type="pyfunc",
                bprop=lambda x, out, dout: dout)  # fmt: skip
    x = Tensor(np.ones(2, np.float32))
    with pytest.raises(TypeError, match="bprop must return a tuple"):
        grad(lambda t: ops.reduce_sum(op(t)))(x)
    nob = Custom(lambda x: x, out_shape=lambda s: s, out_dtype=lambda d: d, func_type="pyfunc")
    with pytest.raises(ValueError, match="has no bprop"):
        grad(lambda t: ops.reduce_sum(nob(t)))(x)


AUTO = {
    "elementwise": [(3, 4), (3, 4)],
    "broadcast": [(3, 4), (4,)],
    "row_sum_sq": [(3, 5)],
    "matmul": [(3, 4), (4, 2)],
    "stencil": [(5, 6)],
    "two_outputs": [(6,)],
    "intrinsics": [(6,)],
}


@pytest.mark.parametrize("name", list(AUTO))
def test_automatic_backward_checked_numerically(name):
    op = Custom(SUITE[name][0])
    arrays = [RNG.standard_normal(s) for s in AUTO[name]]
    if name == "two_outputs":
        arrays[0][np.abs(arrays[0] - 0.5) < 0.05] = 1.0
    check_grad(lambda *xs: op(*xs), arrays)


def test_automatic_backward_second_order():
    op = Custom(SUITE["intrinsics"][0])
    check_grad_grad(lambda x: op(x), [RNG.standard_normal(5)])


def test_automatic_backward_explains_what_it_cannot_do():
    def prod(x):
        y = output_tensor((1,), x.dtype)
        y[0] = 1.0
        for i in serial(x.shape[0]):
            y[0] *= x[i]
        return y

    op = Custom(kernel(prod))
    x = Tensor(np.ones(3))
    with pytest.raises(AutodiffError, match=r"Mult= updates \(line \d+ .*pass bprop="):
        grad(lambda t: ops.reduce_sum(op(t)))(x)
    with pytest.raises(AutodiffError, match="a scan"):
        grad(lambda t: ops.reduce_sum(Custom(SUITE["serial_cumsum"][0])(t)))(x)
    with pytest.raises(AutodiffError, match="in-place outputs"):
        grad(lambda t: ops.reduce_sum(Custom(SUITE["inplace"][0])(t)))(Tensor(np.ones(3)))


# ---- a Custom op inside a trained Cell ----------------------------------------------------


@kernel
def soft_relu(x):
    y = output_tensor(x.shape, x.dtype)
    for i in parallel(x.shape[0]):
        for j in vectorize(x.shape[1]):
            y[i, j] = max(x[i, j], 0.0) + 0.1 * tanh(x[i, j])
    return y


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(4, 16)
        self.act = Custom(soft_relu)
        self.fc2 = nn.Dense(16, 1)

    def construct(self, x):
        return self.fc2(self.act(self.fc1(x)))


def test_custom_activation_in_a_trained_cell():
    rng = np.random.default_rng(3)
    x = Tensor(rng.standard_normal((64, 4)).astype(np.float32))
    y = Tensor((rng.standard_normal((64, 1)) * 0.1 + 1.0).astype(np.float32))
    net = Net()
    step = nn.TrainOneStepCell(
        nn.WithLossCell(net, nn.MSELoss()), nn.SGD(net.trainable_params(), 0.05)
    )
    losses = [float(step(x, y).asnumpy()) for _ in range(15)]
    assert losses[-1] < 0.5 * losses[0], losses


# ---- graph mode ---------------------------------------------------------------------------


def test_custom_inside_jit_matches_eager():
    from sporeling.core import grad, jit

    op = Custom(SUITE["matmul"][0])

    def f(a, b):
        return ops.reduce_sum(op(a, b) * 2)

    a, b = _t(3, 4), _t(4, 2)
    compiled = jit(f)
    np.testing.assert_allclose(compiled(a, b).asnumpy(), f(a, b).asnumpy(), rtol=1e-5)
    np.testing.assert_allclose(compiled(a, b).asnumpy(), f(a, b).asnumpy(), rtol=1e-5)
    assert compiled.compile_count == 1
    graph = next(iter(compiled._cache.values())).graph
    assert any(e.prim is op.prim for e in graph.eqns)
    # gradients through the Custom op inside a compiled graph match eager ones
    g_eager = grad(f, (0, 1))(a, b)
    g_graph = jit(grad(f, (0, 1)))(a, b)
    for e, g in zip(g_eager, g_graph):
        np.testing.assert_allclose(g.asnumpy(), e.asnumpy(), rtol=1e-5)
