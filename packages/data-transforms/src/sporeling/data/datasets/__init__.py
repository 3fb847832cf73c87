"""Dataset sources (MindSpore 1.8 names and signatures)."""

from .generator import GeneratorDataset, NumpySlicesDataset
from .mindrecord import MindDataset
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
