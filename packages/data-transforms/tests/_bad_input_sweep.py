"""The data-transforms bad-input sweep (hardening issue #20), run by test_bad_inputs.py in
a subprocess under a memory cap: every vision transform that takes one image is called
with None, strings, wrong dtypes and ranks, 0-d, empty and non-finite images. Each call
must succeed or raise TypeError/ValueError/IndexError naming the transform (its class
name), never a message from NumPy, Numba or Pillow internals, never a crash. Prints one
JSON line: the number of calls and the failures.
"""

from __future__ import annotations

import json
import warnings

import numpy as np

from sporeling.data import vision
from sporeling.data.transforms import use_rng
from sporeling.data.vision import Inter

ALLOWED = (TypeError, ValueError, IndexError)

TRANSFORMS = [
    vision.AdjustGamma(0.7),
    vision.AutoContrast(),
    vision.CenterCrop(4),
    vision.Equalize(),
    vision.Invert(),
    vision.Pad(2),
    vision.RandomAffine(20),
    vision.RandomColor(),
    vision.RandomColorAdjust(0.4, 0.4, 0.4, 0.2),
    vision.RandomCrop(4),
    vision.RandomHorizontalFlip(),
    vision.RandomVerticalFlip(),
    vision.RandomLighting(0.1),
    vision.RandomResizedCrop(4),
    vision.RandomRotation(30),
    vision.RandomSharpness(),
    vision.Resize(4),
    vision.Resize((3, 5), Inter.AREA),
    vision.Resize(4, Inter.BICUBIC),
    vision.Normalize([0.5, 0.5, 0.5], [0.2, 0.2, 0.2]),
    vision.HWC2CHW(),
    vision.Rescale(1 / 255, 0),
    vision.GaussianBlur(3),
    vision.Grayscale(),
    vision.CutOut(2),
    vision.HorizontalFlip(),
    vision.VerticalFlip(),
    vision.Crop((0, 0), 4),
    vision.RandomErasing(prob=1.0),
    vision.ToTensor(),
]

RNG = np.random.default_rng(0)
IMG = RNG.integers(0, 256, (8, 10, 3), dtype=np.uint8)
BAD = {
    "None": None,
    "string": "abc",
    "list": [[1, 2], [3, 4]],
    "0-d": np.array(7, np.uint8),
    "1-d": np.arange(10, dtype=np.uint8),
    "4-d": IMG[None],
    "empty": np.zeros((0, 0, 3), np.uint8),
    "empty rows": np.zeros((0, 10, 3), np.uint8),
    "bool": IMG > 128,
    "int64": IMG.astype(np.int64),
    "complex": IMG.astype(np.complex64),
    "5 channels": RNG.integers(0, 256, (8, 10, 5), dtype=np.uint8),
    "float nan/inf": np.where(IMG > 250, np.nan, np.where(IMG < 5, np.inf, IMG / 255.0)),
}


def _named(msg: str, op: object) -> bool:
    return type(op).__name__ in msg


def main() -> None:
    failures: list[str] = []
    calls = 0
    for op in TRANSFORMS:
        for case, value in BAD.items():
            calls += 1
            try:
                with warnings.catch_warnings(), np.errstate(all="ignore"):
                    warnings.simplefilter("ignore")
                    with use_rng(np.random.default_rng(0)):
                        op(value)
            except ALLOWED as exc:
                if not _named(str(exc), op):
                    failures.append(
                        f"{type(op).__name__} [{case}]: {type(exc).__name__}: {exc}"[:300]
                    )
            except Exception as exc:  # noqa: BLE001
                failures.append(f"{type(op).__name__} [{case}]: {type(exc).__name__}: {exc}"[:300])
    print(json.dumps({"calls": calls, "failures": failures}))


if __name__ == "__main__":
    main()
