"""The CLI end to end on the shipped sample text: train, eval, generate, plan."""

import json

import numpy as np
import pytest

from sporeling.core import Tensor, load_checkpoint
from sporeling.transformer.cli import main
from sporeling.transformer.data import encode_corpus
from sporeling.transformer.models.gpt import GPTWithLoss
from sporeling.transformer.runner import load_run, lr_schedule
from sporeling.transformer.settings import apply_overrides, load_config


def test_overrides_parse_yaml_scalars():
    cfg = apply_overrides(
        {"model": {"num_layers": 4}}, ["model.num_layers=2", "train.lr=1e-3", "model.use_past=true"]
    )
    assert cfg == {"model": {"num_layers": 2, "use_past": True}, "train": {"lr": 1e-3}}
    with pytest.raises(ValueError, match="expected section.key=value"):
        apply_overrides({}, ["model.num_layers"])
    with pytest.raises(FileNotFoundError, match="no built-in config of that name"):
        load_config("no_such_config")


def test_lr_schedule_is_nanogpts():
    lrs = lr_schedule(
        {"learning_rate": 1e-3, "min_lr": 1e-4, "warmup_iters": 10, "lr_decay_iters": 100}, 120
    )
    assert lrs[0] == pytest.approx(1e-3 / 11) and lrs[9] == pytest.approx(1e-3 * 10 / 11)
    assert lrs[10] == pytest.approx(1e-3) and lrs[100] == pytest.approx(1e-4)
    assert lrs[55] == pytest.approx(1e-4 + 0.5 * 0.9e-3)
    assert lrs[119] == 1e-4


