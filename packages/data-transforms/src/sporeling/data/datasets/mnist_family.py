"""Fashion-MNIST, KMNIST, EMNIST and QMNIST: MNIST-style idx files (MindSpore's names).

Fashion-MNIST and KMNIST use MNIST's file names; EMNIST's are ``emnist-<name>-<usage>-...``;
QMNIST's labels are an idx2 int table of 8 values per image (``compat=True`` keeps the
class only, as MindSpore does).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..engine.sources import MappableSource
from .vision_sources import MnistDataset, _check_dir, read_idx

__all__ = ["FashionMnistDataset", "KMnistDataset", "EMnistDataset", "QMnistDataset"]


class FashionMnistDataset(MnistDataset):
    """Fashion-MNIST idx files (MNIST's names); columns ``image``, ``label``.

    ``usage='all'`` reads test then train, as ``MnistDataset`` and MindSpore do.
    """


class KMnistDataset(MnistDataset):
    """KMNIST (Kuzushiji-MNIST) idx files (MNIST's names); columns ``image``, ``label``."""


class _IdxImages(MappableSource):
    """Image/label idx file pairs read as one table."""

    def _read_pairs(self, where: str, pairs: list[tuple[Any, Any]]) -> None:
        images, labels = [], []
        for img_path, lbl_path in pairs:
            imgs, lbls = read_idx(img_path), read_idx(lbl_path)
            if imgs.ndim != 3 or len(imgs) != len(lbls):
                raise ValueError(
                    f"{where}: {img_path.name} has shape {imgs.shape} and {lbl_path.name} "
                    f"{lbls.shape}; expected (N, rows, cols) images and N labels"
                )
            images.append(imgs)
            labels.append(lbls)
        if not images:
            raise ValueError(f"{where}: no idx files to read")
        self._images, self._label_parts = images, labels
        self._offsets = np.cumsum([0] + [len(x) for x in images])

    def get_col_names(self) -> list[str]:
        return ["image", "label"]

    def _num_rows(self) -> int:
        return int(self._offsets[-1])

    def _row(self, index: int) -> tuple[int, int]:
        part = int(np.searchsorted(self._offsets, index, side="right") - 1)
        return part, index - int(self._offsets[part])

    def _label(self, part: int, i: int) -> Any:
        return np.uint32(self._label_parts[part][i])

    def _load(self, index: int) -> tuple[Any, ...]:
        part, i = self._row(index)
        image = np.array(self._images[part][i], dtype=np.uint8)[:, :, None]
        return image, self._label(part, i)


_EMNIST_NAMES = ("byclass", "bymerge", "balanced", "letters", "digits", "mnist")


class EMnistDataset(_IdxImages):
    """EMNIST: ``emnist-<name>-{train,test}-{images-idx3,labels-idx1}-ubyte`` files.

    ``name``: byclass, bymerge, balanced, letters, digits or mnist; ``usage``: 'train',
    'test', 'all' or None. Images come as stored (EMNIST's files hold them transposed).
    """

    def __init__(
        self,
        dataset_dir: str | os.PathLike[str],
        name: str,
        usage: str | None = None,
        num_samples: int | None = None,
        num_parallel_workers: int | None = None,
        shuffle: bool | None = None,
        sampler: Any = None,
        num_shards: int | None = None,
        shard_id: int | None = None,
        cache: Any = None,
    ) -> None:
        where = type(self).__name__
        root = _check_dir(where, dataset_dir)
        if name not in _EMNIST_NAMES:
            raise ValueError(
                f"{where}: argument 'name' expected one of {_EMNIST_NAMES}, got {name!r}"
            )
        usage = "all" if usage is None else usage
        if usage not in ("train", "test", "all"):
            raise ValueError(
                f"{where}: argument 'usage' expected 'train', 'test' or 'all', got {usage!r}"
            )
        pairs = []
        for part in ["test", "train"] if usage == "all" else [usage]:  # MindSpore's file order
            img = root / f"emnist-{name}-{part}-images-idx3-ubyte"
            lbl = root / f"emnist-{name}-{part}-labels-idx1-ubyte"
            if img.is_file() and lbl.is_file():
                pairs.append((img, lbl))
            elif usage != "all":
                raise ValueError(f"{where}: {img.name} and {lbl.name} are not in {str(root)!r}")
        if not pairs:
            raise ValueError(f"{where}: no EMNIST '{name}' files in {str(root)!r}")
        self._read_pairs(where, pairs)
        super().__init__(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)


class QMnistDataset(_IdxImages):
    """QMNIST: ``qmnist-{train,test}-images-idx3-ubyte`` / ``-labels-idx2-int`` and
    ``xnist-*`` (usage 'nist').

    ``usage``: 'train', 'test', 'test10k' (the first 10,000 test images), 'test50k' (the
    other 50,000), 'nist', 'all' or None (test then train, as MindSpore orders the files).
    ``compat=True``: ``label`` is the class (uint32); otherwise all 8 label values (uint32
    array).
    """

    def __init__(
        self,
        dataset_dir: str | os.PathLike[str],
        usage: str | None = None,
        compat: bool = True,
        num_samples: int | None = None,
        num_parallel_workers: int | None = None,
        shuffle: bool | None = None,
        sampler: Any = None,
        num_shards: int | None = None,
        shard_id: int | None = None,
        cache: Any = None,
    ) -> None:
        where = type(self).__name__
        root = _check_dir(where, dataset_dir)
        usage = "all" if usage is None else usage
        usages = ("train", "test", "test10k", "test50k", "nist", "all")
        if usage not in usages:
            raise ValueError(f"{where}: argument 'usage' expected one of {usages}, got {usage!r}")
        if not isinstance(compat, bool):
            raise TypeError(f"{where}: argument 'compat' expected a bool, got {compat!r}")
        self.compat = compat
        files = {
            "train": ("qmnist-train-images-idx3-ubyte", "qmnist-train-labels-idx2-int"),
            "test": ("qmnist-test-images-idx3-ubyte", "qmnist-test-labels-idx2-int"),
            "nist": ("xnist-images-idx3-ubyte", "xnist-labels-idx2-int"),
        }
        part = {"test10k": "test", "test50k": "test"}.get(usage, usage)
        parts = ["test", "train"] if usage == "all" else [part]  # MindSpore's file order
        pairs = []
        for p in parts:
            img, lbl = root / files[p][0], root / files[p][1]
            if not (img.is_file() and lbl.is_file()):
                raise ValueError(f"{where}: {img.name} and {lbl.name} are not in {str(root)!r}")
            pairs.append((img, lbl))
        self._read_pairs(where, pairs)
        for lbls in self._label_parts:
            if lbls.ndim != 2 or lbls.shape[1] != 8:
                raise ValueError(
                    f"{where}: QMNIST labels must be an (N, 8) table, got {lbls.shape}"
                )
        if usage in ("test10k", "test50k"):
            cut = slice(0, 10000) if usage == "test10k" else slice(10000, None)
            self._images = [self._images[0][cut]]
            self._label_parts = [self._label_parts[0][cut]]
            self._offsets = np.array([0, len(self._images[0])])
        self._labels = np.concatenate([lbl[:, 0] for lbl in self._label_parts]).astype(np.uint32)
        super().__init__(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)

    def _label(self, part: int, i: int) -> Any:
        row = np.asarray(self._label_parts[part][i]).astype(np.uint32)
        return row[0] if self.compat else row
