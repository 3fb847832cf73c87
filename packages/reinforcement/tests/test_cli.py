"""The sporeling-rl command line: play (MCTS vs minimax), train and eval."""

from __future__ import annotations

import json

import pytest

from sporeling.rl.cli import main


def _last_json(out: str) -> dict:
    return json.loads(out.strip().splitlines()[-1])


def test_play_mcts_against_minimax_never_loses(capsys):
    assert main(["play", "--opponent", "minimax", "--games", "4", "--sims", "3000"]) == 0
    result = _last_json(capsys.readouterr().out)
    assert result["games"] == 4 and result["mcts_loss"] == 0


def test_play_against_a_human(monkeypatch, capsys):
    moves = iter(["x", "4", "0", "1", "2", "3", "5", "6", "7", "8"])
    monkeypatch.setattr("builtins.input", lambda _: next(moves))
    assert main(["play", "--opponent", "human", "--mcts-plays", "second", "--sims", "500"]) == 0
    out = capsys.readouterr().out
    assert "'x' is not a legal move" in out and "MCTS played O" in out


def test_play_usage_errors(capsys):
    assert main(["play", "--game", "connectfour", "--opponent", "minimax"]) == 2
    assert "tic-tac-toe only" in capsys.readouterr().err


def test_train_and_eval_round_trip(tmp_path, capsys):
    pytest.importorskip("gymnasium")
    args = ["train", "--algo", "dqn", "--steps", "1500", "--eval-episodes", "2",
            "--ckpt", str(tmp_path)]  # fmt: skip
    assert main(args) == 0
    result = _last_json(capsys.readouterr().out)
    assert result["env_steps"] >= 1500 and result["eval_episodes"] == 2
    assert main(["eval", "--algo", "dqn", "--ckpt", str(tmp_path), "--episodes", "2"]) == 0
    assert _last_json(capsys.readouterr().out)["episodes"] == 2
    assert main(["train", "--algo", "nope", "--steps", "1"]) == 1
    assert "unknown algorithm 'nope'" in capsys.readouterr().err


def test_version_and_help_do_not_import_the_algorithms():
    import subprocess
    import sys

    code = ("import sys; from sporeling.rl.cli import main\n"
            "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('sporeling.rl.')))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "sporeling-rl 0.1.0" in out.stdout
    assert out.stdout.strip().splitlines()[-1] == "['sporeling.rl._version', 'sporeling.rl.cli']"
