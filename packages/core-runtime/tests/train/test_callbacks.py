"""Callback semantics: EarlyStopping/ReduceLROnPlateau edge cases on fake cb_params sequences,
monitors and progress output, and the same callbacks inside Model.fit on a tiny model."""

from __future__ import annotations

import io

import numpy as np
import pytest

from sporeling.core import Parameter, Tensor, nn
from sporeling.core.train import (
    ArrayDataset,
    Callback,
    EarlyStopping,
    History,
    LambdaCallback,
    LossMonitor,
    Model,
    ProgressBar,
    ReduceLROnPlateau,
    RunContext,
    TimeMonitor,
)
from sporeling.core.train.callback._callback import _InternalCallbackParam


class _Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.zeros(2, np.float32)), name="w")

    def construct(self, x):
        return x


class _Opt(nn.Cell):
    def __init__(self, lr):
        super().__init__()
        self.learning_rate = lr


def _params(epoch, net=None, optimizer=None, **kw):
    p = _InternalCallbackParam()
    p.cur_epoch_num = epoch
    p.train_network = net if net is not None else _Net()
    p.optimizer = optimizer
    p.update(kw)
    return p


def _run_epochs(cb, values, monitor_key="eval_loss", net=None, optimizer=None, on_epoch=None):
    """Feed ``values`` as successive epoch results; return the epoch that requested a stop."""
    ctx = RunContext(_params(0, net, optimizer))
    cb.on_train_begin(ctx)
    for epoch, v in enumerate(values, start=1):
        if on_epoch is not None:
            on_epoch(epoch)
        ctx = RunContext(_params(epoch, net, optimizer, eval_results={monitor_key: v}))
        cb.on_train_epoch_end(ctx)
        if ctx.get_stop_requested():
            return epoch
    return None


# ---- base ---------------------------------------------------------------------------------
def test_default_hooks_call_old_style_names():
    calls = []

    class Old(Callback):
        def step_end(self, run_context):
            calls.append("step_end")

        def begin(self, run_context):
            calls.append("begin")

    ctx = RunContext({})
    Old().on_train_step_end(ctx)
    Old().on_eval_step_end(ctx)
    Old().on_eval_begin(ctx)
    assert calls == ["step_end", "step_end", "begin"]


def test_run_context():
    with pytest.raises(TypeError, match="original_args"):
        RunContext([1])
    ctx = RunContext({"a": 1})
    assert ctx.original_args() == {"a": 1} and not ctx.get_stop_requested()
    ctx.request_stop()
    assert ctx.get_stop_requested()


# ---- EarlyStopping ------------------------------------------------------------------------
def test_early_stopping_default_patience_zero_stops_after_first_epoch():
    assert _run_epochs(EarlyStopping(), [1.0, 0.5, 0.2]) == 1


def test_early_stopping_patience_and_min_delta():
    assert _run_epochs(EarlyStopping(patience=2), [1.0, 0.9, 0.95, 0.93, 0.92]) == 4
    # improvements smaller than |min_delta| do not count
    es = EarlyStopping(patience=2, min_delta=-0.05)
    assert es.min_delta == 0.05
    assert _run_epochs(es, [1.0, 0.97, 0.96, 0.5]) == 3
    assert es.best == 1.0


def test_early_stopping_max_mode_for_metric_names_and_explicit_mode():
    # 'acc' is not in the smaller-is-better list: auto means max
    assert _run_epochs(EarlyStopping("acc", patience=1), [0.5, 0.6, 0.7, 0.6], "acc") == 4
    assert _run_epochs(EarlyStopping("acc", patience=1, mode="min"), [0.5, 0.6], "acc") == 2
    for name in ("mae", "mse", "loss", "perplexity", "eval_loss", "hausdorff_distance"):
        assert EarlyStopping(name).best == np.inf
    assert EarlyStopping("f1").best == -np.inf
    with pytest.raises(ValueError, match="'auto', 'min' or 'max'"):
        EarlyStopping(mode="down")


def test_early_stopping_baseline_keeps_counting_until_beaten():
    es = EarlyStopping("acc", patience=2, baseline=0.8)
    assert _run_epochs(es, [0.5, 0.6, 0.7], "acc") == 2
    assert _run_epochs(EarlyStopping("acc", patience=2), [0.5, 0.6, 0.7], "acc") is None
    es = EarlyStopping("acc", patience=2, baseline=0.8)
    assert _run_epochs(es, [0.85, 0.9, 0.95, 0.96], "acc") is None


def test_early_stopping_restores_best_and_snapshots_first_epoch():
    net = _Net()

    def set_weights(epoch):
        net.w.set_data(Tensor(np.full(2, epoch, np.float32)))

    es = EarlyStopping(patience=2, restore_best_weights=True)
    assert _run_epochs(es, [3.0, 1.0, 2.0, 2.5], net=net, on_epoch=set_weights) == 4
    np.testing.assert_array_equal(net.w.asnumpy(), [2.0, 2.0])  # weights of epoch 2
    # a NaN first value is never an improvement, yet epoch 1 is still snapshotted
    es = EarlyStopping(patience=1, restore_best_weights=True)
    assert _run_epochs(es, [np.nan], net=net, on_epoch=set_weights) == 1
    np.testing.assert_array_equal(net.w.asnumpy(), [1.0, 1.0])


