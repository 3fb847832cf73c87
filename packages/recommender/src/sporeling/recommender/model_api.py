"""The model zoo's flow through ``sporeling.core.Model``: ``create_dataset`` (records batched
and reshaped to ``(batch, 39)``, MindSpore's ``batch(batch_size / line_per_sample)``) and
``EmbeddingCacheCallback`` (flushes cached tables at every epoch's end, as ``Model.train`` does
in MindSpore 1.8, and reports their statistics).

    net = WideDeepModel(vocab, vocab_cache_size=...)
    model = Model(TrainStepWrap(NetWithLossClass(net)), eval_network=PredictWithSigmoid(net),
                  metrics={"auc": AUCMetric()})
    model.train(epochs, create_dataset(folder, "train", 16000),
                callbacks=[EmbeddingCacheCallback(net)])
    model.eval(create_dataset(folder, "test", 16000))["auc"]
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from sporeling.core.train.callback import Callback

from .cache import _host_level_text, cached_lookups
from .records import CriteoRecordDataset

__all__ = ["create_dataset", "EmbeddingCacheCallback"]


def create_dataset(
    dataset_dir: str | os.PathLike[str],
    split: str = "train",
    batch_size: int = 16000,
    shuffle: bool | None = None,
    num_shards: int | None = None,
    shard_id: int | None = None,
) -> Any:
    """Batches of ``(feat_ids (B, 39) int32, feat_vals (B, 39) float32, label (B, 1))``
    from the records of ``split`` (shuffled for ``train`` unless told otherwise)."""
    data = CriteoRecordDataset(
        dataset_dir, split, shuffle=split == "train" if shuffle is None else shuffle,
        num_shards=num_shards, shard_id=shard_id,
    )  # fmt: skip
    lps = data.line_per_sample
    if batch_size % lps:
        raise ValueError(
            f"create_dataset: argument 'batch_size' ({batch_size}) expected a multiple of "
            f"line_per_sample ({lps})"
        )

    def flatten(ids: np.ndarray, vals: np.ndarray, label: np.ndarray) -> Any:
        return (
            ids.reshape(-1, ids.shape[-1]),
            vals.reshape(-1, vals.shape[-1]),
            label.reshape(-1, 1),
        )

    columns = ["feat_ids", "feat_vals", "label"]
    return data.batch(batch_size // lps, drop_remainder=True).map(
        flatten, input_columns=columns, output_columns=columns
    )


class EmbeddingCacheCallback(Callback):
    """Flush the cached tables of ``network`` at every epoch's end and keep (and optionally
    print) their statistics per epoch in :attr:`history`."""

    def __init__(self, network: Any, verbose: bool = False) -> None:
        super().__init__()
        self.lookups = cached_lookups(network)
        self.verbose = verbose
        self.history: list[list[dict[str, Any]]] = []

    def on_train_epoch_end(self, run_context: Any) -> None:
        stats = []
        for c in self.lookups:
            c.flush()
            stats.append(c.reset_stats().as_dict())
        self.history.append(stats)
        if self.verbose:
            for i, s in enumerate(stats):
                print(
                    f"cache {i}: hit rate {s['hit_rate']:.3f}, write-backs {s['write_backs']}"
                    + _host_level_text(s)
                )
