"""What every rank of ``sporeling launch`` runs: the user's script, plus a watchdog that
ends the job when another rank has ended while this one waits in a collective.

MPI alone hangs there forever when a rank returns normally (exit code 0) while another
waits in a collective, and ends the job silently with exit code 0 after ``os._exit(0)``.
Each rank writes ``start.<rank>`` (host and pid) into the launch folder
(``SPORELING_LAUNCH_DIR``, made by the launcher) and ``exit.<rank>`` (its exit code) when
its script ends; the watchdog thread polls the folder, and if a peer has ended (its
``exit`` file, or its process gone without one) while the main thread sits in a
collective of :mod:`sporeling.core.communication`, it names that rank and aborts the job.
The launcher runs this file by path (``python -m mpi4py -c "runpy.run_path(...)" script.py
args``), so a rank writes its ``start`` file before anything imports ``sporeling.core``:
keep its imports to the standard library and mpi4py.
"""

from __future__ import annotations

import os
import runpy
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

_POLL_S = 0.2
_COMM_FILES = (
    os.path.join("communication", "_backend.py"),
    os.path.join("communication", "overlap.py"),
)


def _in_collective(main_ident: int) -> str | None:
    """The function of the communication layer the main thread is blocked in, if any."""
    frame = sys._current_frames().get(main_ident)
    while frame is not None:
        if frame.f_code.co_filename.endswith(_COMM_FILES):
            return frame.f_code.co_name
        frame = frame.f_back
    return None


def _peer_ended(folder: Path, rank: int, size: int, host: str) -> tuple[int, str] | None:
    """(rank, how) of a peer that has ended, or None."""
    for peer in range(size):
        if peer == rank:
            continue
        done = folder / f"exit.{peer}"
        if done.exists():
            return peer, f"exited with code {done.read_text().strip() or '?'}"
        start = folder / f"start.{peer}"
        if start.exists():
            try:
                peer_host, pid = start.read_text().split()
            except ValueError:
                continue
            if peer_host == host and not Path(f"/proc/{pid}").exists():
                return peer, "ended without finishing its script (os._exit or a signal)"
    return None


def _watch(folder: Path, rank: int, size: int, main_ident: int, abort: Any) -> None:
    host = socket.gethostname()
    seen: dict[int, int] = {}
    while True:
        time.sleep(_POLL_S)
        ended = _peer_ended(folder, rank, size, host)
        waiting = _in_collective(main_ident)
        if ended is None or waiting is None:
            seen.clear()
            continue
        seen[ended[0]] = seen.get(ended[0], 0) + 1
        if seen[ended[0]] < 3:  # still there after ~0.5 s: the collective cannot finish
            continue
        text = f"rank {ended[0]} of {size} {ended[1]} while rank {rank} waits in a collective"
        (folder / f"abort.{rank}").write_text(text)
        sys.stderr.write(f"sporeling: {text} ({waiting}); ending the job\n")
        sys.stderr.flush()
        abort()
        return


def main(argv: list[str]) -> None:
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    folder = Path(os.environ.get("SPORELING_LAUNCH_DIR", ""))
    watching = bool(os.environ.get("SPORELING_LAUNCH_DIR")) and folder.is_dir() and size > 1
    if watching:
        partial = folder / f"start.{rank}.partial"
        partial.write_text(f"{socket.gethostname()} {os.getpid()}")
        os.replace(partial, folder / f"start.{rank}")  # the launcher never reads half a file
        ident = threading.main_thread().ident
        assert ident is not None
        threading.Thread(
            target=_watch,
            args=(folder, rank, size, ident, lambda: world.Abort(1)),
            daemon=True,
            name="sporeling-launch-watchdog",
        ).start()
    sys.argv = list(argv)

    def ended(code: Any) -> None:
        if watching:
            (folder / f"exit.{rank}").write_text(str(code if isinstance(code, int) else 1))

    try:
        runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as exc:
        ended(exc.code if exc.code is not None else 0)
        raise
    ended(0)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit("usage: python -m sporeling.core.communication._launch_rank script.py")
    main(sys.argv[1:])
