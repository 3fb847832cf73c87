"""``Dataset.split(sizes, randomize=True)``: MindSpore's sizes, rounding and errors.

``sizes`` is a list of ints (they must add up to the dataset size) or of floats in (0, 1]
adding up to 1: each fraction becomes ``round(f * size)`` (a 0 is an error), and the
difference from the dataset size goes to the first split (when rows are missing) or is
taken from the first split that stays positive (when there are too many), as MindSpore
computes it. A random-access source splits its rows: in order, or with ``randomize`` by one
permutation drawn once (from ``config.set_seed`` when set), so the splits are disjoint and
stay the same every epoch. Any other pipeline splits by ``skip``/``take`` in order.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

import numpy as np

from .base import Dataset

__all__ = ["split_dataset", "absolute_split_sizes"]

logger = logging.getLogger("sporeling.data")


def _check_sizes(sizes: Any, randomize: Any) -> None:
    if not isinstance(sizes, list):
        raise TypeError(f"Dataset.split: argument 'sizes' expected a list, got {sizes!r}")
    if not isinstance(randomize, bool):
        raise TypeError(f"Dataset.split: argument 'randomize' expected a bool, got {randomize!r}")
    if not sizes:
        raise ValueError("Dataset.split: sizes cannot be empty.")
    all_int = all(type(s) is int for s in sizes)
    all_float = all(type(s) is float for s in sizes)
    if not (all_int or all_float):
        raise ValueError(
            f"Dataset.split: sizes should be list of int or list of float, got {sizes}"
        )
    if all_int and not all(s > 0 for s in sizes):
        raise ValueError(
            f"Dataset.split: sizes is a list of int, but there should be no negative or zero "
            f"numbers, got {sizes}"
        )
    if all_float:
        if not all(0 < s <= 1 for s in sizes):
            raise ValueError(
                f"Dataset.split: sizes is a list of float, but there should be no numbers outside "
                f"the range (0, 1], got {sizes}"
            )
        if not abs(sum(sizes) - 1) < 1e-5:
            raise ValueError(
                f"Dataset.split: sizes is a list of float, but the percentages do not sum up to 1 "
                f"(sum {sum(sizes)})"
            )


def absolute_split_sizes(sizes: list[int] | list[float], dataset_size: int) -> list[int]:
    """The row counts of the splits (MindSpore's ``_get_absolute_split_sizes``)."""
    if dataset_size <= 0:
        raise RuntimeError("Dataset.split: dataset_size is unknown, unable to split.")
    if all(type(s) is int for s in sizes):
        if sum(sizes) != dataset_size:
            raise RuntimeError(
                f"Dataset.split: Sum of split sizes {sum(sizes)} is not equal to dataset size "
                f"{dataset_size}."
            )
        return list(sizes)  # type: ignore[arg-type]
    absolute = []
    for fraction in sizes:
        n = int(round(fraction * dataset_size))
        if n == 0:
            raise RuntimeError(f"Dataset.split: Split percentage {fraction} is too small.")
        absolute.append(n)
    difference = dataset_size - sum(absolute)
    if difference > 0:
        absolute[0] += difference
    else:
        for i, n in enumerate(absolute):
            if n + difference > 0:
                absolute[i] += difference
                break
    if sum(absolute) != dataset_size:
        raise RuntimeError(
            f"Dataset.split: Sum of calculated split sizes {sum(absolute)} is not equal to "
            f"dataset size {dataset_size}."
        )
    return absolute


def _permutation(n: int) -> np.ndarray:
    from .. import config

    if config._seed_is_set():
        rng = np.random.default_rng([int(config.get_seed()), 0x5B117])
    else:
        rng = np.random.default_rng()
    return rng.permutation(n).astype(np.int64)


def split_dataset(dataset: Dataset, sizes: Any, randomize: Any = True) -> tuple[Dataset, ...]:
    from .samplers import DistributedSampler, SubsetRandomSampler, SubsetSampler
    from .sources import MappableSource

    _check_sizes(sizes, randomize)
    # a GeneratorDataset over a generator function is a source without random access
    mappable = isinstance(dataset, MappableSource) and getattr(dataset, "_random_access", True)
    sampler = getattr(dataset, "sampler", None)
    if isinstance(sampler, DistributedSampler):
        raise RuntimeError("Dataset.split: Dataset should not be sharded before split.")
    counts = absolute_split_sizes(sizes, dataset.get_dataset_size())
    if not mappable:
        if randomize:
            raise RuntimeError(
                f"Dataset.split: randomize=True needs a random-access source (MindDataset, "
                f"ImageFolderDataset, NumpySlicesDataset, ...), not a {type(dataset).__name__} "
                "pipeline; split the source before map/batch, or pass randomize=False"
            )
        out, skip = [], 0
        for count in counts:
            part = dataset.skip(skip) if skip else dataset
            out.append(part.take(count))
            skip += count
        return tuple(out)
    assert isinstance(dataset, MappableSource)
    shuffled = sampler is not None and sampler.is_random
    if shuffled:
        logger.warning("Dataset.split: Dataset is shuffled before split.")
    rows = dataset.sampler.get_indices(dataset._num_rows(), (0, 0))
    if randomize:
        rows = rows[_permutation(len(rows))]
    splits: list[Dataset] = []
    start = 0
    for count in counts:
        part = copy.copy(dataset)
        part.children = []
        part._epoch = 0
        part._size_cache = None
        indices = [int(i) for i in rows[start : start + count]]
        part.sampler = SubsetRandomSampler(indices) if shuffled else SubsetSampler(indices)
        splits.append(part)
        start += count
    return tuple(splits)
