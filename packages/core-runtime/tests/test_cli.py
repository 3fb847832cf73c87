"""The ``sporeling`` command: help, version, the demo end to end, argument errors."""

from sporeling.core import __version__
from sporeling.core.cli import main
from sporeling.core.demo import load_digits


def test_help_and_version(capsys):
    assert main([]) == 2
    assert "demo" in capsys.readouterr().out
    try:
        main(["--version"])
    except SystemExit as exc:
        assert exc.code == 0
    assert __version__ in capsys.readouterr().out


def test_embedded_digits():
    x, y = load_digits()
    assert x.shape == (1445, 64) and y.shape == (1445,)
    assert x.min() >= 0 and x.max() <= 1 and set(y.tolist()) == set(range(10))


def test_demo_trains(capsys):
    assert main(["demo", "--epochs", "8", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    accuracy = float(out.strip().split()[-1])
    assert accuracy > 0.85, out


def test_demo_bad_arguments(capsys):
    assert main(["demo", "--lr", "-1"]) == 1
    assert "--lr" in capsys.readouterr().err
