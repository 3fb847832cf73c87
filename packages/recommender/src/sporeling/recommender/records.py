"""Preprocessed records on disk and their ``sporeling.data`` source.

A dataset folder (what :func:`~sporeling.recommender.preprocess.preprocess` or the synthetic
generator writes) holds ``manifest.json`` and, per split, three ``.npy`` files read
memory-mapped: ``feat_ids`` int32 ``(records, line_per_sample, 39)``, ``feat_vals``
float32 of the same shape and ``label`` float32 ``(records, line_per_sample, 1)``. One record
is ``line_per_sample`` rows (1000 in MindSpore's MindRecord files), so a batch of
``batch_size`` rows is ``batch_size / line_per_sample`` records, reshaped to
``(batch_size, 39)`` -- MindSpore's ``batch(batch_size / line_per_sample)``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

import sporeling.data as ds

__all__ = ["RecordStore", "CriteoRecordDataset", "write_records", "iterate_batches"]

COLUMNS = ["feat_ids", "feat_vals", "label"]


def _manifest(folder: Path) -> dict[str, Any]:
    path = folder / "manifest.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"RecordStore: {folder} has no manifest.json; run `sporeling-rec preprocess` (or "
            "the synthetic generator) into it first"
        )
    return json.loads(path.read_text())


class RecordStore:
    """Random access to the records of one split (memory-mapped, nothing read up front).

    ``store[i]`` is ``(feat_ids (L, 39) int32, feat_vals (L, 39) float32, label (L, 1)
    float32)`` with ``L = line_per_sample``.
    """

    def __init__(self, dataset_dir: str | os.PathLike[str], split: str = "train") -> None:
        folder = Path(dataset_dir)
        self.manifest = _manifest(folder)
        splits = self.manifest["splits"]
        if split not in splits:
            raise ValueError(
                f"RecordStore: argument 'split' expected one of {sorted(splits)}, got {split!r}"
            )
        self.split = split
        self.folder = folder
        self.line_per_sample = int(self.manifest["line_per_sample"])
        self.vocab_size = int(self.manifest["vocab_size"])
        self.field_size = int(self.manifest["field_size"])
        self._arrays = [np.load(folder / split / f"{c}.npy", mmap_mode="r") for c in COLUMNS]
        n = self._arrays[0].shape[0]
        for a in self._arrays:
            if a.shape[:2] != (n, self.line_per_sample):
                raise ValueError(
                    f"RecordStore: {folder / split} is inconsistent: arrays of shapes "
                    f"{[x.shape for x in self._arrays]} for line_per_sample {self.line_per_sample}"
                )

    @property
    def num_rows(self) -> int:
        return len(self) * self.line_per_sample

    def __len__(self) -> int:
        return int(self._arrays[0].shape[0])

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        i = int(index)
        if not -len(self) <= i < len(self):
            raise IndexError(f"RecordStore: record {index} out of range ({len(self)} records)")
        ids, vals, label = (np.array(a[i]) for a in self._arrays)
        return ids, vals, label

    def rows(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rows ``[start, stop)`` of the split as ``(n, 39)``, ``(n, 39)``, ``(n, 1)`` arrays."""
        out = []
        for a in self._arrays:
            flat = a.reshape(-1, a.shape[-1])
            out.append(np.array(flat[start:stop]))
        return out[0], out[1], out[2]


class CriteoRecordDataset(ds.GeneratorDataset):
    """The records of one split as a ``sporeling.data`` dataset (MindSpore's
    ``MindDataset`` over the converted files), columns ``feat_ids``, ``feat_vals``,
    ``label``; shuffled per epoch and sharded by rank (``num_shards``, ``shard_id``).

    >>> # data = CriteoRecordDataset("criteo_records", "train", num_shards=2, shard_id=rank)
    >>> # data = data.batch(batch_size // data.line_per_sample, drop_remainder=True)
    """

    def __init__(
        self,
        dataset_dir: str | os.PathLike[str],
        split: str = "train",
        shuffle: bool = True,
        num_shards: int | None = None,
        shard_id: int | None = None,
        num_samples: int | None = None,
        num_parallel_workers: int = 1,
    ) -> None:
        self.store = RecordStore(dataset_dir, split)
        self.line_per_sample = self.store.line_per_sample
        super().__init__(
            self.store,
            column_names=list(COLUMNS),
            shuffle=shuffle,
            num_shards=num_shards,
            shard_id=shard_id,
            num_samples=num_samples,
            num_parallel_workers=num_parallel_workers,
            python_multiprocessing=False,
        )


def iterate_batches(
    dataset: ds.Dataset,
    line_per_sample: int,
    batch_size: int,
    num_epochs: int = 1,
    drop_remainder: bool = True,
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Batches of ``batch_size`` rows from a record dataset: ``(ids (B, 39) int32,
    vals (B, 39) float32, label (B, 1) float32)`` (the last one shorter unless
    ``drop_remainder``)."""
    if batch_size % line_per_sample:
        raise ValueError(
            f"iterate_batches: argument 'batch_size' ({batch_size}) expected a multiple of "
            f"line_per_sample ({line_per_sample})"
        )
    batched = dataset.batch(batch_size // line_per_sample, drop_remainder=drop_remainder)
    for ids, vals, label in batched.create_tuple_iterator(num_epochs=num_epochs, output_numpy=True):
        n = ids.shape[0] * line_per_sample
        yield ids.reshape(n, -1), vals.reshape(n, -1), label.reshape(n, 1)


def write_records(
    dataset_dir: str | os.PathLike[str],
    splits: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]],
    line_per_sample: int,
    vocab_size: int,
    extra: dict[str, Any] | None = None,
) -> None:
    """Write rows ``{split: (feat_ids (n, F), feat_vals (n, F), label (n,) or (n, 1))}`` as
    records (the last ``n % line_per_sample`` rows of a split are left out)."""
    folder = Path(dataset_dir)
    info: dict[str, Any] = {}
    field_size = None
    for split, (ids, vals, label) in splits.items():
        ids = np.asarray(ids)
        n = (ids.shape[0] // line_per_sample) * line_per_sample
        field_size = ids.shape[1]
        (folder / split).mkdir(parents=True, exist_ok=True)
        for name, arr, dtype in (
            ("feat_ids", ids, np.int32),
            ("feat_vals", vals, np.float32),
            ("label", np.asarray(label).reshape(-1, 1), np.float32),
        ):
            a = np.asarray(arr)[:n].astype(dtype, copy=False)
            shaped = a.reshape(n // line_per_sample, line_per_sample, a.shape[-1])
            tmp = folder / split / f"{name}.npy.tmp"
            with open(tmp, "wb") as f:
                np.save(f, shaped, allow_pickle=False)
            os.replace(tmp, folder / split / f"{name}.npy")
        info[split] = {"records": n // line_per_sample}
    manifest = {
        "format": "sporeling-criteo-records/1",
        "field_size": field_size,
        "line_per_sample": line_per_sample,
        "vocab_size": vocab_size,
        "splits": info,
        **(extra or {}),
    }
    tmp = folder / "manifest.json.tmp"
    tmp.write_text(json.dumps(manifest, indent=1))
    os.replace(tmp, folder / "manifest.json")
