"""Colour, tone and filtering: gamma, contrast, equalisation, inversion, colour/brightness/
sharpness adjustment, lighting noise, posterize/solarize, grayscale and HSV conversion,
colour-space conversion and Gaussian blur.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from PIL import Image, ImageEnhance, ImageOps

from sporeling.data.transforms._base import (
    PyTensorOperation,
    TensorOperation,
    Transform,
)
from sporeling.data.vision._common import (
    _u8,
    np_brightness,
    np_color,
    np_contrast,
    np_sharpness,
    posterize,
    solarize,
)
from sporeling.data.vision.kernels import color as kcolor
from sporeling.data.vision.kernels import pointwise as kpoint
from sporeling.data.vision.utils import (
    ConvertMode,
    check_enum,
    check_image,
    check_prob,
    check_range,
    is_num,
)

__all__ = [
    "AdjustGamma",
    "AutoContrast",
    "ConvertColor",
    "Equalize",
    "GaussianBlur",
    "Grayscale",
    "HsvToRgb",
    "Invert",
    "RandomAdjustSharpness",
    "RandomAutoContrast",
    "RandomColor",
    "RandomColorAdjust",
    "RandomEqualize",
    "RandomGrayscale",
    "RandomInvert",
    "RandomLighting",
    "RandomPosterize",
    "RandomSharpness",
    "RandomSolarize",
    "RgbToHsv",
]


def _apply_lut(img: np.ndarray, luts: list[np.ndarray]) -> np.ndarray:
    """One table per channel, applied in one pass (`kernels.pointwise.apply_luts`)."""
    return kpoint.apply_luts(img, np.stack(luts))


def _check_u8(op: str, img: np.ndarray) -> np.ndarray:
    check_image(op, img)
    if img.dtype != np.uint8:
        raise TypeError(f"{op}: expected a uint8 image, got dtype {img.dtype}.")
    return img


def hue_shift(f: float) -> int:
    return int(f * 255) % 256


def np_hue(img: np.ndarray, f: float) -> np.ndarray:
    if img.ndim == 2 or img.shape[2] != 3:
        return img
    hsv = kcolor.rgb_to_hsv_u8(img)
    hsv[..., 0] = (hsv[..., 0].astype(np.int32) + hue_shift(f)) % 256
    return kcolor.hsv_to_rgb_u8(hsv)


def pil_hue(img: Image.Image, f: float) -> Image.Image:
    if img.mode != "RGB":
        return img
    h, s, v = img.convert("HSV").split()
    nh = ((np.asarray(h).astype(np.int32) + hue_shift(f)) % 256).astype(np.uint8)
    return Image.merge("HSV", (Image.fromarray(nh, "L"), s, v)).convert("RGB")


def _check_degrees_pos(op: str, degrees: Any) -> tuple[float, float]:
    return check_range(op, degrees, "degrees", 0.0)


class RandomColor(Transform):
    """Adjust saturation by a factor drawn from `degrees` (ImageEnhance.Color)."""

    def __init__(self, degrees: tuple[float, float] = (0.1, 1.9)) -> None:
        self.degrees = _check_degrees_pos("RandomColor", degrees)

    def _params(self) -> float:
        return float(self._rng().uniform(*self.degrees))

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        return np_color(_check_u8("RandomColor", img), self._params())

    def _execute_pil(self, img: Image.Image) -> Image.Image:
        return ImageEnhance.Color(img).enhance(self._params())


class RandomSharpness(Transform):
    """Adjust sharpness by a factor drawn from `degrees` (ImageEnhance.Sharpness)."""

    def __init__(self, degrees: tuple[float, float] = (0.1, 1.9)) -> None:
        self.degrees = _check_degrees_pos("RandomSharpness", degrees)

    def _params(self) -> float:
        return float(self._rng().uniform(*self.degrees))

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        return np_sharpness(_check_u8("RandomSharpness", img), self._params())

    def _execute_pil(self, img: Image.Image) -> Image.Image:
        return ImageEnhance.Sharpness(img).enhance(self._params())


def _factor_range(op: str, value: Any, name: str) -> tuple[float, float]:
    if is_num(value):
        if value < 0:
            raise ValueError(f"{op}: {name} must be non-negative, got {value}.")
        return max(0.0, 1.0 - value), 1.0 + value
    return check_range(op, value, name, 0.0)


class RandomColorAdjust(Transform):
    """Random brightness, contrast, saturation and hue, applied in a random order."""

    def __init__(
        self,
        brightness: Any = (1, 1),
        contrast: Any = (1, 1),
        saturation: Any = (1, 1),
        hue: Any = (0, 0),
    ) -> None:
        op = "RandomColorAdjust"
        self.brightness = _factor_range(op, brightness, "brightness")
        self.contrast = _factor_range(op, contrast, "contrast")
        self.saturation = _factor_range(op, saturation, "saturation")
        if is_num(hue):
            if not 0 <= hue <= 0.5:
                raise ValueError(f"{op}: hue must be in [0, 0.5], got {hue}.")
            hue = (-hue, hue)
        self.hue = check_range(op, hue, "hue", -0.5, 0.5)

    def _params(self) -> list[tuple[str, float]]:
        rng = self._rng()
        steps: list[tuple[str, float]] = []
        for name, (lo, hi), neutral in (
            ("brightness", self.brightness, 1.0),
            ("contrast", self.contrast, 1.0),
            ("saturation", self.saturation, 1.0),
            ("hue", self.hue, 0.0),
        ):
            if lo != neutral or hi != neutral:
                steps.append((name, float(rng.uniform(lo, hi))))
        order: np.ndarray | list[int] = rng.permutation(len(steps)) if steps else []
        return [steps[i] for i in order]

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        _check_u8("RandomColorAdjust", img)
        fns = {
            "brightness": np_brightness,
            "contrast": np_contrast,
            "saturation": np_color,
            "hue": np_hue,
        }
        for name, f in self._params():
            img = fns[name](img, f)
        return img

    def _execute_pil(self, img: Image.Image) -> Image.Image:
        for name, f in self._params():
            if name == "brightness":
                img = ImageEnhance.Brightness(img).enhance(f)
            elif name == "contrast":
                img = ImageEnhance.Contrast(img).enhance(f)
            elif name == "saturation":
                img = ImageEnhance.Color(img).enhance(f)
            else:
                img = pil_hue(img, f)
        return img


# AlexNet PCA lighting: eigenvalues (x255) times eigenvectors, as MindSpore's Python op.
_LIGHTING = np.array(
    [
        [55.46 * -0.5675, 4.794 * 0.7192, 1.148 * 0.4009],
        [55.46 * -0.5808, 4.794 * -0.0045, 1.148 * -0.8140],
        [55.46 * -0.5836, 4.794 * -0.6948, 1.148 * 0.4203],
    ]
)


class RandomLighting(Transform):
    """AlexNet-style PCA lighting noise with strength drawn from N(0, alpha)."""

    def __init__(self, alpha: float = 0.05) -> None:
        if not is_num(alpha) or alpha < 0:
            raise ValueError(f"RandomLighting: alpha must be a non-negative number, got {alpha!r}.")
        self.alpha = float(alpha)

    def _params(self) -> np.ndarray:
        return _LIGHTING @ self._rng().normal(0.0, self.alpha, 3)

    def _apply(self, arr: np.ndarray) -> np.ndarray:
        if arr.ndim != 3 or arr.shape[2] != 3:
            raise ValueError(f"RandomLighting: expected an RGB image (H, W, 3), got {arr.shape}.")
        out = arr.astype(np.float64) + self._params()
        if arr.dtype == np.uint8:
            return np.clip(out, 0, 255).astype(np.uint8)
        return out.astype(arr.dtype)

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        return self._apply(check_image("RandomLighting", img))

    def _execute_pil(self, img: Image.Image) -> Image.Image:
        return Image.fromarray(self._apply(np.asarray(img)), img.mode)


@functools.lru_cache(maxsize=64)
def gamma_lut(gamma: float, gain: float) -> np.ndarray:
    """The uint8 table of AdjustGamma (cached: an op applies the same one to every image;
    read-only, so no caller can change the cached copy)."""
    x = np.arange(256, dtype=np.float64) / 255.0
    lut = np.clip((255 + 1 - 1e-3) * gain * np.power(x, gamma), 0, 255).astype(np.uint8)
    lut.flags.writeable = False
    return lut


class AdjustGamma(Transform):
    """out = 255 * gain * (in / 255) ** gamma (via a lookup table for uint8)."""

    def __init__(self, gamma: float, gain: float = 1.0) -> None:
        if not is_num(gamma) or gamma < 0:
            raise ValueError(f"AdjustGamma: gamma must be a non-negative number, got {gamma!r}.")
        if not is_num(gain):
            raise TypeError(f"AdjustGamma: gain must be a number, got {gain!r}.")
        self.gamma = float(gamma)
        self.gain = float(gain)

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        check_image("AdjustGamma", img)
        if img.dtype != np.uint8:
            return (self.gain * np.power(img.astype(np.float32), self.gamma)).astype(np.float32)
        lut = gamma_lut(self.gamma, self.gain)
        return _apply_lut(img, [lut] * (1 if img.ndim == 2 else img.shape[2]))

    def _execute_pil(self, img: Image.Image) -> Image.Image:
        lut = gamma_lut(self.gamma, self.gain).tolist()
        return img.point(lut * len(img.getbands()))


def autocontrast_lut(h: np.ndarray, cutoff: tuple[float, float], ignore: Any) -> np.ndarray:
    """ImageOps.autocontrast's lookup table for one band histogram."""
    h = h.astype(np.int64).copy()
    if ignore is not None:
        for g in ignore if isinstance(ignore, list | tuple) else [ignore]:
            h[g] = 0
    if cutoff[0] or cutoff[1]:
        n = int(h.sum())
        for lo_side, frac in ((True, cutoff[0]), (False, cutoff[1])):
            cut = int(n * frac // 100)
            rng_ = range(256) if lo_side else range(255, -1, -1)
            for i in rng_:
                if cut > h[i]:
                    cut -= int(h[i])
                    h[i] = 0
                else:
                    h[i] -= cut
                    cut = 0
                if cut <= 0:
                    break
    nz = np.nonzero(h)[0]
    if nz.size == 0 or nz[-1] <= nz[0]:
        return np.arange(256, dtype=np.uint8)
    lo, hi = int(nz[0]), int(nz[-1])
    scale = 255.0 / (hi - lo)
    offset = -lo * scale
    ix = (np.arange(256) * scale + offset).astype(np.int64)  # int() truncates toward zero
    return np.clip(ix, 0, 255).astype(np.uint8)


class AutoContrast(Transform):
    """Stretch each channel's histogram to [0, 255] after cutting `cutoff` % at both ends."""

    def __init__(self, cutoff: float = 0.0, ignore: Any = None) -> None:
        if not is_num(cutoff) or not 0 <= cutoff < 50:
            raise ValueError(f"AutoContrast: cutoff must be in [0, 50), got {cutoff!r}.")
        if ignore is not None:
            items = ignore if isinstance(ignore, list | tuple) else [ignore]
            if not all(isinstance(g, int) and 0 <= g <= 255 for g in items):
                raise ValueError(f"AutoContrast: ignore must be ints in [0, 255], got {ignore!r}.")
        self.cutoff = float(cutoff)
        self.ignore = ignore

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        _check_u8("AutoContrast", img)
        luts = [
            autocontrast_lut(h, (self.cutoff,) * 2, self.ignore)
            for h in kpoint.channel_histograms(img)
        ]
        return _apply_lut(img, luts)

    def _execute_pil(self, img: Image.Image) -> Image.Image:
        return ImageOps.autocontrast(img, self.cutoff, self.ignore)


def equalize_lut(h: np.ndarray) -> np.ndarray:
    """ImageOps.equalize's lookup table for one band histogram."""
    histo = h[h > 0]
    if histo.size <= 1:
        return np.arange(256, dtype=np.uint8)
    step = (int(histo.sum()) - int(histo[-1])) // 255  # Pillow >= 10.3 (older: // 256)
    if not step:
        return np.arange(256, dtype=np.uint8)
    n = step // 2 + np.concatenate([[0], np.cumsum(h[:-1].astype(np.int64))])
    return np.minimum(n // step, 255).astype(np.uint8)


class Equalize(Transform):
    """Equalize each channel's histogram (ImageOps.equalize)."""

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        _check_u8("Equalize", img)
        luts = [equalize_lut(h) for h in kpoint.channel_histograms(img)]
        return _apply_lut(img, luts)

    def _execute_pil(self, img: Image.Image) -> Image.Image:
        return ImageOps.equalize(img)


class Invert(Transform):
    """255 - pixel on every channel."""

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        return 255 - _check_u8("Invert", img)

    def _execute_pil(self, img: Image.Image) -> Image.Image:
        return ImageOps.invert(img)


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


class _RandomApplyOp(TensorOperation):
    def __init__(self, prob: float = 0.5) -> None:
        self.prob = check_prob(type(self).__name__, prob)

    def _execute_numpy(self, img: np.ndarray) -> np.ndarray:
        check_image(type(self).__name__, img)
        if self._rng().random() < self.prob:
            return self._apply(img)
        return img

    def _apply(self, img: np.ndarray) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} must define _apply()")


class RandomAdjustSharpness(_RandomApplyOp):
    """With probability `prob`, adjust sharpness by the fixed factor `degree`."""

    def __init__(self, degree: float, prob: float = 0.5) -> None:
        if not is_num(degree) or degree < 0:
            raise ValueError(f"RandomAdjustSharpness: degree must be >= 0, got {degree!r}.")
        super().__init__(prob)
        self.degree = float(degree)

    def _apply(self, img: np.ndarray) -> np.ndarray:
        return np_sharpness(_u8("RandomAdjustSharpness", img), self.degree)


class RandomAutoContrast(_RandomApplyOp):
    """AutoContrast with probability `prob`."""

    def __init__(self, cutoff: float = 0.0, ignore: Any = None, prob: float = 0.5) -> None:
        super().__init__(prob)
        self._op = AutoContrast(cutoff, ignore)
        self.cutoff, self.ignore = cutoff, ignore

    def _apply(self, img: np.ndarray) -> np.ndarray:
        return self._op._execute_numpy(img)


class RandomEqualize(_RandomApplyOp):
    """Equalize with probability `prob`."""

    def _apply(self, img: np.ndarray) -> np.ndarray:
        return Equalize()._execute_numpy(img)


class RandomInvert(_RandomApplyOp):
    """Invert with probability `prob`."""

    def _apply(self, img: np.ndarray) -> np.ndarray:
        return 255 - _u8("RandomInvert", img)


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


class Grayscale(PyTensorOperation):
    """Convert to grayscale with 1 or 3 output channels."""

    def __init__(self, num_output_channels: int = 1) -> None:
        if num_output_channels not in (1, 3):
            raise ValueError(
                f"Grayscale: num_output_channels must be 1 or 3, got {num_output_channels!r}."
            )
        self.num_output_channels = num_output_channels

    def _execute_pil(self, img: Image.Image) -> Image.Image:
        g = img.convert("L")
        return g.convert("RGB") if self.num_output_channels == 3 else g


class RandomGrayscale(PyTensorOperation):
    """Grayscale (keeping the channel count) with probability `prob`."""

    def __init__(self, prob: float = 0.1) -> None:
        self.prob = check_prob("RandomGrayscale", prob)

    def _execute_pil(self, img: Image.Image) -> Image.Image:
        if self._rng().random() < self.prob:
            g = img.convert("L")
            return g.convert("RGB") if img.mode == "RGB" else g
        return img


def _hwc_float(op: str, x: Any, is_hwc: bool) -> tuple[np.ndarray, bool]:
    if isinstance(x, Image.Image):
        x, is_hwc = np.asarray(x.convert("RGB"), np.float32) / 255.0, True
    x = np.asarray(x)
    if x.ndim not in (3, 4):
        raise ValueError(f"{op}: expected an image (3-D) or a batch (4-D), got shape {x.shape}.")
    moved = not is_hwc
    if moved:
        x = np.moveaxis(x, -3, -1)
    if x.shape[-1] != 3:
        raise ValueError(f"{op}: expected 3 channels, got shape {x.shape}.")
    return x.astype(np.float64), moved


def rgb_to_hsv_float(rgb: np.ndarray) -> np.ndarray:
    """Vectorised `colorsys.rgb_to_hsv` on [..., 3] arrays."""
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    maxc = rgb.max(-1)
    minc = rgb.min(-1)
    v = maxc
    delta = maxc - minc
    with np.errstate(invalid="ignore", divide="ignore"):
        s = np.where(maxc > 0, delta / np.where(maxc == 0, 1, maxc), 0.0)
        dd = np.where(delta == 0, 1, delta)
        rc, gc, bc = (maxc - r) / dd, (maxc - g) / dd, (maxc - b) / dd
    h = np.where(r == maxc, bc - gc, np.where(g == maxc, 2.0 + rc - bc, 4.0 + gc - rc))
    h = np.where(delta == 0, 0.0, (h / 6.0) % 1.0)
    return np.stack([h, s, v], -1)


def hsv_to_rgb_float(hsv: np.ndarray) -> np.ndarray:
    """Vectorised `colorsys.hsv_to_rgb` on [..., 3] arrays."""
    h, s, v = hsv[..., 0], hsv[..., 1], hsv[..., 2]
    i = np.floor(h * 6.0)
    f = h * 6.0 - i
    p, q, t = v * (1 - s), v * (1 - s * f), v * (1 - s * (1 - f))
    i = i.astype(np.int64) % 6
    choices = [
        np.stack(c, -1) for c in ((v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q))
    ]
    out = np.choose(i[..., None], choices)
    return np.where((s == 0)[..., None], np.stack([v, v, v], -1), out)


class RgbToHsv(PyTensorOperation):
    """RGB -> HSV on float arrays in [0, 1] (CHW unless `is_hwc`), as colorsys."""

    _py_input = "any"

    def __init__(self, is_hwc: bool = False) -> None:
        self.is_hwc = bool(is_hwc)

    def _execute_pil(self, x: Any) -> np.ndarray:
        arr, moved = _hwc_float("RgbToHsv", x, self.is_hwc)
        out = rgb_to_hsv_float(arr).astype(np.float32)
        return np.moveaxis(out, -1, -3) if moved else out


class HsvToRgb(PyTensorOperation):
    """HSV -> RGB on float arrays in [0, 1] (CHW unless `is_hwc`), as colorsys."""

    _py_input = "any"

    def __init__(self, is_hwc: bool = False) -> None:
        self.is_hwc = bool(is_hwc)

    def _execute_pil(self, x: Any) -> np.ndarray:
        arr, moved = _hwc_float("HsvToRgb", x, self.is_hwc)
        out = hsv_to_rgb_float(arr).astype(np.float32)
        return np.moveaxis(out, -1, -3) if moved else out
