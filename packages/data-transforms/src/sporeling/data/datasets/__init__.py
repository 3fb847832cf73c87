"""Dataset sources (MindSpore 1.8 names and signatures)."""

from .annotated_sources import CocoDataset, ManifestDataset, VOCDataset
from .generator import GeneratorDataset, NumpySlicesDataset
from .mindrecord import MindDataset
from .mnist_family import EMnistDataset, FashionMnistDataset, KMnistDataset, QMnistDataset
from .schema import Schema
from .text import CSVDataset, Shuffle, TextFileDataset
from .tfrecord import TFRecordDataset
from .vision_sources import (
    Cifar10Dataset,
    Cifar100Dataset,
    ImageFolderDataset,
    MnistDataset,
    decode_image,
)

__all__ = [
    "CSVDataset",
    "CocoDataset",
    "ManifestDataset",
    "VOCDataset",
    "EMnistDataset",
    "FashionMnistDataset",
    "KMnistDataset",
    "QMnistDataset",
    "Cifar100Dataset",
    "Cifar10Dataset",
    "GeneratorDataset",
    "ImageFolderDataset",
    "MindDataset",
    "MnistDataset",
    "NumpySlicesDataset",
    "Schema",
    "Shuffle",
    "TFRecordDataset",
    "TextFileDataset",
    "decode_image",
]
