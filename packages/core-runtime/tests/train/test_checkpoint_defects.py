"""Checkpoint defects of the hardening issue (#20): a failed load into a network leaves it
untouched, a deeply nested header is a CheckpointError, temporary files of killed saves are
removed by the next save to that path."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest

from sporeling.core import Parameter, Tensor, nn
from sporeling.core.train.serialization import (
    CheckpointError,
    ParameterMismatchError,
    load_checkpoint,
    load_param_into_net,
    save_checkpoint,
)


class Pair(nn.Cell):
    def __init__(self, n_second: int, fill: float) -> None:
        super().__init__()
        self.first = Parameter(Tensor(np.full(3, fill, np.float32)), name="first")
        self.second = Parameter(Tensor(np.full(n_second, fill, np.float32)), name="second")


def test_load_is_all_or_nothing_on_a_shape_mismatch(tmp_path):
    path = str(tmp_path / "pair.ckpt")
    save_checkpoint(Pair(4, 1.0), path)
    net = Pair(5, 7.0)  # 'first' fits, 'second' does not
    with pytest.raises(ParameterMismatchError, match="second"):
        load_checkpoint(path, net=net)
    np.testing.assert_array_equal(net.first.asnumpy(), np.full(3, 7.0))
    with pytest.raises(ParameterMismatchError, match="second"):
        load_param_into_net(net, load_checkpoint(path))
    np.testing.assert_array_equal(net.first.asnumpy(), np.full(3, 7.0))
    load_checkpoint(path, net=(ok := Pair(4, 7.0)))
    np.testing.assert_array_equal(ok.first.asnumpy(), np.full(3, 1.0))


def test_load_is_all_or_nothing_on_a_name_or_kind_mismatch():
    net = Pair(4, 7.0)
    values = {"first": Parameter(Tensor(np.ones(3, np.float32))), "second": "text"}
    with pytest.raises(ParameterMismatchError, match="second"):
        load_param_into_net(net, values)
    np.testing.assert_array_equal(net.first.asnumpy(), np.full(3, 7.0))


@pytest.mark.parametrize("where", ["header", "metadata"])
def test_deeply_nested_json_is_a_checkpoint_error(tmp_path, where):
    deep = "[" * 100_000 + "]" * 100_000
    if where == "header":
        header = '{"a": ' + deep + "}"
    else:
        keys = ("format", "format_version", "digest")
        header = '{"__metadata__": {' + ", ".join(f'"{k}": "{deep}"' for k in keys) + "}}"
    raw = header.encode()
    path = tmp_path / "deep.ckpt"
    path.write_bytes(len(raw).to_bytes(8, "little") + raw)
    with pytest.raises(CheckpointError):
        load_checkpoint(str(path))


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_next_save_removes_temporaries_of_killed_saves(tmp_path):
    path = tmp_path / "m.ckpt"
    dead = tmp_path / f".m.ckpt.{_dead_pid()}.abc123.tmp"
    live = tmp_path / f".m.ckpt.{os.getppid()}.def456.tmp"  # its writer still runs
    old = tmp_path / ".m.ckpt.xyz789.tmp"  # an older name without a pid, a day old
    other = tmp_path / f".n.ckpt.{_dead_pid()}.abc123.tmp"  # another path's: not ours
    for f in (dead, live, old, other):
        f.write_bytes(b"\0" * 1024)
    os.utime(old, (time.time() - 86400, time.time() - 86400))
    save_checkpoint(Pair(4, 1.0), str(path))
    assert not dead.exists() and not old.exists()
    assert live.exists() and other.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, other.name, "m.ckpt"])


def test_a_killed_save_leaves_a_temporary_that_the_next_save_removes(tmp_path):
    path = tmp_path / "big.ckpt"
    code = (
        "import os, numpy as np\n"
        "from sporeling.core import Parameter, Tensor\n"
        "from sporeling.core.train import serialization as ser\n"
        "real = ser._write_payload\n"
        "def slow(tmp, *a):\n"
        "    real(tmp, *a)\n"
        "    os._exit(9)  # killed after writing, before the rename\n"
        "ser._write_payload = slow\n"
        f"ser.save_checkpoint([Parameter(Tensor(np.ones(1000)), name='w')], {str(path)!r})\n"
    )
    subprocess.run([sys.executable, "-c", code], check=False)
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")], "no temporary left"
    save_checkpoint([Parameter(Tensor(np.zeros(2)), name="w")], str(path))
    assert [p.name for p in tmp_path.iterdir()] == ["big.ckpt"]
