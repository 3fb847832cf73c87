"""Tests for ``ops.nn``: convolutions, pooling, resizing, padding, sampling, decoding, dropout.

References are plain float64 loops over output positions (slow and obviously correct).
The ``device`` fixture runs every record on the CPU (Numba kernels) and on the GPU
stand-in (the generic ``xp`` path), so the two implementations are checked against the
same references; ``test_cpu_matches_generic`` compares them directly on odd sizes.
"""

import itertools
import math

import numpy as np
import pytest

from sporeling.core import Tensor, ops
from sporeling_testing import OpRecord, check_backward, check_forward, check_grad, records_params

# ---- naive references -------------------------------------------------------------------


def conv_ref(x, w, stride, pads, dilation, groups=1):
    nd = x.ndim - 2
    xp_ = np.pad(x, ((0, 0), (0, 0)) + tuple(pads))
    n, c = x.shape[:2]
    cout, cg = w.shape[:2]
    k = w.shape[2:]
    out_sp = [(xp_.shape[2 + i] - dilation[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(nd)]
    out = np.zeros((n, cout, *out_sp))
    og = cout // groups
    for o in range(cout):
        g = o // og
        for pos in itertools.product(*(range(s) for s in out_sp)):
            win = tuple(
                slice(p * s, p * s + d * (kk - 1) + 1, d)
                for p, s, d, kk in zip(pos, stride, dilation, k)
            )
            patch = xp_[(slice(None), slice(g * cg, (g + 1) * cg)) + win]
            out[(slice(None), o) + pos] = np.sum(patch * w[o], axis=tuple(range(1, nd + 2)))
    return out


def conv_transpose_ref(g, w, stride, pads, dilation, in_sp, groups=1):
    """dx of conv: scatter each output gradient back over its window."""
    nd = g.ndim - 2
    n, cout = g.shape[:2]
    cg = w.shape[1]
    k = w.shape[2:]
    padded = [s + lo + hi for s, (lo, hi) in zip(in_sp, pads)]
    buf = np.zeros((n, cg * groups, *padded))
    og = cout // groups
    for o in range(cout):
        grp = o // og
        for pos in itertools.product(*(range(s) for s in g.shape[2:])):
            win = tuple(
                slice(p * s, p * s + d * (kk - 1) + 1, d)
                for p, s, d, kk in zip(pos, stride, dilation, k)
            )
            gv = g[(slice(None), o) + pos].reshape((n,) + (1,) * (nd + 1))
            buf[(slice(None), slice(grp * cg, (grp + 1) * cg)) + win] += gv * w[o]
    crop = tuple(slice(lo, lo + s) for s, (lo, _) in zip(in_sp, pads))
    return buf[(slice(None), slice(None)) + crop]


def pool_ref(x, k, s, pads, d, kind, bounds=None):
    nd = x.ndim - 2
    sp = x.shape[2:]
    out_sp = [
        (sp[i] + pads[i][0] + pads[i][1] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(nd)
    ]
    out = np.zeros(x.shape[:2] + tuple(out_sp))
    for pos in itertools.product(*(range(o) for o in out_sp)):
        idx = [[p * s[i] - pads[i][0] + j * d[i] for j in range(k[i])] for i, p in enumerate(pos)]
        idx = [[v for v in ax if 0 <= v < sp[i]] for i, ax in enumerate(idx)]
        win = x[(slice(None), slice(None)) + np.ix_(*idx)].reshape(x.shape[:2] + (-1,))
        if kind == "max":
            out[(slice(None), slice(None)) + pos] = win.max(-1)
        else:
            cnt = 1
            for i, p in enumerate(pos):
                start = p * s[i] - pads[i][0]
                lo, hi = (0, sp[i]) if bounds is None else bounds[i]
                cnt *= min(start + k[i], hi) - max(start, lo)
            out[(slice(None), slice(None)) + pos] = win.sum(-1) / cnt
    return out


def bilinear_ref(img, y, x):
    """Sample a (C, H, W) image at float (y, x) with zero outside."""
    c, h, w = img.shape
    y0, x0 = math.floor(y), math.floor(x)
    v = np.zeros(c)
    for yy, xx in ((y0, x0), (y0, x0 + 1), (y0 + 1, x0), (y0 + 1, x0 + 1)):
        if 0 <= yy < h and 0 <= xx < w:
            v += img[:, yy, xx] * (1 - abs(y - yy)) * (1 - abs(x - xx))
    return v


def grid_sample_ref(x, grid, align_corners):
    n, c, h, w = x.shape
    out = np.zeros((n, c) + grid.shape[1:3])
    for b, i, j in itertools.product(range(n), range(grid.shape[1]), range(grid.shape[2])):
        gx, gy = grid[b, i, j]
        if align_corners:
            ix, iy = (gx + 1) / 2 * (w - 1), (gy + 1) / 2 * (h - 1)
        else:
            ix, iy = ((gx + 1) * w - 1) / 2, ((gy + 1) * h - 1) / 2
        out[b, :, i, j] = bilinear_ref(x[b], iy, ix)
    return out


def deform_ref(x, w, off, k, stride, pad4, dil, dg):
    n, c, h, wd = x.shape
    cout = w.shape[0]
    ho, wo = off.shape[2:]
    kk = k[0] * k[1]
    off = off.reshape(n, 3, dg, kk, ho, wo)
    out = np.zeros((n, cout, ho, wo))
    cpg = c // dg
    for b, i, j in itertools.product(range(n), range(ho), range(wo)):
        col = np.zeros((c, kk))
        for g, t in itertools.product(range(dg), range(kk)):
            ki, kj = divmod(t, k[1])
            py = i * stride[0] - pad4[0] + ki * dil[0] + off[b, 1, g, t, i, j]
            px = j * stride[1] - pad4[2] + kj * dil[1] + off[b, 0, g, t, i, j]
            v = bilinear_ref(x[b, g * cpg : (g + 1) * cpg], py, px)
            col[g * cpg : (g + 1) * cpg, t] = v * off[b, 2, g, t, i, j]
        out[b, :, i, j] = np.einsum("ock,ck->o", w.reshape(cout, c, kk), col)
    return out


def resize_ref(x, new, ctm, kind):
    """Separable resize of the trailing len(new) axes, one output coordinate at a time."""
    out = x
    for ax_off, o in enumerate(new):
        axis = x.ndim - len(new) + ax_off
        n = out.shape[axis]
        rows = []
        for i in range(o):
            if ctm == "align_corners":
                src = i * (n - 1) / (o - 1) if o > 1 else 0.0
            elif ctm == "half_pixel":
                src = (i + 0.5) * n / o - 0.5 if o > 1 else 0.0
            else:
                src = i * n / o
            if kind == "nearest":
                j = math.floor(src) if ctm == "asymmetric" else math.floor(src + 0.5)
                rows.append(np.take(out, min(max(j, 0), n - 1), axis=axis))
                continue
            src = min(max(src, 0.0), n - 1)
            j0 = int(math.floor(src))
            j1 = min(j0 + 1, n - 1)
            lam = src - j0
            rows.append(np.take(out, j0, axis=axis) * (1 - lam) + np.take(out, j1, axis=axis) * lam)
        out = np.stack(rows, axis=axis)
    return out


def same(sp, k, s, d=None):
    d = d or (1,) * len(sp)
    pads = []
    for n, kk, ss, dd in zip(sp, k, s, d):
        out = -(-n // ss)
        total = max((out - 1) * ss + dd * (kk - 1) + 1 - n, 0)
        pads.append((total // 2, total - total // 2))
    return tuple(pads)


# ---- records -------------------------------------------------------------------------------


def distinct(rng, shape, dtype):
    n = int(np.prod(shape))
    return (rng.permutation(n).reshape(shape) * 0.37 - n * 0.15).astype(dtype)


def offsets_maker(rng, shape, dtype):
    """Deformable offsets/masks kept off integer sampling positions (bilinear kinks)."""
    base = rng.integers(-1, 2, shape) + rng.choice([0.2, 0.35, 0.65, 0.8], shape)
    return base.astype(dtype)


def grid_maker(rng, shape, dtype):
    return (rng.random(shape) * 1.6 - 0.8).astype(dtype)


F32_TOL = {"float32": (1e-4, 1e-4)}

RECORDS = [
    OpRecord(
        "conv2d_valid",
        lambda x, w: ops.conv2d(x, w),
        lambda x, w: conv_ref(x, w, (1, 1), ((0, 0), (0, 0)), (1, 1)),
        [((2, 3, 5, 6), (4, 3, 3, 2))],
        tol=F32_TOL,
        order=2,
    ),
    OpRecord(
        "conv2d_stride_pad_dil_groups",
        lambda x, w: ops.conv2d(
            x, w, stride=(2, 1), pad_mode="pad", padding=(1, 0, 2, 1), dilation=(1, 2), groups=2
        ),
        lambda x, w: conv_ref(x, w, (2, 1), ((1, 0), (2, 1)), (1, 2), 2),
        [((2, 4, 7, 5), (6, 2, 3, 2))],
        tol=F32_TOL,
        order=2,
    ),
    OpRecord(
        "conv2d_same",
        lambda x, w: ops.conv2d(x, w, stride=2, pad_mode="same"),
        lambda x, w: conv_ref(x, w, (2, 2), same((7, 6), (3, 3), (2, 2)), (1, 1)),
        [((1, 2, 7, 6), (3, 2, 3, 3))],
        tol=F32_TOL,
    ),
    OpRecord(
        "conv2d_bias",
        lambda x, w, b: ops.conv2d(x, w, b, pad_mode="pad", padding=1),
        lambda x, w, b: conv_ref(x, w, (1, 1), ((1, 1), (1, 1)), (1, 1)) + b[None, :, None, None],
        [((1, 2, 4, 4), (3, 2, 3, 3), (3,))],
        tol=F32_TOL,
    ),
    OpRecord(
        "conv2d_depthwise",
        lambda x, w: ops.conv2d(x, w, pad_mode="pad", padding=1, groups=3),
        lambda x, w: conv_ref(x, w, (1, 1), ((1, 1), (1, 1)), (1, 1), 3),
        [((2, 3, 5, 4), (6, 1, 3, 3))],
        tol=F32_TOL,
    ),
    OpRecord(
        "conv1d",
        lambda x, w: ops.conv1d(x, w, stride=2, pad_mode="pad", padding=(2, 1), dilation=2),
        lambda x, w: conv_ref(x, w, (2,), ((2, 1),), (2,)),
        [((2, 3, 9), (4, 3, 3))],
        tol=F32_TOL,
        order=2,
    ),
    OpRecord(
        "conv3d",
        lambda x, w: ops.conv3d(x, w, stride=(1, 2, 1), pad_mode="same"),
        lambda x, w: conv_ref(x, w, (1, 2, 1), same((4, 5, 3), (2, 3, 2), (1, 2, 1)), (1, 1, 1)),
        [((1, 2, 4, 5, 3), (2, 2, 2, 3, 2))],
        tol=F32_TOL,
    ),
    OpRecord(
        "conv2d_transpose",
        lambda g, w: ops.conv2d_transpose(
            g, w, stride=2, pad_mode="pad", padding=1, output_padding=1
        ),
        lambda g, w: conv_transpose_ref(g, w, (2, 2), ((1, 1), (1, 1)), (1, 1), (6, 8)),
        [((2, 3, 3, 4), (3, 2, 3, 3))],
        tol=F32_TOL,
        order=2,
    ),
    OpRecord(
        "conv2d_transpose_groups",
        lambda g, w: ops.conv2d_transpose(g, w, groups=2, pad_mode="same", stride=2),
        lambda g, w: conv_transpose_ref(
            g, w, (2, 2), same((6, 4), (2, 3), (2, 2)), (1, 1), (6, 4), 2
        ),
        [((1, 4, 3, 2), (4, 1, 2, 3))],
        tol=F32_TOL,
    ),
    OpRecord(
        "unfold",
        lambda x: ops.unfold(x, (2, 3), dilation=(2, 1), padding=1, stride=(1, 2)),
        lambda x: conv_ref(
            np.repeat(x, 6, axis=1),
            np.eye(6)[np.tile(np.arange(6), 2)].reshape(12, 1, 2, 3),
            (1, 2),
            ((1, 1), (1, 1)),
            (2, 1),
            12,
        ).reshape(2, 12, -1),
        [((2, 2, 5, 6),)],
    ),
    OpRecord(
        "col2im",
        lambda c: ops.col2im(c, (5, 6), (2, 3), (2, 1), 1, (1, 2)),
        lambda c: (
            conv_transpose_ref(
                c.reshape(2, 12, 5, 3),
                np.eye(6)[np.tile(np.arange(6), 2)].reshape(12, 1, 2, 3),
                (1, 2),
                ((1, 1), (1, 1)),
                (2, 1),
                (5, 6),
                12,
            )
            .reshape(2, 2, 6, 5, 6)
            .sum(2)
        ),
        [((2, 2, 6, 15),)],
    ),
    OpRecord(
        "max_pool2d",
        lambda x: ops.max_pool2d(x, 3, 2, padding=1),
        lambda x: pool_ref(x, (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), "max"),
        [((2, 3, 7, 6),)],
        make=distinct,
        dtypes=("float16", "float32", "float64", "int32"),
    ),
    OpRecord(
        "max_pool2d_dilated_ceil",
        lambda x: ops.max_pool2d(x, (2, 3), (2, 1), dilation=(2, 1), ceil_mode=True),
        lambda x: pool_ref(x, (2, 3), (2, 1), ((0, 1), (0, 0)), (2, 1), "max"),
        [((1, 2, 8, 5),)],
        make=distinct,
    ),
    OpRecord(
        "max_pool1d",
        lambda x: ops.max_pool1d(x, 2, 1, padding=1),
        lambda x: pool_ref(x, (2,), (1,), ((1, 1),), (1,), "max"),
        [((2, 3, 6),)],
        make=distinct,
    ),
    OpRecord(
        "max_pool3d",
        lambda x: ops.max_pool3d(x, 2, (1, 2, 2)),
        lambda x: pool_ref(x, (2, 2, 2), (1, 2, 2), ((0, 0),) * 3, (1, 1, 1), "max"),
        [((1, 2, 3, 4, 5),)],
        make=distinct,
    ),
    OpRecord(
        "avg_pool2d_valid",
        lambda x: ops.avg_pool2d(x, (2, 3), (2, 1)),
        lambda x: pool_ref(x, (2, 3), (2, 1), ((0, 0), (0, 0)), (1, 1), "avg"),
        [((2, 3, 7, 6),)],
        dtypes=("float16", "float32", "float64"),
    ),
    OpRecord(
        "avg_pool2d_same",
        lambda x: ops.avg_pool2d(x, 3, 2, "same"),
        lambda x: pool_ref(x, (3, 3), (2, 2), same((6, 5), (3, 3), (2, 2)), (1, 1), "avg"),
        [((2, 2, 6, 5),)],
    ),
    OpRecord(
        "avg_pool2d_nhwc",
        lambda x: ops.avg_pool2d(x, 2, 2, data_format="NHWC"),
        lambda x: pool_ref(
            x.transpose(0, 3, 1, 2), (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1), "avg"
        ).transpose(0, 2, 3, 1),
        [((1, 4, 4, 3),)],
    ),
    OpRecord(
        "avg_pool1d",
        lambda x: ops.avg_pool1d(x, 3, 2, padding=1),
        lambda x: pool_ref(x, (3,), (2,), ((1, 1),), (1,), "avg", bounds=[(-1, 8)]),
        [((2, 3, 7),)],
    ),
    OpRecord(
        "adaptive_avg_pool2d",
        lambda x: ops.adaptive_avg_pool2d(x, (3, None)),
        lambda x: np.stack([x[..., a:b, :].mean(-2) for a, b in ((0, 3), (2, 5), (4, 7))], -2),
        [((2, 3, 7, 4),), ((3, 7, 5),)],
    ),
    OpRecord(
        "adaptive_max_pool2d",
        lambda x: ops.adaptive_max_pool2d(x, (2, 3)),
        lambda x: np.stack(
            [
                np.stack([x[..., a:b, c:d].max((-1, -2)) for c, d in ((0, 2), (1, 3), (2, 4))], -1)
                for a, b in ((0, 3), (2, 5))
            ],
            -2,
        ),
        [((2, 3, 5, 4),)],
        make=distinct,
    ),
    OpRecord(
        "interpolate_linear",
        lambda x: ops.interpolate(x, sizes=(7,)),
        lambda x: resize_ref(x, (7,), "align_corners", "linear"),
        [((2, 3, 4),)],
    ),
    OpRecord(
        "interpolate_bilinear_half_pixel",
        lambda x: ops.interpolate(
            x, sizes=(5, 3), coordinate_transformation_mode="half_pixel", mode="bilinear"
        ),
        lambda x: resize_ref(x, (5, 3), "half_pixel", "linear"),
        [((1, 2, 3, 4),)],
    ),
    OpRecord(
        "interpolate_bilinear_scales",
        lambda x: ops.interpolate(
            x,
            scales=(1.0, 1.0, 2.0, 1.5),
            coordinate_transformation_mode="asymmetric",
            mode="bilinear",
        ),
        lambda x: resize_ref(x, (6, 6), "asymmetric", "linear"),
        [((1, 2, 3, 4),)],
    ),
    OpRecord(
        "interpolate_nearest",
        lambda x: ops.interpolate(
            x, sizes=(5, 7), coordinate_transformation_mode="asymmetric", mode="nearest"
        ),
        lambda x: resize_ref(x, (5, 7), "asymmetric", "nearest"),
        [((1, 2, 3, 4),)],
    ),
    OpRecord(
        "pad",
        lambda x: ops.pad(x, ((1, 0), (0, 2), (3, 1))),
        lambda x: np.pad(x, ((1, 0), (0, 2), (3, 1))),
        [((2, 3, 2),)],
        dtypes=("float32", "float64", "int32"),
    ),
    OpRecord(
        "padding", lambda x: ops.padding(x, 4), lambda x: np.pad(x, ((0, 0), (0, 3))), [((3, 1),)]
    ),
    OpRecord(
        "lrn",
        lambda x: ops.lrn(x, 2, 1.5, 0.3, 0.75),
        lambda x: (
            x
            / (
                1.5
                + 0.3
                * sum(
                    np.pad(x * x, ((0, 0), (2, 2), (0, 0), (0, 0)))[:, k : k + 5] for k in range(5)
                )
            )
            ** 0.75
        ),
        [((2, 5, 3, 2),)],
        order=2,
    ),
    OpRecord(
        "grid_sample",
        lambda x, g: ops.grid_sample(x, g),
        lambda x, g: grid_sample_ref(x, g, False),
        [((2, 2, 4, 5), (2, 3, 2, 2))],
        make=[lambda r, s, d: r.standard_normal(s).astype(d), grid_maker],
    ),
    OpRecord(
        "grid_sample_align",
        lambda x, g: ops.grid_sample(x, g, align_corners=True),
        lambda x, g: grid_sample_ref(x, g, True),
        [((1, 3, 5, 4), (1, 2, 3, 2))],
        make=[lambda r, s, d: r.standard_normal(s).astype(d), grid_maker],
    ),
    OpRecord(
        "deformable_conv2d",
        lambda x, w, o: ops.deformable_conv2d(
            x, w, o, (2, 2), (1, 1, 1, 2), (1, 0, 1, 1), deformable_groups=2
        ),
        lambda x, w, o: deform_ref(x, w, o, (2, 2), (1, 2), (1, 0, 1, 1), (1, 1), 2),
        [((1, 4, 4, 5), (3, 4, 2, 2), (1, 24, 4, 3))],
        make=[lambda r, s, d: r.standard_normal(s).astype(d)] * 2 + [offsets_maker],
        tol=F32_TOL,
    ),
]


@pytest.mark.parametrize("rec,dtype", records_params(RECORDS))
def test_forward(rec, dtype, device):
    check_forward(rec, dtype, device)


@pytest.mark.parametrize("rec", records_params([r for r in RECORDS if r.grad], dtypes=False))
def test_backward(rec, device):
    check_backward(rec, device)


# ---- CPU kernels against the generic path ---------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cpu_matches_generic(dtype):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 5, 11, 9)).astype(dtype)
    w = rng.standard_normal((10, 1, 3, 4)).astype(dtype)
    g = rng.standard_normal((3, 10, 6, 3)).astype(dtype)

    def run(device):
        xt, wt, gt = (Tensor(a, device=device) for a in (x, w, g))
        kw = {
            "stride": (2, 2),
            "pad_mode": "pad",
            "padding": (1, 2, 0, 3),
            "dilation": (1, 2),
            "groups": 5,
        }
        out = ops.conv2d(xt, wt, **kw)
        _, pull = ops.vjp(lambda a, b: ops.conv2d(a, b, **kw), xt, wt)
        dx, dw = pull(gt)
        mp, idx = ops.max_pool2d(xt, 3, 2, 1, return_indices=True)
        ap = ops.avg_pool2d(xt, 3, 2, "same")
        _, pull_m = ops.vjp(lambda a: ops.max_pool2d(a, 3, 2, 1), xt)
        _, pull_a = ops.vjp(lambda a: ops.avg_pool2d(a, 3, 2, "same"), xt)
        gm = Tensor(np.random.default_rng(4).standard_normal(mp.shape).astype(dtype), device=device)
        return [t.asnumpy() for t in (out, dx, dw, mp, idx, ap, pull_m(gm)[0], pull_a(gm)[0])]

    tol = 1e-4 if dtype == "float32" else 1e-12
    for a, b in zip(run("CPU"), run("GPU")):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_max_pool_indices_and_ties():
    x = Tensor(np.array([[[[1.0, 3.0, 3.0], [0.0, 2.0, 1.0]]]]))
    out, idx = ops.max_pool2d(x, (2, 2), 1, return_indices=True)
    assert out.tolist() == [[[[3.0, 3.0]]]]
    assert idx.tolist() == [[[[1, 1]]]]  # the first maximum wins
    assert idx.dtype == "int64"
    g = ops.grad(lambda t: ops.reduce_sum(ops.max_pool2d(t, (2, 2), 1)))(x)
    assert g.tolist() == [[[[0.0, 2.0, 0.0], [0.0, 0.0, 0.0]]]]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("stride", [(2, 2), (1, 1), (2, 1)])
def test_max_pool_2x2_fast_path_matches_general_kernel(dtype, stride):
    """The unrolled 2x2 kernel (no padding or dilation) returns the general kernel's values
    and indices: first maximum on ties, first NaN, infinities of both signs."""
    from sporeling.core.kernels.cpu import pool

    rng = np.random.default_rng(3)
    x = rng.integers(-3, 4, (3, 2, 9, 8)).astype(dtype)  # many ties
    flat = x.reshape(-1)
    for value in (np.nan, np.inf, -np.inf, -0.0):  # -0.0 ties 0.0: the first one's bits
        flat[rng.choice(flat.size, 25, replace=False)] = value
    oh, ow = (9 - 2) // stride[0] + 1, (8 - 2) // stride[1] + 1
    got_v, got_i = pool.max_pool2d(x, (2, 2), stride, (0, 0), (1, 1), (oh, ow))
    want_v = np.empty((3, 2, oh, ow), dtype)
    want_i = np.empty((3, 2, oh, ow), np.int64)
    pool._max_pool_kernel(x, want_v, want_i, 2, 2, *stride, 0, 0, 1, 1)
    np.testing.assert_array_equal(got_v, want_v)  # NaN == NaN here
    np.testing.assert_array_equal(np.signbit(got_v), np.signbit(want_v))
    np.testing.assert_array_equal(got_i, want_i)


def test_max_pool_second_order():
    x = distinct(np.random.default_rng(0), (1, 2, 4, 4), "float64")
    check_grad(lambda t: ops.max_pool2d(t, 2) * ops.max_pool2d(t, 2), [x])


def test_conv2d_transpose_is_conv2d_data_gradient():
    rng = np.random.default_rng(1)
    x = Tensor(rng.standard_normal((2, 4, 9, 8)))
    w = Tensor(rng.standard_normal((6, 2, 3, 3)))
    kw = {"stride": 2, "pad_mode": "same", "groups": 2}
    y, pull = ops.vjp(lambda a: ops.conv2d(a, w, **kw), x)
    g = Tensor(rng.standard_normal(y.shape))
    got = ops.conv2d_transpose(g, w, input_size=x.shape, **kw)
    np.testing.assert_allclose(got.asnumpy(), pull(g)[0].asnumpy(), rtol=1e-12, atol=1e-12)


def test_deformable_zero_offsets_is_conv2d():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 4, 6, 5))
    w = rng.standard_normal((4, 2, 3, 3))
    off = np.zeros((2, 27, 4, 2))
    off[:, 18:] = 1.0
    got = ops.deformable_conv2d(
        Tensor(x), Tensor(w), Tensor(off), (3, 3), (1, 1, 1, 2), (0, 0, 1, 0), groups=2
    )
    want = ops.conv2d(
        Tensor(x), Tensor(w), stride=(1, 2), pad_mode="pad", padding=(0, 0, 1, 0), groups=2
    )
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-12, atol=1e-12)


# ---- non-differentiable and random ops ------------------------------------------------------


def test_ctc_greedy_decoder(device):
    logits = np.full((4, 2, 3), -1.0, np.float32)
    best = [[0, 0, 2, 1], [1, 2, 1, 1]]  # class 2 is the blank
    for t in range(4):
        for b in range(2):
            logits[t, b, best[b][t]] = 2.0 + t
    idx, vals, shape, logp = ops.ctc_greedy_decoder(
        Tensor(logits, device=device), Tensor(np.array([4, 3], np.int32), device=device)
    )
    assert idx.tolist() == [[0, 0], [0, 1], [1, 0], [1, 1]]
    assert vals.tolist() == [0, 1, 1, 1]
    assert shape.tolist() == [2, 2]
    np.testing.assert_allclose(logp.asnumpy(), [[-14.0], [-9.0]])
    _, vals2, _, _ = ops.ctc_greedy_decoder(
        Tensor(logits), Tensor(np.array([4, 4], np.int32)), merge_repeated=False
    )
    assert vals2.tolist() == [0, 0, 1, 1, 1, 1]


def test_uniform_candidate_sampler():
    tc = Tensor(np.array([[1], [3], [4], [6], [3]], np.int32))
    s, te, se = ops.uniform_candidate_sampler(tc, 1, 3, False, 7, seed=5)
    assert s.shape == (3,) and te.shape == (5, 1) and se.shape == (3,)
    assert s.dtype == "int32" and te.dtype == "float32"
    np.testing.assert_allclose(te.asnumpy(), 3 / 7)
    u, _, se_u = ops.uniform_candidate_sampler(tc, 1, 5, True, 8, seed=1)
    assert len(set(u.tolist())) == 5 and all(0 <= v < 8 for v in u.tolist())
    assert 0 < se_u.asnumpy()[0] <= 1
    r, _, _ = ops.uniform_candidate_sampler(tc, 1, 4, True, 8, remove_accidental_hits=True)
    assert not set(r.tolist()) & {1, 3, 4, 6}
    again, _, _ = ops.uniform_candidate_sampler(tc, 1, 3, False, 7, seed=5)
    assert again.tolist() == s.tolist()


@pytest.mark.parametrize(
    "fn,shape", [(ops.dropout2d, (4, 6, 3, 2)), (ops.dropout3d, (3, 5, 2, 2, 2))]
)
def test_channel_dropout(fn, shape, device):
    from sporeling.core.random_state import set_seed

    set_seed(7)
    x = Tensor(np.ones(shape, np.float32), device=device)
    out, mask = fn(x, 0.4)
    m = mask.asnumpy()
    assert mask.dtype == "bool" and m.shape == shape
    per_channel = m.reshape(shape[0], shape[1], -1)
    assert np.all(per_channel.all(-1) | ~per_channel.any(-1))  # whole channels
    np.testing.assert_allclose(out.asnumpy(), m / 0.6, rtol=1e-6)
    g = ops.grad(lambda t: ops.reduce_sum(fn(t, 0.4)[0] * 2.0))
    set_seed(7)
    np.testing.assert_allclose(g(x).asnumpy(), m * 2 / 0.6, rtol=1e-6)
    zero, _ = fn(x, 1.0)
    assert not zero.asnumpy().any()


# ---- errors -------------------------------------------------------------------------------


def t(*shape):
    return Tensor(np.zeros(shape, np.float32))


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda: ops.conv2d(t(1, 3, 5, 5), t(4, 2, 3, 3)), ValueError, "conv2d.*weight.*input"),
        (lambda: ops.conv2d(t(1, 4, 5, 5), t(4, 2, 3, 3), groups=3), ValueError, "conv2d.*groups"),
        (lambda: ops.conv2d(t(3, 5, 5), t(4, 3, 3, 3)), ValueError, "conv2d.*input.*4-d"),
        (lambda: ops.conv2d(t(1, 3, 5, 5), t(4, 3, 3, 3), stride=0), ValueError, "conv2d.*stride"),
        (
            lambda: ops.conv2d(t(1, 3, 5, 5), t(4, 3, 3, 3), stride=(1, 2, 3)),
            TypeError,
            "conv2d.*stride",
        ),
        (
            lambda: ops.conv2d(t(1, 3, 5, 5), t(4, 3, 3, 3), pad_mode="full"),
            ValueError,
            "conv2d.*pad_mode",
        ),
        (
            lambda: ops.conv2d(t(1, 3, 5, 5), t(4, 3, 3, 3), padding=1),
            ValueError,
            "conv2d.*padding",
        ),
        (lambda: ops.conv2d(t(1, 3, 2, 2), t(4, 3, 3, 3)), ValueError, "conv2d.*input.*too small"),
        (lambda: ops.conv2d(t(1, 3, 5, 5), t(4, 3, 3, 3), t(3)), ValueError, "conv2d.*bias"),
        (lambda: ops.conv2d(np.zeros((1, 3, 5, 5)), t(4, 3, 3, 3)), TypeError, "conv2d.*input"),
        (lambda: ops.conv1d(t(1, 3, 5), t(4, 2, 3)), ValueError, "conv1d.*weight"),
        (lambda: ops.conv3d(t(1, 3, 5, 5), t(4, 3, 3, 3, 3)), ValueError, "conv3d.*input"),
        (
            lambda: ops.conv2d_transpose(t(1, 3, 4, 4), t(4, 2, 3, 3)),
            ValueError,
            "conv2d_transpose.*weight",
        ),
        (lambda: ops.max_pool2d(t(1, 1, 4, 4), 0), ValueError, "max_pool2d.*kernel_size"),
        (lambda: ops.max_pool2d(t(1, 1, 4, 4), 2, padding=2), ValueError, "max_pool2d.*padding"),
        (lambda: ops.max_pool2d(t(1, 4, 4), 2), ValueError, "max_pool2d.*x.*4-d"),
        (lambda: ops.max_pool3d(t(1, 1, 4, 4), 2), ValueError, "max_pool3d.*x"),
        (lambda: ops.avg_pool2d(t(1, 1, 4, 4), 2, 2, "pad"), ValueError, "avg_pool2d.*pad_mode"),
        (lambda: ops.avg_pool2d(t(1, 1, 4, 4), (2, 2, 2)), TypeError, "avg_pool2d.*kernel_size"),
        (
            lambda: ops.avg_pool2d(t(1, 1, 4, 4), 2, data_format="NDHW"),
            ValueError,
            "avg_pool2d.*data_format",
        ),
        (
            lambda: ops.adaptive_avg_pool2d(t(1, 1, 4, 4), 0),
            ValueError,
            "adaptive_avg_pool2d.*output_size",
        ),
        (lambda: ops.adaptive_max_pool2d(t(4, 4), 2), ValueError, "adaptive_max_pool2d.*input_x"),
        (lambda: ops.interpolate(t(1, 2, 3, 4), sizes=(5,)), ValueError, "interpolate.*x"),
        (
            lambda: ops.interpolate(t(1, 2, 3), sizes=(5,), scales=(1.0, 1.0, 2.0)),
            ValueError,
            "interpolate.*scales.*sizes",
        ),
        (
            lambda: ops.interpolate(t(1, 2, 3), sizes=(5,), mode="cubic"),
            ValueError,
            "interpolate.*mode",
        ),
        (lambda: ops.pad(t(2, 3), ((1, 1),)), TypeError, "pad.*paddings"),
        (lambda: ops.pad(t(2, 3), ((1, 1), (-1, 0))), ValueError, "pad.*paddings"),
        (lambda: ops.padding(t(2, 3)), ValueError, "padding.*x"),
        (lambda: ops.lrn(t(2, 3, 4)), ValueError, "lrn.*x"),
        (lambda: ops.lrn(t(1, 2, 3, 4), norm_region="WITHIN"), ValueError, "lrn.*norm_region"),
        (lambda: ops.grid_sample(t(1, 2, 3, 4), t(1, 2, 2, 3)), ValueError, "grid_sample.*grid"),
        (
            lambda: ops.grid_sample(t(1, 2, 3, 4), t(1, 2, 2, 2), padding_mode="reflection"),
            ValueError,
            "grid_sample.*padding_mode",
        ),
        (
            lambda: ops.deformable_conv2d(
                t(1, 2, 4, 4), t(3, 2, 2, 2), t(1, 8, 3, 3), (2, 2), (1, 1, 1, 1), (0, 0, 0, 0)
            ),
            ValueError,
            "deformable_conv2d.*offsets",
        ),
        (
            lambda: ops.deformable_conv2d(
                t(1, 2, 4, 4), t(3, 2, 2, 2), t(1, 12, 3, 3), (2, 2), (2, 1, 1, 1), (0, 0, 0, 0)
            ),
            ValueError,
            "deformable_conv2d.*strides",
        ),
        (lambda: ops.col2im(t(1, 2, 4, 5), (4, 4), 2, 1, 0, 1), ValueError, "col2im.*input_x"),
        (lambda: ops.unfold(t(1, 2, 4), 2), ValueError, "unfold.*input"),
        (
            lambda: ops.ctc_greedy_decoder(t(3, 2, 4), Tensor(np.array([3, 4], np.int32))),
            ValueError,
            "ctc_greedy_decoder.*sequence_length",
        ),
        (
            lambda: ops.uniform_candidate_sampler(Tensor(np.array([[1]])), 1, 5, True, 3),
            ValueError,
            "uniform_candidate_sampler.*num_sampled",
        ),
        (lambda: ops.dropout2d(t(1, 2, 3, 4), 1.5), ValueError, "dropout2d.*p"),
        (lambda: ops.dropout3d(t(1, 2, 3, 4), 0.5), ValueError, "dropout3d.*x"),
    ],
)
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
