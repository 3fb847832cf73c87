"""Order-preserving parallel executors for ``map`` and random-access sources.

``run_tasks(fn, tasks, workers, processes, ...)`` applies ``fn(*args)`` to each task
``(key, args, tag)`` inside ``row_random_scope(key)`` and yields ``(tag, outputs)`` in task
order, with ``outputs`` either a tuple of arrays or a :class:`TaskFailure`.

* Threads (``processes=False``): a ``ThreadPoolExecutor`` with a bounded window. Numba
  kernels compiled with ``nogil=True`` and Pillow release the GIL, so these scale.
* Processes (``processes=True``): one process per worker, each with two shared-memory
  blocks (``multiprocessing.shared_memory``) of ``slots`` x ``max_rowsize`` MB. Tasks travel
  in chunks of up to ``chunk`` rows (one pipe message each way per chunk: a pipe round trip
  costs more than a small transform): the parent writes the rows' input arrays into a slot
  of the worker's input block, the worker writes the outputs into the same slot of its output
  block, and only shapes/dtypes/offsets travel through the pipe. Rows that do not fit (or
  hold non-array values) are pickled through the pipe instead. Chunk ``c`` goes to worker
  ``c % workers``; results are read back in task order.

The start method is ``fork`` where available (like MindSpore; operations need not be
picklable), else ``spawn``; ``SPORELING_DATA_START_METHOD`` overrides it.

A failing operation never hangs the pipeline: a worker sends its exception (message and
traceback) back, and the parent also notices a worker process that died, within
``POLL_S`` seconds.
"""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing as mp
import os
import pickle
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.shared_memory import SharedMemory
from typing import Any

import numpy as np

from ._rng import row_random_scope

__all__ = ["TaskFailure", "run_tasks", "WorkerPool"]

POLL_S = 0.2
_ALIGN = 64


@dataclass
class TaskFailure:
    """An operation raised on one task: the exception (when it could be sent) and its text."""

    exc: BaseException | None
    message: str
    traceback: str


def _apply(fn: Callable[..., Any], key: tuple[int, ...] | None, args: tuple[Any, ...]) -> Any:
    try:
        with row_random_scope(key):
            return fn(*args)
    except Exception as exc:  # reported to the consumer, which raises or skips
        return TaskFailure(exc, f"{type(exc).__name__}: {exc}", traceback.format_exc())


# ---- threads -------------------------------------------------------------------------------
class _ThreadRunner:
    def __init__(self, fn: Callable[..., Any], workers: int) -> None:
        self.fn = fn
        self.workers = workers
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sporeling-data")

    def imap(self, tasks: Iterable[tuple[Any, tuple[Any, ...], Any]]) -> Iterator[tuple[Any, Any]]:
        window: deque[tuple[Any, Any]] = deque()
        limit = self.workers * 4
        for key, args, tag in tasks:
            window.append((tag, self.pool.submit(_apply, self.fn, key, args)))
            if len(window) >= limit:
                tag0, fut = window.popleft()
                yield tag0, fut.result()
        while window:
            tag0, fut = window.popleft()
            yield tag0, fut.result()

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


