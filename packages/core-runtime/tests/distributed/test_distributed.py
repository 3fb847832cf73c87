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
