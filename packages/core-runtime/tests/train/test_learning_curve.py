"""Training UX: the progress bar's epoch count when resuming, and LearningCurve (loss and
metrics per epoch to a PNG; matplotlib is the [demo] extra)."""

from __future__ import annotations

import io
import sys

import numpy as np
import pytest

from sporeling.core import nn
from sporeling.core.train import ArrayDataset, LambdaCallback, LearningCurve, Model, ProgressBar


def _problem():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 3)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5]], np.float32)).astype(np.float32)
    net = nn.Dense(3, 1)
    opt = nn.SGD(net.trainable_params(), learning_rate=0.05)
    model = Model(net, nn.MSELoss(), opt, metrics={"mae", "loss"})
    return model, ArrayDataset(x, y, batch_size=8), ArrayDataset(x[:16], y[:16], batch_size=8)


def test_progress_bar_counts_epochs_when_resuming():
    model, train_ds, _ = _problem()
    buf = io.StringIO()
    model.train(5, train_ds, callbacks=ProgressBar(enabled=True, file=buf), initial_epoch=3)
    text = buf.getvalue()
    assert "epoch 4/5" in text and "epoch 5/5" in text, text
    assert "/2" not in text and "epoch 1/" not in text, text
    buf = io.StringIO()
    model.train(2, train_ds, callbacks=ProgressBar(enabled=True, file=buf))
    assert "epoch 1/2" in buf.getvalue() and "epoch 2/2" in buf.getvalue()


def test_missing_matplotlib_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    with pytest.raises(ImportError, match=r"\[demo\] extra"):
        LearningCurve("curve.png")


def test_learning_curve_records_per_epoch_and_writes_png(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is the [demo] extra")
    model, train_ds, valid_ds = _problem()
    steps: list[float] = []
    record = LambdaCallback(
        on_train_step_end=lambda ctx: steps.append(float(ctx.original_args().net_outputs))
    )
    png = tmp_path / "curve.png"
    curve = LearningCurve(png, title="tiny regression")
    model.fit(4, train_ds, valid_ds, callbacks=[record, curve], initial_epoch=1)
    h = curve.history
    assert h["epoch"] == [2.0, 3.0, 4.0]  # absolute epochs when resuming
    per_epoch = np.array(steps).reshape(3, 4).mean(axis=1)
    np.testing.assert_allclose(h["train_loss"], per_epoch, rtol=1e-12)
    assert set(h) == {"epoch", "train_loss", "mae", "loss", "eval_loss"}
    ev = model.eval(valid_ds)
    assert h["mae"][-1] == pytest.approx(ev["mae"])
    assert h["train_loss"][-1] < h["train_loss"][0]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_arguments():
    pytest.importorskip("matplotlib", reason="matplotlib is the [demo] extra")
    with pytest.raises(TypeError, match="'path'"):
        LearningCurve(3)
    with pytest.raises(TypeError, match="'title'"):
        LearningCurve("x.png", title=None)
