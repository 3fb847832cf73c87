"""Vision transforms MindSpore 1.8 offers only in C++: here NumPy/Numba only
(`TensorOperation`; a PIL input is converted to an array first)."""

from __future__ import annotations

from typing import Any

import numpy as np

from sporeling.data.transforms._base import TensorOperation, Transform, _as_tuple
from sporeling.data.vision import _dual as d
from sporeling.data.vision._decode_crop import decode_resized_crop
from sporeling.data.vision.kernels import color as kcolor
from sporeling.data.vision.kernels import layout as klayout
from sporeling.data.vision.kernels.geometry import warp
from sporeling.data.vision.utils import (
    AutoAugmentPolicy,
    Border,
    ConvertMode,
    Inter,
    SliceMode,
    check_enum,
    check_fill,
    check_image,
    check_prob,
    check_range,
    check_size,
    is_num,
)

__all__ = [
    "AutoAugment",
    "BoundingBoxAugment",
    "ConvertColor",
    "Crop",
    "CutOut",
    "GaussianBlur",
    "HWC2CHW",
    "HorizontalFlip",
    "Normalize",
    "NormalizePad",
    "PadToSize",
    "RandomAdjustSharpness",
    "RandomAutoContrast",
    "RandomCropDecodeResize",
    "RandomCropWithBBox",
    "RandomEqualize",
    "RandomHorizontalFlipWithBBox",
    "RandomInvert",
    "RandomPosterize",
    "RandomResize",
    "RandomResizeWithBBox",
    "RandomResizedCropWithBBox",
    "RandomSelectSubpolicy",
    "RandomSolarize",
    "RandomVerticalFlipWithBBox",
    "Rescale",
    "ResizeWithBBox",
    "Rotate",
    "SlicePatches",
    "ToTensor",
    "VerticalFlip",
]


def _u8(op: str, img: Any) -> np.ndarray:
    check_image(op, img)
    if img.dtype != np.uint8:
        raise TypeError(f"{op}: expected a uint8 image, got dtype {img.dtype}.")
    return img


class ConvertColor(TensorOperation):
    """Convert between RGB/BGR/RGBA/BGRA/GRAY layouts (`ConvertMode`)."""

    def __init__(self, convert_mode: ConvertMode) -> None:
        self.convert_mode = check_enum("ConvertColor", convert_mode, ConvertMode, "convert_mode")

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        check_image("ConvertColor", img)
        m = int(self.convert_mode)
        c = 1 if img.ndim == 2 else img.shape[2]
        need = {0: 3, 1: 4, 2: 3, 3: 4, 4: 3, 5: 4, 6: 3, 7: 3, 8: 1, 9: 1, 10: 4, 11: 4}[m]
        if c != need:
            raise ValueError(
                f"ConvertColor: {self.convert_mode.name} expects {need} channels, got shape "
                f"{img.shape}."
            )
        if m in (8, 9):
            g = img if img.ndim == 2 else img[..., 0]
            out = np.stack([g, g, g], axis=2)
            if m == 9:
                alpha = np.full_like(g, 255 if img.dtype == np.uint8 else 1)
                out = np.concatenate([out, alpha[..., None]], axis=2)
            return out
        if m in (6, 7, 10, 11):
            rgb = img[..., :3] if m in (7, 11) else img[..., 2::-1]
            if img.dtype == np.uint8:  # OpenCV's fixed-point luma (R*4899 + G*9617 + B*1868)
                x = rgb.astype(np.uint32)
                return (
                    (x[..., 0] * 4899 + x[..., 1] * 9617 + x[..., 2] * 1868 + 8192) >> 14
                ).astype(np.uint8)
            return (rgb @ np.array([0.299, 0.587, 0.114])).astype(img.dtype)
        swap = m in (2, 3, 4, 5)
        rgb = img[..., 2::-1] if swap else img[..., :3]
        if m in (0, 2, 5):
            alpha = img[..., 3:4] if c == 4 else np.full_like(img[..., :1], 255)
            return np.ascontiguousarray(np.concatenate([rgb, alpha], axis=2))
        return np.ascontiguousarray(rgb)


