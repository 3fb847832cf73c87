"""Dataset sources (MindSpore 1.8 names and signatures)."""

from .generator import GeneratorDataset, NumpySlicesDataset
from .mindrecord import MindDataset
from .text import CSVDataset, Shuffle, TextFileDataset
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
    "Shuffle",
    "TextFileDataset",
    "decode_image",
]
