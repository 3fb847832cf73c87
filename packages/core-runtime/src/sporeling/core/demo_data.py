"""MNIST in the idx format: the small sample shipped in the package, or full files on disk.

The sample (``data/mnist-sample/``, see its ``NOTICE.md``) holds records 0-7,999 of the
MNIST training set as ``train-*`` and records 8,000-8,999 as ``val-*``, so ``sporeling
demo`` runs offline. The same reader opens the full files (``train-images-idx3-ubyte``,
``t10k-labels-idx1-ubyte``, ..., gzipped or not) in any folder.

idx format (big-endian): a 4-byte magic number ``0x0000 <type> <ndim>`` (2051 for uint8
images of 3 dimensions, 2049 for uint8 labels of 1), then ``ndim`` int32 sizes, then the
values in row-major order.
"""

from __future__ import annotations

import gzip
import os
from importlib import resources
from pathlib import Path

import numpy as np

__all__ = ["load_mnist", "read_idx", "SAMPLE_DIR", "KINDS"]

#: the embedded sample, inside the installed package
SAMPLE_DIR = "data/mnist-sample"
#: ``kind`` -> file-name prefix; ``test`` is MNIST's 10,000-image test set
KINDS = {"train": "train", "val": "val", "test": "t10k"}
_IMAGES_MAGIC, _LABELS_MAGIC = 2051, 2049


def read_idx(data: bytes, name: str, magic: int) -> np.ndarray:
    """Parse one uint8 idx file's bytes (already decompressed), checking the header.

    ``name`` is used in error messages; ``magic`` is the expected magic number (2051 for
    images, 2049 for labels). Returns a read-only uint8 array of the stored shape.
    """
    if len(data) < 4:
        raise ValueError(f"{name}: not an idx file: {len(data)} bytes, shorter than a header")
    got = int.from_bytes(data[:4], "big")
    if got != magic:
        kind = {_IMAGES_MAGIC: "images", _LABELS_MAGIC: "labels"}.get(magic, "idx")
        raise ValueError(
            f"{name}: magic number {got} (0x{got:08x}), expected {magic} (0x{magic:08x}) for "
            f"MNIST {kind}; is this the right file, and is it gzip-compressed without a .gz name?"
        )
    ndim = magic & 0xFF
    header = 4 + 4 * ndim
    if len(data) < header:
        raise ValueError(f"{name}: truncated header ({len(data)} of {header} bytes)")
    shape = tuple(int(v) for v in np.frombuffer(data, ">i4", ndim, 4))
    expected = header + int(np.prod(shape, dtype=np.int64))
    if len(data) != expected:
        what = "truncated" if len(data) < expected else "has trailing bytes"
        raise ValueError(
            f"{name}: {what}: header says shape {shape} ({expected:,} bytes in all), "
            f"the file has {len(data):,} bytes"
        )
    return np.frombuffer(data, np.uint8, offset=header).reshape(shape)


def _read(path: Path | resources.abc.Traversable, name: str, magic: int) -> np.ndarray:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":  # gzip, whatever the file is called
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise ValueError(f"{name}: corrupt gzip data ({exc})") from exc
    return read_idx(raw, name, magic)


def _find(directory: Path, stem: str) -> Path:
    for candidate in (stem, stem + ".gz", stem.replace("-idx", ".idx")):
        if (directory / candidate).is_file():
            return directory / candidate
    raise FileNotFoundError(
        f"load_mnist: no {stem} or {stem}.gz in {directory} "
        f"(it holds: {', '.join(sorted(p.name for p in directory.iterdir())[:8]) or 'nothing'})"
    )


def load_mnist(
    directory: str | os.PathLike[str] | None = None, kind: str = "train"
) -> tuple[np.ndarray, np.ndarray]:
    """Images ``(n, 28, 28)`` uint8 and labels ``(n,)`` uint8 of one MNIST split.

    ``directory=None`` reads the embedded sample (``kind`` ``'train'``: 8,000 images,
    ``'val'``: 1,000); otherwise the folder's ``<prefix>-images-idx3-ubyte[.gz]`` and
    ``<prefix>-labels-idx1-ubyte[.gz]`` with prefix ``train`` or ``t10k`` (``kind='test'``).

    >>> images, labels = load_mnist(kind="val")
    >>> images.shape, images.dtype, labels[:5].tolist()
    ((1000, 28, 28), dtype('uint8'), [0, 6, 2, 0, 6])
    """
    if kind not in KINDS:
        raise ValueError(f"load_mnist: argument 'kind' expected one of {list(KINDS)}, got {kind!r}")
    prefix = KINDS[kind]
    names = (f"{prefix}-images-idx3-ubyte", f"{prefix}-labels-idx1-ubyte")
    if directory is None:
        if kind == "test":
            raise ValueError(
                "load_mnist: the embedded sample has no 'test' split (only 'train' and "
                "'val'); pass directory= with the full MNIST files for t10k"
            )
        base = resources.files("sporeling.core").joinpath(SAMPLE_DIR)
        paths = [base.joinpath(n + ".gz") for n in names]
        shown = [f"<sporeling.core>/{SAMPLE_DIR}/{n}.gz" for n in names]
    else:
        folder = Path(directory)
        if not folder.is_dir():
            raise FileNotFoundError(f"load_mnist: {folder} is not a directory")
        found = [_find(folder, n) for n in names]
        paths, shown = list(found), [str(p) for p in found]
    images = _read(paths[0], shown[0], _IMAGES_MAGIC)
    labels = _read(paths[1], shown[1], _LABELS_MAGIC)
    if images.shape[1:] != (28, 28):
        raise ValueError(f"{shown[0]}: images of shape {images.shape[1:]}, expected (28, 28)")
    if len(images) != len(labels):
        raise ValueError(
            f"{shown[0]} holds {len(images):,} images but {shown[1]} holds {len(labels):,} labels"
        )
    if labels.size and labels.max() > 9:
        raise ValueError(f"{shown[1]}: label {int(labels.max())} outside 0..9")
    return images, labels
