"""Numba (NumPy array path) against Pillow (PIL path) for every dual vision transform.

Each transform runs on one decoded ImageNet-like photo (HWC uint8 for the Numba path, the
same pixels as a PIL image for the Pillow path), warm (Numba compiled), with the median
over repeats of the CPU time per call (the calling thread's, so other work on a shared
machine inflates it less than wall time). Ratio = Pillow time / Numba time (> 1: Numba
faster). The batch ops are timed per image over a batch of 32 against a loop of the
per-image op. The fused rows (what `map` fuses, `vision._fused`) compare the fused op
with the unfused chain its row names in the right-hand column.
"""

from __future__ import annotations

import gc
import io
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

# (name, keyword arguments); random ops get arguments that make them do their work.
DUAL = [
    ("AdjustGamma", {"gamma": 1.5}),
    ("AutoContrast", {}),
    ("CenterCrop", {"size": 224}),
    ("Decode", {}),
    ("Equalize", {}),
    ("Invert", {}),
    ("Pad", {"padding": 16}),
    ("RandomAffine", {"degrees": 15, "translate": (0.1, 0.1), "scale": (0.9, 1.1)}),
    ("RandomColor", {"degrees": (0.5, 1.5)}),
    ("RandomColorAdjust", {"brightness": 0.4, "contrast": 0.4, "saturation": 0.4, "hue": 0.1}),
    ("RandomCrop", {"size": 224}),
    ("RandomHorizontalFlip", {"prob": 1.0}),
    ("RandomLighting", {"alpha": 0.1}),
    ("RandomResizedCrop", {"size": 224}),
    ("RandomRotation", {"degrees": 30}),
    ("RandomSharpness", {"degrees": (0.1, 1.9)}),
    ("RandomVerticalFlip", {"prob": 1.0}),
    ("Resize", {"size": 256}),
]


def time_call(fn: Callable[[], Any], target_s: float, repeats: int) -> float:
    """Median CPU seconds per call (iterations calibrated to ~target_s per repeat)."""
    fn()
    n = 1
    while True:
        t0 = time.thread_time()
        for _ in range(n):
            fn()
        dt = time.thread_time() - t0
        if dt >= target_s / 4 or n >= 1 << 16:
            break
        n *= 2
    n = max(1, int(n * target_s / max(dt, 1e-9)))
    times = []
    gc.disable()
    try:
        for _ in range(repeats):
            t0 = time.thread_time()
            for _ in range(n):
                fn()
            times.append((time.thread_time() - t0) / n)
    finally:
        gc.enable()
    return statistics.median(times)


def run(jpeg: Path, quick: bool = False) -> list[dict[str, Any]]:
    from PIL import Image

    from sporeling.data import config, vision

    config.set_seed(0)
    target, repeats = (0.05, 3) if quick else (0.2, 5)
    raw = jpeg.read_bytes()
    encoded = np.frombuffer(raw, np.uint8)
    with Image.open(io.BytesIO(raw)) as f:
        pil = f.convert("RGB")
    arr = np.asarray(pil).copy()
    rows: list[dict[str, Any]] = []
    for name, kwargs in DUAL:
        cls = getattr(vision, name, None)
        if cls is None:
            rows.append({"transform": name, "note": "not in sporeling.data.vision"})
            continue
        if name == "Decode":
            numba_op, pil_op = cls(), cls(to_pil=True)
            numba_in: Any = encoded
            pil_in: Any = raw
        else:
            numba_op = pil_op = cls(**kwargs)
            numba_in, pil_in = arr, pil
        try:
            t_numba = time_call(lambda op=numba_op, x=numba_in: op(x), target, repeats)
            t_pil = time_call(lambda op=pil_op, x=pil_in: op(x), target, repeats)
        except Exception as exc:  # report, keep going
            rows.append({"transform": name, "note": f"failed: {type(exc).__name__}: {exc}"})
            continue
        rows.append(
            {
                "transform": name,
                "args": repr(kwargs) if kwargs else "",
                "numba_us": t_numba * 1e6,
                "pil_us": t_pil * 1e6,
                "ratio": t_pil / t_numba,
            }
        )
    rows += _fused_rows(raw, arr, target, repeats)
    rows += _batch_rows(arr, target, repeats)
    return rows


