"""``sporeling.core.train``: Model, callbacks, metrics, checkpoints and in-memory datasets.

Each part's owner adds an import of its module's names below and lists them in ``__all__``,
which is written out (not computed) so type checkers see every name; tests/test_exports.py
checks that it is every imported submodule's ``__all__``.
"""

from .callback import (
    Callback,
    CheckpointConfig,
    EarlyStopping,
    History,
    LambdaCallback,
    LearningCurve,
    LossMonitor,
    ModelCheckpoint,
    ProgressBar,
    ReduceLROnPlateau,
    RunContext,
    TimeMonitor,
)
from .dataset import ArrayDataset
from .metrics import (
    F1,
    MAE,
    MSE,
    ROC,
    ROCAUC,
    Accuracy,
    BleuScore,
    ConfusionMatrix,
    CosineSimilarity,
    Dice,
    Fbeta,
    Loss,
    Metric,
    Perplexity,
    Precision,
    Recall,
    Top1CategoricalAccuracy,
    Top5CategoricalAccuracy,
    TopKCategoricalAccuracy,
    auc,
    get_metric_fn,
    get_metrics,
    names,
    rearrange_inputs,
)
from .model import Model
from .serialization import (
    CheckpointError,
    ParameterMismatchError,
    load_checkpoint,
    load_checkpoint_metadata,
    load_param_into_net,
    save_checkpoint,
)

__all__ = [
    # .callback
    "Callback",
    "LearningCurve",
    "RunContext",
    "LossMonitor",
    "TimeMonitor",
    "History",
    "LambdaCallback",
    "ProgressBar",
    "EarlyStopping",
    "ReduceLROnPlateau",
    "CheckpointConfig",
    "ModelCheckpoint",
    # .dataset
    "ArrayDataset",
    # .metrics
    "Metric",
    "rearrange_inputs",
    "Accuracy",
    "Loss",
    "Precision",
    "Recall",
    "Fbeta",
    "F1",
    "MAE",
    "MSE",
    "TopKCategoricalAccuracy",
    "Top1CategoricalAccuracy",
    "Top5CategoricalAccuracy",
    "ConfusionMatrix",
    "ROC",
    "ROCAUC",
    "auc",
    "Dice",
    "Perplexity",
    "BleuScore",
    "CosineSimilarity",
    "names",
    "get_metric_fn",
    "get_metrics",
    # .model
    "Model",
    # .serialization
    "save_checkpoint",
    "load_checkpoint",
    "load_param_into_net",
    "load_checkpoint_metadata",
    "CheckpointError",
    "ParameterMismatchError",
]