def test_train_eval_generate_plan(tmp_path, capsys):
    out = tmp_path / "run"
    assert (
        main(
            [
                "train",
                "gpt_tiny",
                f"output_dir={out}",
                "train.max_iters=12",
                "train.eval_interval=6",
            ]
        )
        == 0
    )
    res = json.loads((out / "results.json").read_text())
    assert len(res["history"]) == 2 and res["tokens_per_s"] > 0 and 0 < res["mfu"] < 1
    # learning happened: the char model starts near ln(vocab) and goes down
    vocab = json.loads((out / "tokenizer.json").read_text())["chars"]
    assert res["history"][-1]["val_loss"] < np.log(len(vocab))
    ckpt = load_checkpoint(str(out / "model.safetensors"))
    net, tok, run_cfg = load_run(out)
    for name, prm in net.parameters_and_names():
        np.testing.assert_array_equal(prm.asnumpy(), ckpt[name].asnumpy())
    capsys.readouterr()
    assert main(["eval", str(out)]) == 0
    val = float(capsys.readouterr().out.split(":")[1].split()[0])
    assert val == pytest.approx(res["best_val_loss"], rel=1e-5)
    # --whole: the windows tiling the validation split, each window's tokens weighing the same
    assert main(["eval", str(out), "--whole"]) == 0
    whole = float(capsys.readouterr().out.split(":")[1].split()[0])
    _, _, val_ids = encode_corpus(run_cfg["data"], out / "tokenizer.json")
    seq = net.config.seq_length
    starts = range(0, len(val_ids) - seq, seq)
    with_loss = GPTWithLoss(net)
    per_window = [
        float(with_loss(Tensor(val_ids[None, s : s + seq + 1])).asnumpy()) for s in starts
    ]
    assert len(per_window) > 1 and whole == pytest.approx(np.mean(per_window), rel=1e-5)
    # --draw-seed: random windows drawn with that seed (nanoGPT's protocol, a draw independent
    # of the run's validation batches); the run's seed + 1 gives back its own batches
    assert main(["eval", str(out), "--draw-seed", str(run_cfg["train"]["seed"] + 1)]) == 0
    assert float(capsys.readouterr().out.split(":")[1].split()[0]) == pytest.approx(val, abs=1e-4)
    assert main(["eval", str(out), "--draw-seed", "123", "--batches", "3"]) == 0
    drawn = float(capsys.readouterr().out.split(":")[1].split()[0])
    bs = run_cfg["train"]["batch_size"]
    rows = np.random.default_rng(123).integers(0, len(val_ids) - seq, 3 * bs).reshape(3, bs)
    per_batch = [
        float(with_loss(Tensor(np.stack([val_ids[s : s + seq + 1] for s in r]))).asnumpy())
        for r in rows
    ]
    assert drawn == pytest.approx(np.mean(per_batch), abs=1e-4) and drawn != val
    assert main(["eval", str(out), "--whole", "--draw-seed", "1"]) == 1
    assert "'draw_seed'" in capsys.readouterr().err
    assert (
        main(
            [
                "generate",
                str(out),
                "--prompt",
                "First",
                "--prompt",
                "A",
                "--max-new-tokens",
                "5",
                "--seed",
                "0",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert text.startswith("First") and "\nA" in text
    assert (
        main(
            [
                "plan",
                "gpt_shakespeare_char",
                "parallel_config.data_parallel=2",
                "parallel_config.pipeline_stage=2",
                "--device-flops",
                "1e10",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "dp=2" in text and "pipeline_stage=2" in text and "layer  stage" in text


def test_cli_errors_are_reported(capsys):
    assert main(["train", "no_such_config"]) == 1
    assert "no built-in config" in capsys.readouterr().err


def test_micro_batch_run_matches_plain_run(tmp_path):
    from sporeling.transformer.runner import train

    common = ["train.max_iters=4", "train.eval_interval=4", "context.mode=pynative"]
    plain = train(
        load_config("gpt_tiny", [f"output_dir={tmp_path / 'a'}", *common]), log=lambda *_: None
    )
    copies = train(
        load_config(
            "gpt_tiny", [f"output_dir={tmp_path / 'b'}", "speed_up.micro_batch_num=2", *common]
        ),
        log=lambda *_: None,
    )
    assert copies["layout"]["micro_batch_num"] == 2
    assert copies["best_val_loss"] == pytest.approx(plain["best_val_loss"], rel=1e-5)


def test_t5_and_vit_runs_from_configs(tmp_path, capsys, monkeypatch):
    import gzip

    out = tmp_path / "t5"
    assert (
        main(
            [
                "train",
                "t5_reverse",
                f"output_dir={out}",
                "train.max_iters=4",
                "train.eval_interval=2",
                "train.batch_size=8",
                "train.test_size=4",
                "data.length=4",
                "context.mode=pynative",
            ]
        )
        == 0
    )
    res = json.loads((out / "results.json").read_text())
    assert len(res["val_loss"]) == 2 and 0 <= res["exact_match"] <= 1
    capsys.readouterr()
    assert main(["eval", str(out)]) == 0 and "exact match:" in capsys.readouterr().out
    # evaluate_t5 decodes the run's test_size strings (the ones training scored) unless told
    from sporeling.transformer import train_other

    asked = []
    real = train_other.exact_match

    def spy(net, length, n, seed):
        asked.append((n, seed))
        return real(net, length, n, seed)

    monkeypatch.setattr(train_other, "exact_match", spy)
    assert train_other.evaluate_t5(out) == res["exact_match"]
    assert main(["eval", str(out), "--test-size", "6"]) == 0
    assert asked == [(4, 2), (6, 2)]
    with pytest.raises(ValueError, match="'test_size' expected an int >= 1, got 0"):
        train_other.evaluate_t5(out, 0)
    monkeypatch.undo()
    capsys.readouterr()
    assert main(["generate", str(out), "--prompt", "123"]) == 0
    assert capsys.readouterr().out.startswith("123 -> ")
    # a tiny fake MNIST folder (the tests do not read shared data)
    mnist = tmp_path / "mnist"
    mnist.mkdir()
    rng = np.random.default_rng(0)
    imgs, labels = (
        rng.integers(0, 255, (40, 28, 28), dtype=np.uint8),
        rng.integers(0, 10, 40).astype(np.uint8),
    )
    with gzip.open(mnist / "train-images-idx3-ubyte.gz", "wb") as f:
        f.write(
            bytes([0, 0, 8, 3])
            + b"".join(n.to_bytes(4, "big") for n in (40, 28, 28))
            + imgs.tobytes()
        )
    with gzip.open(mnist / "train-labels-idx1-ubyte.gz", "wb") as f:
        f.write(bytes([0, 0, 8, 1]) + (40).to_bytes(4, "big") + labels.tobytes())
    out = tmp_path / "vit"
    assert (
        main(
            [
                "train",
                "vit_mnist",
                f"output_dir={out}",
                f"data.path={mnist}",
                "data.holdout=10",
                "train.batch_size=10",
                "train.epochs=1",
                "model.num_layers=1",
                "context.mode=pynative",
            ]
        )
        == 0
    )
    res = json.loads((out / "results.json").read_text())
    capsys.readouterr()
    assert main(["eval", str(out)]) == 0
    assert float(capsys.readouterr().out.split(":")[1]) == pytest.approx(res["test_accuracy"][-1])
