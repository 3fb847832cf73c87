"""The per-image conv kernels (im2col in cache + one GEMM per image) against float64
references, directly and through ``ops.conv1d``/``ops.conv2d`` and their gradients."""

import numpy as np
import pytest

from sporeling.core import Tensor, ops
from sporeling.core.kernels.cpu import _rows, conv_images, microgemm
from sporeling_testing import check_grad

pytestmark = pytest.mark.skipif(
    not conv_images.available(np.float32), reason="no OpenBLAS with CBLAS: batch-wide path only"
)

CASES = [  # x shape, w shape, stride, ((top, bottom), (left, right)), dilation, groups
    ((2, 3, 7, 9), (4, 3, 3, 2), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),
    ((3, 4, 8, 6), (6, 2, 3, 3), (2, 1), ((1, 2), (2, 0)), (1, 2), 2),  # groups, dilation
    ((1, 1, 5, 5), (2, 1, 2, 4), (3, 2), ((3, 3), (0, 4)), (2, 1), 1),  # batch 1, big pads
    ((2, 1, 4, 4), (3, 1, 5, 5), (1, 1), ((2, 2), (2, 2)), (1, 1), 1),  # taps all in padding
    ((5, 6, 6, 5), (6, 1, 3, 3), (1, 2), ((1, 1), (1, 1)), (1, 1), 6),  # depthwise
    ((4, 16, 10, 10), (8, 16, 1, 1), (2, 2), ((0, 0), (0, 0)), (1, 1), 1),  # 1x1 projection
    # stride 1 with OW == W: the contiguous-run path of im2col/col2im
    ((2, 3, 7, 9), (4, 3, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    ((2, 2, 6, 8), (3, 2, 3, 3), (1, 1), ((2, 2), (0, 4)), (2, 2), 1),  # one-sided pads
    ((3, 4, 5, 1), (2, 4, 3, 1), (1, 1), ((1, 1), (0, 0)), (1, 1), 1),  # width 1
]
MICRO_CASES = [  # float32 shapes whose products go to the AVX-512 micro-kernel (microgemm)
    # 72 columns: two blocks of 32 and 8 left to OpenBLAS; forward and data gradient
    ((2, 16, 9, 8), (16, 16, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    # groups (8 rows each), dilation, one-sided pads: forward only (36 rows for dx)
    ((3, 8, 12, 11), (16, 4, 3, 3), (1, 1), ((1, 1), (2, 0)), (2, 1), 2),
    # batch 1, stride 2, 64 columns exactly
    ((1, 8, 16, 16), (8, 8, 3, 3), (2, 2), ((1, 0), (1, 0)), (1, 1), 1),
    # 1x1, groups of 4 output channels (forward by OpenBLAS), data gradient 8 rows
    ((2, 16, 8, 8), (8, 8, 1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 2),
    # 40 output channels: weight gradient in a block of 32 columns and 8 by OpenBLAS
    ((2, 8, 8, 8), (40, 8, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    # groups of 16 output channels, 8 rows each: weight gradient in blocks of 16 columns
    ((3, 16, 6, 6), (32, 8, 1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 2),
]
IMPLICIT_CASES = [  # stride 1, output rows of whole blocks of 16: forward without im2col
    # rows of 16 (blocks of 16); the input gradient as a forward of gy (no col2im)
    ((2, 16, 6, 16), (16, 16, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    # rows of 32, groups, dilation 2 over rows, one-sided pads, batch 1
    ((1, 16, 7, 32), (16, 8, 3, 3), (1, 1), ((2, 1), (1, 1)), (2, 1), 2),
    # 1x1 with a pad of 1: forward implicit, input gradient not (its pad would be -1)
    ((2, 8, 4, 16), (8, 8, 1, 1), (1, 1), ((1, 1), (0, 0)), (1, 1), 1),
    # kernel 2x3 wider than tall, pads below d*(k-1), rows of 48 (a block of 32, then the
    # last 16 pixels of two rows as one block; 5 rows: the last one alone)
    ((3, 8, 5, 48), (24, 8, 2, 3), (1, 1), ((0, 1), (1, 1)), (1, 1), 1),
    # rows of 16, an odd count of them (7), groups of 16 out, batch 1, dilation over rows
    ((1, 16, 9, 16), (32, 8, 3, 3), (1, 1), ((1, 1), (1, 1)), (2, 1), 2),
    # rows of 80 (two blocks of 32 and a paired 16), 32 out, 32 in: both paths could run
    ((2, 32, 4, 80), (32, 32, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
]


PIXEL_CASES = [  # float32, one group, output rows of blocks of 8: channels-last forward
    # 8x8 3x3 pad 1 (K = 288: chunks of K with a remainder); the input gradient of
    # 32 channels runs as such a forward of gy (no col2im)
    ((2, 32, 8, 8), (48, 32, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    # stride 2, an odd height, a one-sided pad
    ((3, 8, 13, 16), (32, 8, 3, 3), (2, 2), ((1, 1), (1, 0)), (1, 1), 1),
    # batch 1, a 2x3 kernel dilated over rows, stride 2 over columns only, 48 out (32 + 16)
    ((1, 5, 10, 17), (48, 5, 2, 3), (1, 2), ((0, 1), (0, 0)), (2, 1), 1),
    # stride 1, rows of 16, 32 out: the row path runs it (rows paired), the pixel path
    # when the row path is off (test_implicit_forward_and_flipped_input_gradient's switch)
    ((2, 8, 5, 16), (32, 8, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
]


def _window(tap, stride, dilation, out_sp):
    """Slices of the padded input that kernel tap ``tap`` multiplies."""
    return tuple(
        slice(t * d, t * d + s * (n - 1) + 1, s)
        for t, s, d, n in zip(tap, stride, dilation, out_sp)
    )


def _taps(x_shape, w, stride, pads, dilation):
    """(tap (i, j), slices of the padded input) for every kernel tap, and the output size."""
    kh, kw = w.shape[2:]
    sp = [x_shape[2 + a] + sum(pads[a]) for a in range(2)]
    out = [(sp[a] - dilation[a] * (w.shape[2 + a] - 1) - 1) // stride[a] + 1 for a in range(2)]
    taps = []
    for i in range(kh):
        for j in range(kw):
            taps.append(((i, j), _window((i, j), stride, dilation, out)))
    return taps, tuple(out)


def ref_conv(x, w, stride, pads, dilation, groups):
    x, w = x.astype(np.float64), w.astype(np.float64)
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple(pads))
    taps, out_sp = _taps(x.shape, w, stride, pads, dilation)
    cg, og = w.shape[1], w.shape[0] // groups
    out = np.zeros((x.shape[0], w.shape[0], *out_sp))
    for g in range(groups):
        for (i, j), win in taps:
            patch = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + win]
            wt = w[g * og : (g + 1) * og, :, i, j]
            out[:, g * og : (g + 1) * og] += np.einsum("nchw,oc->nohw", patch, wt)
    return out


def ref_grads(x, w, gy, stride, pads, dilation, groups):
    """(dx, dw) of <gy, conv(x, w)> in float64."""
    x, w, gy = x.astype(np.float64), w.astype(np.float64), gy.astype(np.float64)
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple(pads))
    dxp = np.zeros_like(xp)
    dw = np.zeros_like(w)
    taps, _ = _taps(x.shape, w, stride, pads, dilation)
    cg, og = w.shape[1], w.shape[0] // groups
    for g in range(groups):
        cs, os_ = slice(g * cg, (g + 1) * cg), slice(g * og, (g + 1) * og)
        for (i, j), win in taps:
            dxp[(slice(None), cs) + win] += np.einsum("nohw,oc->nchw", gy[:, os_], w[os_, :, i, j])
            dw[os_, :, i, j] = np.einsum("nohw,nchw->oc", gy[:, os_], xp[(slice(None), cs) + win])
    crop = tuple(slice(lo, lo + s) for (lo, _), s in zip(pads, x.shape[2:]))
    return dxp[(slice(None), slice(None)) + crop], dw


def _tol(dtype):
    return {"rtol": 2e-5, "atol": 2e-5} if dtype == np.float32 else {"rtol": 1e-12, "atol": 1e-12}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES)
def test_kernels_match_the_float64_reference(case, dtype):
    shape, wshape, stride, pads, dilation, groups = case
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal(wshape).astype(dtype)
    geo = (stride[0], stride[1], pads[0][0], pads[1][0], dilation[0], dilation[1])
    want = ref_conv(x, w, stride, pads, dilation, groups)
    got = conv_images.conv2d_images(x, w, geo, groups, want.shape[2:])
    assert got.dtype == dtype and got.flags.c_contiguous
    np.testing.assert_allclose(got, want, **_tol(dtype))
    gy = rng.standard_normal(want.shape).astype(dtype)
    dx_want, dw_want = ref_grads(x, w, gy, stride, pads, dilation, groups)
    dx = conv_images.conv2d_data_grad_images(gy, w, geo, groups, x.shape)
    dw = conv_images.conv2d_weight_grad_images(x, gy, geo, groups, wshape[2:])
    np.testing.assert_allclose(dx, dx_want, **_tol(dtype))
    np.testing.assert_allclose(dw, dw_want, **_tol(dtype))


@pytest.mark.parametrize("case", MICRO_CASES)
def test_micro_kernel_products_match_the_float64_reference(case, monkeypatch):
    """The float32 forward and data gradient through microgemm (on an AVX-512 CPU; elsewhere
    these shapes take OpenBLAS and the test checks that path), and the same on OpenBLAS."""
    test_kernels_match_the_float64_reference(case, np.float32)
    shape, wshape, _, pads, _, groups = case
    kernels = wshape[2] * wshape[3]
    assert conv_images._micro(np.float32, wshape[0] // groups, 32) == (
        microgemm.available() and wshape[0] // groups % 8 == 0
    )
    assert not conv_images._micro(np.float64, 8, 64) and not conv_images._micro(np.float32, 8, 31)
    assert conv_images._micro(np.float32, shape[1] // groups * kernels, 64) == (
        microgemm.available() and shape[1] // groups * kernels % 8 == 0
    )
    monkeypatch.setattr(conv_images, "_implicit_weight_grad", lambda *a: False)
    test_kernels_match_the_float64_reference(case, np.float32)  # weight gradient on columns
    monkeypatch.setattr(conv_images, "_micro", lambda *a: False)
    test_kernels_match_the_float64_reference(case, np.float32)


WEIGHT_CASES = [  # float32 weight gradients read from a padded image (microgemm.weight_rows)
    # odd sizes (91 pixels: chunks of 16 leave 11), stride 2 over rows, dilation, groups
    ((3, 16, 14, 13), (32, 8, 3, 2), (2, 1), ((2, 1), (0, 1)), (2, 1), 2),
    # batch 1, stride 2 both ways, 48 output channels (a block of 32 and one of 16)
    ((1, 8, 9, 9), (48, 8, 3, 3), (2, 2), ((1, 1), (1, 1)), (1, 2), 1),
    # 32 channels in (channels-last: a block of 32), 3x3 pad 1, 128 pixels
    ((2, 32, 8, 16), (32, 32, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    # channels-last: groups of 64 in (two blocks), 8 out, stride 2, dilation, batch 1
    ((1, 128, 9, 11), (16, 64, 3, 3), (2, 1), ((1, 0), (2, 2)), (1, 2), 2),
    # channels-last: 96 in (three blocks of 32), 40 out (not blocks of 16: no row path)
    ((3, 96, 5, 7), (40, 96, 2, 3), (1, 1), ((0, 1), (1, 1)), (2, 1), 1),
    # one-sided pads, a kernel wider than the padded image needs rows of, 1x1 stride 2
    ((2, 8, 6, 7), (16, 8, 2, 4), (1, 1), ((0, 2), (3, 0)), (1, 1), 1),
    ((2, 16, 7, 7), (16, 16, 1, 1), (2, 2), ((0, 0), (0, 0)), (1, 1), 1),
    # channels-last with a kernel row's taps as one run (one group, no width dilation):
    # 16 channels 3x3 (rows of 48: a block of 32 and one of 16), 90 pixels
    ((2, 16, 9, 10), (16, 16, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    # stride 2, dilation 2 over rows, one-sided pads, 24 out, batch 1
    ((1, 16, 11, 9), (24, 16, 3, 3), (2, 2), ((2, 1), (1, 0)), (2, 1), 1),
    # a 2x2 kernel (rows of 32), 8 out
    ((3, 16, 6, 7), (8, 16, 2, 2), (1, 1), ((0, 1), (1, 0)), (1, 1), 1),
    # width dilation: taps not adjacent, so 16 channels stay on the row path
    ((2, 16, 7, 8), (16, 16, 3, 3), (1, 1), ((1, 1), (2, 2)), (1, 2), 1),
]


def test_which_weight_gradients_merge_a_kernel_rows_taps():
    """One group, no dilation along the width, input channels in blocks of 16: the row's
    taps as one run of KW * C_in; else per tap (channels per group in blocks of 32) or no
    channels-last copy at all."""
    if not microgemm.available():
        pytest.skip("no AVX-512: no micro-kernel paths")
    one, dil_w = (1, 1, 1, 1, 1, 1), (1, 1, 1, 1, 1, 2)
    f32 = np.float32
    assert conv_images._weight_cols_width(f32, one, 1, 16, 16, 3) == (48, True)
    assert conv_images._weight_cols_width(f32, one, 1, 32, 64, 3) == (96, True)
    assert conv_images._weight_cols_width(f32, one, 1, 16, 8, 2) == (32, True)
    assert conv_images._weight_cols_width(f32, dil_w, 1, 16, 16, 3) == (0, False)
    assert conv_images._weight_cols_width(f32, dil_w, 1, 32, 16, 3) == (32, False)
    assert conv_images._weight_cols_width(f32, one, 2, 64, 16, 3) == (32, False)
    assert conv_images._weight_cols_width(f32, one, 1, 16, 16, 1) == (0, False)  # 16 wide
    assert conv_images._weight_cols_width(f32, one, 1, 8, 16, 3) == (0, False)
    assert conv_images._weight_cols_width(f32, one, 1, 16, 12, 3) == (0, False)
    assert conv_images._weight_cols_width(np.float64, one, 1, 16, 16, 3) == (0, False)


@pytest.mark.parametrize("chunk", [16, 128])
@pytest.mark.parametrize("case", WEIGHT_CASES)
def test_weight_gradient_from_the_padded_image(case, chunk, monkeypatch):
    """The weight gradient without im2col (float32, AVX-512) against the float64 reference,
    with pixel chunks that leave a remainder; and the same shapes on the column path."""
    shape, wshape, stride, pads, dilation, groups = case
    assert conv_images._implicit_weight_grad(
        np.float32, shape[1] // groups, wshape[0] // groups
    ) == (microgemm.available() and wshape[0] // groups % 16 == 0)
    assert not conv_images._implicit_weight_grad(np.float64, 8, 16)
    assert not conv_images._implicit_weight_grad(np.float32, 4, 16)
    assert not conv_images._implicit_weight_grad(np.float32, 8, 40)
    assert conv_images._channels_last_weight_grad(
        np.float32, shape[1] // groups, wshape[0] // groups
    ) == (microgemm.available() and shape[1] // groups % 32 == 0)
    assert not conv_images._channels_last_weight_grad(np.float32, 48, 16)
    assert not conv_images._channels_last_weight_grad(np.float32, 64, 12)
    monkeypatch.setattr(conv_images, "_PIXEL_CHUNK", chunk)
    test_kernels_match_the_float64_reference(case, np.float32)
    merged = conv_images._weight_cols_width
    per_tap = conv_images._channels_last_weight_grad
    if merged(np.float32, (*stride, 0, 0, *dilation), groups, shape[1], wshape[0] // groups, 3)[1]:
        # the same gradient with one offset per tap (rows of C_in), as groups > 1 take it
        def taps_apart(dtype, geo, groups, cin, cog, kw):
            return (cin, False) if per_tap(dtype, cin, cog) else (0, False)

        monkeypatch.setattr(conv_images, "_weight_cols_width", taps_apart)
        test_kernels_match_the_float64_reference(case, np.float32)
    monkeypatch.setattr(conv_images, "_weight_cols_width", lambda *a: (0, False))
    test_kernels_match_the_float64_reference(case, np.float32)
    monkeypatch.setattr(conv_images, "_implicit_weight_grad", lambda *a: False)
    test_kernels_match_the_float64_reference(case, np.float32)


@pytest.mark.parametrize("channels", [8, 16, 32])
def test_weight_gradient_from_the_padded_image_non_contiguous_and_threads(channels, monkeypatch):
    """Strided x (read element by element into the padded buffer; 16 and 32 channels: made
    contiguous for the channels-last copy, a C function reading the image by address),
    several threads each with its own buffer and sum."""
    monkeypatch.setattr(conv_images, "max_blocks", lambda: 3)
    monkeypatch.setattr(conv_images, "PARALLEL_MIN", 0)
    rng = np.random.default_rng(7)
    base = rng.standard_normal((7, 2 * channels, 12, 9)).astype(np.float32)
    x = base.transpose(0, 1, 3, 2)[:, ::2]
    w = (rng.standard_normal((16, channels, 3, 3)) / channels**0.5).astype(np.float32)
    pads, geo = ((1, 1), (1, 1)), (1, 1, 1, 1, 1, 1)
    want = ref_conv(x, w, (1, 1), pads, (1, 1), 1)
    gy = rng.standard_normal(want.shape).astype(np.float32)
    _, dw_want = ref_grads(x, w, gy, (1, 1), pads, (1, 1), 1)
    dw = conv_images.conv2d_weight_grad_images(x, gy, geo, 1, (3, 3))
    np.testing.assert_allclose(dw, dw_want, **_tol(np.float32))


@pytest.mark.parametrize("case", IMPLICIT_CASES)
def test_implicit_forward_and_flipped_input_gradient(case, monkeypatch):
    """Stride-1 forwards read the padded input in place (microgemm.conv_rows) and stride-1
    input gradients run as such forwards of gy; both against the float64 reference."""
    shape, wshape, stride, pads, dilation, groups = case
    geo = (stride[0], stride[1], pads[0][0], pads[1][0], dilation[0], dilation[1])
    out_w = shape[3] + sum(pads[1]) - dilation[1] * (wshape[3] - 1)
    assert conv_images._implicit(np.float32, geo, wshape[0] // groups, out_w) == (
        microgemm.available()
    )
    flipped = conv_images._as_forward(np.zeros(wshape, np.float32), geo, groups, shape)
    low = (dilation[0] * (wshape[2] - 1) - pads[0][0], dilation[1] * (wshape[3] - 1) - pads[1][0])
    assert (flipped is not None) == (microgemm.available() and min(low) >= 0)
    test_kernels_match_the_float64_reference(case, np.float32)
    test_kernels_match_the_float64_reference(case, np.float64)  # float64: OpenBLAS
    monkeypatch.setattr(conv_images, "_implicit", lambda *a: False)
    test_kernels_match_the_float64_reference(case, np.float32)


@pytest.mark.parametrize("k_chunk", [16, 128])
@pytest.mark.parametrize("case", PIXEL_CASES)
def test_channels_last_forward_by_output_pixels(case, k_chunk, monkeypatch):
    """Forwards whose output rows are blocks of 8 (8x8 layers, stride 2) read a channels-last
    copy (microgemm.conv_pixels); against the float64 reference, with chunks of K that leave
    a remainder, and the same shapes on the im2col path."""
    shape, wshape, stride, pads, dilation, groups = case
    out_w = (shape[3] + sum(pads[1]) - dilation[1] * (wshape[3] - 1) - 1) // stride[1] + 1
    assert conv_images._pixels(np.float32, groups, wshape[0], out_w, wshape[2:]) == (
        microgemm.available()
    )
    monkeypatch.setattr(conv_images, "_K_CHUNK", k_chunk)
    test_kernels_match_the_float64_reference(case, np.float32)
    monkeypatch.setattr(conv_images, "_pixels", lambda *a: False)
    test_kernels_match_the_float64_reference(case, np.float32)


def test_which_forwards_read_output_pixels():
    if not microgemm.available():
        pytest.skip("no AVX-512: no micro-kernel paths")
    f32 = np.float32
    assert conv_images._pixels(f32, 1, 64, 8, (3, 3))
    assert conv_images._pixels(f32, 1, 48, 16, (2, 1))
    assert not conv_images._pixels(f32, 2, 64, 8, (3, 3))  # groups
    assert not conv_images._pixels(f32, 1, 64, 12, (3, 3))  # rows not blocks of 8
    assert not conv_images._pixels(f32, 1, 40, 8, (3, 3))  # channels not blocks of 16
    assert not conv_images._pixels(f32, 1, 16, 8, (3, 3))  # fewer than 32 channels
    assert not conv_images._pixels(f32, 1, 64, 8, (1, 1))  # a 1x1 projection
    assert not conv_images._pixels(np.float64, 1, 64, 8, (3, 3))


def test_channels_last_forward_non_contiguous_and_threads(monkeypatch):
    """Strided x, several threads each with its own channels-last copy and output buffer."""
    monkeypatch.setattr(conv_images, "max_blocks", lambda: 3)
    monkeypatch.setattr(conv_images, "PARALLEL_MIN", 0)
    rng = np.random.default_rng(8)
    base = rng.standard_normal((7, 64, 8, 9)).astype(np.float32)
    x = base.transpose(0, 1, 3, 2)[:, ::2, :8]  # (7, 32, 8, 8), strided
    w = (rng.standard_normal((32, 32, 3, 3)) / 16).astype(np.float32)
    pads, geo = ((1, 1), (1, 1)), (1, 1, 1, 1, 1, 1)
    want = ref_conv(x, w, (1, 1), pads, (1, 1), 1)
    got = conv_images.conv2d_images(x, w, geo, 1, (8, 8))
    np.testing.assert_allclose(got, want, **_tol(np.float32))
    gy = rng.standard_normal(want.shape).astype(np.float32)
    dx_want, _ = ref_grads(x, w, gy, (1, 1), pads, (1, 1), 1)
    dx = conv_images.conv2d_data_grad_images(gy, w, geo, 1, x.shape)
    np.testing.assert_allclose(dx, dx_want, **_tol(np.float32))


def test_images_split_over_more_threads_than_cores(monkeypatch):
    """Blocks of images on several threads, each with its own buffer and weight-grad sum."""
    blocks = []
    real = conv_images.run_blocks
    monkeypatch.setattr(
        conv_images,
        "run_blocks",
        lambda fn, rows, b, chunks: blocks.append(b) or real(fn, rows, b, chunks),
    )
    real_job = conv_images._jobs.run  # float32 kernels run as GIL-free jobs where they can
    monkeypatch.setattr(
        conv_images._jobs,
        "run",
        lambda fn, a, rows, b, chunks: blocks.append(b) or real_job(fn, a, rows, b, chunks),
    )
    monkeypatch.setattr(conv_images, "max_blocks", lambda: 3)
    monkeypatch.setattr(conv_images, "PARALLEL_MIN", 0)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((7, 5, 9, 8)).astype(np.float32)
    w = rng.standard_normal((6, 5, 3, 3)).astype(np.float32)
    pads = ((1, 1), (1, 1))
    want = ref_conv(x, w, (1, 1), pads, (1, 1), 1)
    geo = (1, 1, 1, 1, 1, 1)
    np.testing.assert_allclose(
        conv_images.conv2d_images(x, w, geo, 1, (9, 8)), want, **_tol(x.dtype)
    )
    gy = rng.standard_normal(want.shape).astype(np.float32)
    dx_want, dw_want = ref_grads(x, w, gy, (1, 1), pads, (1, 1), 1)
    dx = conv_images.conv2d_data_grad_images(gy, w, geo, 1, x.shape)
    dw = conv_images.conv2d_weight_grad_images(x, gy, geo, 1, (3, 3))
    np.testing.assert_allclose(dx, dx_want, **_tol(x.dtype))
    np.testing.assert_allclose(dw, dw_want, **_tol(x.dtype))
    assert blocks == [3, 3, 3]


def test_small_convolutions_stay_on_the_calling_thread(monkeypatch):
    monkeypatch.setattr(conv_images, "max_blocks", lambda: 2)
    monkeypatch.setattr(conv_images, "run_blocks", lambda *a, **k: pytest.fail("handed off"))
    x = np.ones((4, 2, 5, 5), np.float32)
    out = conv_images.conv2d_images(x, np.ones((3, 2, 3, 3), np.float32), (1,) * 6, 1, (5, 5))
    assert out[0, 0, 2, 2] == 18 and out[0, 0, 0, 0] == 8


@pytest.fixture
def spy(monkeypatch):
    """Counts the per-image kernel calls, so a test knows which path the op took."""
    calls = []
    for name in ("conv2d_images", "conv2d_data_grad_images", "conv2d_weight_grad_images"):
        real = getattr(conv_images, name)

        def wrapped(*a, _real=real, _name=name, **k):
            calls.append(_name)
            return _real(*a, **k)

        monkeypatch.setattr(conv_images, name, wrapped)
    return calls


OP_CASES = [  # x shape, keyword arguments of ops.conv2d, reference stride/pads/dilation
    ((4, 4, 9, 7), {"stride": 2, "pad_mode": "same"}, (2, 2), ((1, 1), (1, 1)), (1, 1)),
    (
        (3, 4, 8, 8),
        {"pad_mode": "pad", "padding": (1, 2, 0, 3), "dilation": 2, "groups": 2},
        (1, 1),
        ((1, 2), (0, 3)),
        (2, 2),
    ),  # fmt: skip
    ((2, 4, 6, 6), {"pad_mode": "valid"}, (1, 1), ((0, 0), (0, 0)), (1, 1)),
]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("case", OP_CASES)
def test_op_runs_the_per_image_kernels(case, dtype, spy, monkeypatch):
    monkeypatch.setattr(_rows, "max_blocks", lambda: 2)
    shape, kw, stride, pads, dilation = case
    groups = kw.get("groups", 1)
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape).astype(dtype)
    w = (rng.standard_normal((6, shape[1] // groups, 3, 3)) / 3).astype(dtype)
    want = ref_conv(x, w, stride, pads, dilation, groups)
    gy = rng.standard_normal(want.shape).astype(dtype)
    out, pull = ops.vjp(lambda a, b: ops.conv2d(a, b, **kw), Tensor(x), Tensor(w))
    dx, dw = pull(Tensor(gy))
    assert out.dtype == Tensor(x).dtype and dx.dtype == out.dtype and dw.dtype == out.dtype
    tol = {"rtol": 2e-2, "atol": 2e-2} if dtype == "float16" else _tol(np.dtype(dtype))
    np.testing.assert_allclose(out.asnumpy(), want, **tol)
    dx_want, dw_want = ref_grads(x, w, gy, stride, pads, dilation, groups)
    np.testing.assert_allclose(dx.asnumpy(), dx_want, **tol)
    np.testing.assert_allclose(dw.asnumpy(), dw_want, **{k: v * 4 for k, v in tol.items()})
    assert spy == ["conv2d_images", "conv2d_data_grad_images", "conv2d_weight_grad_images"]


def test_non_contiguous_input_and_conv1d(spy, monkeypatch):
    monkeypatch.setattr(_rows, "max_blocks", lambda: 2)
    rng = np.random.default_rng(3)
    base = rng.standard_normal((3, 8, 10, 5)).astype(np.float32)
    x = base.transpose(0, 1, 3, 2)[:, ::2]  # (3, 4, 5, 10), strided in every axis but N
    w = rng.standard_normal((5, 4, 2, 3)).astype(np.float32)
    got = ops.conv2d(Tensor(x), Tensor(w), stride=(1, 2), pad_mode="pad", padding=1)
    want = ref_conv(x, w, (1, 2), ((1, 1), (1, 1)), (1, 1), 1)
    np.testing.assert_allclose(got.asnumpy(), want, **_tol(np.float32))
    x1 = rng.standard_normal((2, 3, 11)).astype(np.float32)
    w1 = rng.standard_normal((4, 3, 3)).astype(np.float32)
    got1 = ops.conv1d(Tensor(x1), Tensor(w1), stride=2, pad_mode="pad", padding=(2, 1), dilation=2)
    want1 = ref_conv(x1[:, :, None], w1[:, :, None], (1, 2), ((0, 0), (2, 1)), (1, 2), 1)[:, :, 0]
    np.testing.assert_allclose(got1.asnumpy(), want1, **_tol(np.float32))
    assert spy == ["conv2d_images", "conv2d_images"]


def test_batch_below_the_thread_count_takes_the_batch_wide_path(spy, monkeypatch):
    monkeypatch.setattr(_rows, "max_blocks", lambda: 2)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 3, 6, 6)).astype(np.float32)
    w = rng.standard_normal((2, 3, 3, 3)).astype(np.float32)
    got = ops.conv2d(Tensor(x), Tensor(w), pad_mode="pad", padding=1)
    np.testing.assert_allclose(
        got.asnumpy(), ref_conv(x, w, (1, 1), ((1, 1),) * 2, (1, 1), 1), **_tol(np.float32)
    )
    assert spy == []


@pytest.mark.parametrize("groups", [1, 2])
def test_numerical_gradients_on_the_per_image_path(groups, spy, monkeypatch):
    monkeypatch.setattr(_rows, "max_blocks", lambda: 2)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 4, 5, 6))
    w = rng.standard_normal((4, 4 // groups, 3, 2))

    def fn(a, b):
        return ops.conv2d(a, b, stride=(2, 1), pad_mode="pad", padding=(1, 0, 2, 1), groups=groups)

    check_grad(fn, [x, w])
    assert "conv2d_weight_grad_images" in spy


def test_implicit_paths_on_several_threads(monkeypatch):
    """Each thread has its own padded buffer (borders zero across its images)."""
    monkeypatch.setattr(conv_images, "max_blocks", lambda: 3)
    monkeypatch.setattr(conv_images, "PARALLEL_MIN", 0)
    rng = np.random.default_rng(6)
    x = rng.standard_normal((7, 8, 5, 16)).astype(np.float32)
    w = rng.standard_normal((8, 8, 3, 3)).astype(np.float32)
    pads, geo = ((1, 1), (1, 1)), (1, 1, 1, 1, 1, 1)
    want = ref_conv(x, w, (1, 1), pads, (1, 1), 1)
    got = conv_images.conv2d_images(x, w, geo, 1, want.shape[2:])
    np.testing.assert_allclose(got, want, **_tol(np.float32))
    gy = rng.standard_normal(want.shape).astype(np.float32)
    dx_want, _ = ref_grads(x, w, gy, (1, 1), pads, (1, 1), 1)
    dx = conv_images.conv2d_data_grad_images(gy, w, geo, 1, x.shape)
    np.testing.assert_allclose(dx, dx_want, **_tol(np.float32))


PADDED_CASES = [  # float32 forwards whose output channels are padded to blocks of 8 rows
    # 9 out -> 16 rows (a block written in place, one through the scratch), pads, rows of 32
    ((2, 9, 5, 32), (9, 9, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    # 5 out -> 8 rows (no block in place), batch 1, 3 in, dilation, one-sided pads
    ((1, 3, 6, 32), (5, 3, 3, 3), (1, 1), ((2, 0), (1, 1)), (2, 1), 1),
    # groups of 9 out -> 16 rows each, 6 in per group, a 2x3 kernel
    ((2, 12, 5, 32), (18, 6, 2, 3), (1, 1), ((0, 1), (1, 1)), (1, 1), 2),
    # not padded: rows of 16 (18 out), stride 2 (18 out), 8x8 (36 out): OpenBLAS
    ((2, 9, 4, 16), (18, 9, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    ((2, 9, 16, 16), (18, 9, 3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), 1),
    ((1, 36, 8, 8), (36, 36, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
]


def test_which_channel_counts_are_padded():
    """Up to the next block of 8 rows when that at most doubles the work, on rows of whole
    blocks of 32 output pixels only."""
    assert [conv_images._padded(c, 8) for c in (1, 3, 4, 5, 8, 9, 18, 36)] == [
        1, 3, 8, 8, 8, 16, 24, 40
    ]  # fmt: skip
    if not microgemm.available():
        pytest.skip("no AVX-512: no micro-kernel paths")
    one = (1, 1, 1, 1, 1, 1)
    assert conv_images._implicit(np.float32, one, 9, 32)
    assert conv_images._implicit(np.float32, one, 18, 64)
    assert not conv_images._implicit(np.float32, one, 18, 16)  # rows of 16 pixels
    assert not conv_images._implicit(np.float32, one, 3, 32)  # 3 -> 8: stays on OpenBLAS
    assert not conv_images._pixels(np.float32, 1, 36, 8, (3, 3))


@pytest.mark.parametrize("case", PADDED_CASES)
def test_padded_channels_match_the_float64_reference(case, monkeypatch):
    """Odd channel counts (zero weights up to the block, the extra outputs dropped where
    padded) against the float64 reference, and unpadded (OpenBLAS) alike."""
    test_kernels_match_the_float64_reference(case, np.float32)
    monkeypatch.setattr(conv_images, "_padded", lambda count, block: count)
    test_kernels_match_the_float64_reference(case, np.float32)


def test_padded_rows_on_several_threads(monkeypatch):
    """Each thread has its own scratch block for the padded rows; strided x."""
    monkeypatch.setattr(conv_images, "max_blocks", lambda: 3)
    monkeypatch.setattr(conv_images, "PARALLEL_MIN", 0)
    rng = np.random.default_rng(9)
    base = rng.standard_normal((7, 22, 5, 32)).astype(np.float32)
    x = base[:, ::2]  # (7, 11, 5, 32), strided
    w = (rng.standard_normal((13, 11, 3, 3)) / 10).astype(np.float32)
    pads, geo = ((1, 1), (1, 1)), (1, 1, 1, 1, 1, 1)
    assert conv_images._implicit(np.float32, geo, 13, 32) == microgemm.available()
    want = ref_conv(x, w, (1, 1), pads, (1, 1), 1)
    got = conv_images.conv2d_images(x, w, geo, 1, want.shape[2:])
    np.testing.assert_allclose(got, want, **_tol(np.float32))


FLAT_CASES = [  # stride 1, rows not blocks of 16 or 8: the padded rows as one run
    # LeNet-5's 6->16 5x5 layer (no padding, 10x10 out, rows of 14)
    ((3, 6, 14, 14), (16, 6, 5, 5), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),
    # batch 1, groups of 8 out, dilation over rows, one-sided pads
    ((1, 8, 9, 13), (16, 4, 3, 3), (1, 1), ((1, 2), (0, 1)), (2, 1), 2),
    # 12 out (a block of 8 and 4 zero rows), pads of 1, rows of 20 in runs of 22
    ((2, 5, 12, 20), (12, 5, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
]


@pytest.mark.parametrize("case", FLAT_CASES)
def test_flat_forward_matches_the_float64_reference(case, monkeypatch):
    """Stride-1 forwards whose rows fit no block read the padded planes as one run
    (positions past each row's end computed and dropped), against the float64 reference
    and against im2col."""
    shape, wshape, stride, pads, dilation, groups = case
    geo = (stride[0], stride[1], pads[0][0], pads[1][0], dilation[0], dilation[1])
    out_h = shape[2] + sum(pads[0]) - dilation[0] * (wshape[2] - 1)
    out_w = shape[3] + sum(pads[1]) - dilation[1] * (wshape[3] - 1)
    run = conv_images._flat(np.float32, geo, wshape[2:], wshape[0] // groups, shape, (out_h, out_w))
    assert (run > 0) == microgemm.available() and run % 32 == 0
    test_kernels_match_the_float64_reference(case, np.float32)
    monkeypatch.setattr(conv_images, "_flat", lambda *a: 0)
    test_kernels_match_the_float64_reference(case, np.float32)


def test_which_forwards_run_flat():
    if not microgemm.available():
        pytest.skip("no AVX-512: no micro-kernel paths")
    one, flat = (1, 1, 0, 0, 1, 1), conv_images._flat
    assert flat(np.float32, one, (5, 5), 16, (64, 6, 14, 14), (10, 10)) == 160  # 10 x 14
    assert not flat(np.float32, one, (5, 5), 6, (64, 1, 32, 32), (28, 28))  # 8*32 > 1.5*6*28
    assert not flat(np.float64, one, (5, 5), 16, (64, 6, 14, 14), (10, 10))
    assert not flat(np.float32, (2, 2, 0, 0, 1, 1), (5, 5), 16, (64, 6, 23, 23), (10, 10))
    assert not flat(np.float32, one, (3, 3), 16, (1, 6, 7, 5), (5, 3))  # 15 outputs


def test_flat_forward_on_several_threads(monkeypatch):
    """Each thread has its own padded planes (border and tail zero) and wide output."""
    monkeypatch.setattr(conv_images, "max_blocks", lambda: 3)
    monkeypatch.setattr(conv_images, "PARALLEL_MIN", 0)
    rng = np.random.default_rng(11)
    x = rng.standard_normal((7, 6, 14, 14)).astype(np.float32)
    w = (rng.standard_normal((16, 6, 5, 5)) / 10).astype(np.float32)
    pads, geo = ((1, 1), (1, 1)), (1, 1, 1, 1, 1, 1)
    want = ref_conv(x, w, (1, 1), pads, (1, 1), 1)
    got = conv_images.conv2d_images(x, w, geo, 1, want.shape[2:])
    np.testing.assert_allclose(got, want, **_tol(np.float32))
