"""The ``sporeling-rec`` command line."""

from __future__ import annotations

import json

from sporeling.recommender.cli import main


def test_preprocess_command(tmp_path, criteo_file, capsys):
    assert main(["preprocess", str(criteo_file), "--out", str(tmp_path / "r"),
                 "--line-per-sample", "4"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "5 malformed" in out and "bad hex: 1" in out and f"{criteo_file}:21:" in out
    assert json.loads((tmp_path / "r" / "manifest.json").read_text())["line_per_sample"] == 4


def test_errors_name_the_argument(tmp_path, criteo_file, capsys):
    assert main(["preprocess", str(criteo_file), "--out", str(tmp_path), "--min-freq", "0"]) == 1
    assert "'min_freq' expected >= 1, got 0" in capsys.readouterr().err
