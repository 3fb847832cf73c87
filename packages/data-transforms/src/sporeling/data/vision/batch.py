"""Batch-level vision ops: one call transforms a whole batch, with random parameters drawn
separately for every sample, in one Numba pass.

- `MixUpBatch(alpha=1.0)` and `CutMixBatch(image_batch_format, alpha=1.0, prob=1.0)` follow
  MindSpore 1.8 (`mindspore.dataset.vision`): images N-HWC or N-CHW, labels one-hot
  (N, C) or (N, L, C), returned as float32 and mixed with the images' weights.
- `BatchRandomResizedCrop`, `BatchRandomHorizontalFlip` and `BatchRandomColorAdjust` are
  the batched forms of RandomResizedCrop / RandomHorizontalFlip / RandomColorAdjust, with
  the same arguments and per-sample draws (torchvision's v2 transforms draw one set of
  parameters for a whole batch tensor). `BatchRandomResizedCrop` also takes a list of
  images of different sizes, so `batch(32, per_batch_map=BatchRandomResizedCrop(224))`
  turns decoded images straight into one N-HWC array.

Each op works eagerly (`op(images)` / `op(images, labels)`), in `map` after `batch`, and
as `batch(..., per_batch_map=op)`: when the last argument is MindSpore's `BatchInfo` (it has
`get_batch_num`), the op returns a tuple (one entry per column) and draws from a stream
keyed by (seed, op, epoch, batch number), so the parameters of a batch do not depend on
which worker runs it. Otherwise each op draws from its own generator, seeded from
`sporeling.data.config.get_seed()` and re-seeded when that seed changes.

Example:
    >>> import numpy as np
    >>> from sporeling.data.vision.batch import CutMixBatch, MixUpBatch
    >>> images = np.zeros((4, 8, 8, 3), np.uint8)
    >>> labels = np.eye(4, dtype=np.float32)
    >>> out_images, out_labels = MixUpBatch(alpha=0.4)(images, labels)
    >>> out_images.shape, out_labels.dtype, bool(np.allclose(out_labels.sum(1), 1))
    ((4, 8, 8, 3), dtype('float32'), True)
    >>> CutMixBatch("NHWC")(images, labels)[1].shape
    (4, 4)
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from sporeling.data import config
from sporeling.data.transforms._base import TensorOperation, to_numpy
from sporeling.data.vision import _batch_kernels as _k
from sporeling.data.vision.kernels import layout as klayout

__all__ = [
    "BatchRandomColorAdjust",
    "BatchRandomHorizontalFlip",
    "BatchRandomResizedCrop",
    "CutMixBatch",
    "MixUpBatch",
]

_FLOAT32_MAX = float(np.finfo(np.float32).max)


# --------------------------------------------------------------------------- arguments


def _enum_name(value: Any, enum: str, allowed: tuple[str, ...], op: str, arg: str) -> str:
    """Accept an enum member (by its name, from any module) or its name as a string."""
    name = getattr(value, "name", value)
    if isinstance(name, str) and name.upper() in allowed:
        return name.upper()
    raise TypeError(
        f"{op}: argument {arg} must be {enum}.{' or {enum}.'.join(allowed)}, got {value!r}"
    )


def _number(value: Any, op: str, arg: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{op}: argument {arg} must be a float, got {type(value).__name__}")
    return float(value)


def _positive(value: Any, op: str, arg: str) -> float:
    v = _number(value, op, arg)
    if not 0.0 < v <= _FLOAT32_MAX:
        raise ValueError(f"{op}: argument {arg} must be in (0, {_FLOAT32_MAX:g}], got {v}")
    return v


def _prob(value: Any, op: str, arg: str = "prob") -> float:
    v = _number(value, op, arg)
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"{op}: argument {arg} must be in [0.0, 1.0], got {v}")
    return v


def _pair(value: Any, op: str, arg: str) -> tuple[float, float]:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise TypeError(f"{op}: argument {arg} must be a sequence of 2 numbers, got {value!r}")
    lo, hi = (_number(v, op, arg) for v in value)
    return lo, hi


def _size(value: Any, op: str) -> tuple[int, int]:
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        h = w = int(value)
    elif (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in value)
    ):
        h, w = int(value[0]), int(value[1])
    else:
        raise TypeError(
            f"{op}: argument size must be an int or a sequence of 2 ints (height, width), "
            f"got {value!r}"
        )
    if h <= 0 or w <= 0:
        raise ValueError(f"{op}: argument size must be positive, got {value!r}")
    return h, w


def _jitter_range(value: Any, op: str, arg: str, center: float, bound: float | None):
    """RandomColorAdjust's factor ranges: x -> [max(0, c - x), c + x], or a (lo, hi) pair."""
    if isinstance(value, (list, tuple)):
        lo, hi = _pair(value, op, arg)
    else:
        x = _number(value, op, arg)
        if x < 0:
            raise ValueError(f"{op}: argument {arg} must be non-negative, got {x}")
        lo, hi = center - x, center + x
        if bound is None:
            lo = max(lo, 0.0)
    if bound is None:
        if not 0.0 <= lo <= hi:
            raise ValueError(f"{op}: argument {arg} must satisfy 0 <= min <= max, got {value!r}")
    elif not -bound <= lo <= hi <= bound:
        raise ValueError(
            f"{op}: argument {arg} must satisfy -{bound} <= min <= max <= {bound}, got {value!r}"
        )
    return lo, hi


