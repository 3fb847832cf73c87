"""The ``sporeling`` command: help, version, the LeNet-5 demo end to end, argument errors."""

import csv

import pytest

from sporeling.core import __version__
from sporeling.core.cli import main


def test_help_and_version(capsys):
    assert main([]) == 2
    assert "demo" in capsys.readouterr().out
    try:
        main(["--version"])
    except SystemExit as exc:
        assert exc.code == 0
    assert __version__ in capsys.readouterr().out


def test_demo_trains(capsys, tmp_path):
    # A short run: 2 epochs on 1,600 of the 8,000 sample images (100 steps; about 0.87
    # validation accuracy), all 1,000 validation images.
    args = ["demo", "--epochs", "2", "--limit", "1600", "--out", str(tmp_path)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.strip().splitlines()[-1].startswith("validation accuracy"), out
    accuracy = float(out.strip().splitlines()[-1].split()[2])
    assert accuracy > 0.75, out
    # the reported accuracy is the saved best checkpoint's, and the best epoch's
    best = float(out.split("best validation accuracy ")[1].split()[0])
    assert accuracy == best, out
    from sporeling.core import load_checkpoint, nn, train
    from sporeling.core.demo import LeNet5, load_data

    net = LeNet5()
    load_checkpoint(str(tmp_path / "checkpoints" / "lenet5-best.ckpt"), net=net)
    val = train.ArrayDataset(*load_data(None, 1600)[0]["val"], batch_size=500)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    model = train.Model(net, loss, metrics={"accuracy": train.Accuracy()})
    assert model.eval(val, dataset_sink_mode=False)["accuracy"] == pytest.approx(accuracy, abs=1e-4)
    assert "the weights of epoch" in out
    assert "61,684 parameters" in out and "1,600 training and 1,000 validation" in out
    with (tmp_path / "history.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [int(float(r["epoch"])) for r in rows] == [1, 2]
    assert float(rows[1]["train_loss"]) < float(rows[0]["train_loss"])
    names = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert len(names) == 3 and "lenet5-best.ckpt" in names, names
    png = tmp_path / "learning_curve.png"
    assert png.exists() or "matplotlib is not installed" in out
    if png.exists():
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_help_texts_show_no_markup(capsys):
    from sporeling.core.demo import parse_args

    with pytest.raises(SystemExit):
        parse_args(["--help"])
    assert "`" not in capsys.readouterr().out


def test_demo_bad_arguments(capsys, tmp_path):
    assert main(["demo", "--lr", "-1", "--out", str(tmp_path)]) == 1
    assert "--lr" in capsys.readouterr().err
    assert main(["demo", "--data", str(tmp_path), "--out", str(tmp_path)]) == 1
    assert "no train-images-idx3-ubyte" in capsys.readouterr().err