def _fused_rows(raw: bytes, arr: np.ndarray, target: float, repeats: int) -> list[dict[str, Any]]:
    """The fused ops of `map` against the chains they replace."""
    from sporeling.data import vision
    from sporeling.data.transforms._base import resolve_operations
    from sporeling.data.vision._fused import fuse_operations

    encoded = np.frombuffer(raw, np.uint8)
    mean, std = [123.7, 116.3, 103.5], [58.4, 57.1, 57.4]
    decode_pil, crop = vision.Decode(to_pil=True), vision.RandomResizedCrop(224)
    decode_np = vision.Decode()
    fused_crop = vision.RandomCropDecodeResize(224)
    chain = resolve_operations(
        [vision.RandomHorizontalFlip(0.5), vision.Normalize(mean, std), vision.HWC2CHW()]
    )
    (fused_norm,) = fuse_operations(chain)
    small = np.ascontiguousarray(arr[:224, :224])

    def unfused_norm(x: np.ndarray = small) -> Any:
        for f in chain:
            (x,) = f(x)
        return x

    cases = [
        (
            "Decode + RandomResizedCrop(224), fused",
            "right: Pillow decode + crop + resize",
            lambda: fused_crop(encoded),
            lambda: crop(decode_pil(raw)),
        ),
        (
            "Decode + RandomResizedCrop(224), fused",
            "right: the unfused pair on arrays",
            lambda: fused_crop(encoded),
            lambda: crop(decode_np(encoded)),
        ),
        (
            "RandomHorizontalFlip + Normalize + HWC2CHW, fused",
            "224x224; right: the three ops unfused",
            lambda: fused_norm(small),
            unfused_norm,
        ),
    ]
    rows = []
    for name, note, fused, other in cases:
        t_fused = time_call(fused, target, repeats)
        t_other = time_call(other, target, repeats)
        rows.append(
            {
                "transform": name,
                "args": note,
                "numba_us": t_fused * 1e6,
                "pil_us": t_other * 1e6,
                "ratio": t_other / t_fused,
            }
        )
    return rows


def _batch_rows(arr: np.ndarray, target: float, repeats: int) -> list[dict[str, Any]]:
    """Batch ops per image (batch of 32) against the per-image op on arrays and on PIL."""
    from PIL import Image

    from sporeling.data import vision

    n = 32
    crop = np.ascontiguousarray(arr[:224, :224])
    batch = np.stack([crop] * n)
    pils = [Image.fromarray(crop)] * n
    originals = [arr] * n
    originals_pil = [Image.fromarray(arr)] * n
    crop_op = vision.BatchRandomResizedCrop(224)
    flip_op = vision.BatchRandomHorizontalFlip(0.5)
    color_op = vision.BatchRandomColorAdjust(0.4, 0.4, 0.4, 0.1)
    cases = [
        (
            "BatchRandomResizedCrop(224)",
            lambda: crop_op(originals),
            vision.RandomResizedCrop(224),
            originals,
            originals_pil,
        ),
        (
            "BatchRandomHorizontalFlip(0.5)",
            lambda: flip_op(batch),
            vision.RandomHorizontalFlip(0.5),
            list(batch),
            pils,
        ),
        (
            "BatchRandomColorAdjust(0.4, 0.4, 0.4, 0.1)",
            lambda: color_op(batch),
            vision.RandomColorAdjust(0.4, 0.4, 0.4, 0.1),
            list(batch),
            pils,
        ),
    ]
    rows = []
    for name, batch_fn, single, arrays, images in cases:
        t_batch = time_call(batch_fn, target, repeats) / n
        t_loop = time_call(lambda s=single, xs=arrays: [s(x) for x in xs], target, repeats) / n
        t_pil = time_call(lambda s=single, xs=images: [s(x) for x in xs], target, repeats) / n
        rows.append(
            {
                "transform": name,
                "args": "per image, batch of 32",
                "numba_us": t_batch * 1e6,
                "per_image_numba_us": t_loop * 1e6,
                "pil_us": t_pil * 1e6,
                "ratio": t_pil / t_batch,
            }
        )
    return rows


def render(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| transform | arguments | Numba (us) | Pillow (us) | Pillow / Numba |",
        "|---|---|---:|---:|---:|",
    ]
    for r in rows:
        if "note" in r:
            lines.append(f"| {r['transform']} | {r['note']} | | | |")
            continue
        numba = f"{r['numba_us']:.0f}"
        if "per_image_numba_us" in r:
            numba += f" (per-image op: {r['per_image_numba_us']:.0f})"
        lines.append(
            f"| {r['transform']} | {r['args']} | {numba} | {r['pil_us']:.0f} | {r['ratio']:.2f} |"
        )
    return "\n".join(lines)
