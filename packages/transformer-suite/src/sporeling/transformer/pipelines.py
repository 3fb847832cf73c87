"""Input pipelines on ``sporeling.data`` (MindSpore's ``mindspore.dataset`` API): MNIST read by
``MnistDataset`` (the published ``.gz`` idx files), shuffled by a sampler, normalised and
transposed by vision transforms, batched; and ``GeneratorDataset`` batching of generated rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

import sporeling.data as ds
from sporeling.data import transforms, vision

__all__ = ["MNIST_MEAN", "MNIST_STD", "mnist_datasets", "batched_generator"]

MNIST_MEAN, MNIST_STD = 0.1307, 0.3081


def _has_test_split(root: Path) -> bool:
    return any(
        (root / f"t10k-{kind}-ubyte{ext}").is_file()
        for kind in ("images-idx3", "labels-idx1")
        for ext in ("", ".gz")
    )


def _prepare(data: Any, batch_size: int, drop_remainder: bool) -> Any:
    """uint8 HWC image -> normalised float32 CHW; uint32 label -> int32; batched."""
    image_ops = [
        vision.Rescale(1.0 / (255.0 * MNIST_STD), -MNIST_MEAN / MNIST_STD),
        vision.HWC2CHW(),
    ]
    data = data.map(operations=image_ops, input_columns="image")
    data = data.map(operations=transforms.TypeCast(np.int32), input_columns="label")
    return data.batch(batch_size, drop_remainder=drop_remainder)


def mnist_datasets(
    folder: str | Path,
    batch_size: int,
    holdout: int = 10000,
    limit: int = 0,
    seed: int = 0,
    eval_batch_size: int = 500,
) -> tuple[Any, Any]:
    """(train, test) batched ``sporeling.data`` pipelines over an MNIST folder: the training
    images reshuffled every epoch (seeded), the test images in order. Without ``t10k-*`` files
    the last ``holdout`` training images are the test set; ``limit`` > 0 keeps only the first
    ``limit`` training images."""
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
    return _prepare(train, batch_size, True), _prepare(test, eval_batch_size, False)


def batched_generator(source: Any, column_names: list[str], batch_size: int) -> Any:
    """``GeneratorDataset`` over ``source`` (a random-access or iterable row source), rows in
    the source's order (it draws its own random rows), batched with the remainder dropped."""
    data = ds.GeneratorDataset(source, column_names=column_names, shuffle=False)
    return data.batch(batch_size, drop_remainder=True)
