"""The int8 (SimQAT) and bit-packed (SLB) exports load and run in a fresh process where
golden stick cannot be imported: only sporeling-core-runtime and the exported folder."""

import os
import subprocess
import sys

import gs_nets
import numpy as np
import pytest

from sporeling.core import Tensor
from sporeling.goldenstick import (
    QuantDtype,
    SimulatedQuantizationAwareTraining,
    SlbQuantAwareTraining,
)
from sporeling.goldenstick.export import RUNTIME_FILE, export_network

RNG = np.random.default_rng(3)

_LOAD = """
import importlib.util, sys
import numpy as np
sys.modules["sporeling.goldenstick"] = None  # golden stick made unimportable
from sporeling.core import Tensor
for folder in sys.argv[1:]:
    spec = importlib.util.spec_from_file_location("compressed", folder + "/compressed.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = mod.load()(Tensor(np.load(folder + "/x.npy"))).asnumpy()
    print(float(np.abs(out - np.load(folder + "/ref.npy")).max()))
print(sorted(k for k, m in sys.modules.items() if "goldenstick" in k and m is not None))
"""


def _calibrated(algo, net, x):
    qnet = algo.apply(net)
    qnet.set_train(True)
    qnet(x)
    qnet.set_train(False)
    return qnet


def _export(net, x, folder):
    ref = net(x).asnumpy()
    paths = export_network(net, str(folder), "compressed")
    np.save(folder / "x.npy", x.asnumpy())
    np.save(folder / "ref.npy", ref)
    return paths


@pytest.mark.parametrize("slb_act", [False, True])
def test_int8_and_packed_exports_load_without_golden_stick(tmp_path, slb_act):
    x = Tensor(RNG.standard_normal((3, 3, 8, 8)).astype("f4"))
    folders = []
    if not slb_act:  # int8: a fused Conv+BN+ReLU net and LeNet-5 (Dense + pooling)
        net = gs_nets.ConvBnNet()
        gs_nets.randomize_bn(net)
        algo = SimulatedQuantizationAwareTraining({"enable_fusion": True})
        folders.append((algo.convert(_calibrated(algo, net, x)), x, tmp_path / "int8_fused"))
        lx = Tensor(RNG.standard_normal((2, 1, 32, 32)).astype("f4"))
        algo = SimulatedQuantizationAwareTraining()
        folders.append(
            (algo.convert(_calibrated(algo, gs_nets.LeNet5(), lx)), lx, tmp_path / "int8_lenet")
        )
    for bits in (QuantDtype.INT1, QuantDtype.INT4):
        algo = SlbQuantAwareTraining({"quant_dtype": bits, "enable_act_quant": slb_act})
        net = algo.convert(_calibrated(algo, gs_nets.ConvBnNet(), x))
        folders.append((net, x, tmp_path / f"slb_{bits}"))
    for net, inp, folder in folders:
        paths = _export(net, inp, folder)
        assert os.path.basename(paths["runtime"]) == RUNTIME_FILE
        with open(paths["description"], encoding="utf-8") as fh:
            source = fh.read()
        assert "goldenstick" not in source
    done = subprocess.run(
        [sys.executable, "-c", _LOAD, *(str(f) for _, _, f in folders)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[-1] == "[]"  # nothing of golden stick was imported
    assert [float(v) for v in lines[:-1]] == [0.0] * len(folders)
