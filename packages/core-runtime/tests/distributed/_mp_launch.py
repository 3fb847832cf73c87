"""Launch a test script under ``mpiexec -n N`` with a timeout (skip without mpi4py/mpiexec)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "scripts"


def mpi_available() -> str | None:
    """None when mpi4py and mpiexec are usable, else the reason to skip."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return "mpi4py is not installed (pip install mpi4py mpich)"
    if shutil.which("mpiexec") is None:
        return "mpiexec is not on PATH (pip install mpich)"
    return None


def run_mpi(script: str, n: int, timeout: float = 240.0) -> str:
    reason = mpi_available()
    if reason:
        pytest.skip(reason)
    env = dict(os.environ, OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    cmd = ["mpiexec", "-n", str(n), sys.executable, str(SCRIPTS / script)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{script} under mpiexec -n {n} timed out after {timeout}s: {exc.stdout}")
    assert proc.returncode == 0, f"{script} -n {n} failed:\n{proc.stdout}\n{proc.stderr[-4000:]}"
    return proc.stdout