def test_early_stopping_missing_monitor_warns_and_skips():
    es = EarlyStopping("acc", patience=1)
    es.on_train_begin(RunContext(_params(0)))
    ctx = RunContext(_params(1, eval_results={"eval_loss": 0.3}))
    with pytest.warns(UserWarning, match=r"'acc'.*not available.*eval_loss"):
        es.on_train_epoch_end(ctx)
    assert es.wait == 0 and not ctx.get_stop_requested()


def test_early_stopping_non_scalar_raises_and_loss_monitor_reads_net_outputs():
    es = EarlyStopping("precision")
    with pytest.raises(ValueError, match="scalar"):
        es.on_train_epoch_end(RunContext(_params(1, eval_results={"precision": np.ones(3)})))
    es = EarlyStopping("loss", patience=5)
    es.on_train_begin(RunContext(_params(0)))
    out = (Tensor(np.array([1.0, 3.0], np.float32)), Tensor(np.float32(9.0)))
    es.on_train_epoch_end(RunContext(_params(1, net_outputs=out)))
    assert float(es.best) == 2.0


def test_early_stopping_argument_errors():
    with pytest.raises(ValueError, match="patience"):
        EarlyStopping(patience=-1)
    with pytest.raises(TypeError, match="monitor"):
        EarlyStopping(monitor=1)
    with pytest.raises(TypeError, match="verbose"):
        EarlyStopping(verbose=1)
    with pytest.raises(TypeError, match="baseline"):
        EarlyStopping(baseline="high")


def test_early_stopping_verbose(capsys):
    es = EarlyStopping(verbose=True)
    ctx = RunContext(_params(1, eval_results={"eval_loss": 1.0}))
    es.on_train_begin(ctx)
    es.on_train_epoch_end(ctx)
    es.on_train_end(ctx)
    assert "Epoch 00001: early stopping" in capsys.readouterr().out


# ---- ReduceLROnPlateau --------------------------------------------------------------------
def _lr_trajectory(cb, values, lr=0.1):
    opt = _Opt(Parameter(Tensor(np.float32(lr)), name="learning_rate"))
    lrs = []

    def record(epoch):
        lrs.append(round(float(opt.learning_rate.asnumpy()), 6))

    _run_epochs(cb, values, optimizer=opt, on_epoch=record)
    record(None)
    return lrs[1:]


def test_reduce_lr_cooldown_and_min_lr():
    flat = [1.0] * 6
    cb = ReduceLROnPlateau(factor=0.5, patience=1, cooldown=1, min_lr=0.02)
    assert _lr_trajectory(cb, flat) == [0.1, 0.05, 0.025, 0.02, 0.02, 0.02]
    cb = ReduceLROnPlateau(factor=0.5, patience=1, cooldown=2, min_lr=0.02)
    assert _lr_trajectory(cb, flat) == [0.1, 0.05, 0.05, 0.025, 0.025, 0.02]
    cb = ReduceLROnPlateau(factor=0.5, patience=2)
    assert _lr_trajectory(cb, [1.0, 0.9, 0.95, 0.92, 0.8, 0.85]) == [0.1] * 3 + [0.05] * 3
    # improvements below min_delta (1e-4 by default) are plateaus
    cb = ReduceLROnPlateau(factor=0.5, patience=1)
    assert _lr_trajectory(cb, [1.0, 0.99995]) == [0.1, 0.05]


def test_reduce_lr_requires_scalar_parameter_lr_and_checks_factor():
    cb = ReduceLROnPlateau()
    for lr in (0.1, Tensor(np.float32(0.1)), Parameter(Tensor(np.ones(3, np.float32)), "lr")):
        ctx = RunContext(_params(1, optimizer=_Opt(lr), eval_results={"eval_loss": 1.0}))
        with pytest.raises(ValueError, match="scalar Parameter"):
            cb.on_train_epoch_end(ctx)
    for factor in (0.0, 1.0, 1.5, -0.1):
        with pytest.raises(ValueError, match="factor"):
            ReduceLROnPlateau(factor=factor)
    with pytest.raises(ValueError, match="cooldown"):
        ReduceLROnPlateau(cooldown=-1)


def test_reduce_lr_verbose(capsys):
    cb = ReduceLROnPlateau(factor=0.5, patience=0, verbose=True)
    _lr_trajectory(cb, [1.0, 1.0])
    assert (
        "Epoch 00002: ReduceLROnPlateau reducing learning rate to 0.05." in capsys.readouterr().out
    )


# ---- monitors -----------------------------------------------------------------------------
def _step_ctx(step, loss, batch_num=4, epoch=1):
    return RunContext(
        _params(epoch, cur_step_num=step, batch_num=batch_num, net_outputs=Tensor(np.float32(loss)))
    )