class Crop(TensorOperation):
    """Crop `size` at `coordinates` = (top, left)."""

    def __init__(self, coordinates: tuple[int, int], size: int | tuple[int, int]) -> None:
        if (
            not isinstance(coordinates, list | tuple)
            or len(coordinates) != 2
            or not all(isinstance(v, int) and v >= 0 for v in coordinates)
        ):
            raise ValueError(f"Crop: coordinates must be (top, left) >= 0, got {coordinates!r}.")
        self.coordinates = (int(coordinates[0]), int(coordinates[1]))
        self.size = check_size("Crop", size)

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        check_image("Crop", img)
        (t, l), (h, w) = self.coordinates, self.size
        if t + h > img.shape[0] or l + w > img.shape[1]:
            raise ValueError(
                f"Crop: region top={t}, left={l}, size={self.size} exceeds the image "
                f"{img.shape[:2]}."
            )
        return img[t : t + h, l : l + w].copy()


class CutOut(TensorOperation):
    """Zero `num_patches` random `length` x `length` squares (HWC, or CHW if not is_hwc)."""

    def __init__(self, length: int, num_patches: int = 1, is_hwc: bool = True) -> None:
        for name, v in (("length", length), ("num_patches", num_patches)):
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ValueError(f"CutOut: {name} must be a positive int, got {v!r}.")
        self.length, self.num_patches, self.is_hwc = length, num_patches, bool(is_hwc)

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        check_image("CutOut", img)
        out = img.copy()
        view = out if self.is_hwc or out.ndim == 2 else np.moveaxis(out, 0, -1)
        h, w = view.shape[:2]
        rng = self._rng()
        for _ in range(self.num_patches):
            y = int(rng.integers(0, max(h - self.length, 0) + 1))
            x = int(rng.integers(0, max(w - self.length, 0) + 1))
            view[y : y + self.length, x : x + self.length] = 0
        return out


class GaussianBlur(TensorOperation):
    """Gaussian blur; `kernel_size` (odd ints) and `sigma` as int/float or (x, y) pairs."""

    def __init__(self, kernel_size: Any, sigma: Any = None) -> None:
        ks = (kernel_size, kernel_size) if isinstance(kernel_size, int) else kernel_size
        if (
            not isinstance(ks, list | tuple)
            or len(ks) != 2
            or not all(isinstance(k, int) and k > 0 and k % 2 == 1 for k in ks)
        ):
            raise ValueError(
                "GaussianBlur: kernel_size must be a positive odd int or a pair of them, got "
                f"{kernel_size!r}."
            )
        if sigma is None:
            sg = (0.0, 0.0)
        elif is_num(sigma):
            sg = (float(sigma), float(sigma))
        elif isinstance(sigma, list | tuple) and len(sigma) == 2 and all(map(is_num, sigma)):
            sg = (float(sigma[0]), float(sigma[1]))
        else:
            raise ValueError(
                f"GaussianBlur: sigma must be None, a number or a pair, got {sigma!r}."
            )
        if min(sg) < 0:
            raise ValueError(f"GaussianBlur: sigma must be non-negative, got {sigma!r}.")
        self.kernel_size, self.sigma = tuple(ks), sg

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        check_image("GaussianBlur", img)
        return kcolor.gaussian_blur(img, self.kernel_size, self.sigma)


class HorizontalFlip(TensorOperation):
    """Flip left-right."""

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        return klayout.hflip(check_image("HorizontalFlip", img))


class VerticalFlip(TensorOperation):
    """Flip top-bottom."""

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(check_image("VerticalFlip", img)[::-1])


class HWC2CHW(TensorOperation):
    """Transpose HWC to CHW (HW becomes 1HW)."""

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        check_image("HWC2CHW", img)
        if img.ndim == 2:
            return img[None].copy()
        return np.ascontiguousarray(img.transpose(2, 0, 1))


def _mean_std(op: str, mean: Any, std: Any) -> tuple[np.ndarray, np.ndarray]:
    for name, v in (("mean", mean), ("std", std)):
        if not isinstance(v, list | tuple) or not v or not all(map(is_num, v)):
            raise TypeError(f"{op}: {name} must be a list of numbers, got {v!r}.")
    if len(mean) != len(std):
        raise ValueError(f"{op}: mean and std must have the same length, got {mean} and {std}.")
    for i, m in enumerate(mean):  # MindSpore's intervals for the unified Normalize
        if not 0 <= m <= 255:
            raise ValueError(
                f"{op}: Input mean[{i}] is not within the required interval of [0, 255], got {m}."
            )
    for i, s in enumerate(std):
        if not 0 < s <= 255:
            raise ValueError(
                f"{op}: Input std[{i}] is not within the required interval of (0, 255], got {s}."
            )
    return np.asarray(mean, np.float32), np.asarray(std, np.float32)


