"""conv_bias_p: eager convolutions with a bias add it into the conv's fresh result in place
(kernels/cpu/channel_bias.py), with nn.Conv2dBnAct's ReLU in the same pass; values against
a float64 NumPy reference, odd shapes, both conv paths (per image and batch-wide), and
gradients."""

import numpy as np
import pytest

from sporeling.core import Parameter, Tensor, jit, nn, ops, value_and_grad
from sporeling.core.kernels.cpu import _rows
from sporeling.core.kernels.cpu.channel_bias import add_channel_bias
from sporeling.core.ops.nn import conv_bias_p
from sporeling.core.ops.nn.conv import conv2d_relu
from sporeling_testing import check_grad


def ref_conv2d(x, w, b, stride, pads, dilation, groups):
    """float64 cross-correlation plus bias, one kernel tap at a time."""
    x, w, b = x.astype(np.float64), w.astype(np.float64), b.astype(np.float64)
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple(pads))
    kh, kw = w.shape[2:]
    oh = (xp.shape[2] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (xp.shape[3] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    cg, og = w.shape[1], w.shape[0] // groups
    out = np.zeros((x.shape[0], w.shape[0], oh, ow)) + b[None, :, None, None]
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                win = (
                    slice(i * dilation[0], i * dilation[0] + stride[0] * (oh - 1) + 1, stride[0]),
                    slice(j * dilation[1], j * dilation[1] + stride[1] * (ow - 1) + 1, stride[1]),
                )
                patch = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + win]
                wt = w[g * og : (g + 1) * og, :, i, j]
                out[:, g * og : (g + 1) * og] += np.einsum("nchw,oc->nohw", patch, wt)
    return out


# (x shape, w shape, stride, (pad h, pad w), dilation, groups): odd sizes and counts, the
# 8/16/32-channel convs of a pruned ResNet-20, a grouped and a strided dilated one
CASES = [
    ((3, 5, 7, 9), (7, 5, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((4, 16, 8, 32), (8, 16, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((2, 8, 8, 8), (16, 8, 3, 3), (2, 2), (1, 1), (1, 1), 1),
    ((3, 4, 9, 6), (6, 2, 3, 2), (2, 1), (2, 0), (1, 2), 2),
    ((1, 3, 5, 5), (5, 3, 1, 1), (1, 1), (0, 0), (1, 1), 1),
]


def _tol(dtype):
    return {"rtol": 2e-5, "atol": 2e-5} if dtype == np.float32 else {"rtol": 1e-12, "atol": 1e-12}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES)
def test_conv2d_with_bias_matches_the_float64_reference(case, dtype, threads, monkeypatch):
    # with 2 threads and N >= 2 the per-image kernels run; else the batch-wide path
    monkeypatch.setattr(_rows, "max_blocks", lambda: threads)
    xs, ws, stride, pad, dil, groups = case
    rng = np.random.default_rng(sum(xs) + sum(ws))
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal(ws).astype(dtype)
    b = rng.standard_normal(ws[0]).astype(dtype)
    got = ops.conv2d(
        Tensor(x), Parameter(w), Parameter(b), stride, "pad", pad, dil, groups
    )  # Parameters: the result is on the tape, as in a layer
    assert got._node is not None and got._node.prim is conv_bias_p
    want = ref_conv2d(x, w, b, stride, ((pad[0],) * 2, (pad[1],) * 2), dil, groups)
    assert got.dtype == Tensor(x).dtype
    np.testing.assert_allclose(got.asnumpy(), want, **_tol(dtype))


def test_conv1d_and_conv3d_with_bias():
    rng = np.random.default_rng(3)
    x1, w1, b1 = (
        rng.standard_normal((3, 4, 11)),
        rng.standard_normal((5, 4, 3)),
        rng.standard_normal(5),
    )
    got = ops.conv1d(Tensor(x1), Tensor(w1), Tensor(b1), stride=2, pad_mode="pad", padding=1)
    want = ref_conv2d(x1[:, :, None], w1[:, :, None], b1, (1, 2), ((0, 0), (1, 1)), (1, 1), 1)
    np.testing.assert_allclose(got.asnumpy(), want[:, :, 0], rtol=1e-12, atol=1e-12)
    x3, w3, b3 = (
        rng.standard_normal((2, 3, 4, 5, 6)),
        rng.standard_normal((4, 3, 2, 2, 2)),
        rng.standard_normal(4),
    )
    got3 = ops.conv3d(Tensor(x3), Tensor(w3), Tensor(b3)).asnumpy()
    no_bias = ops.conv3d(Tensor(x3), Tensor(w3)).asnumpy()
    np.testing.assert_allclose(
        got3, no_bias + b3[None, :, None, None, None], rtol=1e-12, atol=1e-12
    )


@pytest.mark.parametrize("groups", [1, 2])
def test_numerical_gradients_of_input_weight_and_bias(groups, monkeypatch):
    monkeypatch.setattr(_rows, "max_blocks", lambda: 2)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 4, 5, 6))
    w = rng.standard_normal((6, 4 // groups, 3, 2))
    b = rng.standard_normal(6)

    def fn(a, k, c):
        return ops.conv2d(
            a, k, c, stride=(2, 1), pad_mode="pad", padding=(1, 0, 2, 1), groups=groups
        )

    check_grad(fn, [x, w, b])


def test_gradients_equal_conv_then_add_and_graph_mode():
    rng = np.random.default_rng(7)
    x = Tensor(rng.standard_normal((2, 3, 6, 7)).astype(np.float32))
    w = Tensor(rng.standard_normal((5, 3, 3, 3)).astype(np.float32))
    b = Tensor(rng.standard_normal(5).astype(np.float32))

    def fused(x, w, b):
        return ops.reduce_sum(ops.conv2d(x, w, b, pad_mode="pad", padding=1) ** 2)

    def split(x, w, b):
        y = ops.conv2d(x, w, pad_mode="pad", padding=1) + ops.reshape(b, (1, 5, 1, 1))
        return ops.reduce_sum(y**2)

    v1, g1 = value_and_grad(fused, grad_position=(0, 1, 2))(x, w, b)
    v2, g2 = value_and_grad(split, grad_position=(0, 1, 2))(x, w, b)
    v3, g3 = jit(value_and_grad(fused, grad_position=(0, 1, 2)))(x, w, b)
    for v, g in ((v2, g2), (v3, g3)):
        np.testing.assert_allclose(v1.asnumpy(), v.asnumpy(), rtol=1e-5)
        for a, c in zip(g1, g):
            np.testing.assert_allclose(a.asnumpy(), c.asnumpy(), rtol=1e-4, atol=1e-4)


def test_a_bias_of_another_dtype_or_shape_takes_the_add():
    x = Tensor(np.ones((2, 3, 4, 4), np.float32))
    w = Tensor(np.ones((2, 3, 1, 1), np.float32))
    y = ops.conv2d(x, w, Tensor(np.array([1.0, 2.0])))  # float64 bias: cast, as before
    np.testing.assert_array_equal(y.asnumpy()[0, :, 0, 0], [4.0, 5.0])
    with pytest.raises(ValueError, match="bias"):
        ops.conv2d(x, w, Tensor(np.ones(3, np.float32)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_add_channel_bias_kernel(dtype):
    rng = np.random.default_rng(1)
    y = rng.standard_normal((3, 5, 7, 3)).astype(dtype)
    b = rng.standard_normal(5).astype(dtype)
    want = y.astype(np.float64) + b[None, :, None, None]
    add_channel_bias(y, b)
    np.testing.assert_allclose(y, want, **_tol(dtype))
    with pytest.raises(TypeError, match="float32 or float64"):
        add_channel_bias(y.astype(np.float32), b.astype(np.float64))
    with pytest.raises(ValueError, match=r"shape \(C,\)"):
        add_channel_bias(y, b[:4])
    with pytest.raises(ValueError, match="C-contiguous"):
        add_channel_bias(y.transpose(1, 0, 2, 3), b)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES[:4])
def test_conv2d_relu_matches_the_float64_reference(case, dtype, threads, monkeypatch):
    monkeypatch.setattr(_rows, "max_blocks", lambda: threads)
    xs, ws, stride, pad, dil, groups = case
    rng = np.random.default_rng(sum(xs) * 3 + sum(ws))
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal(ws).astype(dtype)
    b = rng.standard_normal(ws[0]).astype(dtype)
    got = conv2d_relu(Tensor(x), Parameter(w), Parameter(b), stride, "pad", pad, dil, groups)
    assert got._node.prim is conv_bias_p and got._node.params["relu"] is True
    want = ref_conv2d(x, w, b, stride, ((pad[0],) * 2, (pad[1],) * 2), dil, groups)
    np.testing.assert_allclose(got.asnumpy(), np.maximum(want, 0), **_tol(dtype))


def test_conv2d_relu_gradients_and_graph_mode():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((3, 4, 5, 6))
    w = rng.standard_normal((6, 4, 3, 2))
    b = rng.standard_normal(6)

    def fn(a, k, c):
        return conv2d_relu(a, k, c, (2, 1), "pad", (1, 0, 2, 1), 1, 1)

    check_grad(fn, [x, w, b])

    def loss(a, k, c):
        return ops.reduce_sum(fn(a, k, c) ** 2)

    args = [Tensor(v.astype(np.float32)) for v in (x, w, b)]
    v1, g1 = value_and_grad(loss, grad_position=(0, 1, 2))(*args)
    v2, g2 = jit(value_and_grad(loss, grad_position=(0, 1, 2)))(*args)
    np.testing.assert_allclose(v1.asnumpy(), v2.asnumpy(), rtol=1e-5)
    for a, c in zip(g1, g2):
        np.testing.assert_allclose(a.asnumpy(), c.asnumpy(), rtol=1e-4, atol=1e-4)


def test_conv2d_bn_act_without_bn_runs_conv_bias_and_relu_in_one_op():
    rng = np.random.default_rng(2)
    x = Tensor(rng.standard_normal((2, 3, 6, 5)).astype(np.float32))
    fused = nn.Conv2dBnAct(3, 4, 3, pad_mode="pad", padding=1, has_bias=True, activation="relu")
    fused.conv.bias.set_data(Tensor(rng.standard_normal(4).astype(np.float32)))
    out = fused(x)
    assert out._node.prim is conv_bias_p
    np.testing.assert_array_equal(out.asnumpy(), ops.relu(fused.conv(x)).asnumpy())
    # with BN, another activation or a hook on the conv: the layers one by one
    for cell in (
        nn.Conv2dBnAct(3, 4, 3, has_bias=True, has_bn=True, activation="relu"),
        nn.Conv2dBnAct(3, 4, 3, has_bias=True, activation="sigmoid"),
    ):
        assert cell(x)._node.prim is not conv_bias_p
    fused.activation.recompute()  # a marked layer is called as itself
    assert fused(x)._node.prim is not conv_bias_p
    fused.activation._mindspore_flags["recompute"] = False
    assert fused(x)._node.prim is conv_bias_p
    seen = []
    fused.conv.register_forward_hook(lambda cell, inputs, output: seen.append(1))
    np.testing.assert_array_equal(fused(x).asnumpy(), out.asnumpy())
    assert seen == [1]


def test_add_channel_bias_relu_keeps_nan():
    y = np.array([[[-1.0, 0.5, np.nan, 2.0]]], np.float32)
    add_channel_bias(y, np.array([0.25], np.float32), relu=True)
    np.testing.assert_array_equal(y, [[[0.0, 0.75, np.nan, 2.25]]])
