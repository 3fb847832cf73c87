"""The GPU backend of the batched search, under Numba's CUDA simulator (never real hardware).

The simulator has to be switched on before numba is imported, so the checks run in a
subprocess: scripts/mcts_gpu_sim.py compares whole trees with the CPU kernel (a leaf value
drawn from the same splitmix64 states) and checks the moves found with random rollouts.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sporeling.rl.environment import TicTacToeEnvironment
from sporeling.rl.mcts import MCTS, BatchedMCTS

SCRIPT = Path(__file__).parent / "scripts" / "mcts_gpu_sim.py"
PTX_SCRIPT = Path(__file__).parent / "scripts" / "mcts_gpu_ptx.py"
NVVM = Path(os.environ.get("CUDA_HOME", "/nonexistent")) / "nvvm" / "lib64" / "libnvvm.so"


def test_gpu_search_in_the_cuda_simulator_matches_the_cpu_kernel():
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    out = subprocess.run(
        [sys.executable, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip().endswith("ALL OK"), out.stdout
    assert out.stdout.count("same tree") == 3


@pytest.mark.skipif(
    not NVVM.exists(),
    reason="needs NVVM: pip install nvidia-cuda-nvcc-cu12; CUDA_HOME=<site>/nvidia/cuda_nvcc",
)
def test_gpu_kernel_compiles_to_ptx_and_assembles_for_sm90():  # pragma: no cover - opt-in
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    out = subprocess.run(
        [sys.executable, str(PTX_SCRIPT)], env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip().endswith("ALL OK") and out.stdout.count("PTX") == 8, out.stdout


def test_gpu_without_a_device_or_the_simulator_is_a_clear_error():
    from numba import cuda

    if cuda.is_available():  # pragma: no cover - a machine with a GPU or the simulator on
        pytest.skip("a CUDA device (or the simulator) is available here")
    with pytest.raises(RuntimeError, match="no CUDA device.*NUMBA_ENABLE_CUDASIM"):
        BatchedMCTS(TicTacToeEnvironment, 2, 11, device="GPU")
    with pytest.raises(RuntimeError, match="no CUDA device"):
        MCTS(TicTacToeEnvironment(), device="GPU", max_iteration=10)


def test_unknown_device_is_rejected():
    with pytest.raises(ValueError, match="device expected 'CPU' or 'GPU', got 'TPU'"):
        BatchedMCTS(TicTacToeEnvironment, 1, 11, device="TPU")
    m = BatchedMCTS(TicTacToeEnvironment, 1, 11, device="cpu")  # any case, as MindSpore
    assert m.search(np.zeros((1, 11), np.float32), 10)[0] >= 0
