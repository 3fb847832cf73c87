"""Compile the GPU search kernel to PTX with NVVM (and assemble it with ptxas when found),
without a GPU: proof that the kernel and the games' device functions are valid CUDA code,
which the simulator does not check. Needs NVVM, e.g. ``pip install nvidia-cuda-nvcc-cu12``
and ``CUDA_HOME=<site-packages>/nvidia/cuda_nvcc``. Prints ``ALL OK`` at the end.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numba.cuda.dispatcher as cuda_dispatcher
from numba import cuda, types
from numba.cuda.random import xoroshiro128p_type

from sporeling.rl.environment import ConnectFourEnvironment, TicTacToeEnvironment
from sporeling.rl.mcts import BatchedMCTS, gpu
from sporeling.rl.mcts import tree as T

CC = (9, 0)


class _NoDriverDevice:
    """Device functions ask the current device for its compute capability; there is none."""

    compute_capability = CC


cuda_dispatcher.get_current_device = lambda: _NoDriverDevice()

sys.path.insert(0, str(Path(__file__).parent))
from mcts_gpu_sim_value import centre_value  # noqa: E402


def arr(dtype, ndim):
    return types.Array(dtype, ndim, "C")


SIG = (
    types.float64, types.int64, types.int64, arr(types.int64, 1), arr(types.uint64, 2),
    arr(xoroshiro128p_type, 1), arr(types.int64, 2), arr(types.float32, 2),
    arr(types.boolean, 2), arr(types.float32, 2), arr(types.float32, 2), arr(types.int64, 1),
    *[arr(t.dtype, t.ndim) for t in T.TREE_TYPES],
)  # fmt: skip
ptxas = shutil.which("ptxas") or (
    os.path.join(os.environ["CUDA_HOME"], "bin", "ptxas") if "CUDA_HOME" in os.environ else None
)
out = Path(tempfile.mkdtemp())
for env in (TicTacToeEnvironment, ConnectFourEnvironment):
    for policy in ("UCT", "PUCT"):
        for sim in (None, centre_value):
            m = BatchedMCTS(env, 1, 3, policy)
            kernel = gpu.build_search_kernel(m.legal, m.step, m.player, m.score, None, sim)
            ptx, _ = cuda.compile_ptx(kernel.py_func, SIG, cc=CC)
            name = f"{env.name}_{policy}_{'value' if sim else 'rollout'}"
            (out / f"{name}.ptx").write_text(ptx)
            line = f"{name}: {len(ptx)} chars of PTX"
            if ptxas and os.path.exists(ptxas):
                res = subprocess.run(
                    [ptxas, f"--gpu-name=sm_{CC[0]}{CC[1]}", "-v", str(out / f"{name}.ptx"),
                     "-o", str(out / f"{name}.cubin")],
                    capture_output=True, text=True,
                )  # fmt: skip
                assert res.returncode == 0, res.stderr
                regs = re.findall(r"Used (\d+) registers", res.stderr)
                spills = re.findall(r"(\d+) bytes spill stores", res.stderr)
                line += f", ptxas sm_{CC[0]}{CC[1]}: {'/'.join(regs)} registers"
                line += f", {'/'.join(spills)} bytes spilled"
            print(line, flush=True)
print("ALL OK")
