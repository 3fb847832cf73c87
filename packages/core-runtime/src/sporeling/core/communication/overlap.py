"""Copies that take turns: compute of one micro-batch copy while another's collective is in flight.

``nn.MicroBatchInterleaved`` runs each phase (forward, then backward) of its copies through a
:class:`CopyScheduler`. With ``threads=True`` every copy runs on its own thread but only
one holds **the turn** at a time, like coroutines:

1. a copy computes until it reaches a collective; :func:`collective` starts it
   non-blocking (``MPI_Iallreduce``/``Iallgather``/``Ireduce_scatter_block``, NCCL on a side
   stream) and the copy hands the turn on;
2. the next copy computes (its own ops, its own collectives) while that one is in flight;
3. when the turn comes back round, the copy waits for its result and goes on.

Why turns rather than free-running threads: MPI matches collectives on a communicator by
the order in which each rank starts them. Turns that change hands only at collectives, in
round-robin order, start them in the same order on every rank of an SPMD program, and MPI is
never entered by two threads at once, so ``MPI_THREAD_SERIALIZED`` is enough (checked: a
library started with less raises). Why threads rather than generators: a copy is any Cell's
``construct`` or a tape's backward sweep, which cannot ``yield``; a thread keeps its stack
while it waits. Each thread starts with its caller's grad mode (``GradMode`` is
thread-local) and CUDA device.

Progress: MPICH advances a non-blocking collective inside MPI calls only, so the scheduler
polls (``test``) every in-flight collective each time the turn changes hands; data moves
while the peer catches up, and a rank that reaches a collective early computes the next
copy instead of idling (``MPICH_ASYNC_PROGRESS=1`` adds a progress thread, at the price of
a core). NCCL runs on its own stream.

With ``threads=False`` the copies run one after the other on the caller's thread and every
collective is waited for at once (the baseline the overlap is measured against); both
modes record the same :class:`EventLog`.
"""

from __future__ import annotations

import _thread
import contextlib
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from ..autograd.tape import GradMode
from ._backend import Pending, _Done

__all__ = ["CopyScheduler", "EventLog", "Event", "collective", "current_copy"]

_LOCAL = threading.local()

# blocking collective -> the Group method that starts it non-blocking
_ASYNC = {"allreduce": "iallreduce", "allgather": "iallgather", "reduce_scatter": "ireduce_scatter"}


def current_copy() -> Any:
    """The copy running on this thread (None outside ``MicroBatchInterleaved``)."""
    return getattr(_LOCAL, "copy", None)


def collective(group: Any, kind: str, a: Any, **kw: Any) -> Any:
    """``group.<kind>(a, **kw)`` on a raw array (``kind``: ``allreduce``, ``allgather``...).

    Outside a copy, or in a group of one, this is the blocking call. Inside a copy an
    all-reduce, all-gather or reduce-scatter is started non-blocking and the turn passes to
    the other copies until it is this copy's turn again; other kinds run blocking (still
    logged).
    """
    copy = current_copy()
    if copy is None or group.size == 1:
        return getattr(group, kind)(a, **kw)
    start = _ASYNC.get(kind)
    if start is None:
        return copy.communicate(kind, lambda: Pending(_Done(), getattr(group, kind)(a, **kw)))
    return copy.communicate(kind, lambda: getattr(group, start)(a, **kw))


class Event(NamedTuple):
    """One entry of an :class:`EventLog`.

    ``kind``: ``run`` (the copy takes the turn: its compute starts), ``start`` / ``issued``
    (a collective is being started / has been started), ``yield`` (the copy hands the turn
    on), ``wait`` (it waits for its collective), ``done`` (the collective is complete),
    ``end`` (the copy's phase is finished).
    """

    t: float
    phase: str
    copy: int
    kind: str
    name: str = ""


