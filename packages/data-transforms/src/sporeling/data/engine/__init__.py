"""The pipeline engine: the dataset graph, samplers, iterators and workers."""

from .dataset import (
    BatchDataset,
    BatchInfo,
    BucketBatchByLengthDataset,
    ConcatDataset,
    Dataset,
    FilterDataset,
    MapDataset,
    PipelineError,
    ProjectDataset,
    RenameDataset,
    RepeatDataset,
    ShuffleDataset,
    SkipDataset,
    TakeDataset,
    ZipDataset,
    zip_datasets,
)
from .iterators import DictIterator, TupleIterator
from .pk_sampler import PKSampler
from .samplers import (
    DistributedSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    SubsetSampler,
    WeightedRandomSampler,
)
from .sources import MappableSource, StreamSource

zip = zip_datasets  # noqa: A001 - mindspore.dataset.zip

__all__ = [
    "BatchDataset",
    "BatchInfo",
    "BucketBatchByLengthDataset",
    "ConcatDataset",
    "Dataset",
    "DictIterator",
    "DistributedSampler",
    "FilterDataset",
    "MapDataset",
    "MappableSource",
    "PipelineError",
    "ProjectDataset",
    "PKSampler",
    "RandomSampler",
    "RenameDataset",
    "RepeatDataset",
    "Sampler",
    "SequentialSampler",
    "ShuffleDataset",
    "SkipDataset",
    "StreamSource",
    "SubsetRandomSampler",
    "SubsetSampler",
    "TakeDataset",
    "TupleIterator",
    "WeightedRandomSampler",
    "ZipDataset",
    "zip",
]
