"""Model.train/eval/predict/fit end to end on tiny models, ordering, validation; ArrayDataset."""

from __future__ import annotations

import numpy as np
import pytest

import sporeling.core as core
from sporeling.core import Parameter, Tensor, nn, ops
from sporeling.core.random_state import set_seed
from sporeling.core.train import (
    ArrayDataset,
    Callback,
    History,
    LambdaCallback,
    LossMonitor,
    Model,
    TimeMonitor,
)


def _blobs(n=96, seed=0):
    rng = np.random.default_rng(seed)
    centers = np.array([[2.0, 0.0], [-2.0, 0.0], [0.0, 2.5]])
    y = rng.integers(0, 3, size=n)
    x = (centers[y] + rng.normal(scale=0.6, size=(n, 2))).astype(np.float32)
    return x, y.astype(np.int32)


def _classifier(lr=0.1, metrics=None):
    set_seed(1)
    net = nn.Dense(2, 3)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), lr, 0.9)
    return Model(net, loss, opt, metrics=metrics if metrics is not None else {"acc", "loss"})


class Recorder(Callback):
    """Logs every hook with the epoch and whether eval_results are visible."""

    def __init__(self):
        self.log = []

    def _add(self, name, ctx):
        p = ctx.original_args()
        self.log.append((name, p.get("cur_epoch_num"), p.get("mode"), "eval_results" in p))

    def on_train_begin(self, ctx):
        self._add("train_begin", ctx)

    def on_train_epoch_begin(self, ctx):
        self._add("epoch_begin", ctx)

    def on_train_step_end(self, ctx):
        self._add("step", ctx)

    def on_train_epoch_end(self, ctx):
        self._add("epoch_end", ctx)

    def on_train_end(self, ctx):
        self._add("train_end", ctx)

    def on_eval_begin(self, ctx):
        self._add("eval_begin", ctx)

    def on_eval_step_end(self, ctx):
        self._add("eval_step", ctx)

    def on_eval_end(self, ctx):
        self._add("eval_end", ctx)


def test_fit_end_to_end_learns_and_reports():
    x, y = _blobs()
    model = _classifier()
    train_ds = ArrayDataset(x[:64], y[:64], batch_size=16, shuffle=True, seed=0)
    valid_ds = ArrayDataset(x[64:], y[64:], batch_size=16)
    before = model.eval(valid_ds)
    history = History()
    model.fit(6, train_ds, valid_ds, callbacks=[history])
    after = model.eval(valid_ds)
    assert after["acc"] > 0.9 and after["loss"] < before["loss"]
    assert history.epoch["epoch"] == list(range(1, 7))
    assert len(history.history["acc"]) == 6 and history.history["acc"][-1] == after["acc"]
    # eval_loss is the mean of the batch losses, as the 'loss' metric
    assert history.history["eval_loss"] == pytest.approx(history.history["loss"])
    logits = model.predict(Tensor(x[64:]))
    assert np.mean(logits.asnumpy().argmax(1) == y[64:]) == pytest.approx(after["acc"])


def test_eval_runs_before_epoch_end_and_results_are_cleared_after():
    x, y = _blobs(32)
    model = _classifier()
    rec = Recorder()
    model.fit(
        2, ArrayDataset(x, y, batch_size=16), ArrayDataset(x, y, batch_size=32), callbacks=rec
    )
    names = [e[0] for e in rec.log]
    assert names == [
        "train_begin",
        "epoch_begin", "step", "step", "eval_begin", "eval_step", "eval_end", "epoch_end",
        "epoch_begin", "step", "step", "eval_begin", "eval_step", "eval_end", "epoch_end",
        "train_end",
    ]  # fmt: skip
    by_name = {}
    for name, epoch, mode, has_results in rec.log:
        by_name.setdefault(name, []).append((epoch, mode, has_results))
    assert by_name["epoch_end"] == [(1, "train", True), (2, "train", True)]
    assert by_name["epoch_begin"] == [(1, "train", False), (2, "train", False)]
    assert all(mode == "eval" for _, mode, _ in by_name["eval_step"])


