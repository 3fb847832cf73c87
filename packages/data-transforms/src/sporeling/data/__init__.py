"""sporeling.data: dataset pipeline and unified vision transforms (MindSpore 1.8 API).

A MindSpore script ports by replacing ``mindspore.dataset`` with ``sporeling.data``::

    import sporeling.data as ds
    data = ds.MnistDataset("mnist", usage="train", shuffle=True)
    data = data.map(lambda img: img / 255.0, input_columns="image").batch(32)
    for image, label in data.create_tuple_iterator(num_epochs=1):
        ...

Sources and samplers live in :mod:`sporeling.data.datasets` and :mod:`sporeling.data.engine`
and are re-exported here; transforms live in ``sporeling.data.transforms`` and
``sporeling.data.vision``; settings in ``sporeling.data.config``.
"""

from sporeling.data import config, mindrecord, text
from sporeling.data._version import __version__
from sporeling.data.datasets import (
    Cifar10Dataset,
    Cifar100Dataset,
    CocoDataset,
    CSVDataset,
    EMnistDataset,
    FashionMnistDataset,
    GeneratorDataset,
    ImageFolderDataset,
    KMnistDataset,
    ManifestDataset,
    MindDataset,
    MnistDataset,
    NumpySlicesDataset,
    QMnistDataset,
    Schema,
    Shuffle,
    TextFileDataset,
    TFRecordDataset,
    VOCDataset,
)
from sporeling.data.engine import (
    BatchInfo,
    Dataset,
    DistributedSampler,
    PipelineError,
    PKSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    SubsetSampler,
    WeightedRandomSampler,
    zip,  # noqa: A004 - mindspore.dataset.zip
)

__all__ = [
    "BatchInfo",
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
    "Dataset",
    "DistributedSampler",
    "GeneratorDataset",
    "ImageFolderDataset",
    "MindDataset",
    "MnistDataset",
    "NumpySlicesDataset",
    "PKSampler",
    "PipelineError",
    "RandomSampler",
    "Sampler",
    "Schema",
    "SequentialSampler",
    "Shuffle",
    "SubsetRandomSampler",
    "SubsetSampler",
    "TFRecordDataset",
    "TextFileDataset",
    "WeightedRandomSampler",
    "__version__",
    "config",
    "mindrecord",
    "text",
    "zip",
]
