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


def test_train_then_eval(tmp_path, capsys):
    from conftest import PLANTED, criteo_lines

    path = tmp_path / "s.txt"
    path.write_text("\n".join(ln for i, ln in enumerate(criteo_lines(300, seed=4), 1)
                              if i not in PLANTED) + "\n")  # fmt: skip
    rec = str(tmp_path / "r")
    assert main(["preprocess", str(path), "--out", rec, "--line-per-sample", "10",
                 "--test-ratio", "0.3"]) == 0  # fmt: skip
    ckpt = str(tmp_path / "m.ckpt")
    hist = tmp_path / "h.json"
    assert main(["train", rec, "--epochs", "2", "--batch-size", "40", "--emb-dim", "4",
                 "--deep-layers", "8", "--vocab-cache-size", "300", "--ckpt", ckpt,
                 "--json", str(hist)]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "epoch 2:" in out and "test AUC" in out and "cache 1: hit rate" in out
    epochs = json.loads(hist.read_text())["epochs"]
    assert epochs[1]["loss"] < epochs[0]["loss"]
    assert main(["eval", rec, "--ckpt", ckpt, "--batch-size", "40"]) == 0
    line = capsys.readouterr().out
    assert f"AUC {epochs[1]['eval_auc']:.5f}" in line

    # the same with the tables on disk behind a host-memory level
    assert main(["train", rec, "--epochs", "2", "--batch-size", "40", "--emb-dim", "4",
                 "--deep-layers", "8", "--vocab-cache-size", "300", "--storage", "disk",
                 "--path", str(tmp_path / "t"), "--host-cache-size", "100", "--ckpt", ckpt,
                 "--json", str(hist)]) == 0  # fmt: skip
    assert "host level: hit rate" in capsys.readouterr().out
    for e in json.loads(hist.read_text())["epochs"]:
        c = e["cache"][1]
        assert c["host_lookups"] > 0 and c["disk_write_backs"] > 0 and c["disk_write_batches"] > 0
    assert main(["eval", rec, "--ckpt", ckpt, "--batch-size", "40"]) == 0
    assert main(["train", rec, "--storage", "disk", "--path", str(tmp_path / "u")]) == 1
    assert "need an embedding cache (--vocab-cache-size > 0)" in capsys.readouterr().err


def test_bench_command(tmp_path, capsys):
    res = tmp_path / "b.json"
    args = ["bench", "--vocab", "5000", "--batch-size", "64", "--steps", "3", "--deep-layers"]
    args += ["16", "--vocab-cache-size", "3000", "--json", str(res)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "samples/s over 3 steps" in out and "cache 1: hit rate" in out
    data = json.loads(res.read_text())
    assert data["samples_per_s"] > 0 and 0 < data["cache"][1]["hit_rate"] < 1


def test_bench_command_disk_and_host_levels(tmp_path, capsys):
    res = tmp_path / "b.json"
    args = ["bench", "--vocab", "5000", "--batch-size", "64", "--steps", "3", "--deep-layers"]
    args += ["16", "--vocab-cache-size", "1500", "--storage", "disk", "--path"]
    args += [str(tmp_path / "t"), "--host-cache-size", "1000", "--json", str(res)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "cache 1: hit rate" in out and "host level: hit rate" in out
    c = json.loads(res.read_text())["cache"][1]
    assert c["host_lookups"] > 0 and c["disk_write_backs"] > 0 and c["disk_write_batches"] > 0
