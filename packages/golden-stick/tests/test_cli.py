"""``sporeling-gs``: train, quantize (SimQAT, SLB), prune, eval and report on synthetic
data; the compressed folders reload in a fresh process."""

import json
import subprocess
import sys

import pytest

from sporeling.goldenstick.cli import main

DATA = ["--data", "synthetic:160", "--val", "64", "--batch", "32"]


def _run(capsys, *argv):
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def lenet_ckpt(tmp_path_factory):
    path = tmp_path_factory.mktemp("base") / "lenet.safetensors"
    main(["train", "--model", "lenet5", *DATA, "--epochs", "1", "--save", str(path)])
    return str(path)


def test_quantize_simqat_report_and_fresh_eval(capsys, tmp_path, lenet_ckpt):
    capsys.readouterr()
    out = str(tmp_path / "q")
    res = _run(capsys, "quantize", "--model", "lenet5", "--ckpt", lenet_ckpt, *DATA, "--out", out)
    assert res["deployed_accuracy"] == pytest.approx(res["fake_quant_accuracy"], abs=0.05)
    rep = _run(
        capsys, "report", "--model", "lenet5", "--ckpt", lenet_ckpt, "--compressed", out, *DATA
    )
    assert rep["kind"] == "simqat"
    assert rep["compressed"]["file_bytes"] < 0.4 * rep["original"]["file_bytes"]
    assert rep["compressed"]["flops"] == rep["original"]["flops"]
    code = [sys.executable, "-m", "sporeling.goldenstick", "eval", "--model", "lenet5"]
    done = subprocess.run(
        [*code, "--compressed", out, *DATA], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["accuracy"] == pytest.approx(res["deployed_accuracy"])


def test_quantize_slb_and_prune(capsys, tmp_path):
    capsys.readouterr()
    common = ["--model", "resnet8", "--data", "synthetic:64", "--val", "32", "--batch", "32"]
    slb = _run(
        capsys, "quantize", *common, "--algo", "slb", "--bits", "1", "--out", str(tmp_path / "s")
    )
    assert slb["deployed_accuracy"] == pytest.approx(slb["fake_quant_accuracy"])
    pr = _run(capsys, "prune", *common, "--rate", "0.5", "--out", str(tmp_path / "p"))
    assert pr["params"][1] < 0.4 * pr["params"][0]
    assert pr["pruned_accuracy"] == pytest.approx(pr["masked_accuracy"])
    ev = _run(capsys, "eval", *common, "--compressed", str(tmp_path / "p"))
    assert ev["accuracy"] == pytest.approx(pr["pruned_accuracy"])


def test_bad_arguments():
    with pytest.raises(SystemExit):
        main(["quantize", "--model", "vgg", "--data", "synthetic:8", "--out", "x"])
    with pytest.raises(ValueError, match="'spec'"):
        main(["eval", "--model", "lenet5", "--data", "imagenet:/x"])