class EventLog:
    """What the copies did, in order: compute turns and each collective's life."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def add(self, phase: str, copy: int, kind: str, name: str = "") -> None:
        # list.append is atomic; only the copy holding the turn logs anyway
        self.events.append(Event(time.perf_counter(), phase, copy, kind, name))

    def clear(self) -> None:
        self.events = []

    def collectives(self, phase: str | None = None) -> list[dict[str, Any]]:
        """One record per collective: its copy, name, event indices and times."""
        open_: dict[int, dict[str, Any]] = {}
        out: list[dict[str, Any]] = []
        for i, e in enumerate(self.events):
            if phase is not None and e.phase != phase:
                continue
            if e.kind == "start":
                new: dict[str, Any] = {"phase": e.phase, "copy": e.copy, "name": e.name, "t": {}}
                open_[e.copy] = new
                out.append(new)
            rec = open_.get(e.copy)
            if rec is not None and e.kind in ("start", "issued", "wait", "done"):
                rec[e.kind] = i
                rec["t"][e.kind] = e.t
                if e.kind == "done":
                    del open_[e.copy]
        return out

    def summary(self, phase: str | None = None) -> dict[str, Any]:
        """Totals over the log (seconds).

        ``blocked_s``: time the copies spent inside collective calls (starting them and
        waiting for them) -- the communication that was *not* hidden; ``in_flight_s``: from
        start to completion; ``hidden_s``: time other copies computed while a collective
        was in flight; ``runs_during_flight``: turns that began while another copy's
        collective was in flight (0 when the copies run one after the other).
        """
        recs = [r for r in self.collectives(phase) if "done" in r["t"]]
        blocked = sum(
            (r["t"]["issued"] - r["t"]["start"]) + (r["t"]["done"] - r["t"]["wait"]) for r in recs
        )
        in_flight = sum(r["t"]["done"] - r["t"]["start"] for r in recs)
        hidden = sum(r["t"]["wait"] - r["t"]["issued"] for r in recs)
        flying: set[int] = set()
        runs = handoffs = 0
        handoff = 0.0
        last_out: Event | None = None
        for e in self.events:
            if phase is not None and e.phase != phase:
                continue
            if e.kind == "issued":
                flying.add(e.copy)
            elif e.kind == "done":
                flying.discard(e.copy)
            elif e.kind in ("yield", "end"):
                last_out = e
            elif e.kind == "run":
                if flying - {e.copy}:
                    runs += 1
                if last_out is not None and last_out.phase == e.phase:
                    handoffs += 1
                    handoff += e.t - last_out.t
                last_out = None
        return {
            "collectives": len(recs),
            "blocked_s": blocked,
            "in_flight_s": in_flight,
            "hidden_s": hidden,
            "runs_during_flight": runs,
            "handoffs": handoffs,
            "handoff_s": handoff,
        }


class _Cancelled(BaseException):
    """Raised inside a waiting copy when another copy failed (unwinds it quietly)."""


class _Copy:
    """One copy's handle on the scheduler (kept in a thread-local while it runs)."""

    def __init__(self, sched: CopyScheduler, index: int) -> None:
        self.sched = sched
        self.index = index
        self.in_flight: list[Pending] = []

    def communicate(self, name: str, start: Callable[[], Pending]) -> Any:
        log, phase, k = self.sched.log, self.sched.phase, self.index
        log.add(phase, k, "start", name)
        handle = start()
        log.add(phase, k, "issued", name)
        if self.sched.threads and not handle.complete:
            self.in_flight.append(handle)
            try:
                self.sched._hand_on(self)
            finally:
                self.in_flight.remove(handle)
        log.add(phase, k, "wait", name)
        out = handle.wait()
        log.add(phase, k, "done", name)
        return out