# ------------------------------------------------------------------------------ random


class _BatchOp(TensorOperation):
    """Common machinery: BatchInfo handling and the random stream of one batch."""

    _op_index: int  # set by Transform.__new__

    def _batch_rng(self, batch_info: Any) -> np.random.Generator:
        """Keyed by (seed, op, epoch, batch) under per_batch_map with a seed set; else the
        stream of the current pipeline row when there is one, else the op's own stream."""
        if batch_info is not None and config._seed_is_set():
            epoch = int(batch_info.get_epoch_num())
            batch = int(batch_info.get_batch_num())
            return np.random.default_rng([config.get_seed(), self._op_index, epoch, batch, 0xBA7C])
        from sporeling.data.engine._rng import current_rng

        rng = current_rng()
        return rng if rng is not None else self._rng()

    def __call__(self, *args: Any) -> Any:
        batch_info = None
        if args and hasattr(args[-1], "get_batch_num"):
            batch_info, args = args[-1], args[:-1]
        # PIL images (e.g. a per_batch_map after Decode(to_pil=True)) become arrays.
        args = tuple([to_numpy(x) for x in a] if isinstance(a, list) else to_numpy(a) for a in args)
        out = self._execute_numpy(*args, batch_info=batch_info)
        if batch_info is not None and not isinstance(out, tuple):
            return (out,)
        return out

    def _execute_numpy(self, *args: Any, batch_info: Any = None) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define _execute_numpy()")

    # -- input helpers

    def _batch_array(self, images: Any, arg: str = "images") -> np.ndarray:
        name = type(self).__name__
        if isinstance(images, (list, tuple)):
            try:
                images = np.stack([np.asarray(im) for im in images])
            except ValueError as exc:
                raise ValueError(
                    f"{name}: the {arg} of a batch must share one shape to be stacked: {exc}"
                ) from None
        images = np.asarray(images)
        if images.dtype.kind not in "uif":
            raise TypeError(f"{name}: {arg} must be numeric, got dtype {images.dtype}")
        return images


def _int_bounds(dtype: np.dtype) -> tuple[float, float, bool]:
    if dtype.kind in "ui":
        info = np.iinfo(dtype)
        return float(info.min), float(info.max), True
    return 0.0, 0.0, False


def _hwc_view(images: np.ndarray, fmt: str) -> np.ndarray:
    """(N, H, W, C) view of an N-HWC, N-CHW or (N, H, W) batch."""
    if images.ndim == 3:
        return images[..., None]
    return images.transpose(0, 2, 3, 1) if fmt == "NCHW" else images


def _check_labels(op: str, images: np.ndarray, labels: Any) -> np.ndarray:
    labels = np.asarray(labels)
    if labels.dtype.kind not in "uifb":
        raise TypeError(
            f"{op}: invalid label type, label must be numeric, got {labels.dtype}. "
            "You may need to perform OneHot first."
        )
    if labels.ndim not in (2, 3):
        raise ValueError(
            f"{op}: wrong labels shape {labels.shape}: labels must be one-hot and batched, "
            "of shape (N, C) or (N, L, C). You may need to perform OneHot and Batch first."
        )
    if labels.shape[0] != images.shape[0]:
        raise ValueError(
            f"{op}: batch sizes of image and label must be the same, got image batch "
            f"{images.shape[0]} and label batch {labels.shape[0]}"
        )
    return labels.astype(np.float32)