def test_loss_monitor_prints_every_n_steps_and_stops_on_nan(capsys):
    lm = LossMonitor(per_print_times=2)
    lm.on_train_begin(_step_ctx(0, 0.0))
    for step in range(1, 6):
        lm.on_train_step_end(_step_ctx(step, 0.5, epoch=1 + (step - 1) // 4))
    out = capsys.readouterr().out.splitlines()
    assert out == ["epoch: 1 step: 2, loss is 0.5", "epoch: 1 step: 4, loss is 0.5"]
    with pytest.raises(ValueError, match="epoch: 2 step: 2. Invalid loss"):
        lm.on_train_step_end(_step_ctx(6, np.nan, epoch=2))
    with pytest.raises(ValueError, match="Invalid loss"):
        LossMonitor().on_train_step_end(_step_ctx(1, np.inf))
    with pytest.raises(ValueError, match="per_print_times"):
        LossMonitor(-1)


def test_time_monitor_labels_and_validation(capsys):
    tm = TimeMonitor()
    ctx = RunContext(_params(1, batch_num=4, mode="train"))
    tm.on_train_epoch_begin(ctx)
    tm.on_train_epoch_end(ctx)
    ctx = RunContext(_params(1, batch_num=2, mode="eval"))
    tm.on_eval_epoch_begin(ctx)
    tm.on_eval_epoch_end(ctx)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("Train epoch time:") and "per step time" in out[0]
    assert out[1].startswith("Eval epoch time:")
    with pytest.raises(ValueError, match="data_size"):
        TimeMonitor(0)
    with pytest.raises(ValueError, match="positive"):
        TimeMonitor().on_train_epoch_end(RunContext(_params(1)))


def test_lambda_callback_and_progress_bar():
    seen = []
    cb = LambdaCallback(on_train_epoch_end=lambda ctx: seen.append(ctx.original_args()["x"]))
    cb.on_train_epoch_end(RunContext({"x": 7}))
    cb.on_eval_end(RunContext({}))  # unset hooks do nothing
    assert seen == [7]
    with pytest.raises(TypeError, match="on_train_end"):
        LambdaCallback(on_train_end=3)

    buf = io.StringIO()  # not a terminal: auto mode stays quiet
    bar = ProgressBar(file=buf)
    assert not bar.enabled
    buf = io.StringIO()
    bar = ProgressBar(enabled=True, file=buf)
    ctx = RunContext(_params(1, batch_num=2, epoch_num=3, net_outputs=Tensor(np.float32(0.25))))
    bar.on_train_epoch_begin(ctx)
    bar.on_train_step_end(ctx)
    bar.on_train_step_end(ctx)
    ctx.original_args()["eval_results"] = {"acc": 0.5}
    bar.on_train_epoch_end(ctx)
    text = buf.getvalue()
    assert "epoch 1" in text and "2/2" in text and "loss=0.25" in text and "acc=0.5" in text


# ---- inside Model.fit ---------------------------------------------------------------------
def _tiny_problem(n=48):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 3)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5]], np.float32)).astype(np.float32)
    return x, y


def _mse_model(lr=0.05, metrics=None):
    net = nn.Dense(3, 1)
    opt = nn.SGD(net.trainable_params(), learning_rate=lr)
    return net, opt, Model(net, nn.MSELoss(), opt, metrics=metrics or {"mae", "loss"})


def test_fit_with_early_stopping_reduce_lr_and_history():
    x, y = _tiny_problem()
    net, opt, model = _mse_model()
    train_ds = ArrayDataset(x, y, batch_size=8)
    valid_ds = ArrayDataset(x[:16], y[:16], batch_size=8)
    history = History()
    stopper = EarlyStopping(monitor="eval_loss", patience=0)
    model.fit(5, train_ds, valid_ds, callbacks=[history, stopper])
    assert history.epoch == {"epoch": [1]} and stopper.stopped_epoch == 1
    assert set(history.history) == {"net_output", "mae", "loss", "eval_loss"}
    assert history.history["eval_loss"] == pytest.approx(history.history["loss"])

    history = History()
    reducer = ReduceLROnPlateau(monitor="mae", factor=0.5, patience=0, min_delta=100.0)
    model.fit(3, train_ds, valid_ds, callbacks=[history, reducer])
    assert history.epoch["epoch"] == [1, 2, 3]
    # every epoch is a plateau with a huge min_delta, except the first (improves on +inf)
    assert float(opt.learning_rate.asnumpy()) == pytest.approx(0.05 * 0.25)


def test_train_with_loss_monitor_prints_steps(capsys):
    x, y = _tiny_problem(16)
    _, _, model = _mse_model()
    model.train(2, ArrayDataset(x, y, batch_size=8), callbacks=LossMonitor(1))
    lines = capsys.readouterr().out.splitlines()
    assert [ln.split(",")[0] for ln in lines] == [
        "epoch: 1 step: 1",
        "epoch: 1 step: 2",
        "epoch: 2 step: 1",
        "epoch: 2 step: 2",
    ]
