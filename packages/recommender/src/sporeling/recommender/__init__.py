"""sporeling.recommender: MindSpore Recommender's Wide&Deep flow on the Sporeling core.

Raw Criteo lines -> records (:func:`preprocess`) -> :class:`CriteoRecordDataset` ->
``WideDeepModel`` trained with FTRL (wide) + Adam/LazyAdam (deep) -> ``AUCMetric``.

Names are imported on first use, so that the preprocessing worker processes (and
``sporeling-rec --help``) do not pay for importing the core.
"""

from __future__ import annotations

import importlib
from typing import Any

from ._version import __version__

_LAZY = {
    "preprocess": ".preprocess",
    "PreprocessReport": ".preprocess",
    "Vocabulary": ".preprocess",
    "RecordStore": ".records",
    "CriteoRecordDataset": ".records",
    "write_records": ".records",
    "iterate_batches": ".records",
    "parse_lines": ".criteo",
    "WideDeepModel": ".models",
    "DeepFMModel": ".models",
    "DCNv2Model": ".models",
    "NetWithLossClass": ".train",
    "TrainStepWrap": ".train",
    "PredictWithSigmoid": ".train",
    "AUCMetric": ".metrics",
    "auc_score": ".metrics",
    "CachedEmbeddingLookup": ".cache",
    "SyntheticCriteo": ".synthetic",
    "ShardedTable": ".sharding",
    "ShardedTrainer": ".sharding",
    "ShardedWideDeepTrainer": ".sharding",
    "create_dataset": ".model_api",
    "EmbeddingCacheCallback": ".model_api",
    "set_ps_context": ".ps",
    "get_ps_context": ".ps",
    "ParameterServerTrainer": ".ps",
    "RemoteCachedEmbeddingLookup": ".ps_cache",
    "EmbeddingServer": ".ps_cache",
    "use_parameter_servers": ".ps_cache",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sporeling.recommender' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
