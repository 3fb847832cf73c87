"""Communication, data parallel and optimizer parallel under ``mpiexec -n 2`` and ``-n 4``.

Each test runs a script of ``scripts/`` on several ranks (oversubscribed on small machines,
one thread per rank) through the same command ``sporeling launch`` uses, with a timeout so
that a hang fails instead of blocking CI. Skipped, with the reason, when mpi4py or mpiexec
(the ``[mpi]`` extra) is missing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
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


def run(
    n: int | None, script: str, *args: str, timeout: float = 240
) -> subprocess.CompletedProcess:
    argv = [str(SCRIPTS / script), *args]
    cmd = [sys.executable, *argv] if n is None else mpiexec_command(n, argv)
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, env=ENV, check=False
    )


def ok(proc: subprocess.CompletedProcess, marker: str, n: int) -> None:
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert out.count(marker) == n, out[-4000:]


@needs_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_collectives_values_and_gradients(n):
    ok(run(n, "dp_collectives.py"), "collectives OK", n)


@needs_mpi
@pytest.mark.parametrize(("n", "opt"), [(2, "adam"), (4, "momentum"), (2, "adamw"), (4, "sgd")])
def test_data_and_optimizer_parallel_match_one_process(n, opt):
    ok(run(n, "dp_train.py", "3", opt), "training OK", n)


def test_single_process_fallback_world_of_one():
    ok(run(None, "dp_collectives.py"), "collectives OK rank 0 of 1", 1)
    ok(run(None, "dp_train.py", "2", "adam"), "training OK rank 0 of 1", 1)


@needs_mpi
def test_a_raising_rank_brings_the_job_down_with_its_message():
    proc = run(2, "dp_fail.py", "raise", timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "ValueError: boom from rank 1" in out
    assert "rank 1 of 2 failed" in out
    assert "not reached" not in out


@needs_mpi
def test_ranks_with_different_networks_are_refused():
    proc = run(2, "dp_fail.py", "mismatch", timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "ranks disagree on their configuration" in out
    assert "parameters" in out


def test_launch_cli_errors_are_clear(tmp_path):
    from sporeling.core.cli import main

    assert main(["launch", "-n", "0", str(tmp_path / "x.py")]) == 1
    assert main(["launch", "-n", "2", str(tmp_path / "missing.py")]) == 1


@needs_mpi
def test_launch_cli_runs_a_script(tmp_path, capfd):
    from sporeling.core.cli import main

    script = tmp_path / "hello.py"
    script.write_text(
        "from sporeling.core import communication as c\n"
        "c.init()\nprint(f'hello {c.get_rank()} {c.get_group_size()}', flush=True)\n"
    )
    assert main(["launch", "-n", "2", "--threads-per-rank", "1", str(script)]) == 0
    out = capfd.readouterr().out
    assert "hello 0 2" in out and "hello 1 2" in out


@needs_mpi
@pytest.mark.parametrize("n", [2])
def test_all_reduce_and_broadcast_of_0d_tensors_keep_their_shape(n):
    ok(run(n, "dp_edge.py", "scalar", timeout=120), "scalar OK", n)


@needs_mpi
def test_shapes_differing_across_ranks_are_refused_on_every_rank_naming_them():
    proc = run(2, "dp_edge.py", "mismatch", timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    for rank in (0, 1):
        assert f"refused on rank {rank}: all_reduce" in out, out[-4000:]
    assert "rank 0: shape (3,)" in out and "rank 1: shape (4,)" in out, out[-4000:]


EARLY = {
    "raise": "rank 1 of 2 failed",
    "exit0": "rank 1 of 2 exited with code 0 while rank 0 waits",
    "exit3": "rank 1 exited with code 3",
    "osexit": "rank 1 ended first",
    "sigkill": "rank 1 ended first",
}


@needs_mpi
@pytest.mark.parametrize("mode", list(EARLY))
def test_launch_ends_the_job_when_a_rank_ends_early_naming_it(mode, tmp_path):
    stamp = tmp_path / "stamp"
    cmd = [sys.executable, "-m", "sporeling.core", "launch", "-n", "2"]
    cmd += ["--threads-per-rank", "1", str(SCRIPTS / "early_exit.py"), mode, str(stamp)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=ENV, check=False)
    ended = time.time()
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-4000:]
    assert EARLY[mode] in out, out[-4000:]
    assert "not reached" not in out
    assert ended - float(stamp.read_text()) < 10, out[-4000:]
