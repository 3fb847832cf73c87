"""The dataset graph: a ``Dataset`` node per source or pipeline operation.

Every node answers three questions, which is all the iterators need:

* ``get_col_names()``: the columns of its rows;
* ``_size()``: rows per epoch, exactly (``INFINITE`` after ``repeat()``);
* ``_stream(run, epoch, start)``: the rows of epoch ``epoch`` from position ``start``, as
  ``(row, origin)`` pairs (``row`` a tuple of NumPy values, ``origin`` the file a row came
  from, or None).

``start`` is what makes resuming cheap and exact: a node that can seek passes it on
(``map`` and ``project`` 1:1, ``batch`` times the batch size, ``skip``/``take``/``repeat``/
``concat`` by offsets, a random-access source by slicing its index order), and a node that
cannot (a plain generator, ``map(on_error='skip')``, ``filter``,
``bucket_batch_by_length``) replays from 0 and drops rows.
Seeking never changes the result because every random draw is keyed by
``(seed, epoch, node, row)``, never by how many rows ran before (see ``_rng``).
"""

from __future__ import annotations

from ._rng import row_random_scope  # noqa: F401 - re-exported for sources
from .base import (  # noqa: F401 - re-exported: the engine imports these from here
    INFINITE,
    BatchInfo,
    Dataset,
    Item,
    PipelineError,
    Row,
    Run,
    base_seed_for_run,
    check_bool,
    check_columns,
    check_datasets,
    check_int,
    check_known,
    check_on_error,
    check_workers,
    default_workers,
    drop,
    logger,
    pooled,
    to_numpy,
    zip_datasets,
)
from .filter_bucket import BucketBatchByLengthDataset, FilterDataset  # noqa: F401
from .map_batch import BatchDataset, MapDataset  # noqa: F401
from .structural import (  # noqa: F401
    ConcatDataset,
    ProjectDataset,
    RenameDataset,
    RepeatDataset,
    ShuffleDataset,
    SkipDataset,
    TakeDataset,
    ZipDataset,
    buffer_order,
)

__all__ = [
    "Dataset",
    "BatchInfo",
    "PipelineError",
    "INFINITE",
    "zip_datasets",
    "MapDataset",
    "BatchDataset",
    "FilterDataset",
    "BucketBatchByLengthDataset",
    "ShuffleDataset",
    "RepeatDataset",
    "TakeDataset",
    "SkipDataset",
    "ZipDataset",
    "ConcatDataset",
    "ProjectDataset",
    "RenameDataset",
]