def test_epoch_end_sees_eval_results_and_restored_train_fields():
    x, y = _blobs(32)
    model = _classifier()
    seen = []

    def at_epoch_end(ctx):
        p = ctx.original_args()
        seen.append((dict(p.eval_results), p.cur_step_num, p.batch_num))

    model.fit(
        1,
        ArrayDataset(x, y, batch_size=8),
        ArrayDataset(x, y, batch_size=16),
        callbacks=LambdaCallback(on_train_epoch_end=at_epoch_end),
    )
    ((results, step, batch_num),) = seen
    assert set(results) == {"acc", "loss", "eval_loss"}
    assert (step, batch_num) == (4, 4)  # the training counters, not the eval ones


@pytest.mark.parametrize(
    ("frequency", "expected"), [(1, [1, 2, 3, 4]), (2, [2, 4]), ([1, 3], [1, 3]), ([], [])]
)
def test_valid_frequency(frequency, expected):
    x, y = _blobs(16)
    model = _classifier()
    rec = Recorder()
    ds = ArrayDataset(x, y, batch_size=16)
    model.fit(4, ds, ds, valid_frequency=frequency, callbacks=rec)
    validated = [e[1] for e in rec.log if e[0] == "epoch_end" and e[3]]
    assert validated == expected


def test_request_stop_ends_after_current_step_and_runs_epoch_end():
    x, y = _blobs(64)
    model = _classifier()
    rec = Recorder()

    class StopAt3(Callback):
        def on_train_step_end(self, ctx):
            if ctx.original_args().cur_step_num == 3:
                ctx.request_stop()

    model.train(5, ArrayDataset(x, y, batch_size=8), callbacks=[StopAt3(), rec])
    names = [e[0] for e in rec.log]
    assert names == ["train_begin", "epoch_begin", "step", "step", "step", "epoch_end", "train_end"]


def test_initial_epoch_and_cb_params():
    x, y = _blobs(16)
    model = _classifier()
    params = []
    cb = LambdaCallback(on_train_epoch_end=lambda ctx: params.append(dict(ctx.original_args())))
    model.train(4, ArrayDataset(x, y, batch_size=8), callbacks=cb, initial_epoch=2)
    assert [p["cur_epoch_num"] for p in params] == [3, 4]
    p = params[-1]
    assert p["epoch_num"] == 2 and p["batch_num"] == 2 and p["cur_step_num"] == 4
    assert p["mode"] == "train" and p["parallel_mode"] == "stand_alone"
    assert p["train_network"] is model.train_network and p["optimizer"] is model._optimizer
    assert isinstance(p["net_outputs"], Tensor)


def test_old_style_hooks_raise_under_fit_and_warn_under_train_and_eval():
    x, y = _blobs(16)
    ds = ArrayDataset(x, y, batch_size=16)
    model = _classifier()

    class Old(Callback):
        def __init__(self):
            self.steps = 0

        def step_end(self, run_context):
            self.steps += 1

    class Child(Old):  # inherited old-style hooks count too
        pass

    for cb in (Old(), Child()):
        with pytest.raises(ValueError, match=r"old-style hooks \['step_end'\]"):
            model.fit(1, ds, callbacks=[cb])
    old = Old()
    with pytest.warns(FutureWarning, match="old-style hooks"):
        model.train(1, ds, callbacks=old)
    assert old.steps == 1  # still called through on_train_step_end
    with pytest.warns(FutureWarning):
        model.eval(ds, callbacks=[Old()])
    # built-in callbacks are exempt
    model.fit(1, ds, callbacks=[LossMonitor(0), TimeMonitor(), History()])


def test_builtin_callbacks_are_skipped_during_fit_validation_except_time_monitor(capsys):
    x, y = _blobs(16)
    ds = ArrayDataset(x, y, batch_size=8)
    model = _classifier()
    model.fit(1, ds, ds, callbacks=[LossMonitor(1), TimeMonitor()])
    out = capsys.readouterr().out.splitlines()
    assert sum(line.startswith("epoch: 1 step:") for line in out) == 2  # no eval steps
    assert any(line.startswith("Eval epoch time") for line in out)
    assert any(line.startswith("Train epoch time") for line in out)
    assert any(line.startswith("Eval result: epoch 1") for line in out)


