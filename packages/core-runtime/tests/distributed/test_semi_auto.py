"""SEMI_AUTO_PARALLEL / AUTO_PARALLEL with no shard strategies run data parallel (weight
gradients averaged over the ranks, as MindSpore's default strategy does): under
``mpiexec -n 2`` the weights stay equal on every rank and equal one process on the global
batch; an explicit ``search_mode`` is refused; sharded ops need ``full_batch=True``."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from _mp_launch import mpi_available

from sporeling.core import parallel
from sporeling.core.communication.launch import mpiexec_command

SCRIPT = Path(__file__).parent / "scripts" / "semi_auto_train.py"
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}


@pytest.mark.parametrize("mode", ["semi", "auto"])
def test_weights_agree_with_one_process_on_the_global_batch(mode):
    reason = mpi_available()
    if reason:
        pytest.skip(reason)
    cmd = mpiexec_command(2, [str(SCRIPT), mode, "3"])
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=ENV, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert out.count("semi-auto OK") == 2, out[-4000:]


def test_search_mode_is_refused_with_a_clear_error():
    for key in ("search_mode", "auto_parallel_search_mode"):
        with pytest.raises(ValueError, match=f"'{key}'.*no strategy search"):
            parallel.set_auto_parallel_context(**{key: "dynamic_programming"})
        with pytest.raises(ValueError, match=key):
            parallel.set_auto_parallel_context(**{key: "greedy"})
    assert parallel.get_auto_parallel_context("search_mode") == "dynamic_programming"
