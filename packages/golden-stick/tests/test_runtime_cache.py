"""Exported int8/SLB models share one Numba cache: the runtime file of each export folder
is checked against the description's hash and run from one per-user copy, so a second
export of the same model compiles nothing when it loads in a fresh process."""

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import gs_nets
import numpy as np
import pytest

from sporeling.core import Tensor
from sporeling.goldenstick import SimulatedQuantizationAwareTraining
from sporeling.goldenstick.export import RUNTIME_FILE, export_network
from sporeling.goldenstick.runtime_loader import _gs_load_runtime
from sporeling.goldenstick.runtime_loader import _gs_runtime_cache_root as runtime_cache_root

# loads one export folder and prints: max |out - ref|, the number of Numba compilations
# during the load and the forward, the runtime module's file, and the count for one fresh
# function (so the counter is shown to see compilations)
_LOAD = """
import importlib.util, sys
import numpy as np
sys.modules["sporeling.goldenstick"] = None  # golden stick made unimportable
from numba.core import event
from sporeling.core import Tensor
folder = sys.argv[1]
x = Tensor(np.load(folder + "/x.npy"))
with event.install_recorder("numba:compile") as rec:
    spec = importlib.util.spec_from_file_location("compressed", folder + "/compressed.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = mod.load()(x).asnumpy()
print(float(np.abs(out - np.load(folder + "/ref.npy")).max()))
print(sum(1 for _, ev in rec.buffer if ev.is_start))
print(mod.gsrt.__file__)
from numba import njit
with event.install_recorder("numba:compile") as canary:
    njit(lambda v: v + 1)(1)
print(sum(1 for _, ev in canary.buffer if ev.is_start))
"""


def _int8_lenet():
    x = Tensor(np.random.default_rng(5).standard_normal((2, 1, 32, 32)).astype("f4"))
    algo = SimulatedQuantizationAwareTraining()
    qnet = algo.apply(gs_nets.LeNet5())
    qnet.set_train(True)
    qnet(x)
    qnet.set_train(False)
    return algo.convert(qnet), x


def _load_in_fresh_process(folder, env):
    done = subprocess.run(
        [sys.executable, "-c", _LOAD, str(folder)],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    diff, compiles, path, canary = done.stdout.strip().splitlines()
    assert int(canary) > 0
    return float(diff), int(compiles), path


def test_second_export_of_a_model_compiles_nothing(tmp_path):
    net, x = _int8_lenet()
    ref = net(x).asnumpy()
    env = dict(os.environ)  # the suite's shared location (conftest.py): warm after one run
    results = []
    for name in ("first", "second"):
        folder = tmp_path / name
        export_network(net, str(folder), "compressed")
        np.save(folder / "x.npy", x.asnumpy())
        np.save(folder / "ref.npy", ref)
        results.append(_load_in_fresh_process(folder, env))
    (d1, c1, p1), (d2, c2, p2) = results
    assert d1 == d2 == 0.0  # outputs unchanged
    # the first load may compile (a cold cache); the second export, another folder, reuses
    # every kernel (before the shared copy, each folder compiled them all again)
    assert c2 == 0, f"the second export compiled {c2} functions (the first {c1})"
    digest = hashlib.sha256((tmp_path / "first" / RUNTIME_FILE).read_bytes()).hexdigest()
    cache = Path(runtime_cache_root())
    shared = cache / digest / RUNTIME_FILE
    assert p1 == p2 == str(shared)
    assert shared.read_bytes() == (tmp_path / "first" / RUNTIME_FILE).read_bytes()
    assert not (tmp_path / "second" / "__pycache__").exists()  # nothing written in the export
    if hasattr(os, "getuid"):
        assert (shared.parent.stat().st_mode & 0o777) == 0o700


@pytest.fixture
def export_folder(tmp_path):
    folder = tmp_path / "export"
    folder.mkdir()
    data = b"VALUE = 42\n"
    (folder / RUNTIME_FILE).write_bytes(data)
    os.utime(folder / RUNTIME_FILE, ns=(1_600_000_000_000_000_000,) * 2)
    yield folder, hashlib.sha256(data).hexdigest()
    sys.modules.pop("sporeling_gs_runtime_" + hashlib.sha256(data).hexdigest()[:16], None)


def test_shared_copy_keeps_bytes_and_mtime(export_folder, tmp_path, monkeypatch):
    folder, digest = export_folder
    monkeypatch.setenv("SPORELING_GS_RUNTIME_CACHE", str(tmp_path / "c"))
    module = _gs_load_runtime(str(folder), RUNTIME_FILE, digest)
    shared = tmp_path / "c" / digest / RUNTIME_FILE
    assert module.VALUE == 42 and module.__file__ == str(shared)
    assert shared.read_bytes() == (folder / RUNTIME_FILE).read_bytes()
    assert shared.stat().st_mtime_ns == (folder / RUNTIME_FILE).stat().st_mtime_ns


def test_changed_runtime_file_is_refused(export_folder):
    folder, digest = export_folder
    (folder / RUNTIME_FILE).write_bytes(b"VALUE = 666\n")
    with pytest.raises(ImportError, match="does not match the export's"):
        _gs_load_runtime(str(folder), RUNTIME_FILE, digest)


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_shared_cache_writable_by_others_is_not_used(export_folder, tmp_path, monkeypatch):
    folder, digest = export_folder
    cache = tmp_path / "open"
    cache.mkdir()
    cache.chmod(0o777)
    monkeypatch.setenv("SPORELING_GS_RUNTIME_CACHE", str(cache))
    with pytest.warns(RuntimeWarning, match="writable by group or others"):
        module = _gs_load_runtime(str(folder), RUNTIME_FILE, digest)
    assert module.__file__ == str(folder / RUNTIME_FILE)  # imported from the export folder
    assert not (cache / digest).exists()
