"""Every slice mode under ``mpiexec -n 2`` equals one process on the global batch.

Each test runs scripts/sharded_train.py on two ranks (one thread each) through the command
``sporeling launch`` uses, with a timeout; skipped with the reason when the ``[mpi]`` extra
(mpi4py, mpich) is missing.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sporeling.core.communication.launch import find_mpiexec, mpiexec_command

SCRIPTS = Path(__file__).parent / "scripts"
try:
    find_mpiexec()
    MISSING = None
except RuntimeError as exc:
    MISSING = str(exc)
needs_mpi = pytest.mark.skipif(MISSING is not None, reason=f"no MPI: {MISSING}")
ENV = {
    **os.environ,
    **{v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")},
    "NUMBA_NUM_THREADS": "1",
}


MODES = ["batch_slice", "table_row_slice", "table_column_slice", "field_slice",
         "table_row_slice:deepfm", "table_column_slice:dcn_v2",
         # each rank's part of the tables behind an embedding cache (793 rows, ~400 a part)
         "batch_slice@500", "table_row_slice@240", "table_column_slice:deepfm@500",
         "field_slice@240",
         # ... prefetching each next batch's rows on the caches' threads
         "batch_slice@500+p", "table_row_slice@240+p",
         # ... each part on disk behind a host-memory level of 8 rows
         "table_row_slice@240+h", "batch_slice@500+ph"]  # fmt: skip


@pytest.fixture(scope="module")
def two_ranks():
    """One mpiexec run for all modes (starting two interpreters is the slow part)."""
    cmd = mpiexec_command(2, [str(SCRIPTS / "sharded_train.py"), "4", *MODES])
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=ENV, check=False)
    return proc.returncode, proc.stdout + proc.stderr


@needs_mpi
@pytest.mark.parametrize("mode", MODES)
def test_slice_mode_equals_one_process(two_ranks, mode):
    code, out = two_ranks
    assert out.count(f"sharded {mode} OK") == 2, out[-4000:]
    assert code == 0, out[-4000:]


@needs_mpi
def test_cache_in_front_of_a_parameter_server(two_ranks):
    """Rank 0 serves the tables, rank 1 trains with a 200-row cache (of 793 rows): the same
    parameters as the same cache over a local disk level (same initial rows)."""
    code, out = two_ranks
    assert out.count("parameter-server cache OK") == 2, out[-4000:]
    assert code == 0, out[-4000:]


@needs_mpi
def test_parameter_server_cache_prefetch_equals_no_prefetch(two_ranks):
    """The same run with the prefetch thread pulling each next batch's rows from the server:
    bit-identical parameters to pulling them on the training thread."""
    code, out = two_ranks
    assert out.count("parameter-server cache prefetch OK") == 2, out[-4000:]
    assert code == 0, out[-4000:]


@needs_mpi
def test_parameter_server_one_server_two_workers():
    cmd = mpiexec_command(3, [str(SCRIPTS / "ps_train.py"), "4"])
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=ENV, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert out.count("parameter server OK") == 3, out[-4000:]
    assert out.count("(MS_PSERVER): parameter server OK") == 1, out[-4000:]
    # the PS cache with two workers, each caching its own rows, equals one process
    assert out.count("parameter-server cache, 2 workers OK") == 3, out[-4000:]
    # ... and with prefetch threads pulling each worker's next rows: bit-identical
    assert out.count("parameter-server cache prefetch, 2 workers OK") == 3, out[-4000:]