class CopyScheduler:
    """Run ``fn(k)`` for the ``n`` copies of one phase (see the module docstring).

    ``threads``: take turns on threads (overlap) or run one after the other (no overlap).
    ``log``: the :class:`EventLog` to append to; ``phase``: its label (``forward``...).
    """

    def __init__(self, n: int, threads: bool, log: EventLog | None = None, phase: str = "") -> None:
        self.n = n
        self.threads = bool(threads)
        self.log = log if log is not None else EventLog()
        self.phase = phase
        if self.threads:
            from .management import require_thread_level

            require_thread_level("MicroBatchInterleaved", "serialized")
        self._go = [_blocked_lock() for _ in range(n)]  # released: copy k may run
        self._finished = [False] * n
        self._cancelled = False
        self._copies = [_Copy(self, k) for k in range(n)]

    def run(self, fn: Callable[[int], Any]) -> list[Any]:
        """The copies' results, in copy order; the first copy error is re-raised."""
        if not self.threads:
            return self._run_inline(fn)
        return self._run_threads(fn)

    # ---- one after the other -----------------------------------------------------------
    def _run_inline(self, fn: Callable[[int], Any]) -> list[Any]:
        results = []
        prev = current_copy()
        try:
            for copy in self._copies:
                _LOCAL.copy = copy
                self.log.add(self.phase, copy.index, "run")
                results.append(fn(copy.index))
                self.log.add(self.phase, copy.index, "end")
        finally:
            _LOCAL.copy = prev
        return results

    # ---- turns on threads ----------------------------------------------------------------
    def _run_threads(self, fn: Callable[[int], Any]) -> list[Any]:
        n = self.n
        results: list[Any] = [None] * n
        errors: list[BaseException | None] = [None] * n
        setup = _thread_setup()

        def main(k: int) -> None:
            setup()
            _LOCAL.copy = self._copies[k]
            try:
                self._take_turn(k)
                results[k] = fn(k)
            except _Cancelled:
                return
            except BaseException as exc:  # re-raised on the caller's thread
                errors[k] = exc
                self._cancel()
                return
            self._finished[k] = True
            self.log.add(self.phase, k, "end")
            self._pass_turn(k)

        workers = [
            threading.Thread(target=main, args=(k,), name=f"sporeling-copy-{k}", daemon=True)
            for k in range(n)
        ]
        for w in workers:
            w.start()
        self._go[0].release()
        try:
            for w in workers:
                w.join()
        except BaseException:  # e.g. KeyboardInterrupt: stop the copies at their next turn
            self._cancel()
            raise
        for exc in errors:
            if exc is not None:
                raise exc
        return results

    def _take_turn(self, k: int) -> None:
        """Block until copy ``k`` has the turn (raises ``_Cancelled`` if the run stopped)."""
        self._go[k].acquire()
        if self._cancelled:
            raise _Cancelled
        self.log.add(self.phase, k, "run")

    def _pass_turn(self, k: int) -> None:
        """Hand the turn to the next unfinished copy after ``k`` (round robin; ``k`` itself
        when it is the last one left); nothing when all are finished."""
        self._poll()
        for step in range(1, self.n + 1):
            j = (k + step) % self.n
            if not self._finished[j]:
                self._go[j].release()
                return

    def _hand_on(self, copy: _Copy) -> None:
        """Give the turn away at a collective and wait for it to come round again."""
        self.log.add(self.phase, copy.index, "yield")
        self._pass_turn(copy.index)
        self._take_turn(copy.index)

    def _cancel(self) -> None:
        """Wake every waiting copy with ``_Cancelled`` (a copy failed)."""
        self._cancelled = True
        for go in self._go:
            with contextlib.suppress(RuntimeError):  # already released: that copy will see it
                go.release()

    def _poll(self) -> None:
        """Let MPI progress the collectives in flight (called by the copy holding the turn)."""
        for copy in self._copies:
            for handle in copy.in_flight:
                handle.test()


def _blocked_lock() -> Any:
    """A lock that starts held: the cheapest hand-off between threads (any thread may
    release it; measured ~2x faster than ``threading.Semaphore``)."""
    lock = _thread.allocate_lock()
    lock.acquire()
    return lock


def _thread_setup() -> Callable[[], None]:
    """What a copy thread must inherit from the caller: grad mode and CUDA device."""
    grad = GradMode.enabled
    device = None
    cupy: Any = sys.modules.get("cupy")
    if cupy is not None:
        try:
            device = cupy.cuda.runtime.getDevice()
        except Exception:  # no usable GPU: nothing to inherit
            device = None

    def setup() -> None:
        GradMode.enabled = grad
        if device is not None:
            cupy.cuda.runtime.setDevice(device)

    return setup
