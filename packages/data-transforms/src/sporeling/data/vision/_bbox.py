"""Transforms of an image together with its bounding boxes (the `...WithBBox` ops and
`BoundingBoxAugment`): the geometry ops applied to the image, the boxes moved to match.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sporeling.data.transforms._base import TensorOperation, Transform
from sporeling.data.vision._common import _RANDOM_INTERS, _fill_for, np_pad, np_resize
from sporeling.data.vision._geometry import RandomCrop, RandomResizedCrop, Resize
from sporeling.data.vision.utils import (
    Border,
    Inter,
    check_prob,
    is_num,
)

__all__ = [
    "BoundingBoxAugment",
    "RandomCropWithBBox",
    "RandomHorizontalFlipWithBBox",
    "RandomResizeWithBBox",
    "RandomResizedCropWithBBox",
    "RandomVerticalFlipWithBBox",
    "ResizeWithBBox",
]


# -- bounding boxes: (image, bboxes[N, 4+] as x, y, w, h) -> (image, bboxes) ---------------


def _check_bbox(op: str, bboxes: Any) -> np.ndarray:
    b = np.asarray(bboxes)
    if b.ndim != 2 or b.shape[1] < 4:
        raise ValueError(
            f"{op}: bboxes must have shape (N, 4+) as (x, y, w, h, ...), got {b.shape}."
        )
    return b.astype(np.float32)


def _crop_bboxes(b: np.ndarray, top: int, left: int, h: int, w: int) -> np.ndarray:
    """Shift to the crop, clip to it, and drop boxes left with no area."""
    b = b.copy()
    x0 = np.clip(b[:, 0] - left, 0, w)
    y0 = np.clip(b[:, 1] - top, 0, h)
    x1 = np.clip(b[:, 0] + b[:, 2] - left, 0, w)
    y1 = np.clip(b[:, 1] + b[:, 3] - top, 0, h)
    b[:, 0], b[:, 1], b[:, 2], b[:, 3] = x0, y0, x1 - x0, y1 - y0
    return b[(b[:, 2] > 0) & (b[:, 3] > 0)]


class RandomHorizontalFlipWithBBox(TensorOperation):
    """Flip the image and its boxes left-right with probability `prob`."""

    def __init__(self, prob: float = 0.5) -> None:
        self.prob = check_prob("RandomHorizontalFlipWithBBox", prob)

    def _execute_numpy(self, img: np.ndarray, bboxes: Any) -> tuple[np.ndarray, np.ndarray]:
        b = _check_bbox("RandomHorizontalFlipWithBBox", bboxes)
        if self._rng().random() < self.prob:
            img = np.ascontiguousarray(img[:, ::-1])
            b = b.copy()
            b[:, 0] = img.shape[1] - b[:, 0] - b[:, 2]
        return img, b


class RandomVerticalFlipWithBBox(TensorOperation):
    """Flip the image and its boxes top-bottom with probability `prob`."""

    def __init__(self, prob: float = 0.5) -> None:
        self.prob = check_prob("RandomVerticalFlipWithBBox", prob)

    def _execute_numpy(self, img: np.ndarray, bboxes: Any) -> tuple[np.ndarray, np.ndarray]:
        b = _check_bbox("RandomVerticalFlipWithBBox", bboxes)
        if self._rng().random() < self.prob:
            img = np.ascontiguousarray(img[::-1])
            b = b.copy()
            b[:, 1] = img.shape[0] - b[:, 1] - b[:, 3]
        return img, b


class ResizeWithBBox(TensorOperation):
    """Resize the image and scale its boxes."""

    def __init__(self, size: Any, interpolation: Inter = Inter.BILINEAR) -> None:
        self._resize = Resize(size, interpolation)
        self.size, self.interpolation = size, interpolation

    def _execute_numpy(self, img: np.ndarray, bboxes: Any) -> tuple[np.ndarray, np.ndarray]:
        b = _check_bbox("ResizeWithBBox", bboxes).copy()
        h, w = img.shape[:2]
        out = self._resize._execute_numpy(img)
        sy, sx = out.shape[0] / h, out.shape[1] / w
        b[:, [0, 2]] *= sx
        b[:, [1, 3]] *= sy
        return out, b


class RandomResizeWithBBox(TensorOperation):
    """ResizeWithBBox with a random interpolation."""

    def __init__(self, size: Any) -> None:
        self._ops = [ResizeWithBBox(size, i) for i in _RANDOM_INTERS]
        self.size = size

    def _execute_numpy(self, img: np.ndarray, bboxes: Any) -> tuple[np.ndarray, np.ndarray]:
        return self._ops[int(self._rng().integers(len(self._ops)))]._execute_numpy(img, bboxes)


class RandomCropWithBBox(TensorOperation):
    """RandomCrop that also shifts/clips the boxes (boxes left empty are dropped)."""

    def __init__(
        self,
        size: Any,
        padding: Any = None,
        pad_if_needed: bool = False,
        fill_value: Any = 0,
        padding_mode: Border = Border.CONSTANT,
    ) -> None:
        self._crop = RandomCrop(size, padding, pad_if_needed, fill_value, padding_mode)
        self.size = self._crop.size

    def _execute_numpy(self, img: np.ndarray, bboxes: Any) -> tuple[np.ndarray, np.ndarray]:
        b = _check_bbox("RandomCropWithBBox", bboxes).copy()
        c = self._crop
        l, t, r, bo = c._pads(*img.shape[:2])
        if any((l, t, r, bo)):
            img = np_pad(img, (l, t, r, bo), _fill_for(img, c.fill_value), c.padding_mode)
            b[:, 0] += l
            b[:, 1] += t
        i, j = c._params(*img.shape[:2])
        th, tw = c.size
        return img[i : i + th, j : j + tw].copy(), _crop_bboxes(b, i, j, th, tw)

    def _rng(self) -> np.random.Generator:  # share the stream with the inner crop
        return self._crop._rng()


class RandomResizedCropWithBBox(TensorOperation):
    """RandomResizedCrop that also maps the boxes."""

    def __init__(
        self,
        size: Any,
        scale: tuple[float, float] = (0.08, 1.0),
        ratio: tuple[float, float] = (3.0 / 4.0, 4.0 / 3.0),
        interpolation: Inter = Inter.BILINEAR,
        max_attempts: int = 10,
    ) -> None:
        self._crop = RandomResizedCrop(size, scale, ratio, interpolation, max_attempts)
        self.size = self._crop.size

    def _execute_numpy(self, img: np.ndarray, bboxes: Any) -> tuple[np.ndarray, np.ndarray]:
        b = _check_bbox("RandomResizedCropWithBBox", bboxes)
        i, j, ch, cw = self._crop._params(*img.shape[:2])
        out = np_resize(img[i : i + ch, j : j + cw], *self.size, self._crop._filter)
        b = _crop_bboxes(b, i, j, ch, cw)
        b[:, [0, 2]] *= self.size[1] / cw
        b[:, [1, 3]] *= self.size[0] / ch
        return out, b


class BoundingBoxAugment(TensorOperation):
    """Apply `transform` to a random `ratio` of the boxes' regions (boxes unchanged)."""

    def __init__(self, transform: Transform, ratio: float = 0.3) -> None:
        if not callable(transform):
            raise TypeError(f"BoundingBoxAugment: transform must be callable, got {transform!r}.")
        if not is_num(ratio) or not 0 <= ratio <= 1:
            raise ValueError(f"BoundingBoxAugment: ratio must be in [0, 1], got {ratio!r}.")
        self.transform, self.ratio = transform, float(ratio)

    def _execute_numpy(self, img: np.ndarray, bboxes: Any) -> tuple[np.ndarray, np.ndarray]:
        b = _check_bbox("BoundingBoxAugment", bboxes)
        out = img.copy()
        n = int(round(len(b) * self.ratio))
        for k in self._rng().permutation(len(b))[:n]:
            x, y, w, h = (int(round(v)) for v in b[k, :4])
            x0, y0 = max(x, 0), max(y, 0)
            x1, y1 = min(x + w, img.shape[1]), min(y + h, img.shape[0])
            if x1 <= x0 or y1 <= y0:
                continue
            patch = np.asarray(self.transform(out[y0:y1, x0:x1].copy()))
            if patch.shape[:2] != (y1 - y0, x1 - x0):
                raise ValueError(
                    "BoundingBoxAugment: transform must keep the region's size, got "
                    f"{patch.shape[:2]} for a {(y1 - y0, x1 - x0)} region."
                )
            out[y0:y1, x0:x1] = patch
        return out, b
