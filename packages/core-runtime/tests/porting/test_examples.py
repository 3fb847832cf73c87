"""Each MindSpore-style script of examples/porting runs a few steps (in this process, with
small arguments) and trains: the losses are finite and, where the run is long enough to
tell, fall."""

import importlib.util
import math
from pathlib import Path

import pytest

from sporeling.core import PYNATIVE_MODE, set_context, set_seed

EXAMPLES = Path(__file__).parents[2] / "examples" / "porting"


def load(name):
    spec = importlib.util.spec_from_file_location(f"porting_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def pynative_after():
    set_seed(0)
    yield
    set_context(mode=PYNATIVE_MODE)


def test_lenet_with_p_operators_and_hand_written_train_step():
    module = load("lenet_ops")
    losses = module.main(["--steps", "4", "--batch", "8"])
    assert len(losses) == 4 and all(math.isfinite(v) for v in losses)
    assert abs(losses[0] - math.log(10)) < 0.5  # starts near chance


def test_dense_amp_o2_dynamic_loss_scale():
    mse, var = load("dense_amp_o2").main(["--epochs", "4"])
    assert mse < 0.2 * var


def test_resnet20_with_model_and_callbacks(capsys):
    result = load("resnet20_model").main(["--samples", "8", "--batch", "4"])
    assert set(result) == {"acc", "loss"} and math.isfinite(result["loss"])
    out = capsys.readouterr().out
    assert "epoch: 1 step: 2, loss is" in out and "per step time" in out


def test_lstm_sequence_classifier():
    result = load("lstm_classifier").main(["--epochs", "1", "--samples", "32"])
    assert 0.0 <= result["acc"] <= 1.0


def test_scripts_import_only_public_core_modules():
    for path in sorted(EXAMPLES.glob("*.py")):
        text = path.read_text()
        for line in text.splitlines():
            if line.startswith(("import ", "from ")) and "sporeling" in line:
                assert "._" not in line and " _" not in line.split("import")[0], (path, line)
