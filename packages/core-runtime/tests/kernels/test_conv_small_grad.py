"""The small-channel convolution gradients (kernels/cpu/conv_small_grad.py) against float64
references: directly, on several threads, through ``ops.conv2d``/``ops.conv1d`` and their
vjp, and which shapes they take (the rest stays on conv_images' paths, also checked)."""

import numpy as np
import pytest

from sporeling.core import Tensor, ops, vjp
from sporeling.core.kernels.cpu import conv_images, conv_small_grad, microgemm

pytestmark = pytest.mark.skipif(
    not (conv_images.available(np.float32) and microgemm.available()),
    reason="needs OpenBLAS with CBLAS and the AVX-512 micro-kernel",
)

# x shape, w shape, stride, (top, left) pads (symmetric), dilation
CASES = [
    ((4, 6, 14, 14), (16, 6, 5, 5), (1, 1), (0, 0), (1, 1)),  # LeNet-5's second conv
    ((1, 6, 9, 11), (8, 6, 5, 5), (1, 1), (2, 1), (1, 1)),  # batch 1, pads, 8 out
    ((3, 6, 12, 10), (24, 6, 5, 5), (1, 1), (1, 2), (2, 1)),  # dilation over rows, 24 out
    ((2, 3, 13, 14), (8, 3, 3, 10), (1, 1), (2, 3), (1, 1)),  # 3 in x 10 taps: rows of 30
    ((3, 6, 15, 14), (16, 6, 5, 5), (2, 1), (1, 0), (1, 1)),  # stride 2: weight grad only
]


def _geo(stride, pads, dilation):
    return (stride[0], stride[1], pads[0], pads[1], dilation[0], dilation[1])