# ---- processes -----------------------------------------------------------------------------
def _encode(values: tuple[Any, ...], buf: memoryview | None, off: int, size: int) -> Any:
    """Write arrays into ``buf`` from ``off``: ((meta, None), new offset), or
    ((None, values), off) when they must be pickled (objects, or no room left)."""
    arrays = []
    for v in values:
        # Only arrays and NumPy scalars go through shared memory; lists, PIL images and other
        # objects are pickled as they are, so the callee sees the same types in every mode.
        if not isinstance(v, (np.ndarray, np.generic)) or v.dtype.hasobject:
            return (None, values), off
        arrays.append(np.asarray(v))
    total = sum((a.nbytes + _ALIGN - 1) // _ALIGN * _ALIGN for a in arrays)
    if buf is None or off + total > size:
        return (None, values), off
    meta = []
    for a in arrays:
        n = a.nbytes
        dst = np.ndarray(a.shape, a.dtype, buffer=buf, offset=off)
        dst[...] = a
        del dst
        meta.append((a.dtype.str, a.shape, off))
        off += (n + _ALIGN - 1) // _ALIGN * _ALIGN
    return (meta, None), off


def _decode(packed: Any, buf: memoryview, copy: bool) -> tuple[Any, ...]:
    meta, inline = packed
    if meta is None:
        return tuple(inline)
    out = []
    for dtype, shape, off in meta:
        a = np.ndarray(shape, np.dtype(dtype), buffer=buf, offset=off)
        out.append(a.copy() if copy else a)
    return tuple(out)


def _attach(name: str) -> SharedMemory:
    # The parent owns and unlinks the block. Attaching registers the name again with the
    # resource tracker the worker shares with the parent; that is a set insert, so it is
    # harmless, and unregistering here would make the parent's unlink fail in the tracker.
    return SharedMemory(name=name)


def _run_one(fn: Any, key: Any, packed: Any, in_view: memoryview) -> Any:
    args = _decode(packed, in_view, copy=False)
    result = _apply(fn, key, args)
    del args
    return result


def _worker_main(conn: Any, in_name: str, out_name: str, slot: int, fn: Any) -> None:
    """A worker process: runs chunks of tasks, inputs and outputs in shared memory."""
    shm_in, shm_out = _attach(in_name), _attach(out_name)
    try:
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                return
            if msg is None:
                return
            seq, s, chunk = msg
            lo = s * slot
            in_view = shm_in.buf[lo : lo + slot]  # type: ignore[index]
            out_view = shm_out.buf[lo : lo + slot]  # type: ignore[index]
            replies, off = [], 0
            try:
                for key, packed in chunk:
                    result = _run_one(fn, key, packed, in_view)
                    if isinstance(result, TaskFailure):
                        exc = result.exc
                        try:
                            pickle.dumps(exc)
                        except Exception:
                            exc = None
                        replies.append(("error", (exc, result.message, result.traceback)))
                        continue
                    try:
                        values = tuple(result) if isinstance(result, (tuple, list)) else (result,)
                        packed_out, off = _encode(values, out_view, off, slot)
                        replies.append(("ok", packed_out))
                    except Exception as exc:
                        replies.append(
                            (
                                "error",
                                (None, f"{type(exc).__name__}: {exc}", traceback.format_exc()),
                            )
                        )
            finally:
                in_view.release()
                out_view.release()
            try:
                conn.send((seq, replies))
            except Exception as exc:  # an output that cannot be pickled
                message = f"{type(exc).__name__}: cannot send a result to the parent: {exc}"
                conn.send((seq, [("error", (None, message, traceback.format_exc()))] * len(chunk)))
    finally:
        shm_in.close()
        shm_out.close()


def _start_method() -> str:
    env = os.environ.get("SPORELING_DATA_START_METHOD")
    methods = mp.get_all_start_methods()
    if env:
        if env not in methods:
            raise ValueError(
                f"SPORELING_DATA_START_METHOD={env!r} is not one of this platform's start "
                f"methods {methods}"
            )
        return env
    return "fork" if "fork" in methods else "spawn"


class _ProcessRunner:
    def __init__(
        self,
        fn: Callable[..., Any],
        workers: int,
        max_rowsize: float,
        slots: int = 2,
        chunk: int = 8,
    ) -> None:
        self.workers = workers
        self.slots = slots
        self.chunk = chunk
        self.broken = False
        self.slot = max(int(max_rowsize * 1024 * 1024), _ALIGN)
        ctx: Any = mp.get_context(_start_method())
        self.procs: list[Any] = []
        self.conns: list[Any] = []
        self.shms: list[tuple[SharedMemory, SharedMemory]] = []
        try:
            for _ in range(workers):
                shm_in = SharedMemory(create=True, size=self.slot * slots)
                shm_out = SharedMemory(create=True, size=self.slot * slots)
                self.shms.append((shm_in, shm_out))
                parent, child = ctx.Pipe()
                p = ctx.Process(
                    target=_worker_main,
                    args=(child, shm_in.name, shm_out.name, self.slot, fn),
                    daemon=True,
                    name="sporeling-data-worker",
                )
                p.start()
                child.close()
                self.procs.append(p)
                self.conns.append(parent)
        except BaseException:
            self.close()
            raise

    def _recv(self, w: int) -> Any:
        conn, proc = self.conns[w], self.procs[w]
        while not conn.poll(POLL_S):
            if not proc.is_alive():
                self._died(w)
        try:
            return conn.recv()
        except (EOFError, ConnectionResetError):
            self._died(w)

    def _died(self, w: int) -> None:
        proc = self.procs[w]
        proc.join(timeout=1.0)
        self.broken = True
        raise RuntimeError(
            f"map: worker process {proc.pid} died (exit code {proc.exitcode}) while processing "
            "a row"
        )

    def imap(self, tasks: Iterable[tuple[Any, tuple[Any, ...], Any]]) -> Iterator[tuple[Any, Any]]:
        W, S, slot, C = self.workers, self.slots, self.slot, self.chunk
        pending: deque[tuple[int, list[Any]]] = deque()  # (chunk number, tags)

        def collect() -> list[tuple[Any, Any]]:
            seq, tags = pending.popleft()
            w, s = seq % W, (seq // W) % S
            rseq, replies = self._recv(w)
            if rseq != seq:  # pragma: no cover - internal invariant
                raise RuntimeError(f"map: worker result out of order ({rseq} != {seq})")
            lo = s * slot
            view = self.shms[w][1].buf[lo : lo + slot]  # type: ignore[index]
            out: list[tuple[Any, Any]] = []
            try:
                for tag, (status, payload) in zip(tags, replies):
                    if status == "error":
                        exc, message, tb = payload
                        out.append((tag, TaskFailure(exc, message, tb)))
                    else:
                        out.append((tag, _decode(payload, view, copy=True)))
            finally:
                view.release()
            return out

        seq = 0
        it = iter(tasks)
        try:
            while True:
                group = list(itertools.islice(it, C))
                if not group:
                    break
                if len(pending) >= W * S:
                    yield from collect()
                w, s = seq % W, (seq // W) % S
                lo = s * slot
                view = self.shms[w][0].buf[lo : lo + slot]  # type: ignore[index]
                chunk, off = [], 0
                try:
                    for key, args, _ in group:
                        packed, off = _encode(tuple(args), view, off, slot)
                        chunk.append((key, packed))
                finally:
                    view.release()
                try:
                    self.conns[w].send((seq, s, chunk))
                except (BrokenPipeError, ConnectionResetError):
                    self._died(w)
                pending.append((seq, [tag for _, _, tag in group]))
                seq += 1
            while pending:
                yield from collect()
        finally:
            # Abandoned early (take, an error downstream): drain the chunks in flight so the
            # next epoch's chunk numbers line up with the workers' replies again.
            while pending:
                try:
                    collect()
                except Exception:
                    pending.clear()
                    self.broken = True

    def close(self) -> None:
        for conn in self.conns:
            with contextlib.suppress(Exception):
                conn.send(None)
        for p in self.procs:
            p.join(timeout=2.0)
            if p.is_alive():
                p.terminate()
                p.join(timeout=2.0)
        for conn in self.conns:
            conn.close()
        for shm_in, shm_out in self.shms:
            for shm in (shm_in, shm_out):
                try:
                    shm.close()
                    shm.unlink()
                except Exception:
                    pass
        self.procs, self.conns, self.shms = [], [], []


class _InlineRunner:
    """One worker: tasks run on the consuming thread. With `overlap` (map), once `PROBE`
    tasks after the first (whose time includes first-call work such as Numba compilation)
    took `HEAVY_S` seconds each or more on average, the rest run on one worker thread (a
    `_ThreadRunner` of 1), as MindSpore's map op runs its worker apart from the reader and
    batch threads: reading and batching then overlap with the operations. Cheap rows stay
    inline (a thread handoff costs ~20-40 us per row). Outputs and random draws are the
    same either way (each task runs in its own `row_random_scope`)."""

    PROBE = 8
    HEAVY_S = 2e-4

    def __init__(self, fn: Callable[..., Any], overlap: bool = False) -> None:
        self.fn = fn
        self.overlap = overlap
        self.thread: _ThreadRunner | None = None

    def imap(self, tasks: Iterable[tuple[Any, tuple[Any, ...], Any]]) -> Iterator[tuple[Any, Any]]:
        it = iter(tasks)
        if self.overlap and self.thread is None:
            n, spent = -1, 0.0  # the first task is not counted
            for key, args, tag in it:
                t0 = time.perf_counter()
                out = _apply(self.fn, key, args)
                if n >= 0:
                    spent += time.perf_counter() - t0
                n += 1
                yield tag, out
                if n == self.PROBE:
                    break
            if n < self.PROBE:
                return
            if spent >= self.HEAVY_S * n:
                self.thread = _ThreadRunner(self.fn, 1)
            else:
                self.overlap = False  # decided: this pool's rows are cheap
        if self.thread is not None:
            yield from self.thread.imap(it)
            return
        for key, args, tag in it:
            yield tag, _apply(self.fn, key, args)

    def close(self) -> None:
        if self.thread is not None:
            self.thread.close()


class WorkerPool:
    """A runner for one pipeline node during one iterator's life (closed with the iterator)."""

    def __init__(
        self,
        fn: Callable[..., Any],
        workers: int,
        processes: bool = False,
        max_rowsize: float = 16,
        overlap: bool = False,
    ) -> None:
        self._lock = threading.Lock()
        if workers <= 1:
            self._runner: Any = _InlineRunner(fn, overlap)
        elif processes:
            self._runner = _ProcessRunner(fn, workers, max_rowsize)
        else:
            self._runner = _ThreadRunner(fn, workers)

    def imap(
        self, tasks: Iterable[tuple[Any, tuple[Any, ...], Any]]
    ) -> Generator[tuple[Any, Any], None, None]:
        return self._runner.imap(tasks)

    def close(self) -> None:
        with self._lock:
            self._runner.close()


def run_tasks(
    fn: Callable[..., Any],
    tasks: Iterable[tuple[Any, tuple[Any, ...], Any]],
    workers: int = 1,
    processes: bool = False,
    max_rowsize: float = 16,
) -> Iterator[tuple[Any, Any]]:
    """One-shot helper: run ``tasks`` through a fresh pool and close it at the end."""
    pool = WorkerPool(fn, workers, processes, max_rowsize)
    try:
        yield from pool.imap(tasks)
    finally:
        pool.close()