def test_argument_validation():
    x, y = _blobs(16)
    ds = ArrayDataset(x, y, batch_size=8)
    model = _classifier()
    with pytest.raises(ValueError, match="initial_epoch"):
        model.fit(2, ds, initial_epoch=2)
    with pytest.raises(ValueError, match="initial_epoch"):
        model.train(1, ds, initial_epoch=3)
    with pytest.raises(ValueError, match="sink_size"):
        model.fit(1, ds, sink_size=0)
    with pytest.raises(ValueError, match="sink_size"):
        model.train(1, ds, sink_size=-2)
    with pytest.raises(TypeError, match="valid_frequency"):
        model.fit(1, ds, ds, valid_frequency="2")
    with pytest.raises(ValueError, match="valid_frequency"):
        model.fit(1, ds, ds, valid_frequency=0)
    with pytest.raises(TypeError, match="dataset_sink_mode"):
        model.fit(1, ds, dataset_sink_mode=1)
    with pytest.raises(TypeError, match="valid_dataset_sink_mode"):
        model.fit(1, ds, valid_dataset_sink_mode=None)
    with pytest.raises(TypeError, match="epoch"):
        model.fit(1.0, ds)
    with pytest.raises(TypeError, match="train_dataset"):
        model.fit(1, [(x, y)])
    empty = ArrayDataset(x[:3], y[:3], batch_size=4, drop_remainder=True)
    with pytest.raises(ValueError, match="no data"):
        model.fit(1, empty)
    with pytest.raises(TypeError, match="Callback"):
        model.train(1, ds, callbacks=[print])
    no_metrics = _classifier(metrics={})
    with pytest.raises(ValueError, match="no metrics"):
        no_metrics.fit(1, ds, ds)
    with pytest.raises(ValueError, match="no metrics"):
        no_metrics.eval(ds)
    three = ArrayDataset(x, y, y, batch_size=8)
    with pytest.raises(ValueError, match="two columns"):
        model.train(1, three)
    # sink modes are accepted and change nothing
    model.fit(1, ds, ds, dataset_sink_mode=True, valid_dataset_sink_mode=True, sink_size=1)


def test_constructor_validation():
    net = nn.Dense(2, 3)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True)
    opt = nn.SGD(net.trainable_params(), 0.1)
    with pytest.raises(TypeError, match="network"):
        Model(lambda x: x)
    with pytest.raises(ValueError, match="neither an 'eval_network' nor a 'loss_fn'"):
        Model(net, metrics={"acc"})
    with pytest.raises(ValueError, match="eval_indexes"):
        Model(net, loss, opt, metrics={"acc"}, eval_network=net, eval_indexes=[0, 1])
    with pytest.raises(ValueError, match="unexpected keyword"):
        Model(net, loss, opt, amp="O2")
    with pytest.raises(ValueError, match="needs an optimizer"):
        Model(net, loss, amp_level="O2")
    with pytest.raises(ValueError, match="amp_level"):
        Model(net, loss, opt, amp_level="O9")
    with pytest.raises(ValueError, match="boost_level"):
        Model(net, loss, opt, boost_level="O5")
    with pytest.raises(TypeError, match="metrics"):
        Model(net, loss, opt, metrics=["acc"])
    assert core.Model is Model


def test_network_wrapping_as_mindspore():
    net = nn.Dense(2, 3)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True)
    opt = nn.SGD(net.trainable_params(), 0.1)
    assert isinstance(Model(net, loss, opt).train_network, nn.TrainOneStepCell)
    assert isinstance(Model(net, loss).train_network, nn.WithLossCell)
    assert Model(net).train_network is net
    m = Model(net, loss, opt, metrics={"acc"})
    assert isinstance(m.eval_network, nn.WithEvalCell) and m._eval_indexes == [0, 1, 2]
    assert m.predict_network is net


class _MatmulNet(nn.Cell):
    """A network without nn layers: parameters and ops.matmul."""

    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.zeros((2, 1), np.float32)), name="w")

    def construct(self, x):
        return ops.matmul(x, self.w)


class _EvalNet(nn.Cell):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def construct(self, x, y):
        pred = self.net(x)
        return pred, y, ops.reduce_mean((pred - y) ** 2)


