"""``sporeling launch -n N [--hostfile F] script.py ...``: start a job under ``mpiexec``.

A thin wrapper: it finds the ``mpiexec`` of the ``[mpi]`` extra (the mpich wheel puts it
next to the Python interpreter) or on ``PATH``, adds what the MPI flavour needs (Open MPI's
``--oversubscribe``, the hostfile flag), and runs ``python -m mpi4py script.py ...`` on every
rank, so an uncaught exception on any rank aborts the whole job with that rank's message.
The script calls :func:`sporeling.core.communication.init`.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

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


_RANK_BOOT = str(Path(__file__).resolve().with_name("_launch_rank.py"))


def resolve_script(name: str) -> str:
    """The file every rank runs: ``name`` itself, or a command on PATH such as a suite's
    console script (``sporeling launch -n 2 sporeling-rl train ...``), which pip writes as
    a Python file."""
    if os.path.isfile(name):
        return name
    if os.sep not in name:
        found = shutil.which(name)
        if found is not None:
            return found
    raise OSError(f"launch: the script {name!r} is neither a file nor a command on PATH")


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
    parser.add_argument(
        "script", help="the Python script every rank runs, or a Python command on PATH"
    )
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    ns = parser.parse_args(list(argv) if argv is not None else None)
    if ns.n < 1:
        raise ValueError(f"launch: argument '-n' expected a positive number of ranks, got {ns.n}")
    if ns.hostfile is not None and not os.path.isfile(ns.hostfile):
        raise OSError(f"launch: argument '--hostfile' names no file: {ns.hostfile!r}")
    script = resolve_script(ns.script)
    env = dict(os.environ)
    if ns.threads_per_rank is not None:
        if ns.threads_per_rank < 1:
            raise ValueError(
                f"launch: argument '--threads-per-rank' expected a positive int, "
                f"got {ns.threads_per_rank}"
            )
        env.update({v: str(ns.threads_per_rank) for v in _THREAD_VARS})
    with tempfile.TemporaryDirectory(prefix="sporeling-launch-") as folder:
        # every rank runs _launch_rank: its watchdog ends the job when a peer has ended while
        # it waits in a collective (MPI alone would hang, or end silently with code 0)
        env["SPORELING_LAUNCH_DIR"] = folder
        # the rank bootstrap runs as a file, not with -m: importing it as a module would
        # import sporeling.core first (seconds), and a rank that ends as soon as its script
        # starts would be gone before the launcher ever saw its pid (the early-exit tests
        # named the wrong rank, or none, in 1 run of 3)
        boot = f"import runpy; runpy.run_path({_RANK_BOOT!r}, run_name='__main__')"
        argv = ["-c", boot, script, *ns.args]
        proc = subprocess.Popen(mpiexec_command(ns.n, argv, ns.hostfile), env=env)
        order: list[int] = []
        watcher = threading.Thread(
            target=_exit_order, args=(Path(folder), ns.n, proc, order), daemon=True
        )
        watcher.start()
        code = proc.wait()
        watcher.join(timeout=2)
        return _report(Path(folder), ns.n, code, order)


def _exit_order(folder: Path, n: int, proc: subprocess.Popen, order: list[int]) -> None:
    """Record the order in which this host's ranks end (pidfds turn readable at exit), so
    that the rank that went first is named when mpiexec then ends the others."""
    if not hasattr(os, "pidfd_open"):
        return
    host = socket.gethostname()
    fds: dict[int, int] = {}
    opened: set[int] = set()
    try:
        while proc.poll() is None or fds:
            for r in range(n):
                start = folder / f"start.{r}"
                if r in opened or not start.exists():
                    continue
                with contextlib.suppress(ValueError, OSError):
                    rank_host, pid = start.read_text().split()
                    opened.add(r)  # only once read whole (else: look again next round)
                    if rank_host == host:
                        try:
                            fds[os.pidfd_open(int(pid))] = r
                        except ProcessLookupError:  # ended before we looked
                            order.append(r)
            if not fds:
                time.sleep(0.05)
                continue
            for fd in select.select(list(fds), [], [], 0.05)[0]:
                order.append(fds.pop(fd))
                os.close(fd)
    finally:
        for fd in fds:
            os.close(fd)


def _report(folder: Path, n: int, code: int, order: list[int]) -> int:
    """Name the rank that ended the job; never report success when a rank did not finish."""
    codes = {
        r: (folder / f"exit.{r}").read_text().strip()
        for r in range(n)
        if (folder / f"exit.{r}").exists()
    }
    aborts = [
        (folder / f"abort.{r}").read_text() for r in range(n) if (folder / f"abort.{r}").exists()
    ]
    unfinished = [r for r in range(n) if r not in codes]
    if code == 0 and not unfinished and all(c == "0" for c in codes.values()):
        return 0
    parts = [f"rank {r} exited with code {c}" for r, c in codes.items() if c != "0"]
    parts += aborts
    first = next((r for r in order if r in unfinished), None)
    if first is not None and not aborts:
        parts.append(f"rank {first} ended first, without finishing its script (an exception, "
                     "os._exit or a signal)")  # fmt: skip
    elif unfinished and not parts:
        parts.append(f"ranks {', '.join(map(str, unfinished))} did not finish their script")
    sys.stderr.write(f"sporeling launch: the job ended with code {code}: {'; '.join(parts)}\n")
    return code or 1
