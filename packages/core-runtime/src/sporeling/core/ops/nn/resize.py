"""Resizing (``interpolate``), padding (``pad``, ``padding``) and local response normalization."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..._primitive import Primitive, ShapedArray
from ...errors import check_int, op_error
from ...tensor import Tensor
from .._elementwise import pow, square
from .._indexing import getitem
from .._matmul import matmul
from ._common import _LAYOUT, Pads, _check_ndim, _const, _float, _ints, _tensor

# ---- resizing ---------------------------------------------------------------------------


def _resize_matrix(n: int, o: int, mode: str, ctm: str) -> np.ndarray:
    """(o, n) matrix mapping an axis of length n to length o (linear or nearest)."""
    i = np.arange(o, dtype=np.float64)
    if ctm == "align_corners":
        src = i * (n - 1) / (o - 1) if o > 1 else np.zeros(o)
    elif ctm == "half_pixel":
        src = (i + 0.5) * n / o - 0.5 if o > 1 else np.zeros(o)
    else:  # asymmetric
        src = i * n / o
    m = np.zeros((o, n))
    rows = np.arange(o)
    if mode == "nearest":
        idx = np.floor(src) if ctm == "asymmetric" else np.floor(src + 0.5)
        m[rows, np.clip(idx, 0, n - 1).astype(np.int64)] = 1.0
        return m
    src = np.clip(src, 0, n - 1)
    i0 = np.floor(src).astype(np.int64)
    i1 = np.minimum(i0 + 1, n - 1)
    lam = src - i0
    np.add.at(m, (rows, i0), 1 - lam)
    np.add.at(m, (rows, i1), lam)
    return m


def interpolate(
    x: Any,
    roi: Any = None,
    scales: Any = None,
    sizes: Any = None,
    coordinate_transformation_mode: str = "align_corners",
    mode: str = "linear",
) -> Tensor:
    """Resize the last axis ("linear", 3-d x) or the last two ("bilinear", 4-d x); "nearest"
    takes either. Give ``sizes`` (new lengths of the resized axes) or ``scales`` (one per
    axis of x). ``coordinate_transformation_mode``: "align_corners", "half_pixel" or
    "asymmetric" map output index i to input coordinate i*(n-1)/(o-1), (i+0.5)*n/o-0.5 or
    i*n/o. Each axis is a constant interpolation matrix applied with ``matmul``.
    """
    op = "interpolate"
    t = _float(op, "x", x)
    if mode not in ("linear", "bilinear", "nearest"):
        raise op_error(op, "mode", mode, "'linear', 'bilinear' or 'nearest'")
    ndim = {"linear": (3,), "bilinear": (4,), "nearest": (3, 4)}[mode]
    _check_ndim(op, "x", t, ndim, "N, C, W" if t.ndim == 3 else "N, C, H, W")
    if coordinate_transformation_mode not in ("align_corners", "half_pixel", "asymmetric"):
        raise op_error(
            op,
            "coordinate_transformation_mode",
            coordinate_transformation_mode,
            "'align_corners', 'half_pixel' or 'asymmetric'",
        )
    if roi is not None:
        raise op_error(op, "roi", roi, "None (crop_and_resize is not supported)")
    naxes = t.ndim - 2
    if (scales is None) == (sizes is None):
        raise ValueError(f"{op}: give exactly one of 'scales' and 'sizes'")
    if sizes is not None:
        new = _ints(op, "sizes", sizes, naxes)
        if not isinstance(sizes, (tuple, list)) or len(sizes) != naxes:
            raise op_error(op, "sizes", sizes, f"a tuple of {naxes} positive ints")
    else:
        if (
            not isinstance(scales, (tuple, list))
            or len(scales) != t.ndim
            or any(not isinstance(v, (int, float)) or v <= 0 for v in scales)
        ):
            raise op_error(op, "scales", scales, f"a tuple of {t.ndim} positive floats")
        if any(v != 1 for v in scales[:2]):
            raise op_error(op, "scales", scales, "1.0 for the batch and channel axes")
        new = tuple(int(math.floor(n * s)) for n, s in zip(t.shape[2:], scales[2:]))
        if any(v < 1 for v in new):
            raise op_error(op, "scales", scales, "scales giving output sizes >= 1")
    kind = "nearest" if mode == "nearest" else "linear"
    ctm = coordinate_transformation_mode
    mw = _const(t, _resize_matrix(t.shape[-1], new[-1], kind, ctm).T)
    out = matmul(t, mw)
    if naxes == 2:
        mh = _const(t, _resize_matrix(t.shape[-2], new[0], kind, ctm))
        out = matmul(mh, out)
    return out


# ---- padding ---------------------------------------------------------------------------


def _pad_abstract(x: ShapedArray, *, pads: Pads) -> ShapedArray:
    return ShapedArray(tuple(n + lo + hi for n, (lo, hi) in zip(x.shape, pads)), x.dtype)


pad_p = Primitive(
    "pad",
    "movement",
    _pad_abstract,
    impl=lambda xp, x, *, pads: xp.pad(x, pads),
    vjp=lambda g, x, *, out, pads: getitem(
        g, tuple(slice(lo, lo + n) for n, (lo, _) in zip(x.shape, pads))
    ),
)


def pad(input_x: Any, paddings: Any) -> Tensor:
    """Zero-pad each dimension by ``paddings[d] = (before, after)``.

    >>> pad(Tensor([[1.0]]), ((1, 0), (0, 2))).tolist()
    [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]
    """
    op = "pad"
    x = _tensor(op, "input_x", input_x)
    try:
        pads = tuple((int(a), int(b)) for a, b in paddings)
        ok = len(pads) == x.ndim and all(
            not isinstance(v, bool) and isinstance(v, (int, np.integer))
            for p in paddings
            for v in p
        )
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise op_error(
            op,
            "paddings",
            paddings,
            f"a tuple of {x.ndim} (before, after) pairs of ints",
            TypeError,
        )
    if any(v < 0 for p in pads for v in p):
        raise op_error(op, "paddings", paddings, "non-negative paddings")
    if all(p == (0, 0) for p in pads):
        return x
    return pad_p.bind(x, pads=pads)


def padding(x: Any, pad_dim_size: int = 8) -> Tensor:
    """Extend a last dimension of size 1 to ``pad_dim_size`` with zeros (MindSpore's
    ``Padding``): out[..., 0] = x[..., 0], the rest 0."""
    op = "padding"
    t = _tensor(op, "x", x)
    if t.ndim < 1 or t.shape[-1] != 1:
        raise op_error(op, "x", t, "a tensor whose last dimension is 1")
    size = check_int(op, "pad_dim_size", pad_dim_size, 1)
    return pad(t, ((0, 0),) * (t.ndim - 1) + ((0, size - 1),))


# ---- local response normalization --------------------------------------------------------


def lrn(
    x: Any,
    depth_radius: int = 5,
    bias: float = 1.0,
    alpha: float = 1.0,
    beta: float = 0.5,
    norm_region: str = "ACROSS_CHANNELS",
) -> Tensor:
    """Local response normalization across channels of (N, C, H, W):
    out = x / (bias + alpha * sum_{|c'-c| <= depth_radius} x[c']**2) ** beta."""
    op = "lrn"
    t = _float(op, "x", x)
    _check_ndim(op, "x", t, (4,), _LAYOUT[2])
    r = check_int(op, "depth_radius", depth_radius, 0)
    if norm_region != "ACROSS_CHANNELS":
        raise op_error(op, "norm_region", norm_region, "'ACROSS_CHANNELS'")
    for name, v in (("bias", bias), ("alpha", alpha), ("beta", beta)):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise op_error(op, name, v, "a float", TypeError)
    c = t.shape[1]
    sq = pad(square(t), ((0, 0), (r, r), (0, 0), (0, 0)))
    total = getitem(sq, (slice(None), slice(0, c)))
    for k in range(1, 2 * r + 1):
        total = total + getitem(sq, (slice(None), slice(k, k + c)))
    return t * pow(total * float(alpha) + float(bias), -float(beta))