def test_custom_train_and_eval_networks_with_eval_indexes():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(32, 2)).astype(np.float32)
    y = (x @ np.array([[1.5], [-1.0]], np.float32)).astype(np.float32)
    net = _MatmulNet()
    opt = nn.SGD(net.trainable_params(), 0.1)
    train_net = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
    model = Model(train_net, eval_network=_EvalNet(net), eval_indexes=[2, 0, 1],
                  metrics={"mse", "loss"})  # fmt: skip
    ds = ArrayDataset(x, y, batch_size=8)
    history = History()
    model.fit(15, ds, ds, callbacks=history)
    np.testing.assert_allclose(net.w.asnumpy().ravel(), [1.5, -1.0], atol=1e-2)
    res = model.eval(ds)
    assert res["loss"] < 1e-3 and res["mse"] == pytest.approx(res["loss"], rel=1e-4)
    assert history.history["eval_loss"][-1] == pytest.approx(res["loss"])


def test_eval_without_indexes_passes_all_outputs_to_metrics():
    x, y = _blobs(16)
    net = nn.Dense(2, 3)

    class Pair(nn.Cell):
        def __init__(self):
            super().__init__()
            self.net = net

        def construct(self, data, label):
            return self.net(data), label

    model = Model(net, metrics={"acc"}, eval_network=Pair())
    res = model.eval(ArrayDataset(x, y, batch_size=8))
    ref = np.mean(net(Tensor(x)).asnumpy().argmax(1) == y)
    assert res == {"acc": pytest.approx(ref)}
    with pytest.raises(TypeError, match="predict"):
        model.predict(x)


# ---- ArrayDataset -------------------------------------------------------------------------
def test_array_dataset_batches_and_iterators():
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    ds = ArrayDataset(x, np.arange(5), batch_size=2, column_names=["x", "y"])
    assert ds.get_dataset_size() == 3 and ds.batch_size == 2 and ds.get_batch_size() == 2
    batches = list(ds.create_tuple_iterator())
    assert [b[1].tolist() for b in batches] == [[0, 1], [2, 3], [4]]
    assert isinstance(batches[0][0], Tensor) and batches[0][0].dtype == core.float32
    assert ArrayDataset(x, batch_size=2, drop_remainder=True).get_dataset_size() == 2
    d = next(iter(ds.create_dict_iterator(output_numpy=True)))
    assert set(d) == {"x", "y"} and isinstance(d["x"], np.ndarray)
    only_y = next(ds.create_tuple_iterator(columns=["y"], output_numpy=True))
    assert len(only_y) == 1 and only_y[0].tolist() == [0, 1]
    it = ds.create_tuple_iterator(num_epochs=2)
    assert [len(list(it)) for _ in range(3)] == [3, 3, 0]


def test_array_dataset_shuffle_is_per_epoch_and_seeded():
    def orders(seed, epochs=3):
        ds = ArrayDataset(np.arange(12), batch_size=12, shuffle=True, seed=seed)
        it = ds.create_tuple_iterator(output_numpy=True)
        return [next(iter(it))[0].tolist() + [list(it)] for _ in range(epochs)]

    a, b = orders(5), orders(5)
    assert a == b
    firsts = [o[:12] for o in a]
    assert firsts[0] != firsts[1] and sorted(firsts[0]) == list(range(12))
    assert orders(6)[0][:12] != firsts[0]


def test_array_dataset_errors():
    with pytest.raises(ValueError, match="first dimension"):
        ArrayDataset(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="batch_size"):
        ArrayDataset(np.zeros(3), batch_size=0)
    with pytest.raises(TypeError, match="shuffle"):
        ArrayDataset(np.zeros(3), shuffle=1)
    with pytest.raises(ValueError, match="column_names"):
        ArrayDataset(np.zeros(3), column_names=["a", "b"])
    with pytest.raises(ValueError, match="num_epochs"):
        ArrayDataset(np.zeros(3)).create_tuple_iterator(num_epochs=0)
    with pytest.raises(ValueError, match="unknown columns"):
        ArrayDataset(np.zeros(3)).create_tuple_iterator(columns=["z"])
