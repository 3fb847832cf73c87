"""Resizing (``interpolate``), padding (``pad``, ``padding``) and local response normalization."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ..._primitive import Primitive, ShapedArray
from ...errors import check_int, op_error
from ...tensor import Tensor
from .._elementwise import pow, square
from .._indexing import getitem
from ._common import _LAYOUT, Pads, _check_ndim, _float, _ints, _tensor

# ---- resizing ---------------------------------------------------------------------------


def _resize_taps(n: int, o: int, mode: str, ctm: str) -> tuple[np.ndarray, np.ndarray]:
    """(o, K) source indices and weights mapping an axis of length n to length o: one tap
    (nearest) or the two linear taps floor(src) and floor(src) + 1 (clamped), as PyTorch."""
    i = np.arange(o, dtype=np.float64)
    if ctm == "align_corners":
        src = i * (n - 1) / (o - 1) if o > 1 else np.zeros(o)
    elif ctm == "half_pixel":
        src = (i + 0.5) * n / o - 0.5 if o > 1 else np.zeros(o)
    else:  # asymmetric
        src = i * n / o
    if mode == "nearest":
        idx = np.floor(src) if ctm == "asymmetric" else np.floor(src + 0.5)
        return np.clip(idx, 0, n - 1).astype(np.int64)[:, None], np.ones((o, 1))
    src = np.clip(src, 0, n - 1)
    i0 = np.floor(src).astype(np.int64)
    i1 = np.minimum(i0 + 1, n - 1)
    lam = src - i0
    return np.stack([i0, i1], 1), np.stack([1 - lam, lam], 1)


Taps = tuple[tuple[int, ...], ...]


@functools.lru_cache(maxsize=64)
def _dense(idx: Taps, w: tuple[tuple[float, ...], ...], n: int) -> np.ndarray:
    m = np.zeros((len(idx), n))
    for r, (ii, ww) in enumerate(zip(idx, w)):
        np.add.at(m[r], list(ii), list(ww))
    return m


def _taps_abstract(x: ShapedArray, *, axis: int, idx: Taps, w: Any, n: int) -> ShapedArray:
    return ShapedArray(x.shape[:axis] + (len(idx),) + x.shape[axis + 1 :], x.dtype)


def _taps_impl(xp: Any, x: Any, *, axis: int, idx: Taps, w: Any, n: int) -> Any:
    """A product with the dense (o, n) matrix when x is finite (fast: one BLAS call); else a
    gather per tap, so a NaN/inf reaches only the outputs whose taps read it (the matrix's
    zeros would spread it everywhere: 0 * NaN = NaN)."""
    last = axis == x.ndim - 1
    single = all(len(r) == 1 for r in idx) and all(v == 1.0 for r in w for v in r)
    if not single and bool(xp.isfinite(x).all()):
        m = xp.asarray(_dense(idx, w, n), dtype=x.dtype)
        return x @ m.T if last else m @ x
    ia, wa = np.asarray(idx), np.asarray(w)
    wshape = (-1,) + (1,) * (x.ndim - 1 - axis)
    out = None
    for k in range(ia.shape[1]):
        term = xp.take(x, xp.asarray(ia[:, k]), axis=axis)
        if not np.all(wa[:, k] == 1.0):
            term = term * xp.asarray(wa[:, k].reshape(wshape), dtype=x.dtype)
        out = term if out is None else out + term
    return out


def _transpose_taps(idx: Taps, w: Any, n: int) -> tuple[Taps, Any]:
    """The taps of the transposed map (input j gathers from the outputs that read it); a
    row with fewer taps repeats its last one with the weight split, one with none reads 0."""
    rows: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    for i, (ii, ww) in enumerate(zip(idx, w)):
        for j, v in zip(ii, ww):
            rows[j].append((i, v))
    width = max(1, max(len(r) for r in rows))
    t_idx, t_w = [], []
    for r in rows:
        if not r:
            r = [(0, 0.0)]
        extra = width - len(r)
        last = (r[-1][0], r[-1][1] / (extra + 1))
        r = r[:-1] + [last] * (extra + 1)
        t_idx.append(tuple(int(a) for a, _ in r))
        t_w.append(tuple(float(b) for _, b in r))
    return tuple(t_idx), tuple(t_w)


def _taps_vjp(g: Tensor, x: Tensor, *, out: Tensor, axis: int, idx: Taps, w: Any, n: int) -> Any:
    t_idx, t_w = _transpose_taps(idx, w, n)
    return taps_p.bind(g, axis=axis, idx=t_idx, w=t_w, n=len(idx))


taps_p = Primitive("resample_taps", "opaque", _taps_abstract, impl=_taps_impl, vjp=_taps_vjp)


def _apply_taps(x: Tensor, axis: int, idx: np.ndarray, w: np.ndarray) -> Tensor:
    """out[.., i, ..] = sum_k w[i, k] * x[.., idx[i, k], ..] along ``axis`` (one of the last
    two): see ``_taps_impl``."""
    ax = axis % x.ndim
    return taps_p.bind(
        x,
        axis=ax,
        idx=tuple(tuple(int(v) for v in r) for r in idx),
        w=tuple(tuple(float(v) for v in r) for r in w),
        n=int(x.shape[ax]),
    )


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
    i*n/o. Each axis is a gather of its one or two source taps, weighted.
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
    out = _apply_taps(t, -1, *_resize_taps(t.shape[-1], new[-1], kind, ctm))
    if naxes == 2:
        out = _apply_taps(out, -2, *_resize_taps(t.shape[-2], new[0], kind, ctm))
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
