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


def test_model_train_with_host_level_flushes_every_level(tmp_path, capsys):
    folder = tmp_path / "syn"
    generate(folder, rows=800, vocab_size=13 + 26 * 200, test_rows=40, line_per_sample=40)
    set_seed(0)
    net = WideDeepModel(13 + 26 * 200, 39, 4, (8,), vocab_cache_size=800, storage="disk",
                        path=str(tmp_path / "t"), host_cache_size=1200)  # fmt: skip
    model = Model(TrainStepWrap(NetWithLossClass(net)))
    flush = EmbeddingCacheCallback(net, verbose=True)
    model.train(2, create_dataset(folder, "train", 40), callbacks=[flush])
    assert "host level: hit rate" in capsys.readouterr().out
    for epoch in flush.history:
        s = epoch[1]
        assert s["host_lookups"] > 0 and s["disk_write_backs"] > 0 and s["disk_write_batches"] > 0
    assert flush.history[1][1]["host_hits"] > 0  # rows evicted in epoch 1 came back from memory
    for c in cached_lookups(net):  # flushed: the disk table holds every trained row
        assert not c.host_cache.dirty.any()
        live = np.flatnonzero(c.id_of >= 0)
        np.testing.assert_array_equal(
            c.host_table[c.id_of[live]], c.embedding_table.asnumpy()[live]
        )