def _normalize(
    op: str, img: np.ndarray, mean: np.ndarray, std: np.ndarray, hwc: bool
) -> np.ndarray:
    check_image(op, img)
    if hwc and img.dtype in (np.uint8, np.float32):
        return klayout.normalize_hwc(img, mean, std, op)  # one pass, same float32 arithmetic
    x = img.astype(np.float32)
    c = 1 if x.ndim == 2 else (x.shape[2] if hwc else x.shape[0])
    if mean.size not in (1, c):
        raise ValueError(f"{op}: {mean.size} mean values for an image with {c} channels.")
    shape = (1, 1, -1) if hwc or x.ndim == 2 else (-1, 1, 1)
    if x.ndim == 2:
        return (x - mean[0]) / std[0]
    return (x - mean.reshape(shape)) / std.reshape(shape)


class Normalize(TensorOperation):
    """(img - mean) / std per channel, output float32 (`is_hwc=False` for CHW input)."""

    def __init__(self, mean: Any, std: Any, is_hwc: bool = True) -> None:
        self.mean, self.std = _mean_std("Normalize", mean, std)
        self.is_hwc = bool(is_hwc)

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        return _normalize("Normalize", img, self.mean, self.std, self.is_hwc)


class NormalizePad(TensorOperation):
    """Normalize, then append a zero channel (HWC -> HW(C+1)); dtype float32 or float16."""

    def __init__(self, mean: Any, std: Any, dtype: str = "float32", is_hwc: bool = True) -> None:
        self.mean, self.std = _mean_std("NormalizePad", mean, std)
        if dtype not in ("float32", "float16"):
            raise ValueError(f"NormalizePad: dtype must be 'float32' or 'float16', got {dtype!r}.")
        self.dtype, self.is_hwc = dtype, bool(is_hwc)

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        x = _normalize("NormalizePad", img, self.mean, self.std, self.is_hwc)
        if x.ndim == 2:
            x = x[..., None]
        axis = 2 if self.is_hwc else 0
        zeros = np.zeros_like(x.take([0], axis=axis))
        return np.concatenate([x, zeros], axis=axis).astype(self.dtype)


