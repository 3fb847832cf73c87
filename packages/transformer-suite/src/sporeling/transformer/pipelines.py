"""Input pipelines on ``sporeling.data`` (MindSpore's ``mindspore.dataset`` API): MNIST read by
``MnistDataset`` (the published ``.gz`` idx files), shuffled by a sampler, normalised and
transposed by vision transforms, batched; and ``GeneratorDataset`` over random-access row
sources (text windows for GPT, generated examples for T5), sampled and batched."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

import sporeling.data as ds
from sporeling.data import transforms, vision

__all__ = [
    "MNIST_MEAN",
    "MNIST_STD",
    "mnist_datasets",
    "TokenWindows",
    "GeneratedRows",
    "sampled_batches",
    "tiled_batches",
]

MNIST_MEAN, MNIST_STD = 0.1307, 0.3081


def _has_test_split(root: Path) -> bool:
    return any(
        (root / f"t10k-{kind}-ubyte{ext}").is_file()
        for kind in ("images-idx3", "labels-idx1")
        for ext in ("", ".gz")
    )


def _prepare(
    data: Any, batch_size: int, drop_remainder: bool, num_shards: int = 1, shard_id: int = 0
) -> Any:
    """uint8 HWC image -> normalised float32 CHW; uint32 label -> int32; batched (with
    ``num_shards`` > 1: this shard's contiguous part of every batch)."""
    image_ops = [
        vision.Rescale(1.0 / (255.0 * MNIST_STD), -MNIST_MEAN / MNIST_STD),
        vision.HWC2CHW(),
    ]
    data = data.map(operations=image_ops, input_columns="image")
    data = data.map(operations=transforms.TypeCast(np.int32), input_columns="label")
    if num_shards == 1:
        return data.batch(batch_size, drop_remainder=drop_remainder)
    part = batch_size // num_shards
    keep = _ShardOfBatch(shard_id * part, (shard_id + 1) * part)
    return data.batch(batch_size, drop_remainder=drop_remainder, per_batch_map=keep)


def mnist_datasets(
    folder: str | Path,
    batch_size: int,
    holdout: int = 10000,
    limit: int = 0,
    seed: int = 0,
    eval_batch_size: int = 500,
    num_shards: int = 1,
    shard_id: int = 0,
) -> tuple[Any, Any]:
    """(train, test) batched ``sporeling.data`` pipelines over an MNIST folder: the training
    images reshuffled every epoch (seeded), the test images in order. Without ``t10k-*`` files
    the last ``holdout`` training images are the test set; ``limit`` > 0 keeps only the first
    ``limit`` training images. ``num_shards`` > 1 (data parallel): every shard reads the
    training batches one process reads and keeps its contiguous part of each; the test set
    stays whole."""
    _check_shards(batch_size, num_shards, shard_id, "mnist_datasets")
    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(f"data.path: {str(root)!r} is not a folder (an MNIST folder)")
    ds.config.set_seed(seed)  # the samplers' shuffles
    if _has_test_split(root):
        n = ds.MnistDataset(root, usage="train").get_dataset_size()
        test = ds.MnistDataset(root, usage="test", shuffle=False)
    else:
        n = ds.MnistDataset(root, usage="train").get_dataset_size() - holdout
        if n <= 0:
            raise ValueError(f"data.holdout: {holdout} leaves no training images in {str(root)!r}")
        test = ds.MnistDataset(root, usage="train", sampler=ds.SequentialSampler(start_index=n))
    if limit:
        n = min(n, int(limit))
    train = ds.MnistDataset(root, usage="train", sampler=ds.SubsetRandomSampler(list(range(n))))
    return (
        _prepare(train, batch_size, True, num_shards, shard_id),
        _prepare(test, eval_batch_size, False),
    )


class TokenWindows:
    """Random-access row source: row ``i`` is the window ``ids[s : s + seq_length + 1]`` (int32)
    starting at ``s = i * stride``. ``stride=1``: one row for every start nanoGPT's
    ``get_batch`` can draw; ``stride=seq_length``: windows that tile the text, each token
    predicted once (the whole-split evaluation)."""

    def __init__(self, ids: np.ndarray, seq_length: int, stride: int = 1) -> None:
        if len(ids) <= seq_length:
            raise ValueError(
                f"TokenWindows: {len(ids)} tokens are too few for windows of {seq_length + 1}"
            )
        if isinstance(stride, bool) or not isinstance(stride, int) or stride < 1:
            raise ValueError(
                f"TokenWindows: argument 'stride' expected an int >= 1, got {stride!r}"
            )
        self.ids, self.seq, self.stride = np.asarray(ids, np.int32), int(seq_length), stride

    def __len__(self) -> int:
        return (len(self.ids) - self.seq - 1) // self.stride + 1

    def __getitem__(self, i: int) -> tuple[np.ndarray]:
        s = int(i) * self.stride
        return (self.ids[s : s + self.seq + 1],)


class GeneratedRows:
    """Random-access row source of ``2**40`` generated examples: row ``i`` is ``make(rng)``
    with its own ``default_rng([seed, i])``, so any index gives the same example every time."""

    def __init__(self, make: Any, seed: int) -> None:
        self.make, self.seed = make, int(seed)

    def __len__(self) -> int:
        return 1 << 40

    def __getitem__(self, i: int) -> tuple[np.ndarray, ...]:
        return tuple(self.make(np.random.default_rng([self.seed, int(i)])))


class _ShardOfBatch:
    """``per_batch_map``: rows ``[lo, hi)`` of every (global) batch's columns, this shard's
    part."""

    def __init__(self, lo: int, hi: int) -> None:
        self.lo, self.hi = lo, hi

    def __call__(self, *columns_and_info: Any) -> tuple[Any, ...]:
        return tuple(c[self.lo : self.hi] for c in columns_and_info[:-1])


def _check_shards(batch_size: int, num_shards: int, shard_id: int, what: str) -> None:
    if num_shards < 1 or not 0 <= shard_id < num_shards or batch_size % num_shards:
        raise ValueError(
            f"{what}: batch_size {batch_size} must split into num_shards "
            f"{num_shards} equal parts and shard_id {shard_id} be in [0, {num_shards})"
        )


def sampled_batches(
    source: Any,
    column_names: list[str],
    batch_size: int,
    steps: int,
    seed: int,
    fixed: bool = False,
    num_shards: int = 1,
    shard_id: int = 0,
) -> Any:
    """``GeneratorDataset`` over a random-access ``source``: ``steps`` batches of
    ``batch_size`` rows a epoch, drawn at random with replacement afresh every epoch (seeded
    through ``sporeling.data.config``); ``fixed``: the same rows every epoch (validation), drawn
    once with ``seed``. ``num_shards`` > 1 (data parallel): every shard draws the same global
    batches of ``batch_size`` rows as one process would and keeps its contiguous
    ``batch_size // num_shards`` of them, so a data-parallel run sees one process's batches
    (and its loss curve) whatever the number of shards."""
    n = steps * batch_size
    _check_shards(batch_size, num_shards, shard_id, "sampled_batches")
    if fixed:
        rows = np.random.default_rng(seed).integers(0, len(source), n)
        sampler: Any = ds.SubsetSampler(rows.tolist())
    else:
        ds.config.set_seed(seed)
        sampler = ds.RandomSampler(replacement=True, num_samples=n)
    data = ds.GeneratorDataset(source, column_names=column_names, sampler=sampler)
    if num_shards == 1:
        return data.batch(batch_size, drop_remainder=True)
    part = batch_size // num_shards
    keep = _ShardOfBatch(shard_id * part, (shard_id + 1) * part)
    return data.batch(batch_size, drop_remainder=True, per_batch_map=keep)


def tiled_batches(ids: np.ndarray, seq_length: int, batch_size: int) -> Any:
    """The windows that tile ``ids`` (``TokenWindows`` at stride ``seq_length``), in order,
    in batches of ``batch_size`` (the last one smaller if it must be): a deterministic pass
    over a whole split, the same for every run of the same text."""
    source = TokenWindows(ids, seq_length, stride=seq_length)
    data = ds.GeneratorDataset(source, column_names=["input_ids"], sampler=ds.SequentialSampler())
    return data.batch(batch_size)
