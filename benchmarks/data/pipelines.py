"""The benchmark pipeline, once per library: decode -> RandomResizedCrop(224) ->
RandomHorizontalFlip -> Normalize -> HWC2CHW -> batch 32, over a folder of JPEGs.

Every builder returns an iterable of (images, labels) batches, images float32
(32, 3, 224, 224). `python benchmarks/data/pipelines.py NAME --workers W --folder F`
times one pipeline in this process and prints one JSON line (what `run.py` collects, one
fresh process per measurement so no library's threads or caches affect another's).

- `sporeling`: ImageFolderDataset -> map([Decode, RandomResizedCrop, RandomHorizontalFlip,
  Normalize, HWC2CHW], num_parallel_workers=W) -> batch(32); thread workers. The map's
  fusion pass (on by default, like MindSpore's) runs it as two ops: Decode +
  RandomResizedCrop (crop box from the JPEG header, draft-mode decode for large crops, the
  crop resized from Pillow's buffer) and RandomHorizontalFlip + Normalize + HWC2CHW (one
  Numba pass).
- `sporeling-unfused`: the same with `config.set_map_fusion(False)`: the five ops one by one.
- `sporeling-batch`: ImageFolderDataset -> map([Decode], W) -> batch(32,
  per_batch_map=BatchRandomResizedCrop(224) + BatchRandomHorizontalFlip + one
  normalize-and-transpose pass): the batch ops draw a crop and a flip per sample.
- `torchvision`: a map-style dataset reading files with `torchvision.io.decode_jpeg`,
  transforms.v2 (RandomResizedCrop(antialias=True), RandomHorizontalFlip,
  ToDtype(float32, scale=True), Normalize), DataLoader(batch_size=32, num_workers=W).
- `torchvision-pil`: torchvision.datasets.ImageFolder (PIL loader), the same v2 ops on
  PIL images, PILToTensor, DataLoader.
- `pil`: plain Pillow + NumPy in a multiprocessing.Pool(W), one batch per task.
- `mindspore`: mindspore.dataset ImageFolderDataset -> map(vision ops, W) -> batch(32).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

BATCH = 32
SIZE = 224
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
MEAN255 = [m * 255 for m in MEAN]
STD255 = [s * 255 for s in STD]
NAMES = [
    "sporeling",
    "sporeling-unfused",
    "sporeling-batch",
    "torchvision",
    "torchvision-pil",
    "pil",
    "mindspore",
]


# ----------------------------------------------------------------------------- sporeling


def sporeling(folder: Path, workers: int, fusion: bool = True) -> Any:
    import sporeling.data as ds
    from sporeling.data import vision

    ds.config.set_map_fusion(fusion)
    data = ds.ImageFolderDataset(str(folder), shuffle=False)
    data = data.map(
        [
            vision.Decode(),
            vision.RandomResizedCrop(SIZE),
            vision.RandomHorizontalFlip(),
            vision.Normalize(MEAN255, STD255),
            vision.HWC2CHW(),
        ],
        input_columns="image",
        num_parallel_workers=workers,
    )
    data = data.batch(BATCH, drop_remainder=True)
    return data.create_tuple_iterator(output_numpy=True, num_epochs=1)


def sporeling_unfused(folder: Path, workers: int) -> Any:
    return sporeling(folder, workers, fusion=False)


def _normalize_chw_kernel():
    import numba

    @numba.njit(cache=True, nogil=True)
    def kernel(images, scale, shift, out):
        # out[n, c, y, x] = images[n, y, x, c] * scale[c] + shift[c]: Normalize + HWC2CHW.
        n, h, w, c = images.shape
        for i in range(n):
            for k in range(c):
                a, b = scale[k], shift[k]
                for y in range(h):
                    for x in range(w):
                        out[i, k, y, x] = images[i, y, x, k] * a + b

    return kernel


class _BatchAugment:
    """per_batch_map: per-sample crop + flip in two Numba passes, then normalize + CHW."""

    def __init__(self) -> None:
        from sporeling.data.vision import BatchRandomHorizontalFlip, BatchRandomResizedCrop

        self.crop = BatchRandomResizedCrop(SIZE)
        self.flip = BatchRandomHorizontalFlip()
        self.scale = np.array([1 / s for s in STD255], np.float32)
        self.shift = np.array([-m / s for m, s in zip(MEAN255, STD255)], np.float32)
        self.kernel = _normalize_chw_kernel()

    def __call__(self, images: list[np.ndarray], info: Any) -> tuple[np.ndarray]:
        x = self.flip(*self.crop(images, info))
        out = np.empty((x.shape[0], 3, SIZE, SIZE), np.float32)
        self.kernel(x, self.scale, self.shift, out)
        return (out,)


def sporeling_batch(folder: Path, workers: int) -> Any:
    import sporeling.data as ds
    from sporeling.data import vision

    data = ds.ImageFolderDataset(str(folder), shuffle=False)
    data = data.map([vision.Decode()], input_columns="image", num_parallel_workers=workers)
    data = data.batch(
        BATCH,
        drop_remainder=True,
        per_batch_map=_BatchAugment(),
        input_columns=["image"],
        num_parallel_workers=workers,
    )
    return data.create_tuple_iterator(output_numpy=True, num_epochs=1)


# ---------------------------------------------------------------------------- torchvision


class _TorchJpegs:
    def __init__(self, folder: Path) -> None:
        import torch
        from images import list_images
        from torchvision.transforms import v2

        self.items = list_images(folder)
        self.transform = v2.Compose(
            [
                v2.RandomResizedCrop(SIZE, antialias=True),
                v2.RandomHorizontalFlip(),
                v2.ToDtype(torch.float32, scale=True),
                v2.Normalize(MEAN, STD),
            ]
        )

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> Any:
        from torchvision.io import ImageReadMode, decode_jpeg, read_file

        path, label = self.items[i]
        img = decode_jpeg(read_file(path), mode=ImageReadMode.RGB)
        return self.transform(img), label


def torchvision(folder: Path, workers: int) -> Any:
    import torch

    return torch.utils.data.DataLoader(
        _TorchJpegs(folder), batch_size=BATCH, num_workers=workers, drop_last=True
    )


def torchvision_pil(folder: Path, workers: int) -> Any:
    import torch
    import torchvision.datasets
    from torchvision.transforms import v2

    transform = v2.Compose(
        [
            v2.RandomResizedCrop(SIZE, antialias=True),
            v2.RandomHorizontalFlip(),
            v2.PILToTensor(),
            v2.ToDtype(torch.float32, scale=True),
            v2.Normalize(MEAN, STD),
        ]
    )
    data = torchvision.datasets.ImageFolder(str(folder), transform=transform)
    return torch.utils.data.DataLoader(data, batch_size=BATCH, num_workers=workers, drop_last=True)


# ------------------------------------------------------------------------------ plain PIL


def _pil_batch(task: tuple[list[tuple[str, int]], int]) -> tuple[np.ndarray, np.ndarray]:
    from PIL import Image

    items, seed = task
    rng = np.random.default_rng(seed)
    mean = np.array(MEAN255, np.float32)
    inv_std = np.array([1 / s for s in STD255], np.float32)
    out = np.empty((len(items), 3, SIZE, SIZE), np.float32)
    for k, (path, _) in enumerate(items):
        with Image.open(path) as f:
            im = f.convert("RGB")
        w, h = im.size
        box = (0, 0, w, h)
        for _ in range(10):  # torchvision's RandomResizedCrop.get_params
            area = w * h * rng.uniform(0.08, 1.0)
            ratio = math.exp(rng.uniform(math.log(3 / 4), math.log(4 / 3)))
            cw = round(math.sqrt(area * ratio))
            ch = round(math.sqrt(area / ratio))
            if 0 < cw <= w and 0 < ch <= h:
                x = int(rng.integers(0, w - cw + 1))
                y = int(rng.integers(0, h - ch + 1))
                box = (x, y, x + cw, y + ch)
                break
        im = im.resize((SIZE, SIZE), Image.BILINEAR, box=box)
        if rng.random() < 0.5:
            im = im.transpose(Image.FLIP_LEFT_RIGHT)
        a = (np.asarray(im, np.float32) - mean) * inv_std
        out[k] = a.transpose(2, 0, 1)
    return out, np.array([label for _, label in items], np.int64)


def pil(folder: Path, workers: int) -> Any:
    import multiprocessing as mp

    from images import list_images

    items = list_images(folder)
    tasks = [(items[i : i + BATCH], i) for i in range(0, len(items) - BATCH + 1, BATCH)]

    def run() -> Any:
        with mp.get_context("fork").Pool(workers) as pool:
            yield from pool.imap(_pil_batch, tasks)

    return run()


# ------------------------------------------------------------------------------ MindSpore


def mindspore(folder: Path, workers: int) -> Any:
    import mindspore.dataset as ds
    import mindspore.dataset.vision as vision

    data = ds.ImageFolderDataset(str(folder), num_parallel_workers=workers, shuffle=False)
    data = data.map(
        [
            vision.Decode(),
            vision.RandomResizedCrop(SIZE),
            vision.RandomHorizontalFlip(),
            vision.Normalize(MEAN255, STD255),
            vision.HWC2CHW(),
        ],
        input_columns="image",
        num_parallel_workers=workers,
    )
    data = data.batch(BATCH, drop_remainder=True)
    return data.create_tuple_iterator(output_numpy=True, num_epochs=1)


BUILDERS = {
    "sporeling": sporeling,
    "sporeling-unfused": sporeling_unfused,
    "sporeling-batch": sporeling_batch,
    "torchvision": torchvision,
    "torchvision-pil": torchvision_pil,
    "pil": pil,
    "mindspore": mindspore,
}


def missing(name: str) -> str | None:
    """Why a pipeline cannot run here (its library is not installed), or None."""
    module = {"torchvision": "torchvision", "torchvision-pil": "torchvision"}.get(name)
    module = module or {"mindspore": "mindspore"}.get(name)
    if module is None:
        return None
    import importlib.util

    if importlib.util.find_spec(module) is None:
        return f"{module} is not installed"
    return None


def tree_cpu_seconds() -> float | None:
    """CPU seconds (user + system) used so far by this process and its live descendants
    (threads included; DataLoader and Pool workers are child processes), from Linux's
    /proc; None where /proc has no such information."""
    tick = os.sysconf("SC_CLK_TCK")
    total, todo, seen = 0.0, [os.getpid()], set()
    try:
        while todo:
            pid = todo.pop()
            if pid in seen:
                continue
            seen.add(pid)
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
                for task in os.listdir(f"/proc/{pid}/task"):
                    with open(f"/proc/{pid}/task/{task}/children") as f:
                        todo += [int(c) for c in f.read().split()]
            except (FileNotFoundError, ProcessLookupError):  # a process that just ended
                if pid == os.getpid():
                    raise
    except OSError:
        return None
    return total


def measure(name: str, folder: Path, workers: int, warmup: int, max_batches: int) -> dict:
    """Run one epoch: `warmup` batches untimed (worker start, JIT), then time the rest."""
    t_build = time.perf_counter()
    it = iter(BUILDERS[name](folder, workers))
    images = 0
    t0 = None
    cpu0: float | None = None
    cpu1: float | None = None
    timed = 0
    first_shape = None
    for k, batch in enumerate(it):
        x = batch[0]
        if first_shape is None:
            first_shape = [list(np.shape(x)), str(getattr(x, "dtype", "?"))]
            if tuple(np.shape(x)) != (BATCH, 3, SIZE, SIZE):
                raise RuntimeError(
                    f"{name}: batch of shape {np.shape(x)}, expected (32, 3, 224, 224)"
                )
        if k + 1 == warmup:
            cpu0 = tree_cpu_seconds()
            t0 = time.perf_counter()
            continue
        if t0 is not None:
            images += int(np.shape(x)[0])
            timed += 1
            # now, not after the loop: a DataLoader's or Pool's worker processes have
            # exited (their CPU time gone from /proc) once the epoch's end is reached
            cpu1 = tree_cpu_seconds()
            if timed >= max_batches:
                break
    elapsed = time.perf_counter() - t0
    cpu = None if cpu0 is None or cpu1 is None else cpu1 - cpu0
    del it
    return {
        "pipeline": name,
        "workers": workers,
        "images": images,
        "batches": timed,
        "seconds": elapsed,
        "images_per_s": images / elapsed,
        # CPU time of the process tree per image: less sensitive than images/s to other
        # work on a shared machine (it includes waiting threads' spinning, if any)
        "cpu_ms_per_image": None if cpu is None else 1000 * cpu / images,
        "warmup_batches": warmup,
        "startup_and_warmup_s": t0 - t_build,
        "batch": first_shape,
        "load_average_end": [round(v, 2) for v in os.getloadavg()],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="time one pipeline (one JSON line on stdout)")
    p.add_argument("name", choices=NAMES)
    p.add_argument("--folder", required=True)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--max-batches", type=int, default=10**9)
    args = p.parse_args(argv)
    why = missing(args.name)
    if why:
        print(json.dumps({"pipeline": args.name, "workers": args.workers, "skipped": why}))
        return 0
    res = measure(args.name, Path(args.folder), args.workers, args.warmup, args.max_batches)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
