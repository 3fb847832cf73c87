"""``sporeling launch -n N [--hostfile F] script.py ...``: start a job under ``mpiexec``.

A thin wrapper: it finds the ``mpiexec`` of the ``[mpi]`` extra (the mpich wheel puts it
next to the Python interpreter) or on ``PATH``, adds what the MPI flavour needs (Open MPI's
``--oversubscribe``, the hostfile flag), and runs ``python -m mpi4py script.py ...`` on every
rank, so an uncaught exception on any rank aborts the whole job with that rank's message.
The script calls :func:`sporeling.core.communication.init`.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence

__all__ = ["main", "find_mpiexec", "mpiexec_command"]

_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
_MISSING = "install the extra with `pip install 'sporeling-core-runtime[mpi]'`"


def find_mpiexec() -> str:
    """The path of ``mpiexec`` (the interpreter's bin folder first), or RuntimeError."""
    here = os.path.dirname(sys.executable)
    found = shutil.which("mpiexec", path=here) or shutil.which("mpiexec")
    if found is None:
        raise RuntimeError(f"launch: mpiexec was not found next to {sys.executable} or on PATH; "
                           f"{_MISSING} (it provides mpich's mpiexec)")  # fmt: skip
    if importlib.util.find_spec("mpi4py") is None:
        raise RuntimeError(f"launch: mpi4py is not installed; {_MISSING}")
    return found


def _is_open_mpi(mpiexec: str) -> bool:
    try:
        out = subprocess.run(
            [mpiexec, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "Open MPI" in out.stdout + out.stderr or "OpenRTE" in out.stdout + out.stderr


def mpiexec_command(n: int, argv: Sequence[str], hostfile: str | None = None) -> list[str]:
    """The full command that runs ``python -m mpi4py *argv`` on ``n`` ranks."""
    mpiexec = find_mpiexec()
    cmd = [mpiexec]
    openmpi = _is_open_mpi(mpiexec)
    if openmpi:
        cmd.append("--oversubscribe")
    if hostfile is not None:
        cmd += ["--hostfile" if openmpi else "-f", hostfile]
    return [*cmd, "-n", str(n), sys.executable, "-m", "mpi4py", *argv]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="sporeling launch",
        description="Run a training script on N processes with mpiexec (the [mpi] extra).",
    )
    parser.add_argument("-n", "--np", dest="n", type=int, required=True, help="number of ranks")
    parser.add_argument("--hostfile", help="hosts to run on (one per line, MPI's format)")
    parser.add_argument(
        "--threads-per-rank",
        type=int,
        default=None,
        help="set OMP/OPENBLAS/MKL/NUMBA thread counts for every rank",
    )
    parser.add_argument("script", help="the Python script every rank runs")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    ns = parser.parse_args(list(argv) if argv is not None else None)
    if ns.n < 1:
        raise ValueError(f"launch: argument '-n' expected a positive number of ranks, got {ns.n}")
    if ns.hostfile is not None and not os.path.isfile(ns.hostfile):
        raise OSError(f"launch: argument '--hostfile' names no file: {ns.hostfile!r}")
    if not os.path.isfile(ns.script):
        raise OSError(f"launch: the script {ns.script!r} does not exist")
    env = dict(os.environ)
    if ns.threads_per_rank is not None:
        if ns.threads_per_rank < 1:
            raise ValueError(
                f"launch: argument '--threads-per-rank' expected a positive int, "
                f"got {ns.threads_per_rank}"
            )
        env.update({v: str(ns.threads_per_rank) for v in _THREAD_VARS})
    cmd = mpiexec_command(ns.n, [ns.script, *ns.args], ns.hostfile)
    return subprocess.run(cmd, env=env, check=False).returncode
