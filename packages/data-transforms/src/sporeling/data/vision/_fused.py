"""Fused operations of `map`, as MindSpore's dataset optimizer makes them, and that pass.

MindSpore's tree optimizer turns `Decode` followed by `RandomResizedCrop` in one map into
`RandomCropDecodeResize`. `fuse_operations` does the same on a map's resolved list (only
where both ops resolved to the NumPy path, and only for the library's own classes, not
subclasses that override them), and fuses one more run:

* Decode + RandomResizedCrop -> `FusedDecodeResizedCrop` (`_decode_crop`): the crop box
  is drawn from the image size in the file's header, with the RandomResizedCrop op's
  generator and the same call the op makes, so each row gets the crop the unfused pair
  would give it (seeds keep their meaning). A plain JPEG is decoded without `Image.open`
  (`_jpeg`); one whose crop is at least twice the output size in both directions is
  decoded in Pillow's draft mode (DCT-domain scaling by 1/2, 1/4 or 1/8, the largest that
  keeps the crop at least as large as the output), and only down to the crop's bottom
  row (the rows are the full decode's); the crop is resized straight out of the
  decoder's buffer (no full-image copy), bilinear/box/hamming with the shrinking
  pass first. Tolerance against Decode then RandomResizedCrop, in uint8 levels
  (tests/test_vision_fused.py): without draft scaling, NEAREST, bicubic and Lanczos are
  identical and bilinear/box/hamming within 1 level (each pass order rounds its
  intermediate once, by at most half a level); with draft scaling, per image a mean
  absolute difference under 5 levels (about 1.5 on average on photos) and under 4 % of
  values more than 16 levels off (the DCT-domain downscale is a different low-pass
  filter than the resize's antialiasing).
* [RandomHorizontalFlip +] Normalize + HWC2CHW -> `FusedNormalizeCHW`: one Numba pass
  from the uint8 (or float) HWC image to the float32 CHW output (`kernels.layout`),
  bitwise equal to the unfused ops, the flip drawn from the flip op's generator.

A fused op given an input its fast path does not take (a PIL image, a CHW array, ...)
runs the original ops one after the other, so errors and results stay theirs.
`config.set_map_fusion(False)` turns the pass off.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sporeling.data import config
from sporeling.data.engine.base import DeferredArray
from sporeling.data.transforms._base import Transform, _Resolved
from sporeling.data.vision._convert import HWC2CHW, Normalize
from sporeling.data.vision._decode import Decode
from sporeling.data.vision._decode_crop import decode_resized_crop
from sporeling.data.vision._geometry import RandomHorizontalFlip, RandomResizedCrop
from sporeling.data.vision.kernels.layout import normalize_chw, normalize_chw_lut, normalize_lut

__all__ = ["FusedDecodeResizedCrop", "FusedNormalizeCHW", "fuse_operations"]


def _is_encoded(x: Any) -> bool:
    if isinstance(x, np.ndarray):
        return x.dtype == np.uint8 and x.ndim == 1
    return isinstance(x, bytes | bytearray | memoryview)


class FusedDecodeResizedCrop:
    """`Decode` + `RandomResizedCrop` of one map, as one step (`decode_resized_crop`)."""

    def __init__(self, decode: _Resolved, crop: _Resolved) -> None:
        self.decode = decode
        self.crop = crop
        self.draft = config.get_jpeg_draft()

    def __call__(self, *args: Any) -> tuple[Any, ...]:
        if len(args) != 1 or not _is_encoded(args[0]):
            return self.crop(*self.decode(*args))
        op = self.crop.op
        out = decode_resized_crop(
            "Decode",
            args[0],
            op.size,
            op.scale,
            op.ratio,
            op.max_attempts,
            op._filter,
            op._rng(),
            draft=self.draft,
        )
        return (out,)

    def __repr__(self) -> str:
        return f"<fused: {self.decode!r} + {self.crop!r}>"


def _chw_input(x: Any) -> bool:
    if not isinstance(x, np.ndarray) or x.ndim not in (2, 3):
        return False
    kind = x.dtype.kind
    return kind in "ui" or kind == "f"


class _DeferredCHW(DeferredArray):
    """Normalize (a uint8 image's levels looked up in `normalize_lut`'s table) + flip +
    HWC2CHW of one image, done by the batch that stacks it, into its row of the batch."""

    __slots__ = ("flip", "img", "lut")

    def __init__(self, img: np.ndarray, lut: np.ndarray, flip: bool) -> None:
        h, w, c = img.shape
        super().__init__((c, h, w), np.dtype(np.float32))
        self.img, self.lut, self.flip = img, lut, flip

    def write_into(self, out: np.ndarray) -> None:
        normalize_chw_lut(self.img, self.lut, self.flip, out)


class FusedNormalizeCHW:
    """[`RandomHorizontalFlip` +] `Normalize` + `HWC2CHW` of one map, as one Numba pass
    (uint8 images through a table of Normalize's 256 values per channel, bitwise equal).
    The `deferring()` variant, which the map uses under a batch that stacks its rows, hands
    a uint8 image's work to that batch (`_DeferredCHW`), which writes the result straight
    into its array (no float32 image of its own, no copy into the batch)."""

    def __init__(
        self,
        flip: _Resolved | None,
        normalize: _Resolved,
        hwc2chw: _Resolved,
        defer: bool = False,
    ) -> None:
        self.flip = flip
        self.normalize = normalize
        self.hwc2chw = hwc2chw
        self.defer = defer
        self._luts: dict[int, np.ndarray] = {}

    def deferring(self) -> FusedNormalizeCHW:
        """This op, leaving uint8 images' results to the batch (`_DeferredCHW`)."""
        twin = FusedNormalizeCHW(self.flip, self.normalize, self.hwc2chw, defer=True)
        twin._luts = self._luts
        return twin

    def _lut(self, channels: int) -> np.ndarray:
        lut = self._luts.get(channels)
        if lut is None:
            norm = self.normalize.op
            lut = self._luts[channels] = normalize_lut(norm.mean, norm.std, channels)
        return lut

    def _unfused(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        if self.flip is not None:
            args = self.flip(*args)
        return self.hwc2chw(*self.normalize(*args))

    def __call__(self, *args: Any) -> tuple[Any, ...]:
        norm = self.normalize.op
        if len(args) != 1 or not _chw_input(args[0]):
            return self._unfused(args)
        img = args[0]
        channels = 1 if img.ndim == 2 else img.shape[2]
        if norm.mean.size not in (1, channels):
            return self._unfused(args)  # Normalize raises its own error
        flip = bool(self.flip.op._params()) if self.flip is not None else False
        if img.dtype != np.uint8:
            return (normalize_chw(img, norm.mean, norm.std, flip=flip),)
        x = img[:, :, None] if img.ndim == 2 else img
        if self.defer:
            return (_DeferredCHW(x, self._lut(channels), flip),)
        return (normalize_chw_lut(x, self._lut(channels), flip),)

    def __repr__(self) -> str:
        parts = [self.flip, self.normalize, self.hwc2chw]
        return "<fused: " + " + ".join(repr(p) for p in parts if p is not None) + ">"


def _is(r: Any, cls: type[Transform], impl: str = "C") -> bool:
    """`r` runs an op of class `cls` (or a legacy alias) on the NumPy path, unmodified."""
    if not isinstance(r, _Resolved) or r.implementation != impl or not isinstance(r.op, cls):
        return False
    return type(r.op)._execute_numpy is cls._execute_numpy


def fuse_operations(chain: Sequence[Callable[..., Any]]) -> list[Callable[..., Any]]:
    """The resolved chain with fusable runs replaced (see the module docstring)."""
    ops: list[Any] = list(chain)
    out: list[Callable[..., Any]] = []
    k = 0
    while k < len(ops):
        a = ops[k]
        nxt: Any = ops[k + 1] if k + 1 < len(ops) else None
        third: Any = ops[k + 2] if k + 2 < len(ops) else None
        if _is(a, Decode) and not a.op.to_pil and _is(nxt, RandomResizedCrop):
            out.append(FusedDecodeResizedCrop(a, nxt))
            k += 2
        elif _is(a, Normalize) and a.op.is_hwc and _is(nxt, HWC2CHW):
            out.append(FusedNormalizeCHW(None, a, nxt))
            k += 2
        elif (
            _is(a, RandomHorizontalFlip)
            and _is(nxt, Normalize)
            and nxt.op.is_hwc
            and _is(third, HWC2CHW)
        ):
            out.append(FusedNormalizeCHW(a, nxt, third))
            k += 3
        else:
            out.append(a)
            k += 1
    return out
