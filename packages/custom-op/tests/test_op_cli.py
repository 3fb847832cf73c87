"""The sporeling-op command line: check, compile, bench."""

import subprocess
import sys

import pytest

from sporeling.customop.cli import main

GOOD = """
from sporeling.customop import kernel


@kernel
def axpy(a, x, y):
    out = output_tensor(x.shape, x.dtype)
    for i in parallel(x.shape[0]):
        out[i] = a[0] * x[i] + y[i]
    return out
"""

BAD = """
from sporeling.customop import kernel


@kernel
def loop(a):
    c = output_tensor(a.shape, a.dtype)
    while True:
        pass
    return c
"""


@pytest.fixture
def good(tmp_path):
    p = tmp_path / "good_kernels.py"
    p.write_text(GOOD)
    return p


def test_check_shows_generated_sources(good, capsys):
    assert main(["check", str(good)]) == 0
    out = capsys.readouterr().out
    assert "# kernel axpy(a, x, y) -> out" in out
    assert "prange(x.shape[0])" in out and "cuda.grid(1)" in out


def test_check_reports_dsl_errors_with_line(tmp_path, capsys):
    p = tmp_path / "bad_kernels_cli.py"
    p.write_text(BAD)
    assert main(["check", str(p)]) == 1
    err = capsys.readouterr().err
    assert "hybrid-while" in err and "line 8" in err and "while True:" in err


def test_compile_and_bench(good, capsys):
    assert main(["compile", str(good), "--input", "1:float32", "--input", "64:float32",
                 "--input", "64:float32"]) == 0  # fmt: skip
    assert "axpy: compiled for" in capsys.readouterr().out
    assert main(["bench", str(good), "--kernel", "axpy", "--input", "1:float32", "--input",
                 "64:float32", "--input", "64:float32", "--repeat", "2"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "pyfunc" in out and "cpu" in out


def test_usage_errors(good, capsys):
    assert main(["check", str(good), "--kernel", "nope"]) == 2
    assert "no kernel 'nope'" in capsys.readouterr().err
    assert main(["check", "/no/such/file.py"]) == 2


def test_module_entry_point():
    proc = subprocess.run([sys.executable, "-m", "sporeling.customop", "--version"],
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0 and "sporeling-op" in proc.stdout


@pytest.mark.parametrize("args", [["--help"], ["check", "--help"], ["bench", "--help"]])
def test_help_texts_show_no_markup(args, capsys):
    with pytest.raises(SystemExit):
        main(args)
    assert "`" not in capsys.readouterr().out
