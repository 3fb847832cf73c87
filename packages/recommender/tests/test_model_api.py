"""The model zoo's flow through sporeling.core.Model: train with the cache callback, eval AUC."""

from __future__ import annotations

import numpy as np

from sporeling.core import Model, Tensor, set_seed
from sporeling.recommender.cache import cached_lookups
from sporeling.recommender.metrics import AUCMetric
from sporeling.recommender.model_api import EmbeddingCacheCallback, create_dataset
from sporeling.recommender.models import WideDeepModel
from sporeling.recommender.runner import evaluate
from sporeling.recommender.synthetic import generate
from sporeling.recommender.train import NetWithLossClass, PredictWithSigmoid, TrainStepWrap


def test_model_train_and_eval(tmp_path):
    folder = tmp_path / "syn"
    generate(folder, rows=1200, vocab_size=13 + 26 * 200, test_rows=400, line_per_sample=40)
    data = create_dataset(folder, "train", 40)
    ids, vals, label = next(data.create_tuple_iterator(num_epochs=1, output_numpy=True))
    assert ids.shape == (40, 39) and vals.shape == (40, 39) and label.shape == (40, 1)

    set_seed(0)
    net = WideDeepModel(13 + 26 * 200, 39, 4, (8,), vocab_cache_size=1000)
    model = Model(TrainStepWrap(NetWithLossClass(net)), eval_network=PredictWithSigmoid(net),
                  metrics={"auc": AUCMetric()})  # fmt: skip
    flush = EmbeddingCacheCallback(net)
    model.train(2, create_dataset(folder, "train", 40), callbacks=[flush])
    assert len(flush.history) == 2 and flush.history[1][1]["write_backs"] > 0
    for c in cached_lookups(net):  # flushed: the host table holds every trained row
        np.testing.assert_array_equal(
            c.host_table[c.id_of[c.id_of >= 0]],
            c.embedding_table.asnumpy()[np.flatnonzero(c.id_of >= 0)],
        )
    auc = model.eval(create_dataset(folder, "test", 40))["auc"]
    assert abs(auc - evaluate(net, str(folder), 40)["auc"]) < 1e-12
    assert 0.0 < auc < 1.0
    logits, _ = net(Tensor(ids), Tensor(vals))
    assert logits.shape == (40, 1)