class PadToSize(TensorOperation):
    """Pad to `size` (h, w); `offset` (top, left) or centred by default."""

    def __init__(
        self,
        size: Any,
        offset: Any = None,
        fill_value: Any = 0,
        padding_mode: Border = Border.CONSTANT,
    ) -> None:
        self.size = check_size("PadToSize", size)
        if offset is not None:
            offset = (offset, offset) if isinstance(offset, int) else offset
            if not isinstance(offset, list | tuple) or len(offset) != 2 or min(offset) < 0:
                raise ValueError(
                    f"PadToSize: offset must be None or (top, left) >= 0, got {offset!r}."
                )
        self.offset = offset
        self.fill_value = check_fill("PadToSize", fill_value)
        self.padding_mode = check_enum("PadToSize", padding_mode, Border, "padding_mode")

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        check_image("PadToSize", img)
        h, w = img.shape[:2]
        th, tw = self.size
        if th < h or tw < w:
            raise ValueError(
                f"PadToSize: target size {self.size} is smaller than the image {(h, w)}."
            )
        t, l = self.offset if self.offset is not None else ((th - h) // 2, (tw - w) // 2)
        if t + h > th or l + w > tw:
            raise ValueError(f"PadToSize: offset {self.offset} puts the image outside {self.size}.")
        pads = (l, t, tw - w - l, th - h - t)
        return d.np_pad(img, pads, d._fill_for(img, self.fill_value), self.padding_mode)


class _RandomApplyOp(TensorOperation):
    def __init__(self, prob: float = 0.5) -> None:
        self.prob = check_prob(type(self).__name__, prob)

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        check_image(type(self).__name__, img)
        if self._rng().random() < self.prob:
            return self._apply(img)
        return img

    def _apply(self, img: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class RandomAdjustSharpness(_RandomApplyOp):
    """With probability `prob`, adjust sharpness by the fixed factor `degree`."""

    def __init__(self, degree: float, prob: float = 0.5) -> None:
        if not is_num(degree) or degree < 0:
            raise ValueError(f"RandomAdjustSharpness: degree must be >= 0, got {degree!r}.")
        super().__init__(prob)
        self.degree = float(degree)

    def _apply(self, img: np.ndarray) -> np.ndarray:
        return d.np_sharpness(_u8("RandomAdjustSharpness", img), self.degree)


class RandomAutoContrast(_RandomApplyOp):
    """AutoContrast with probability `prob`."""

    def __init__(self, cutoff: float = 0.0, ignore: Any = None, prob: float = 0.5) -> None:
        super().__init__(prob)
        self._op = d.AutoContrast(cutoff, ignore)
        self.cutoff, self.ignore = cutoff, ignore

    def _apply(self, img: np.ndarray) -> np.ndarray:
        return self._op._execute_numpy(img)


class RandomEqualize(_RandomApplyOp):
    """Equalize with probability `prob`."""

    def _apply(self, img: np.ndarray) -> np.ndarray:
        return d.Equalize()._execute_numpy(img)


class RandomInvert(_RandomApplyOp):
    """Invert with probability `prob`."""

    def _apply(self, img: np.ndarray) -> np.ndarray:
        return 255 - _u8("RandomInvert", img)


def posterize(img: np.ndarray, bits: int) -> np.ndarray:
    return img & np.uint8((0xFF << (8 - bits)) & 0xFF)


def solarize(img: np.ndarray, lo: float, hi: float) -> np.ndarray:
    return np.where((img >= lo) & (img <= hi), 255 - img, img).astype(img.dtype)


class RandomPosterize(TensorOperation):
    """Keep the top `bits` bits (drawn from the `bits` range) of each channel."""

    def __init__(self, bits: Any = (8, 8)) -> None:
        if isinstance(bits, int):
            bits = (bits, bits)
        if (
            not isinstance(bits, list | tuple)
            or len(bits) != 2
            or not all(isinstance(b, int) and 1 <= b <= 8 for b in bits)
            or bits[0] > bits[1]
        ):
            raise ValueError(
                f"RandomPosterize: bits must be ints in [1, 8] (min <= max), got {bits!r}."
            )
        self.bits = (int(bits[0]), int(bits[1]))

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        _u8("RandomPosterize", img)
        return posterize(img, int(self._rng().integers(self.bits[0], self.bits[1] + 1)))


class RandomSolarize(TensorOperation):
    """Invert pixels in [lo, hi], with `threshold` = (min, max) bounds of lo and hi."""

    def __init__(self, threshold: Any = (0, 255)) -> None:
        self.threshold = check_range("RandomSolarize", threshold, "threshold", 0, 255)

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        _u8("RandomSolarize", img)
        rng = self._rng()
        a = int(rng.integers(int(self.threshold[0]), int(self.threshold[1]) + 1))
        b = int(rng.integers(int(self.threshold[0]), int(self.threshold[1]) + 1))
        return solarize(img, min(a, b), max(a, b))


_RANDOM_INTERS = (Inter.NEAREST, Inter.BILINEAR, Inter.BICUBIC, Inter.AREA)


class RandomResize(TensorOperation):
    """Resize to `size` with an interpolation drawn at random (nearest/bilinear/bicubic/area)."""

    def __init__(self, size: Any) -> None:
        self._resize = [d.Resize(size, i) for i in _RANDOM_INTERS]
        self.size = size

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        return self._resize[int(self._rng().integers(len(self._resize)))]._execute_numpy(img)


class RandomCropDecodeResize(TensorOperation):
    """Decode and RandomResizedCrop in one op: the crop box comes from the file's header,
    large crops of JPEGs decode at 1/2-1/8 scale (Pillow's draft mode), and the crop is
    resized straight from the decoder's buffer (`_decode_crop`)."""

    def __init__(
        self,
        size: Any,
        scale: tuple[float, float] = (0.08, 1.0),
        ratio: tuple[float, float] = (3.0 / 4.0, 4.0 / 3.0),
        interpolation: Inter = Inter.BILINEAR,
        max_attempts: int = 10,
    ) -> None:
        self._crop = d.RandomResizedCrop(size, scale, ratio, interpolation, max_attempts)
        self.size, self.scale, self.ratio = self._crop.size, self._crop.scale, self._crop.ratio
        self.interpolation, self.max_attempts = interpolation, max_attempts

    def _execute_numpy(self, data: Any) -> np.ndarray:
        return decode_resized_crop(
            "RandomCropDecodeResize",
            data,
            self.size,
            self.scale,
            self.ratio,
            self.max_attempts,
            self._crop._filter,
            self._rng(),
        )


class Rescale(TensorOperation):
    """img * rescale + shift, as float32."""

    def __init__(self, rescale: float, shift: float) -> None:
        if not is_num(rescale) or not is_num(shift):
            raise TypeError(
                f"Rescale: rescale and shift must be numbers, got {rescale!r}, {shift!r}."
            )
        self.rescale, self.shift = float(rescale), float(shift)

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        return (
            np.asarray(img, np.float32) * np.float32(self.rescale) + np.float32(self.shift)
        ).astype(np.float32)


class Rotate(TensorOperation):
    """Rotate by `degrees` counter-clockwise (Pillow's `rotate` arithmetic)."""

    def __init__(
        self,
        degrees: float,
        resample: Inter = Inter.NEAREST,
        expand: bool = False,
        center: Any = None,
        fill_value: Any = 0,
    ) -> None:
        if not is_num(degrees):
            raise TypeError(f"Rotate: degrees must be a number, got {degrees!r}.")
        self.degrees = float(degrees)
        self.resample = d._check_interpolation("Rotate", resample, warp_only=True)
        self.expand = bool(expand)
        self.center = d._check_center("Rotate", center)
        self.fill_value = check_fill("Rotate", fill_value)

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        check_image("Rotate", img)
        return d.np_rotate(
            img,
            self.degrees,
            d._WARP_MODE[self.resample],
            self.expand,
            self.center,
            d._fill_for(img, self.fill_value),
        )


class SlicePatches(TensorOperation):
    """Split an image into `num_height` x `num_width` patches (padding or dropping the rest)."""

    def __init__(
        self,
        num_height: int = 1,
        num_width: int = 1,
        slice_mode: SliceMode = SliceMode.PAD,
        fill_value: int = 0,
    ) -> None:
        for name, v in (("num_height", num_height), ("num_width", num_width)):
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 512:
                raise ValueError(f"SlicePatches: {name} must be an int in [1, 512], got {v!r}.")
        self.num_height, self.num_width = num_height, num_width
        self.slice_mode = check_enum("SlicePatches", slice_mode, SliceMode, "slice_mode")
        if not isinstance(fill_value, int) or not 0 <= fill_value <= 255:
            raise ValueError(
                f"SlicePatches: fill_value must be an int in [0, 255], got {fill_value!r}."
            )
        self.fill_value = fill_value

    def _execute_numpy(self, img: np.ndarray) -> tuple[np.ndarray, ...]:
        check_image("SlicePatches", img)
        h, w = img.shape[:2]
        nh, nw = self.num_height, self.num_width
        if self.slice_mode == SliceMode.PAD:
            ph, pw = -(-h // nh), -(-w // nw)
            img = d.np_pad(img, (0, 0, pw * nw - w, ph * nh - h), self.fill_value)
        else:
            ph, pw = h // nh, w // nw
        return tuple(
            img[i * ph : (i + 1) * ph, j * pw : (j + 1) * pw].copy()
            for i in range(nh)
            for j in range(nw)
        )


class ToTensor(TensorOperation):
    """HWC [0, 255] -> CHW [0, 1] of `output_type` (float32 by default)."""

    def __init__(self, output_type: Any = np.float32) -> None:
        np_attr = getattr(output_type, "np", None)
        try:
            self.output_type = np_attr if isinstance(np_attr, np.dtype) else np.dtype(output_type)
        except TypeError:
            raise TypeError(
                f"ToTensor: output_type must be a numpy dtype, got {output_type!r}."
            ) from None

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        check_image("ToTensor", img)
        x = img[..., None] if img.ndim == 2 else img
        return (np.ascontiguousarray(x.transpose(2, 0, 1)) / 255.0).astype(self.output_type)


# -- AutoAugment ---------------------------------------------------------------------------

_POLICIES = {
    AutoAugmentPolicy.IMAGENET: [
        (("Posterize", 0.4, 8), ("Rotate", 0.6, 9)),
        (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
        (("Equalize", 0.8, None), ("Equalize", 0.6, None)),
        (("Posterize", 0.6, 7), ("Posterize", 0.6, 6)),
        (("Equalize", 0.4, None), ("Solarize", 0.2, 4)),
        (("Equalize", 0.4, None), ("Rotate", 0.8, 8)),
        (("Solarize", 0.6, 3), ("Equalize", 0.6, None)),
        (("Posterize", 0.8, 5), ("Equalize", 1.0, None)),
        (("Rotate", 0.2, 3), ("Solarize", 0.6, 8)),
        (("Equalize", 0.6, None), ("Posterize", 0.4, 6)),
        (("Rotate", 0.8, 8), ("Color", 0.4, 0)),
        (("Rotate", 0.4, 9), ("Equalize", 0.6, None)),
        (("Equalize", 0.0, None), ("Equalize", 0.8, None)),
        (("Invert", 0.6, None), ("Equalize", 1.0, None)),
        (("Color", 0.6, 4), ("Contrast", 1.0, 8)),
        (("Rotate", 0.8, 8), ("Color", 1.0, 2)),
        (("Color", 0.8, 8), ("Solarize", 0.8, 7)),
        (("Sharpness", 0.4, 7), ("Invert", 0.6, None)),
        (("ShearX", 0.6, 5), ("Equalize", 1.0, None)),
        (("Color", 0.4, 0), ("Equalize", 0.6, None)),
        (("Equalize", 0.4, None), ("Solarize", 0.2, 4)),
        (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
        (("Invert", 0.6, None), ("Equalize", 1.0, None)),
        (("Color", 0.6, 4), ("Contrast", 1.0, 8)),
        (("Equalize", 0.8, None), ("Equalize", 0.6, None)),
    ],
    AutoAugmentPolicy.CIFAR10: [
        (("Invert", 0.1, None), ("Contrast", 0.2, 6)),
        (("Rotate", 0.7, 2), ("TranslateX", 0.3, 9)),
        (("Sharpness", 0.8, 1), ("Sharpness", 0.9, 3)),
        (("ShearY", 0.5, 8), ("TranslateY", 0.7, 9)),
        (("AutoContrast", 0.5, None), ("Equalize", 0.9, None)),
        (("ShearY", 0.2, 7), ("Posterize", 0.3, 7)),
        (("Color", 0.4, 3), ("Brightness", 0.6, 7)),
        (("Sharpness", 0.3, 9), ("Brightness", 0.7, 9)),
        (("Equalize", 0.6, None), ("Equalize", 0.5, None)),
        (("Contrast", 0.6, 7), ("Sharpness", 0.6, 5)),
        (("Color", 0.7, 7), ("TranslateX", 0.5, 8)),
        (("Equalize", 0.3, None), ("AutoContrast", 0.4, None)),
        (("TranslateY", 0.4, 3), ("Sharpness", 0.2, 6)),
        (("Brightness", 0.9, 6), ("Color", 0.2, 8)),
        (("Solarize", 0.5, 2), ("Invert", 0.0, None)),
        (("Equalize", 0.2, None), ("AutoContrast", 0.6, None)),
        (("Equalize", 0.2, None), ("Equalize", 0.6, None)),
        (("Color", 0.9, 9), ("Equalize", 0.6, None)),
        (("AutoContrast", 0.8, None), ("Solarize", 0.2, 8)),
        (("Brightness", 0.1, 3), ("Color", 0.7, 0)),
        (("Solarize", 0.4, 5), ("AutoContrast", 0.9, None)),
        (("TranslateY", 0.9, 9), ("TranslateY", 0.7, 9)),
        (("AutoContrast", 0.9, None), ("Solarize", 0.8, 3)),
        (("Equalize", 0.8, None), ("Invert", 0.1, None)),
        (("TranslateY", 0.7, 9), ("AutoContrast", 0.9, None)),
    ],
    AutoAugmentPolicy.SVHN: [
        (("ShearX", 0.9, 4), ("Invert", 0.2, None)),
        (("ShearY", 0.9, 8), ("Invert", 0.7, None)),
        (("Equalize", 0.6, None), ("Solarize", 0.6, 6)),
        (("Invert", 0.9, None), ("Equalize", 0.6, None)),
        (("Equalize", 0.6, None), ("Rotate", 0.9, 3)),
        (("ShearX", 0.9, 4), ("AutoContrast", 0.8, None)),
        (("ShearY", 0.9, 8), ("Invert", 0.4, None)),
        (("ShearY", 0.9, 5), ("Solarize", 0.2, 6)),
        (("Invert", 0.9, None), ("AutoContrast", 0.8, None)),
        (("Equalize", 0.6, None), ("Rotate", 0.9, 3)),
        (("ShearX", 0.9, 4), ("Solarize", 0.3, 3)),
        (("ShearY", 0.8, 8), ("Invert", 0.7, None)),
        (("Equalize", 0.9, None), ("TranslateY", 0.6, 6)),
        (("Invert", 0.9, None), ("Equalize", 0.6, None)),
        (("Contrast", 0.3, 3), ("Rotate", 0.8, 4)),
        (("Invert", 0.8, None), ("TranslateY", 0.0, 2)),
        (("ShearY", 0.7, 6), ("Solarize", 0.4, 8)),
        (("Invert", 0.6, None), ("Rotate", 0.8, 4)),
        (("ShearY", 0.3, 7), ("TranslateX", 0.9, 3)),
        (("ShearX", 0.1, 6), ("Invert", 0.6, None)),
        (("Solarize", 0.7, 2), ("TranslateY", 0.6, 7)),
        (("ShearY", 0.8, 4), ("Invert", 0.8, None)),
        (("ShearX", 0.7, 9), ("TranslateY", 0.8, 3)),
        (("ShearY", 0.8, 5), ("AutoContrast", 0.7, None)),
        (("ShearX", 0.7, 2), ("Invert", 0.1, None)),
    ],
}


def _magnitude(name: str, level: int, h: int, w: int) -> float:
    """torchvision's 10-bin magnitude tables."""
    bins = np.arange(10)
    table = {
        "ShearX": np.linspace(0.0, 0.3, 10),
        "ShearY": np.linspace(0.0, 0.3, 10),
        "TranslateX": np.linspace(0.0, 150.0 / 331.0 * w, 10),
        "TranslateY": np.linspace(0.0, 150.0 / 331.0 * h, 10),
        "Rotate": np.linspace(0.0, 30.0, 10),
        "Brightness": np.linspace(0.0, 0.9, 10),
        "Color": np.linspace(0.0, 0.9, 10),
        "Contrast": np.linspace(0.0, 0.9, 10),
        "Sharpness": np.linspace(0.0, 0.9, 10),
        "Posterize": 8 - np.round(bins / ((10 - 1) / 4)).astype(int),
        "Solarize": np.linspace(255.0, 0.0, 10),
    }
    return float(table[name][level])


_SIGNED = {
    "ShearX",
    "ShearY",
    "TranslateX",
    "TranslateY",
    "Rotate",
    "Brightness",
    "Color",
    "Contrast",
    "Sharpness",
}


def _apply_aug(img: np.ndarray, name: str, mag: float, mode: int, fill: Any) -> np.ndarray:
    if name == "ShearX":
        return warp(img, (1, mag, 0, 0, 1, 0), img.shape[:2], mode, fill)
    if name == "ShearY":
        return warp(img, (1, 0, 0, mag, 1, 0), img.shape[:2], mode, fill)
    if name == "TranslateX":
        return warp(img, (1, 0, mag, 0, 1, 0), img.shape[:2], mode, fill)
    if name == "TranslateY":
        return warp(img, (1, 0, 0, 0, 1, mag), img.shape[:2], mode, fill)
    if name == "Rotate":
        return d.np_rotate(img, mag, mode, False, None, fill)
    if name == "Brightness":
        return d.np_brightness(img, 1.0 + mag)
    if name == "Color":
        return d.np_color(img, 1.0 + mag)
    if name == "Contrast":
        return d.np_contrast(img, 1.0 + mag)
    if name == "Sharpness":
        return d.np_sharpness(img, 1.0 + mag)
    if name == "Posterize":
        return posterize(img, int(mag))
    if name == "Solarize":
        return solarize(img, mag, 255)
    if name == "AutoContrast":
        return d.AutoContrast()._execute_numpy(img)
    if name == "Equalize":
        return d.Equalize()._execute_numpy(img)
    if name == "Invert":
        return 255 - img
    raise ValueError(f"AutoAugment: unknown operation {name!r}.")  # pragma: no cover


class AutoAugment(TensorOperation):
    """AutoAugment (Cubuk et al.) with the ImageNet, CIFAR-10 or SVHN policy."""

    def __init__(
        self,
        policy: AutoAugmentPolicy = AutoAugmentPolicy.IMAGENET,
        interpolation: Inter = Inter.NEAREST,
        fill_value: Any = 0,
    ) -> None:
        self.policy = check_enum("AutoAugment", policy, AutoAugmentPolicy, "policy")
        self.interpolation = d._check_interpolation("AutoAugment", interpolation, warp_only=True)
        self.fill_value = check_fill("AutoAugment", fill_value)

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        _u8("AutoAugment", img)
        rng = self._rng()
        policy = _POLICIES[self.policy]
        sub = policy[int(rng.integers(len(policy)))]
        mode = d._WARP_MODE[self.interpolation]
        fill = d._fill_for(img, self.fill_value)
        h, w = img.shape[:2]
        for name, prob, level in sub:
            if rng.random() > prob:
                continue
            mag = 0.0 if level is None else _magnitude(name, level, h, w)
            if name in _SIGNED and rng.random() < 0.5:
                mag = -mag
            img = _apply_aug(img, name, mag, mode, fill)
        return img


class RandomSelectSubpolicy(TensorOperation):
    """Pick one sub-policy (a list of (op, prob)) at random and apply its ops in order."""

    def __init__(self, policy: list[list[tuple[Any, float]]]) -> None:
        if not isinstance(policy, list) or not policy:
            raise ValueError(
                "RandomSelectSubpolicy: policy must be a non-empty list of sub-policies."
            )
        for sub in policy:
            if not isinstance(sub, list) or not sub:
                raise ValueError("RandomSelectSubpolicy: each sub-policy must be a non-empty list.")
            for item in sub:
                if (
                    not isinstance(item, tuple)
                    or len(item) != 2
                    or not callable(item[0])
                    or not is_num(item[1])
                    or not 0 <= item[1] <= 1
                ):
                    raise ValueError(
                        f"RandomSelectSubpolicy: each entry must be (transform, prob in [0, 1]), "
                        f"got {item!r}."
                    )
        self.policy = policy

    def _execute_numpy(self, *args: Any) -> Any:
        rng = self._rng()
        sub = self.policy[int(rng.integers(len(self.policy)))]
        for op, prob in sub:
            if rng.random() < prob:
                args = _as_tuple(op(*args))
        return args if len(args) > 1 else args[0]


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
        self._resize = d.Resize(size, interpolation)
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
        self._crop = d.RandomCrop(size, padding, pad_if_needed, fill_value, padding_mode)
        self.size = self._crop.size

    def _execute_numpy(self, img: np.ndarray, bboxes: Any) -> tuple[np.ndarray, np.ndarray]:
        b = _check_bbox("RandomCropWithBBox", bboxes).copy()
        c = self._crop
        l, t, r, bo = c._pads(*img.shape[:2])
        if any((l, t, r, bo)):
            img = d.np_pad(img, (l, t, r, bo), d._fill_for(img, c.fill_value), c.padding_mode)
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
        self._crop = d.RandomResizedCrop(size, scale, ratio, interpolation, max_attempts)
        self.size = self._crop.size

    def _execute_numpy(self, img: np.ndarray, bboxes: Any) -> tuple[np.ndarray, np.ndarray]:
        b = _check_bbox("RandomResizedCropWithBBox", bboxes)
        i, j, ch, cw = self._crop._params(*img.shape[:2])
        out = d.np_resize(img[i : i + ch, j : j + cw], *self.size, self._crop._filter)
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