def _mix_labels(labels: np.ndarray, perm: np.ndarray, lam: np.ndarray) -> np.ndarray:
    w = lam.astype(np.float32).reshape((-1,) + (1,) * (labels.ndim - 1))
    return w * labels + (np.float32(1.0) - w) * labels[perm]


# ------------------------------------------------------------------------- MixUp, CutMix


class MixUpBatch(_BatchOp):
    """MixUp on a batch (MindSpore 1.8 `vision.MixUpBatch`): each image is blended with a
    random partner of the same batch, `lam * x[i] + (1 - lam) * x[perm[i]]`, and its one-hot
    label likewise; `lam ~ Beta(alpha, alpha)`.

    Args:
        alpha: Beta distribution parameter, > 0 (default 1.0).
        per_sample: MindSpore draws one `lam` per batch (the default, False); True draws one
            per sample. The partners always come from one random permutation.

    Call with `(images, labels)`: images (N, H, W, C) or (N, C, H, W), C in {1, 3}; labels
    one-hot (N, num_classes) or (N, L, num_classes). Returns images (same dtype, rounded and
    saturated for integers) and float32 labels.
    """

    def __init__(self, alpha: float = 1.0, *, per_sample: bool = False) -> None:
        self.alpha = _positive(alpha, "MixUpBatch", "alpha")
        self.per_sample = bool(per_sample)

    def _execute_numpy(self, *args: Any, batch_info: Any = None) -> Any:
        op = "MixUpBatch"
        if len(args) != 2:
            raise ValueError(
                f"{op}: expects 2 inputs (images, labels), got {len(args)}; "
                "check input_columns when calling this operation"
            )
        images = self._batch_array(args[0])
        if images.ndim != 4:
            raise ValueError(
                f"{op}: rank of the images must be 4 (N, H, W, C) or (N, C, H, W), got shape "
                f"{images.shape}; make sure the images are batched before calling {op}"
            )
        if images.shape[1] not in (1, 3) and images.shape[3] not in (1, 3):
            raise ValueError(
                f"{op}: images must be N-HWC or N-CHW with 1 or 3 channels, got "
                f"shape {images.shape}"
            )
        labels = _check_labels(op, images, args[1])
        n = images.shape[0]
        rng = self._batch_rng(batch_info)
        perm = rng.permutation(n)
        lam = rng.beta(self.alpha, self.alpha, size=n if self.per_sample else 1)
        lam = np.broadcast_to(lam, (n,)).astype(np.float64)
        flat = np.ascontiguousarray(images).reshape(n, -1)
        out = np.empty_like(flat)
        lo, hi, is_int = _int_bounds(images.dtype)
        _k._mixup_kernel(flat, perm, lam, out, lo, hi, is_int)
        return out.reshape(images.shape), _mix_labels(labels, perm, lam)


