"""PKSampler: ``num_val`` rows of every class (MindSpore's P-K sampling for metric learning).

The classes are the values of the source's ``class_column``: a source that keeps its labels
(``ImageFolderDataset``, ``MnistDataset``...) gives them at once, any other is read once for
that column. Classes go in sorted order (shuffled with ``shuffle``), ``num_val`` rows each: the
first ones, or with ``shuffle`` a random choice; a class with fewer rows repeats them in turn.
(MindSpore 2.10 draws each class's rows at random with replacement even with
``shuffle=False``, which is not reproducible from the seed alone.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .samplers import Sampler, _check_int

__all__ = ["PKSampler", "bind_source"]


class PKSampler(Sampler):
    """``num_val`` samples for each class, class after class, as MindSpore's PKSampler.

    Classes come in sorted order (a random order with ``shuffle=True``); each class's
    ``num_val`` rows are drawn uniformly at random with replacement from its rows, with or
    without ``shuffle`` (so a row can repeat, and a class smaller than ``num_val`` still gives
    ``num_val`` rows); every epoch draws again (reproducible under ``config.set_seed``).
    """

    def __init__(
        self,
        num_val: int,
        num_class: int | None = None,
        shuffle: bool = False,
        class_column: str = "label",
        num_samples: int | None = None,
    ) -> None:
        super().__init__(num_samples)
        _check_int("PKSampler", "num_val", num_val, 1, allow_none=False, error=RuntimeError)
        if num_class is not None:
            raise NotImplementedError(
                "PKSampler: argument 'num_class' is not supported (pass None), as in MindSpore"
            )
        if not isinstance(shuffle, bool):
            raise TypeError(f"PKSampler: argument 'shuffle' expected a bool, got {shuffle!r}")
        if not isinstance(class_column, str):
            raise TypeError(
                f"PKSampler: argument 'class_column' expected a str, got {class_column!r}"
            )
        self.num_val = int(num_val)
        self.shuffle = shuffle
        self.class_column = class_column
        self._labels: np.ndarray | None = None

    @property
    def is_random(self) -> bool:
        return self.shuffle

    def _bind(self, source: Any) -> None:
        if self._labels is not None:
            return
        labels = getattr(source, "_labels", None)
        if isinstance(labels, list):  # per-file label arrays (MnistDataset)
            labels = np.concatenate([np.asarray(part).reshape(-1) for part in labels])
        if labels is None or self.class_column != "label":
            names = source.get_col_names()
            if self.class_column not in names:
                raise ValueError(
                    f"PKSampler: class_column '{self.class_column}' is not a column of the "
                    f"dataset ({names})"
                )
            col = names.index(self.class_column)
            labels = [np.asarray(source._load(i)[col]).item() for i in range(source._num_rows())]
        self._labels = np.asarray(labels).reshape(-1)

    def _order(self, n: int, key: tuple[int, ...]) -> np.ndarray:
        if self._labels is None or len(self._labels) != n:
            raise RuntimeError(
                "PKSampler: the sampler is not bound to the rows it samples (use it as a "
                "source's sampler)"
            )
        rng = np.random.default_rng([*key, 0x9C])
        classes = np.unique(self._labels)
        if self.shuffle:
            classes = classes[rng.permutation(len(classes))]
        # MindSpore's PKSamplerRT: each of a class's num_val slots is a uniform draw, with
        # replacement, from that class's rows, with shuffle=True or not (shuffle only orders
        # the classes); new draws every epoch
        out = []
        for c in classes:
            rows = np.flatnonzero(self._labels == c)
            out.append(rows[rng.integers(0, len(rows), size=self.num_val)])
        return np.concatenate(out).astype(np.int64) if out else np.zeros(0, np.int64)

    def __repr__(self) -> str:
        return (
            f"PKSampler(num_val={self.num_val}, shuffle={self.shuffle}, "
            f"class_column={self.class_column!r}, num_samples={self.num_samples})"
        )


def bind_source(sampler: Any, source: Any) -> None:
    """Give every PKSampler in ``sampler``'s chain the source's class labels."""
    while sampler is not None:
        if isinstance(sampler, PKSampler):
            sampler._bind(source)
        sampler = getattr(sampler, "child", None)
