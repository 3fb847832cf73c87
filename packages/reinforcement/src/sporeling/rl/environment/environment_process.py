"""``EnvironmentProcess``: a worker process that owns some environments and steps them on
request, so that a :class:`MultiEnvironmentWrapper` can run Python environments (gymnasium's)
in parallel, which threads cannot (the GIL).

The environments are pickled into the worker once, at start (MindSpore RL 0.5 passes them
the same way); each request and its results then travel over a pipe. Workers start with the
``spawn`` method: the parent may hold Numba and BLAS threads, which ``fork`` would copy in an
unusable state.
"""

from __future__ import annotations

import multiprocessing as mp
import traceback
from typing import Any

import numpy as np

_START_TIMEOUT_S = 120.0  # a spawned worker imports NumPy, gymnasium and the environments


def _worker(conn: Any, envs: list[Any], auto_reset: bool) -> None:
    """The worker's loop: ``("reset", None)``, ``("step", actions)``, ``("close", None)``."""
    try:
        conn.send(("ok", None))
        while True:
            cmd, payload = conn.recv()
            if cmd == "close":
                for env in envs:
                    env.close()
                conn.send(("ok", None))
                return
            if cmd == "reset":
                conn.send(("ok", [env.reset_np() for env in envs]))
            elif cmd == "step":
                out = []
                for env, action in zip(envs, payload):
                    obs, r, d = env.step_np(action)
                    terminated = bool(getattr(env, "last_terminated", d))
                    if d and auto_reset:
                        obs = env.reset_np()
                    out.append((obs, float(r), bool(d), terminated))
                conn.send(("ok", out))
            else:
                conn.send(("error", f"unknown command {cmd!r}"))
    except (EOFError, KeyboardInterrupt):  # the parent went away
        return
    except Exception:  # noqa: BLE001 - the parent re-raises it with the traceback
        conn.send(("error", traceback.format_exc()))


class EnvironmentProcess:
    """One worker process stepping ``envs`` in order; ``index`` names it in errors."""

    def __init__(self, envs: list[Any], index: int = 0, auto_reset: bool = False) -> None:
        ctx = mp.get_context("spawn")
        self.index = index
        self.num_env = len(envs)
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(
            target=_worker, args=(child, envs, auto_reset), daemon=True,
            name=f"sporeling-rl-env-{index}",
        )  # fmt: skip
        self._proc.start()
        child.close()
        self._closed = False
        if not self._conn.poll(_START_TIMEOUT_S):
            self.terminate()
            raise RuntimeError(
                f"EnvironmentProcess {index}: the worker did not start within "
                f"{_START_TIMEOUT_S:.0f} s"
            )
        self.receive()

    def send(self, cmd: str, payload: Any = None) -> None:
        self._conn.send((cmd, payload))

    def receive(self) -> Any:
        try:
            status, value = self._conn.recv()
        except EOFError:
            raise RuntimeError(
                f"EnvironmentProcess {self.index}: the worker ended (exit code "
                f"{self._proc.exitcode}) without an answer"
            ) from None
        if status != "ok":
            raise RuntimeError(f"EnvironmentProcess {self.index}: the worker failed:\n{value}")
        return value

    def reset(self) -> list[np.ndarray]:
        self.send("reset")
        return self.receive()

    def close(self, timeout: float = 10.0) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.send("close")
            self.receive()
        except (OSError, RuntimeError):
            pass
        self._proc.join(timeout)
        self.terminate()
        self._conn.close()

    def terminate(self) -> None:
        if self._proc.is_alive():
            self._proc.terminate()
            self._proc.join(5.0)
