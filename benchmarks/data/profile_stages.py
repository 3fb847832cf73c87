"""Where the fused pipeline's time goes: CPU time per image of each stage, one thread.

Runs the stages of `sporeling`'s pipeline by hand on the benchmark's JPEGs (the same calls
the fused map ops and the batch make) and reports the calling thread's CPU time per image
for each: reading the file, the header and crop draw, decoding (three ways: the whole image
into a Pillow image, the whole image into a NumPy buffer, and down to the crop's bottom row
only, what the fused op does), the resize of the crop, and flip + Normalize + HWC2CHW
written straight into the image's row of a reused batch array through the 256-entry table
(what the batch does with the map's deferred rows now); in parentheses, what that last
stage cost before: the Numba pass into a fresh float32 image, then the copy into a fresh or
a reused batch array. The engine's own cost (the reader, queues, threads) is not in it:
compare with the pipeline's CPU ms per image in `run.py`'s table.

    python benchmarks/data/profile_stages.py [--images 600] [--repeats 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

MEAN = np.array([123.675, 116.28, 103.53], np.float32)
STD = np.array([58.395, 57.12, 57.375], np.float32)


def main(argv: list[str] | None = None) -> int:
    from images import ensure_images

    from sporeling.data.vision._geometry import resized_crop_params
    from sporeling.data.vision._jpeg import decode_jpeg, decode_jpeg_rgbx, jpeg_header
    from sporeling.data.vision._pil_pixels import pixels
    from sporeling.data.vision.kernels.layout import (
        normalize_chw,
        normalize_chw_lut,
        normalize_lut,
    )
    from sporeling.data.vision.kernels.resample import resize_array

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--images", type=int, default=600)
    p.add_argument("--repeats", type=int, default=2)
    args = p.parse_args(argv)
    folder, _ = ensure_images(2000)
    files = sorted(folder.glob("*/*.jpg"))[: args.images]
    print(f"{len(files)} JPEGs from {folder}; load average {os.getloadavg()}")
    rng = np.random.default_rng(0)
    fresh_batches = []
    reused = np.empty((32, 3, 224, 224), np.float32)
    lut = normalize_lut(MEAN, STD, 3)
    for rep in range(args.repeats):  # the first repeat includes Numba's cache loading
        cost: dict[str, float] = {}
        bottom = []

        def tick(stage: str, t0: float, cost: dict[str, float] = cost) -> float:
            t = time.thread_time()
            cost[stage] = cost.get(stage, 0.0) + t - t0
            return t

        for k, path in enumerate(files):
            t = time.thread_time()
            raw = path.read_bytes()
            t = tick("read the file", t)
            header = jpeg_header(raw)
            h, w, _ = header
            i, j, ch, cw = resized_crop_params(rng, h, w, (0.08, 1.0), (3 / 4, 4 / 3), 10)
            bottom.append((i + ch) / h)
            t = tick("header + crop draw", t)
            px = pixels(decode_jpeg(raw, header))
            t = tick("(decode all into a Pillow image + view)", t)
            px = decode_jpeg_rgbx(raw, header)
            t = tick("(decode all into a NumPy buffer)", t)
            px = decode_jpeg_rgbx(raw, header, 1, i + ch)
            t = tick("decode down to the crop's bottom row", t)
            out = resize_array(
                px, 224, 224, "bilinear", region=(i, j, ch, cw), channels=3, order="fast"
            )
            t = tick("resize the crop to 224x224", t)
            normalize_chw_lut(out, lut, bool(k % 2), reused[k % 32])
            t = tick("flip + Normalize + HWC2CHW into the batch", t)
            x = normalize_chw(out, MEAN, STD, flip=bool(k % 2))
            t = tick("(before: flip + Normalize + HWC2CHW)", t)
            if k % 32 == 0:
                fresh_batches = fresh_batches[-2:] + [np.empty((32, 3, 224, 224), np.float32)]
            fresh_batches[-1][k % 32] = x
            t = tick("(before: copy into a fresh batch array)", t)
            reused[k % 32] = x
            tick("(before: copy into a reused batch array)", t)
        pipeline = sum(v for s, v in cost.items() if not s.startswith("("))
        print(f"\nrepeat {rep + 1}: {1e6 * pipeline / len(files):.0f} us per image (stages "
              f"without parentheses); mean crop bottom / height {np.mean(bottom):.3f}")  # fmt: skip
        for stage, v in cost.items():
            share = "" if stage.startswith("(") else f"{100 * v / pipeline:5.1f} %"
            print(f"  {stage:42s} {1e6 * v / len(files):7.1f} us  {share}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
