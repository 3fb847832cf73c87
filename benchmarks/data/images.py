"""The benchmark's image set: ~2000 real JPEGs in class folders, made once into a cache.

Source photos: scikit-learn's two sample photos (`china.jpg`, `flower.jpg`, 640x427) when
scikit-learn is importable; else CIFAR-10 images from the repository's `shared/data`
(upscaled to ImageNet-like sizes). Each file is a different random crop of a source photo
(60-100% of each side, random flip), resized so its shorter side is 256-480 px, saved at
JPEG quality 85-95, so decoding and cropping do the work they do on ImageNet-like data.
The set is written under `benchmarks/data/.cache/` (ignored by git) and reused while its
manifest matches.
"""

from __future__ import annotations

import json
import lzma
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
CLASSES = 8
VERSION = 1


def _source_photos() -> tuple[str, list[np.ndarray]]:
    try:
        from sklearn.datasets import load_sample_images
    except ImportError:
        pass
    else:
        return "scikit-learn sample photos (china.jpg, flower.jpg)", list(
            load_sample_images().images
        )
    for cifar in (
        HERE.parents[1] / "shared" / "data" / "cifar-10" / "cifar-10-batches-bin",
        Path("/work/shared/data/cifar-10/cifar-10-batches-bin"),
    ):
        xz = cifar / "data_batch_1.bin.xz"
        if xz.exists():
            with lzma.open(xz) as f:
                raw = np.frombuffer(f.read(3073 * 64), np.uint8).reshape(64, 3073)
            imgs = [r[1:].reshape(3, 32, 32).transpose(1, 2, 0) for r in raw]
            return "CIFAR-10 data_batch_1 (first 64 images, upscaled)", imgs
    raise RuntimeError(
        "no source photos: install scikit-learn (its sample photos) or provide "
        "shared/data/cifar-10/cifar-10-batches-bin/data_batch_1.bin.xz"
    )


def ensure_images(count: int = 2000, seed: int = 0) -> tuple[Path, str]:
    """The folder of `count` JPEGs (made on first use) and a description of the source."""
    from PIL import Image

    folder = CACHE / f"jpegs-{count}-s{seed}"
    manifest = folder / "manifest.json"
    if manifest.exists():
        meta = json.loads(manifest.read_text())
        if meta.get("version") == VERSION and meta.get("count") == count:
            return folder, meta["source"]
    source, photos = _source_photos()
    rng = np.random.default_rng(seed)
    for c in range(CLASSES):
        (folder / f"class_{c}").mkdir(parents=True, exist_ok=True)
    for i in range(count):
        photo = photos[i % len(photos)]
        h, w = photo.shape[:2]
        ch = int(h * rng.uniform(0.6, 1.0))
        cw = int(w * rng.uniform(0.6, 1.0))
        y = int(rng.integers(0, h - ch + 1))
        x = int(rng.integers(0, w - cw + 1))
        im = Image.fromarray(photo[y : y + ch, x : x + cw])
        if rng.random() < 0.5:
            im = im.transpose(Image.FLIP_LEFT_RIGHT)
        short = int(rng.integers(256, 481))
        scale = short / min(im.size)
        im = im.resize(
            (max(1, round(im.size[0] * scale)), max(1, round(im.size[1] * scale))),
            Image.BICUBIC,
        )
        path = folder / f"class_{i % CLASSES}" / f"img_{i:05d}.jpg"
        im.save(path, "JPEG", quality=int(rng.integers(85, 96)))
    manifest.write_text(
        json.dumps({"version": VERSION, "count": count, "source": source, "seed": seed})
    )
    return folder, source


def list_images(folder: Path) -> list[tuple[str, int]]:
    """(path, label) pairs in ImageFolder order (sorted class folders, sorted files)."""
    out = []
    for label, cls in enumerate(sorted(p for p in folder.iterdir() if p.is_dir())):
        out += [(str(f), label) for f in sorted(cls.glob("*.jpg"))]
    return out


if __name__ == "__main__":
    where, what = ensure_images()
    print(where, what, len(list_images(where)))
