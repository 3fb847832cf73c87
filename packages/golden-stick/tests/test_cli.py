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


def test_quantize_prune_report_and_reload_in_a_fresh_process(capsys, tmp_path, lenet_ckpt):
    capsys.readouterr()
    q = str(tmp_path / "q")
    res = _run(capsys, "quantize", "--model", "lenet5", "--ckpt", lenet_ckpt, *DATA, "--out", q)
    assert res["deployed_accuracy"] == pytest.approx(res["fake_quant_accuracy"], abs=0.05)
    rep = _run(
        capsys, "report", "--model", "lenet5", "--ckpt", lenet_ckpt, "--compressed", q, *DATA
    )
    assert rep["kind"] == "simqat"
    assert rep["compressed"]["file_bytes"] < 0.4 * rep["original"]["file_bytes"]
    assert rep["compressed"]["flops"] == rep["original"]["flops"]

    small = ["--model", "resnet8", "--data", "synthetic:64", "--val", "32", "--batch", "32"]
    s, p = str(tmp_path / "s"), str(tmp_path / "p")
    slb = _run(capsys, "quantize", *small, "--algo", "slb", "--bits", "1", "--out", s)
    assert slb["deployed_accuracy"] == pytest.approx(slb["fake_quant_accuracy"])
    pr = _run(capsys, "prune", *small, "--rate", "0.5", "--round-to", "8", "--out", p)
    assert pr["params"][1] < 0.4 * pr["params"][0]
    assert pr["pruned_accuracy"] == pytest.approx(pr["masked_accuracy"])

    # every compressed folder, evaluated by a new process
    code = f"""
import json
from sporeling.goldenstick.cli import main
main(["eval", "--model", "lenet5", "--compressed", {q!r}, *{DATA!r}])
main(["eval", *{small!r}, "--compressed", {s!r}])
main(["eval", *{small!r}, "--compressed", {p!r}])
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    accs = [
        json.loads(part)["accuracy"] for part in done.stdout.replace("}\n{", "}\0{").split("\0")
    ]
    assert accs == pytest.approx(
        [res["deployed_accuracy"], slb["deployed_accuracy"], pr["pruned_accuracy"]]
    )


def test_bad_arguments():
    with pytest.raises(SystemExit):
        main(["quantize", "--model", "vgg", "--data", "synthetic:8", "--out", "x"])
    with pytest.raises(ValueError, match="'spec'"):
        main(["eval", "--model", "lenet5", "--data", "imagenet:/x"])