class CutMixBatch(_BatchOp):
    """CutMix on a batch (MindSpore 1.8 `vision.CutMixBatch`): with probability `prob`, each
    sample gets a box from a random partner pasted in; its label becomes
    `a * y[i] + (1 - a) * y[perm[i]]` with `a` = 1 - box area / image area.

    Per sample: `lam ~ Beta(alpha, alpha)`, box of `sqrt(1 - lam)` times the height and
    width centred on a uniform point and clamped to the image (at least 1x1), as MindSpore's
    `GetCropBox`. Sources are the unmodified input images.

    Args:
        image_batch_format: `ImageBatchFormat.NHWC` or `ImageBatchFormat.NCHW` (or "NHWC",
            "NCHW").
        alpha: Beta distribution parameter, > 0 (default 1.0).
        prob: probability of mixing each sample, in [0, 1] (default 1.0).
    """

    def __init__(self, image_batch_format: Any, alpha: float = 1.0, prob: float = 1.0) -> None:
        op = "CutMixBatch"
        self.image_batch_format = _enum_name(
            image_batch_format, "ImageBatchFormat", ("NHWC", "NCHW"), op, "image_batch_format"
        )
        self.alpha = _positive(alpha, op, "alpha")
        self.prob = _prob(prob, op)

    def _execute_numpy(self, *args: Any, batch_info: Any = None) -> Any:
        op = "CutMixBatch"
        if len(args) != 2:
            raise ValueError(
                f"{op}: invalid input size, expects 2 columns (image and label), got {len(args)}"
            )
        images = self._batch_array(args[0])
        if images.ndim != 4:
            hint = ". You may need to perform Batch first." if images.ndim == 3 else ""
            raise ValueError(
                f"{op}: input image is not of shape <B,H,W,C> or <B,C,H,W>, got shape "
                f"{images.shape}{hint}"
            )
        fmt = self.image_batch_format
        channels = images.shape[3] if fmt == "NHWC" else images.shape[1]
        if channels not in (1, 3):
            raise ValueError(
                f"{op}: input image must have 1 or 3 channels in {fmt} format, got {channels} "
                f"(shape {images.shape}); check image_batch_format"
            )
        labels = _check_labels(op, images, args[1])
        view = _hwc_view(images, fmt)
        n, h, w, _ = view.shape
        rng = self._batch_rng(batch_info)
        perm = rng.permutation(n)
        lam = rng.beta(self.alpha, self.alpha, size=n)
        apply = rng.random(n) < self.prob
        cx = rng.integers(0, w, size=n, endpoint=True)
        cy = rng.integers(0, h, size=n, endpoint=True)
        cut = np.sqrt(1.0 - lam)
        # float32 products then truncation, as `static_cast<int>(float(width) * cut_ratio)`.
        cut_w = (np.float32(w) * cut.astype(np.float32)).astype(np.int64)
        cut_h = (np.float32(h) * cut.astype(np.float32)).astype(np.int64)
        x0 = np.clip(cx - cut_w // 2, 0, w - 1)
        y0 = np.clip(cy - cut_h // 2, 0, h - 1)
        x1 = np.clip(cx + cut_w // 2, 0, w - 1)
        y1 = np.clip(cy + cut_h // 2, 0, h - 1)
        bw = np.clip(x1 - x0, 1, max(w - 1, 1))
        bh = np.clip(y1 - y0, 1, max(h - 1, 1))
        boxes = np.stack([x0, y0, np.where(apply, bw, 0), bh], axis=1).astype(np.int64)
        out = np.empty_like(images)
        _k._cutmix_kernel(view, perm, boxes, _hwc_view(out, fmt))
        label_lam = np.where(apply, 1.0 - (bw * bh) / float(h * w), 1.0)
        return out, _mix_labels(labels, perm, label_lam)


# ----------------------------------------------------------------- geometric, photometric


_INTER = ("NEAREST", "LINEAR", "BILINEAR", "CUBIC", "BICUBIC", "AREA", "PILCUBIC", "ANTIALIAS")


class BatchRandomResizedCrop(_BatchOp):
    """RandomResizedCrop for a whole batch, a different crop per sample, in one pass.

    Same arguments and sampling as MindSpore's RandomResizedCrop (C++ `GetCropBox`): up to
    `max_attempts` tries of an area fraction uniform in `scale` and a log-uniform aspect
    ratio in `ratio`, then a centre crop clamped to the ratio range. Resizing is bilinear
    without antialiasing (OpenCV INTER_LINEAR, as MindSpore's C++ op) or nearest.

    Args:
        size: output (height, width), or one int for a square.
        scale: range of the crop's area fraction (default (0.08, 1.0)).
        ratio: range of the crop's aspect ratio w/h (default (3/4, 4/3)).
        interpolation: `Inter.BILINEAR` / `Inter.LINEAR` (default) or `Inter.NEAREST`.
        max_attempts: tries before the centre-crop fallback (default 10).
        image_batch_format: layout of array input and output, `ImageBatchFormat.NHWC`
            (default) or `NCHW`.

    Input: an (N, H, W, C) or (N, H, W) array, or a list of HWC / HW arrays of any sizes
    (one dtype and channel count). Output: one array (N, size[0], size[1], C), input dtype.
    """

    size: tuple[int, int]
    scale: tuple[float, float]
    ratio: tuple[float, float]
    interpolation: str
    max_attempts: int
    image_batch_format: str

    def __init__(
        self,
        size: int | Sequence[int],
        scale: Sequence[float] = (0.08, 1.0),
        ratio: Sequence[float] = (3.0 / 4.0, 4.0 / 3.0),
        interpolation: Any = "BILINEAR",
        max_attempts: int = 10,
        *,
        image_batch_format: Any = "NHWC",
    ) -> None:
        op = "BatchRandomResizedCrop"
        self.size = _size(size, op)
        self.scale = _pair(scale, op, "scale")
        if not 0.0 <= self.scale[0] <= self.scale[1]:
            raise ValueError(f"{op}: argument scale must satisfy 0 <= min <= max, got {scale!r}")
        self.ratio = _pair(ratio, op, "ratio")
        if not 0.0 < self.ratio[0] <= self.ratio[1]:
            raise ValueError(f"{op}: argument ratio must satisfy 0 < min <= max, got {ratio!r}")
        name = _enum_name(interpolation, "Inter", _INTER, op, "interpolation")
        if name not in ("NEAREST", "LINEAR", "BILINEAR"):
            raise ValueError(
                f"{op}: interpolation Inter.{name} is not supported by the batched op; use "
                "Inter.BILINEAR or Inter.NEAREST, or the per-image RandomResizedCrop"
            )
        self.interpolation = name
        if (
            isinstance(max_attempts, bool)
            or not isinstance(max_attempts, numbers.Integral)
            or max_attempts < 1
        ):
            raise ValueError(
                f"{op}: argument max_attempts must be an int >= 1, got {max_attempts!r}"
            )
        self.max_attempts = int(max_attempts)
        self.image_batch_format = _enum_name(
            image_batch_format, "ImageBatchFormat", ("NHWC", "NCHW"), op, "image_batch_format"
        )

    def crop_boxes(
        self, heights: np.ndarray, widths: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """(N, 4) int64 boxes (x, y, w, h) for images of the given sizes."""
        n = heights.shape[0]
        k = self.max_attempts
        hh = heights.astype(np.float64)[:, None]
        ww = widths.astype(np.float64)[:, None]
        area = hh * ww
        s = rng.uniform(self.scale[0], self.scale[1], size=(n, k))
        log_r = rng.uniform(math.log(self.ratio[0]), math.log(self.ratio[1]), size=(n, k))
        r = np.exp(log_r)
        cw = np.round(np.sqrt(area * s * r))
        ch = np.round(cw / r)
        ok = (cw <= ww) & (ch <= hh) & (cw > 0) & (ch > 0)
        first = np.argmax(ok, axis=1)
        found = ok[np.arange(n), first]
        cw = cw[np.arange(n), first]
        ch = ch[np.arange(n), first]
        # Fallback: the whole image, clamped to the ratio range and centred.
        h1, w1 = hh[:, 0], ww[:, 0]
        aspect = w1 / h1
        narrow, wide = aspect < self.ratio[0], aspect > self.ratio[1]
        fw = np.where(wide, np.round(h1 * self.ratio[1]), w1)
        fh = np.where(narrow, np.round(w1 / self.ratio[0]), h1)
        cw = np.where(found, cw, np.clip(fw, 1, w1)).astype(np.int64)
        ch = np.where(found, ch, np.clip(fh, 1, h1)).astype(np.int64)
        u = rng.random((n, 2))
        x = np.where(
            found,
            np.floor(u[:, 0] * (widths - cw + 1)),
            np.round((widths - cw) / 2.0),
        ).astype(np.int64)
        y = np.where(
            found,
            np.floor(u[:, 1] * (heights - ch + 1)),
            np.round((heights - ch) / 2.0),
        ).astype(np.int64)
        return np.stack([x, y, cw, ch], axis=1)

    def _execute_numpy(self, *args: Any, batch_info: Any = None) -> Any:
        op = type(self).__name__
        if len(args) != 1:
            raise ValueError(f"{op}: expects 1 input (the images), got {len(args)}")
        images = args[0]
        rng = self._batch_rng(batch_info)
        oh, ow = self.size
        nearest = self.interpolation == "NEAREST"
        fmt = self.image_batch_format
        if isinstance(images, (list, tuple)):
            imgs = [np.asarray(im) for im in images]
            if not imgs:
                raise ValueError(f"{op}: got an empty list of images")
            dtypes = {im.dtype for im in imgs}
            ranks = {im.ndim for im in imgs}
            if len(dtypes) != 1 or ranks - {2, 3} or len(ranks) != 1:
                raise ValueError(
                    f"{op}: a list input must hold HWC (or HW) arrays of one dtype, got "
                    f"dtypes {sorted(map(str, dtypes))} and ranks {sorted(ranks)}"
                )
            views = [im[..., None] if im.ndim == 2 else im for im in imgs]
            if len({v.shape[2] for v in views}) != 1:
                raise ValueError(f"{op}: images of a batch must have one channel count")
            dtype = imgs[0].dtype
            c = views[0].shape[2]
            heights = np.array([v.shape[0] for v in views], np.int64)
            widths = np.array([v.shape[1] for v in views], np.int64)
            boxes = self.crop_boxes(heights, widths, rng)
            out = np.empty((len(views), oh, ow, c), dtype)
            lo, hi, is_int = _int_bounds(dtype)
            for i, v in enumerate(views):
                x, y, bw, bh = (int(t) for t in boxes[i])
                if dtype == np.uint8 and v.flags.c_contiguous:
                    flat = v.reshape(v.shape[0], -1)
                    _k._resized_crop_u8_flat(
                        flat, c, x, y, bw, bh, False, out[i].reshape(oh, -1), nearest
                    )
                    continue
                _k._resized_crop_one(v, x, y, bw, bh, False, out[i], nearest, lo, hi, is_int)
            if ranks == {2}:
                out = out[..., 0]
            elif fmt == "NCHW":
                out = np.ascontiguousarray(out.transpose(0, 3, 1, 2))
            return out
        images = self._batch_array(images)
        if images.ndim not in (3, 4):
            raise ValueError(
                f"{op}: expects a batch of shape (N, H, W, C) or (N, H, W), got shape "
                f"{images.shape}; use RandomResizedCrop for a single image"
            )
        view = _hwc_view(images, fmt if images.ndim == 4 else "NHWC")
        n, h, w, c = view.shape
        boxes = self.crop_boxes(np.full(n, h, np.int64), np.full(n, w, np.int64), rng)
        if images.ndim == 4 and fmt == "NCHW":
            out = np.empty((n, c, oh, ow), images.dtype)
        else:
            out = np.empty((n, oh, ow) + images.shape[3:], images.dtype)
        out_view = _hwc_view(out, fmt if images.ndim == 4 else "NHWC")
        flips = np.zeros(n, np.uint8)
        if images.dtype == np.uint8 and view.flags.c_contiguous and out_view.flags.c_contiguous:
            # rows as flat (W * C) lines: the vectorized kernel, same bytes
            _k._resized_crop_u8_batch(
                view.reshape(n, h, w * c), c, boxes, flips, out_view.reshape(n, oh, ow * c), nearest
            )
            return out
        nchw = images.ndim == 4 and fmt == "NCHW"
        if nchw and images.dtype == np.uint8 and images.flags.c_contiguous:
            # N-CHW: each channel plane is a 1-channel image with its sample's box (the
            # channels never mix, so the same bytes)
            _k._resized_crop_u8_batch(
                images.reshape(n * c, h, w),
                1,
                np.repeat(boxes, c, axis=0),
                np.zeros(n * c, np.uint8),
                out.reshape(n * c, oh, ow),
                nearest,
            )
            return out
        lo, hi, is_int = _int_bounds(images.dtype)
        _k._resized_crop_kernel(view, boxes, flips, out_view, nearest, lo, hi, is_int)
        return out


class BatchRandomHorizontalFlip(_BatchOp):
    """RandomHorizontalFlip for a batch: each sample is mirrored with probability `prob`.

    Args:
        prob: flip probability per sample, in [0, 1] (default 0.5).
        image_batch_format: `ImageBatchFormat.NHWC` (default) or `NCHW`.

    Input: (N, H, W, C), (N, C, H, W) or (N, H, W) array; output: same shape and dtype.
    """

    prob: float
    image_batch_format: str

    def __init__(self, prob: float = 0.5, *, image_batch_format: Any = "NHWC") -> None:
        op = "BatchRandomHorizontalFlip"
        self.prob = _prob(prob, op)
        self.image_batch_format = _enum_name(
            image_batch_format, "ImageBatchFormat", ("NHWC", "NCHW"), op, "image_batch_format"
        )

    def _execute_numpy(self, *args: Any, batch_info: Any = None) -> Any:
        op = type(self).__name__
        if len(args) != 1:
            raise ValueError(f"{op}: expects 1 input (the images), got {len(args)}")
        images = self._batch_array(args[0])
        if images.ndim not in (3, 4):
            raise ValueError(
                f"{op}: expects a batch of shape (N, H, W, C) or (N, H, W), got shape "
                f"{images.shape}; use RandomHorizontalFlip for a single image"
            )
        rng = self._batch_rng(batch_info)
        flips = np.asarray(rng.random(images.shape[0]) < self.prob, np.uint8)
        fmt = self.image_batch_format if images.ndim == 4 else "NHWC"
        out = np.empty(images.shape, images.dtype)
        src, dst = _hwc_view(images, fmt), _hwc_view(out, fmt)
        if src.flags.c_contiguous and dst.flags.c_contiguous:
            # per sample: the per-image op's word kernels (an RGB pixel moved as one
            # 32-bit word), 4-5x the byte-by-byte batch kernel on 224x224 RGB
            for i in range(src.shape[0]):
                if flips[i]:
                    klayout.hflip_into(src[i], dst[i])
                else:
                    dst[i] = src[i]
        else:
            _k._hflip_kernel(src, flips, dst)
        return out


class BatchRandomColorAdjust(_BatchOp):
    """RandomColorAdjust for a batch of uint8 RGB images, factors drawn per sample.

    Arguments as MindSpore's RandomColorAdjust: brightness, contrast and saturation are
    a number x (factor uniform in [max(0, 1 - x), 1 + x]) or a (min, max) pair; hue is a
    number x in [0, 0.5] (shift uniform in [-x, x] turns) or a pair within [-0.5, 0.5].
    The four adjustments run in a random order per sample (brightness: scale; contrast:
    blend with the mean grey level; saturation: blend with the grey image; hue: rotate
    in HSV), each rounded to uint8 as Pillow's ImageEnhance does.

    Input: (N, H, W, 3) uint8 (or N-CHW with `image_batch_format=NCHW`); output: same.
    """

    def __init__(
        self,
        brightness: Any = (1, 1),
        contrast: Any = (1, 1),
        saturation: Any = (1, 1),
        hue: Any = (0, 0),
        *,
        image_batch_format: Any = "NHWC",
    ) -> None:
        op = "BatchRandomColorAdjust"
        self.brightness = _jitter_range(brightness, op, "brightness", 1.0, None)
        self.contrast = _jitter_range(contrast, op, "contrast", 1.0, None)
        self.saturation = _jitter_range(saturation, op, "saturation", 1.0, None)
        self.hue = _jitter_range(hue, op, "hue", 0.0, 0.5)
        self.image_batch_format = _enum_name(
            image_batch_format, "ImageBatchFormat", ("NHWC", "NCHW"), op, "image_batch_format"
        )

    def draw(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """(N, 4) factors (brightness, contrast, saturation, hue) and (N, 4) orders."""
        ranges = (self.brightness, self.contrast, self.saturation, self.hue)
        factors = np.stack([rng.uniform(lo, hi, size=n) for lo, hi in ranges], axis=1)
        order = rng.permuted(np.tile(np.arange(4, dtype=np.int64), (n, 1)), axis=1)
        return factors, order

    def _execute_numpy(self, *args: Any, batch_info: Any = None) -> Any:
        op = type(self).__name__
        if len(args) != 1:
            raise ValueError(f"{op}: expects 1 input (the images), got {len(args)}")
        images = self._batch_array(args[0])
        view = _hwc_view(images, self.image_batch_format) if images.ndim == 4 else None
        if view is None or view.shape[3] != 3:
            raise ValueError(
                f"{op}: expects a batch of RGB images (N, H, W, 3) (or (N, 3, H, W) with "
                f"image_batch_format=NCHW), got shape {images.shape}"
            )
        if images.dtype != np.uint8:
            raise TypeError(f"{op}: expects uint8 images, got dtype {images.dtype}")
        rng = self._batch_rng(batch_info)
        factors, order = self.draw(images.shape[0], rng)
        out = np.empty_like(images)
        scratch = np.empty(view.shape[1:], np.float64)
        _k._color_adjust_kernel(
            view, factors, order, _hwc_view(out, self.image_batch_format), scratch
        )
        return out
