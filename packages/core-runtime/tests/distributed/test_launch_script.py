"""`sporeling launch` runs a script file or a Python command on PATH (a suite's CLI)."""

import os
import stat

import pytest

from sporeling.core.communication.launch import main, resolve_script


def test_a_file_is_run_as_given(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    assert resolve_script(str(script)) == str(script)


def test_a_command_on_path_is_found(tmp_path, monkeypatch):
    command = tmp_path / "my-suite-cli"
    command.write_text("#!/usr/bin/env python\nprint('hi')\n")
    command.chmod(command.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    assert resolve_script("my-suite-cli") == str(command)


def test_neither_a_file_nor_a_command_is_named_in_the_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(OSError, match="'no-such-cli' is neither a file nor a command"):
        main(["-n", "2", "no-such-cli", "train"])
    with pytest.raises(OSError, match="neither a file"):
        resolve_script(str(tmp_path / "missing.py"))