def _ref(x, w, gy, stride, pads, dilation):
    """(out, dx, dw) of conv(x, w) and <gy, conv> in float64."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[0]), (pads[1], pads[1])))
    kh, kw = w.shape[2:]
    oh = (xp.shape[2] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (xp.shape[3] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((x.shape[0], w.shape[0], oh, ow))
    dxp, dw = np.zeros_like(xp), np.zeros_like(w)
    g = None if gy is None else gy.astype(np.float64)
    for i in range(kh):
        for j in range(kw):
            win = (
                slice(None),
                slice(None),
                slice(i * dilation[0], i * dilation[0] + stride[0] * (oh - 1) + 1, stride[0]),
                slice(j * dilation[1], j * dilation[1] + stride[1] * (ow - 1) + 1, stride[1]),
            )
            out += np.einsum("nchw,oc->nohw", xp[win], w[:, :, i, j])
            if g is not None:
                dxp[win] += np.einsum("nohw,oc->nchw", g, w[:, :, i, j])
                dw[:, :, i, j] = np.einsum("nohw,nchw->oc", g, xp[win])
    dx = dxp[:, :, pads[0] : pads[0] + x.shape[2], pads[1] : pads[1] + x.shape[3]]
    return out, dx, dw


def _data(case, seed=0):
    shape, wshape, stride, pads, dilation = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(wshape).astype(np.float32)
    out, _, _ = _ref(x, w, None, stride, pads, dilation)
    gy = rng.standard_normal(out.shape).astype(np.float32)
    return x, w, gy


TOL = {"rtol": 2e-5, "atol": 3e-5}


@pytest.mark.parametrize("case", CASES)
def test_kernels_match_the_float64_reference(case):
    x, w, gy = _data(case)
    shape, wshape, stride, pads, dilation = case
    geo = _geo(stride, pads, dilation)
    _, dx_want, dw_want = _ref(x, w, gy, stride, pads, dilation)
    width = conv_small_grad.weight_grad_plan(np.float32, geo, 1, shape[1], wshape[0], wshape[2:])
    assert width == -(-wshape[3] * shape[1] // 16) * 16  # every case here takes it
    dw = conv_small_grad.weight_grad(x, gy, geo, wshape[2:], width)
    assert dw.shape == wshape and dw.dtype == np.float32
    np.testing.assert_allclose(dw, dw_want, **TOL)
    takes_dx = conv_small_grad.data_grad_plan(np.float32, w, geo, 1, shape)
    assert takes_dx == (stride == (1, 1))
    if takes_dx:
        dx = conv_small_grad.data_grad(gy, w, geo, shape)
        assert dx.shape == shape and dx.flags.c_contiguous
        np.testing.assert_allclose(dx, dx_want, **TOL)
    # the dispatching entry points give the same, whichever path they take
    np.testing.assert_allclose(
        conv_small_grad.data_grad_images(gy, w, geo, 1, shape), dx_want, **TOL
    )
    np.testing.assert_allclose(
        conv_small_grad.weight_grad_images(x, gy, geo, 1, wshape[2:]), dw_want, **TOL
    )


@pytest.mark.parametrize("case", CASES[:3])
def test_several_threads(case, monkeypatch):
    """Each thread's buffers (the widened rows, the padded planes and copies, the partial
    weight sums) stay apart: 3 threads, every batch split."""
    monkeypatch.setattr(conv_images, "max_blocks", lambda: 3)
    monkeypatch.setattr(conv_images, "PARALLEL_MIN", 0)
    case = ((7,) + case[0][1:],) + case[1:]
    x, w, gy = _data(case, seed=1)
    shape, wshape, stride, pads, dilation = case
    geo = _geo(stride, pads, dilation)
    _, dx_want, dw_want = _ref(x, w, gy, stride, pads, dilation)
    np.testing.assert_allclose(
        conv_small_grad.data_grad_images(gy, w, geo, 1, shape), dx_want, **TOL
    )
    np.testing.assert_allclose(
        conv_small_grad.weight_grad_images(x, gy, geo, 1, wshape[2:]), dw_want, **TOL
    )


def test_directional_derivatives_match_central_differences():
    """<dx, v> and <dw, u> from the kernels against central differences of the float64
    convolution (the vjp identity, checked numerically on LeNet-5's shape at batch 2)."""
    case = ((2, 6, 14, 14), (16, 6, 5, 5), (1, 1), (0, 0), (1, 1))
    x, w, gy = _data(case, seed=3)
    geo = _geo(*case[2:])
    rng = np.random.default_rng(4)
    v, u = rng.standard_normal(x.shape), rng.standard_normal(w.shape)
    dx = conv_small_grad.data_grad(gy, w, geo, x.shape)
    dw = conv_small_grad.weight_grad(x, gy, geo, (5, 5), 32)
    x64, w64, g64 = x.astype(np.float64), w.astype(np.float64), gy.astype(np.float64)

    def f(xx, ww):
        return float(np.sum(_ref(xx, ww, None, *case[2:])[0] * g64))

    h = 1e-4
    num_x = (f(x64 + h * v, w64) - f(x64 - h * v, w64)) / (2 * h)
    num_w = (f(x64, w64 + h * u) - f(x64, w64 - h * u)) / (2 * h)
    assert np.isclose(np.sum(dx * v), num_x, rtol=1e-5)
    assert np.isclose(np.sum(dw * u), num_w, rtol=1e-5)


def test_which_shapes_take_the_small_channel_paths():
    f32, one = np.float32, (1, 1, 0, 0, 1, 1)
    w = np.zeros((16, 6, 5, 5), f32)
    lenet = (64, 6, 14, 14)
    assert conv_small_grad.weight_grad_plan(f32, one, 1, 6, 16, (5, 5)) == 32
    assert conv_small_grad.data_grad_plan(f32, w, one, 1, lenet)
    # float64, groups, dilation along the width: conv_images' paths
    assert not conv_small_grad.weight_grad_plan(np.float64, one, 1, 6, 16, (5, 5))
    assert not conv_small_grad.data_grad_plan(np.float64, w, one, 1, lenet)
    assert not conv_small_grad.weight_grad_plan(f32, one, 2, 6, 16, (5, 5))
    assert not conv_small_grad.data_grad_plan(f32, w, one, 2, lenet)
    assert not conv_small_grad.weight_grad_plan(f32, (1, 1, 0, 0, 1, 2), 1, 6, 16, (5, 5))
    # stride 2: the weight gradient only
    assert not conv_small_grad.data_grad_plan(f32, w, (2, 2, 0, 0, 1, 1), 1, lenet)
    assert conv_small_grad.weight_grad_plan(f32, (2, 2, 0, 0, 1, 1), 1, 6, 16, (5, 5)) == 32
    # 16 input channels (merged rows on conv_images), 6 output channels (not blocks of 8),
    # 8->16 (conv_images' implicit path), 4 x 5 taps = 20 -> 32 (over 1.25x)
    assert not conv_small_grad.weight_grad_plan(f32, one, 1, 16, 16, (5, 5))
    assert not conv_small_grad.weight_grad_plan(f32, one, 1, 1, 6, (5, 5))
    assert not conv_small_grad.weight_grad_plan(f32, one, 1, 8, 16, (5, 5))
    assert not conv_small_grad.weight_grad_plan(f32, one, 1, 4, 16, (5, 5))
    # 3x3 kernels, over 256 rows, fewer than 8 output channels, a forward without col2im
    assert not conv_small_grad.data_grad_plan(f32, np.zeros((16, 6, 3, 3), f32), one, 1, lenet)
    big = np.zeros((16, 12, 5, 5), f32)
    assert not conv_small_grad.data_grad_plan(f32, big, one, 1, (64, 12, 14, 14))
    few = np.zeros((6, 1, 5, 5), f32)
    assert not conv_small_grad.data_grad_plan(f32, few, one, 1, (64, 1, 32, 32))
    flip = np.zeros((16, 8, 5, 5), f32)
    assert not conv_small_grad.data_grad_plan(f32, flip, (1, 1, 2, 2, 1, 1), 1, (4, 8, 16, 16))


def _grads(x, w, gy, **kw):
    out, pull = vjp(lambda a, b: ops.conv2d(a, b, **kw), Tensor(x), Tensor(w))
    dx, dw = pull(Tensor(gy))
    return out.asnumpy(), dx.asnumpy(), dw.asnumpy()


@pytest.fixture
def spy(monkeypatch):
    """The small-channel kernels that ran (per-image path on, 2 threads)."""
    from sporeling.core.kernels.cpu import _rows

    monkeypatch.setattr(conv_images, "max_blocks", lambda: 2)
    monkeypatch.setattr(_rows, "max_blocks", lambda: 2)
    calls = []
    for name in ("data_grad", "weight_grad", "weight_grad_runs"):
        real = getattr(conv_small_grad, name)

        def wrapped(*a, _real=real, _name=name):
            calls.append(_name)
            return _real(*a)

        monkeypatch.setattr(conv_small_grad, name, wrapped)
    return calls


@pytest.mark.parametrize(
    ("kw", "ran"),
    [
        ({}, ["data_grad", "weight_grad"]),  # LeNet-5's valid conv
        ({"pad_mode": "pad", "padding": (1, 2, 0, 3)}, ["data_grad", "weight_grad"]),
        ({"stride": 2}, ["weight_grad"]),  # input gradient on conv_images
        ({"groups": 2}, []),  # both on conv_images
        ({"dilation": (1, 2)}, ["data_grad"]),  # weight gradient on conv_images
    ],
)
def test_through_the_op_and_its_vjp(kw, ran, spy):
    """``ops.conv2d``'s gradients on the per-image path (batch 4), whichever kernels they
    take, against the float64 reference; the input non-contiguous."""
    groups = kw.get("groups", 1)
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 14, 13, 6)).astype(np.float32).transpose(0, 3, 1, 2)
    assert not x.flags.c_contiguous
    w = rng.standard_normal((16, 6 // groups, 5, 5)).astype(np.float32)
    shape = ops.conv2d(Tensor(x), Tensor(w), **kw).shape
    gy = rng.standard_normal(shape).astype(np.float32)
    out, dx, dw = _grads(x, w, gy, **kw)
    assert sorted(spy) == ran
    stride = kw.get("stride", 1)
    pad = kw.get("padding", (0, 0, 0, 0))
    x64 = np.pad(x.astype(np.float64), ((0, 0), (0, 0), pad[:2], pad[2:]))
    want, dxp_want, dw_want = _ref_groups(x64, w, gy, stride, kw.get("dilation", (1, 1)), groups)
    np.testing.assert_allclose(out, want, **TOL)
    np.testing.assert_allclose(
        dx, dxp_want[:, :, pad[0] : pad[0] + 14, pad[2] : pad[2] + 13], **TOL
    )
    np.testing.assert_allclose(dw, dw_want, **TOL)


def _ref_groups(xp, w, gy, stride, dil, groups):
    """(out, dx of the padded input, dw) per group with :func:`_ref` (pads already in xp)."""
    cg, og = w.shape[1], w.shape[0] // groups
    outs, dxs, dws = [], [], []
    for g in range(groups):
        o, dx, dw = _ref(
            xp[:, g * cg : (g + 1) * cg], w[g * og : (g + 1) * og],
            gy[:, g * og : (g + 1) * og], (stride, stride), (0, 0), dil,
        )  # fmt: skip
        outs.append(o)
        dxs.append(dx)
        dws.append(dw)
    return np.concatenate(outs, 1), np.concatenate(dxs, 1), np.concatenate(dws, 0)


def test_conv1d_through_the_op(spy):
    """A 1-d convolution (height 1) with 6 channels and 5 taps: its weight gradient here
    (5 taps: the input gradient stays on conv_images)."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 6, 40)).astype(np.float32)
    w = rng.standard_normal((8, 6, 5)).astype(np.float32)
    out, pull = vjp(lambda a, b: ops.conv1d(a, b), Tensor(x), Tensor(w))
    gy = rng.standard_normal(out.shape).astype(np.float32)
    dx, dw = (t.asnumpy() for t in pull(Tensor(gy)))
    assert spy == ["weight_grad"]
    want, dx_want, dw_want = _ref(
        x[:, :, None], w[:, :, None], gy[:, :, None], (1, 1), (0, 0), (1, 1)
    )
    np.testing.assert_allclose(out.asnumpy(), want[:, :, 0], **TOL)
    np.testing.assert_allclose(dx, dx_want[:, :, 0], **TOL)
    np.testing.assert_allclose(dw, dw_want[:, :, 0], **TOL)


RUNS_CASES = [  # weight gradients of few channel pairs and 25-64 taps: one dot product a run
    ((4, 1, 32, 32), (6, 1, 5, 5), (1, 1), (0, 0), (1, 1)),  # LeNet-5's first conv
    ((1, 2, 11, 9), (8, 2, 5, 5), (1, 1), (2, 1), (2, 1)),  # batch 1, pads, row dilation
    ((3, 1, 12, 14), (5, 1, 5, 7), (1, 1), (0, 3), (1, 1)),  # odd out channels, 35 taps
]


@pytest.mark.parametrize("case", RUNS_CASES)
def test_runs_weight_gradient_matches_the_float64_reference(case, monkeypatch):
    x, w, gy = _data(case, seed=8)
    shape, wshape, stride, pads, dilation = case
    geo = _geo(stride, pads, dilation)
    _, _, dw_want = _ref(x, w, gy, stride, pads, dilation)
    assert conv_small_grad.runs_plan(np.float32, geo, 1, shape[1], wshape[0], wshape[2:])
    got = conv_small_grad.weight_grad_runs(x, gy, geo, wshape[2:])
    assert got.shape == wshape and got.dtype == np.float32
    np.testing.assert_allclose(got, dw_want, **TOL)
    monkeypatch.setattr(conv_images, "max_blocks", lambda: 3)  # each thread its own sums
    monkeypatch.setattr(conv_images, "PARALLEL_MIN", 0)
    x7 = np.concatenate([x] * 3)[:7]
    g7 = np.concatenate([gy] * 3)[:7]
    _, _, dw7 = _ref(x7, w, g7, stride, pads, dilation)
    got7 = conv_small_grad.weight_grad_images(x7, g7, geo, 1, wshape[2:])
    np.testing.assert_allclose(got7, dw7, **TOL)


def test_which_shapes_take_the_runs():
    f32, one = np.float32, (1, 1, 0, 0, 1, 1)
    assert conv_small_grad.runs_plan(f32, one, 1, 1, 6, (5, 5))
    assert conv_small_grad.runs_plan(f32, (1, 1, 2, 2, 2, 2), 1, 2, 8, (5, 5))
    assert not conv_small_grad.runs_plan(np.float64, one, 1, 1, 6, (5, 5))
    assert not conv_small_grad.runs_plan(f32, (2, 2, 0, 0, 1, 1), 1, 1, 6, (5, 5))  # stride
    assert not conv_small_grad.runs_plan(f32, one, 2, 2, 6, (5, 5))  # groups
    assert not conv_small_grad.runs_plan(f32, one, 1, 1, 16, (3, 3))  # 9 taps
    assert not conv_small_grad.runs_plan(f32, one, 1, 3, 6, (5, 5))  # 18 channel pairs
    assert not conv_small_grad.runs_plan(f32, one, 1, 6, 16, (5, 5))  # weight_grad's


def test_non_finite_inputs_take_the_general_paths():
    """An infinite input value (runs) or weight (widened rows) would meet the zero columns:
    those calls go to conv_images and give exactly its result (inf and NaN included)."""
    rng = np.random.default_rng(9)
    geo = (1, 1, 0, 0, 1, 1)
    x = rng.standard_normal((4, 1, 12, 12)).astype(np.float32)
    x[1, 0, 3, 0] = np.inf
    gy = rng.standard_normal((4, 6, 8, 8)).astype(np.float32)
    want = conv_images.conv2d_weight_grad_images(x, gy, geo, 1, (5, 5))
    got = conv_small_grad.weight_grad_images(x, gy, geo, 1, (5, 5))
    assert np.isfinite(want).any() and not np.isfinite(want).all()
    np.testing.assert_array_equal(got, want)
    w = rng.standard_normal((8, 6, 5, 5)).astype(np.float32)
    w[2, 1, 0, 0] = -np.inf
    gy = rng.standard_normal((4, 8, 6, 6)).astype(np.float32)
    want = conv_images.conv2d_data_grad_images(gy, w, geo, 1, (4, 6, 10, 10))
    got = conv_small_grad.data_grad_images(gy, w, geo, 1, (4, 6, 10, 10))
    assert np.isfinite(want).any() and not np.isfinite(want).all()
    np.testing.assert_array_equal(got, want)


def test_lenet_first_conv_through_the_op(spy):
    """LeNet-5's 1->6 5x5 valid conv: the input needs no gradient, the weight's by runs."""
    rng = np.random.default_rng(10)
    x = rng.standard_normal((4, 1, 32, 32)).astype(np.float32)
    w = rng.standard_normal((6, 1, 5, 5)).astype(np.float32)
    out, pull = vjp(lambda b: ops.conv2d(Tensor(x), b), Tensor(w))
    gy = rng.standard_normal(out.shape).astype(np.float32)
    (dw,) = pull(Tensor(gy))
    assert spy == ["weight_grad_runs"]
    _, _, dw_want = _ref(x, w, gy, (1, 1), (0, 0), (1, 1))
    np.testing.assert_allclose(dw.asnumpy(), dw_want, **TOL)
