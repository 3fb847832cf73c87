"""Row blocks on a worker that never takes the GIL: kernels called through C function
pointers from a Numba loop, so a 2-thread step hands work over without the GIL or a sleep.

:mod:`._rows` runs each chunk as a Python call on a Python thread. On this project's
2-vCPU VM (guest halt polling off, ``haltpoll.guest_halt_poll_ns=0``) any thread that
blocks halts its vCPU, and waking it again is slow; a ResNet-20 step has ~150 hand-offs,
and each blocked twice: the worker on its semaphore, then on the GIL (held by the caller
until its own chunk starts), and the caller at the end on the GIL (held by the worker
while it put itself back in the idle list). A bounded spin in :mod:`._rows` removed only
the first, and measured no better.

Here a job is a ``cfunc`` of signature ``void(args, k, lo, hi)`` (``args`` the address of
an int64 block, see :func:`pack`) and a job block (function, arguments, chunk bounds,
counters). The worker is a Python thread parked in one nogil Numba call (:func:`_serve`)
for its whole life: it claims chunks from the job's counter and calls the function by
address, spins (``pause``) for the next post for up to ``LINGER_US`` microseconds after
each job (``SPORELING_NATIVE_LINGER_US``, default 1000: the ops of a step come ~1 ms apart),
calling ``sched_yield`` every ~20 us of it, then sleeps on a POSIX semaphore through libc,
all without the GIL. The caller runs its chunks and waits for the rest in one nogil call
(:func:`_participate`). So during a step the GIL is only the caller's, and the worker,
awake between back-to-back ops, sees a post within a microsecond; between steps it sleeps.
The yields keep the spin from taking a loaded core from others: at load ~17 (2 cores) a
ResNet-20 step's median went 1241 -> 1093 ms with the spin, where a spin without them had
made it slower (1357 -> 1858 ms).

ResNet-20 step at 2 threads, same-process A/B against the :mod:`._rows` path (load ~14-16,
the benchmark's process group at the highest priority so that the load's share is small;
``benchmarks/conv/native_jobs_ab.py``): PyTorch's time over ours, min / median, 0.71 /
0.64 -> 0.95 / 0.94 (spin 1000 us), 0.82 / 0.75 (no spin); batch norm, ReLU, ReLU's
gradient and the adds now take half their one-thread time.

Only kernels with a job wrapper use this (:func:`available`: Linux/glibc, several
threads); the rest stay on :mod:`._rows`. A forked child starts with no workers.
``SPORELING_NATIVE_JOBS=0`` turns this off (everything on :mod:`._rows`), for A/B runs.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
from llvmlite import ir  # type: ignore[import-untyped]
from numba import types
from numba.extending import intrinsic
from numba.np.arrayobj import populate_array

from . import _spin
from ._rows import SPIN_TRIES, linger_us, max_blocks

__all__ = [
    "available",
    "job",
    "options",
    "pack",
    "part2",
    "part3",
    "part4",
    "part5",
    "run",
    "stats",
    "view1",
    "view2",
    "view3",
    "view4",
    "view5",
]

_intrinsic: Any = intrinsic
#: whether jobs with a wrapper run here (``SPORELING_NATIVE_JOBS``)
ENABLED = os.environ.get("SPORELING_NATIVE_JOBS", "1").strip() not in ("0", "off", "false")

_JOB_SIG = types.void(types.int64, types.int64, types.int64, types.int64)
# a worker's control block (int64, one cache line)
_POSTED, _SLEEPING, _JOB, _K, _IDLE, _LINGER, _SLICE, _STARTS, _CHUNKS = range(9)
#: microseconds a lingering worker spins between two ``sched_yield`` calls
YIELD_EVERY_US = 20.0
# a job block: function, arguments, chunks, next chunk, chunks finished, then the bounds
_FN, _ARGS, _N, _NEXT, _FINISHED, _BOUNDS = range(6)


def _linger_from_env(value: str | None) -> float:
    """``SPORELING_NATIVE_LINGER_US`` as microseconds (unset or empty: the default)."""
    return linger_us("SPORELING_NATIVE_LINGER_US", value, 1000.0)


#: microseconds a worker spins for its next job before it sleeps on its semaphore
LINGER_US = _linger_from_env(os.environ.get("SPORELING_NATIVE_LINGER_US"))


# ---- pointers and indirect calls inside Numba ----------------------------------------


@_intrinsic
def _pointer(typingctx: Any, addr: Any, dtype: Any) -> Any:
    """``addr`` (int64) as a pointer to ``dtype`` (a NumPy scalar class)."""
    if not (isinstance(addr, types.Integer) and isinstance(dtype, types.NumberClass)):
        return None
    elem = dtype.instance_type
    sig = types.CPointer(elem)(addr, dtype)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.inttoptr(args[0], context.get_value_type(elem).as_pointer())

    return sig, codegen


@_intrinsic
def _as_f64(typingctx: Any, bits: Any) -> Any:
    """An int64's bits as a float64 (how :func:`pack` stores floats)."""
    if not isinstance(bits, types.Integer):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(bits), codegen


@_intrinsic
def _call_job(typingctx: Any, fn: Any, args: Any, k: Any, lo: Any, hi: Any) -> Any:
    """Call the C function at address ``fn`` as ``void(args, k, lo, hi)``, all int64."""
    if not all(isinstance(a, types.Integer) for a in (fn, args, k, lo, hi)):
        return None
    sig = types.none(types.int64, types.int64, types.int64, types.int64, types.int64)

    def codegen(context: Any, builder: Any, signature: Any, a: Any) -> Any:
        i64 = ir.IntType(64)
        fnty = ir.FunctionType(ir.VoidType(), [i64, i64, i64, i64])
        builder.call(builder.inttoptr(a[0], fnty.as_pointer()), list(a[1:]))
        return context.get_dummy_value()

    return sig, codegen


@_intrinsic
def _call_c1(typingctx: Any, fn: Any, arg: Any) -> Any:
    """Call the C function at address ``fn`` as ``int(void *arg)`` (libc's ``sem_wait``)."""
    if not (isinstance(fn, types.Integer) and isinstance(arg, types.Integer)):
        return None

    def codegen(context: Any, builder: Any, signature: Any, a: Any) -> Any:
        i8p = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.IntType(32), [i8p])
        call = builder.call(
            builder.inttoptr(a[0], fnty.as_pointer()), [builder.inttoptr(a[1], i8p)]
        )
        return builder.sext(call, ir.IntType(64))

    return types.int64(types.int64, types.int64), codegen


#: slots of int64 per packed argument: an array's address and up to five sizes
SLOT = 6


@_intrinsic
def _call_c0(typingctx: Any, fn: Any) -> Any:
    """Call the C function at address ``fn`` as ``int(void)`` (libc's ``sched_yield``)."""
    if not isinstance(fn, types.Integer):
        return None

    def codegen(context: Any, builder: Any, signature: Any, a: Any) -> Any:
        fnty = ir.FunctionType(ir.IntType(32), [])
        return builder.sext(
            builder.call(builder.inttoptr(a[0], fnty.as_pointer()), []), ir.IntType(64)
        )

    return types.int64(types.int64), codegen


# ---- reading a packed block in a job: intrinsics, not inlined functions -----------------
# (an inlined function was copied, typed and lowered again at each call site, its array
# reads one by one: a conv job with ten arguments spent a third of its compile there)


def _address(context: Any, builder: Any, ty: Any, value: Any) -> Any:
    """The block's address (int64) from ``value``: an int64 address or the block array."""
    if isinstance(ty, types.Array):
        data = context.make_array(ty)(context, builder, value=value).data
        return builder.ptrtoint(data, ir.IntType(64))
    return context.cast(builder, value, ty, types.int64)


def _slot(builder: Any, addr: Any, j: Any, at: int) -> Any:
    """Word ``at`` of argument ``j``'s slot in the block at ``addr``."""
    i64 = ir.IntType(64)
    base = builder.add(builder.mul(j, ir.Constant(i64, SLOT)), ir.Constant(i64, 1 + at))
    return builder.load(builder.gep(builder.inttoptr(addr, i64.as_pointer()), [base]))


def _array(context: Any, builder: Any, aryty: Any, data: Any, shape: list[Any]) -> Any:
    """A C-contiguous array of type ``aryty`` at address ``data`` (int64) with ``shape``."""
    elem = context.get_data_type(aryty.dtype)
    size = context.get_abi_sizeof(elem)
    strides, step = [], ir.Constant(ir.IntType(64), size)
    for n in reversed(shape):
        strides.insert(0, step)
        step = builder.mul(step, n)
    ary = context.make_array(aryty)(context, builder)
    ptr = builder.inttoptr(data, elem.as_pointer())
    populate_array(ary, data=ptr, shape=shape, strides=strides, itemsize=size, meminfo=None)
    return ary._getvalue()


def _is_block(p: Any) -> bool:
    return isinstance(p, types.Integer) or (
        isinstance(p, types.Array) and p.ndim == 1 and p.dtype == types.int64
    )


@_intrinsic
def block(typingctx: Any, args: Any) -> Any:
    """The packed argument block at address ``args`` (its first slot holds its length)."""
    if not isinstance(args, types.Integer):
        return None
    aryty = types.Array(types.int64, 1, "C")

    def codegen(context: Any, builder: Any, sig: Any, a: Any) -> Any:
        addr = context.cast(builder, a[0], sig.args[0], types.int64)
        n = builder.load(builder.inttoptr(addr, ir.IntType(64).as_pointer()))
        return _array(context, builder, aryty, addr, [n])

    return aryty(args), codegen


@_intrinsic
def integer(typingctx: Any, p: Any, j: Any) -> Any:
    """Integer argument ``j`` of a packed block (:func:`block`'s array or its address)."""
    if not (_is_block(p) and isinstance(j, types.Integer)):
        return None

    def codegen(context: Any, builder: Any, sig: Any, a: Any) -> Any:
        addr = _address(context, builder, sig.args[0], a[0])
        return _slot(builder, addr, context.cast(builder, a[1], sig.args[1], types.int64), 0)

    return types.int64(p, j), codegen


@_intrinsic
def real(typingctx: Any, p: Any, j: Any) -> Any:
    """Float argument ``j`` of a packed block (stored as a float64's bits)."""
    if not (_is_block(p) and isinstance(j, types.Integer)):
        return None

    def codegen(context: Any, builder: Any, sig: Any, a: Any) -> Any:
        addr = _address(context, builder, sig.args[0], a[0])
        j64 = context.cast(builder, a[1], sig.args[1], types.int64)
        return builder.bitcast(_slot(builder, addr, j64, 0), ir.DoubleType())

    return types.float64(p, j), codegen


def _views(ndim: int) -> tuple[Any, Any]:
    """``view(p, j, dtype)``: array argument ``j`` (``ndim`` dimensions) of ``dtype``,
    C-contiguous; ``part(p, j, dtype, k)``: its sub-array ``k`` (``view(p, j, dtype)[k]``)."""

    def view(typingctx: Any, p: Any, j: Any, dtype: Any) -> Any:
        if not (_is_block(p) and isinstance(dtype, types.NumberClass)):
            return None
        aryty = types.Array(dtype.instance_type, ndim, "C")

        def codegen(context: Any, builder: Any, sig: Any, a: Any) -> Any:
            addr = _address(context, builder, sig.args[0], a[0])
            j64 = context.cast(builder, a[1], sig.args[1], types.int64)
            shape = [_slot(builder, addr, j64, 1 + d) for d in range(ndim)]
            return _array(context, builder, aryty, _slot(builder, addr, j64, 0), shape)

        return aryty(p, j, dtype), codegen

    def part(typingctx: Any, p: Any, j: Any, dtype: Any, k: Any) -> Any:
        if not (_is_block(p) and isinstance(dtype, types.NumberClass)):
            return None
        aryty = types.Array(dtype.instance_type, ndim - 1, "C")

        def codegen(context: Any, builder: Any, sig: Any, a: Any) -> Any:
            addr = _address(context, builder, sig.args[0], a[0])
            j64 = context.cast(builder, a[1], sig.args[1], types.int64)
            shape = [_slot(builder, addr, j64, 1 + d) for d in range(1, ndim)]
            size = context.get_abi_sizeof(context.get_data_type(aryty.dtype))
            count = ir.Constant(ir.IntType(64), size)
            for n in shape:
                count = builder.mul(count, n)
            k64 = context.cast(builder, a[3], sig.args[3], types.int64)
            data = builder.add(_slot(builder, addr, j64, 0), builder.mul(k64, count))
            return _array(context, builder, aryty, data, shape)

        return aryty(p, j, dtype, k), codegen

    view.__name__, part.__name__ = f"view{ndim}", f"part{ndim}"
    return _intrinsic(view), _intrinsic(part)


view1, _part1 = _views(1)
view2, part2 = _views(2)
view3, part3 = _views(3)
view4, part4 = _views(4)
view5, part5 = _views(5)


def _data_offset() -> int | None:
    """Where an ndarray object keeps its data pointer, in bytes from the object's address:
    right after the object header (NumPy's ``PyArrayObject_fields``, ``char *data`` after
    ``PyObject_HEAD``), checked here against ``__array_interface__`` on arrays of several
    kinds; None when it does not hold (then :func:`pack` asks ``__array_interface__``)."""
    off = object.__basicsize__
    probes = (np.zeros(3, np.float32), np.zeros((2, 5), np.int64)[1:], np.empty(0), np.ones(7))
    for a in probes:
        if ctypes.c_int64.from_address(id(a) + off).value != a.__array_interface__["data"][0]:
            return None
    return off


_DATA_OFFSET = _data_offset()
_INT64_AT = ctypes.c_int64.from_address
_F64 = struct.Struct("<d")
_I64 = struct.Struct("<q")


def _data_address(a: np.ndarray) -> int:
    """``a``'s data pointer: read from the object (~0.1 us) where :func:`_data_offset` found
    where it lies, else through ``__array_interface__`` (~1-3 us: a job's arguments
    took 10 us to pack that way, a tenth of a small LeNet-5 convolution's call)."""
    if _DATA_OFFSET is None:
        return int(a.__array_interface__["data"][0])
    return _INT64_AT(id(a) + _DATA_OFFSET).value


def pack(*items: Any, strict: bool = True) -> np.ndarray | None:
    """Arguments for a job function: slot 0 holds the block's length, then ``SLOT`` int64
    per argument: a C-contiguous array's address and sizes, an int, a float's bits. The
    arrays must stay alive until :func:`run` returns (the caller holds them). An array that
    is not C-contiguous (or over 5-d) raises ValueError, or with ``strict=False`` gives None
    (the caller then runs the kernel on :mod:`._rows`)."""
    vals = [0] * (1 + SLOT * len(items))
    vals[0] = len(vals)
    i = 1
    for j, a in enumerate(items):
        if isinstance(a, np.ndarray):
            if not a.flags.c_contiguous or a.ndim > SLOT - 1:
                if not strict:
                    return None
                raise ValueError(
                    f"pack: argument {j} expected a C-contiguous array of at most "
                    f"{SLOT - 1} dimensions, got shape {a.shape} strides {a.strides}"
                )
            vals[i] = _data_address(a)
            vals[i + 1 : i + 1 + a.ndim] = a.shape
        elif isinstance(a, (float, np.floating)):
            vals[i] = _I64.unpack(_F64.pack(float(a)))[0]
        else:
            vals[i] = int(a)
        i += SLOT
    return np.array(vals, np.int64)


_CFUNCS: dict[Any, Any] = {}
_OPTIONS: dict[Any, dict[str, Any]] = {}
JobFunction = Callable[[int, int, int, int], None]


def options(**numba_options: Any) -> Callable[[JobFunction], JobFunction]:
    """Decorator: compile this job function with these Numba options (``fastmath``,
    ``error_model``): those of the kernels it inlines (``inline="always"``), whose code
    takes the flags of the function it is inlined into."""

    def mark(py_func: JobFunction) -> JobFunction:
        _OPTIONS[py_func] = numba_options
        return py_func

    return mark


def inlining(jit: dict[str, Any]) -> Callable[[JobFunction], JobFunction]:
    """:func:`options` for a job function that inlines kernels compiled with ``jit`` (a
    ``numba.jit`` options dict): their fast-math flags and error model."""
    return options(**{k: v for k, v in jit.items() if k in ("fastmath", "error_model")})


def job(py_func: JobFunction) -> int:
    """The C address of ``py_func`` (``(args, k, lo, hi)``, all int64) compiled as a cached
    ``cfunc`` (with the :func:`options` it was given); compiled (or loaded) on first use,
    not at import."""
    fn = _CFUNCS.get(py_func)
    if fn is None:
        opts = _OPTIONS.get(py_func, {})
        fn = _CFUNCS[py_func] = numba.cfunc(_JOB_SIG, cache=True, **opts)(py_func)
    return int(fn.address)


# ---- the worker loop and the caller's part --------------------------------------------
# (``_spin``'s intrinsics, not its jitted functions: called from jitted code with constant
# slots, those compiled once per slot as a literal, 17 extra kernels on a cold cache)


# (``_chunks`` and ``_linger`` inlined into their callers: each compiled apart was linked
# into, and optimised again in, every caller)


@numba.njit(cache=True, nogil=True, inline="always")
def _chunks(job: Any, k: int) -> int:  # pragma: no cover - compiled
    """Claims and runs chunks of ``job`` as thread ``k`` until none is left; how many ran."""
    n, fn, args = job[_N], job[_FN], job[_ARGS]
    ran = 0
    c = _spin._fetch_add(job, _NEXT, 1)
    while c < n:
        _call_job(fn, args, k, job[_BOUNDS + c], job[_BOUNDS + c + 1])
        ran += 1
        c_next = _spin._fetch_add(job, _NEXT, 1)  # claimed before this one is reported
        _spin._fetch_add(job, _FINISHED, 1)
        c = c_next
    return ran


@numba.njit(cache=True, nogil=True, inline="always")
def _linger(ctl: Any, seq: int, sched_yield: int) -> bool:  # pragma: no cover - compiled
    """Whether post ``seq`` came within ``ctl[_LINGER]`` spin tries, yielding the core
    every ``ctl[_SLICE]`` tries (~20 us): a spin that a busy core's other tasks (or the
    caller, put on the same core) are waiting for gives way to them."""
    left, piece = _spin._load(ctl, _LINGER), max(1, _spin._load(ctl, _SLICE))
    while left > 0:
        for _ in range(min(piece, left)):
            if _spin._load(ctl, _POSTED) == seq:
                return True
            _spin._pause()
        left -= piece
        if left > 0:
            _call_c0(sched_yield)
    return False


@numba.njit(cache=True, nogil=True)
def _serve(ctl: Any, sem: int, sem_wait: int, sched_yield: int) -> None:  # pragma: no cover
    """A worker's whole life, without the GIL: wait for post ``seq`` (spin up to
    ``ctl[_LINGER]`` tries, then sleep on the semaphore), run the job's chunks, go idle.

    No post is lost: the worker waits on the semaphore only after storing ``_SLEEPING = 1``
    and then loading ``_POSTED != seq``; the poster (:func:`_post`) stores ``_POSTED`` and
    then loads ``_SLEEPING``, all sequentially consistent (as in :mod:`._rows`). A job
    block stays alive while the worker may read it: its worker holds the last two it got
    (a third is posted only after the worker went idle from the second)."""
    seq = 0
    while True:
        seq += 1
        if not _linger(ctl, seq, sched_yield):
            while _spin._load(ctl, _POSTED) != seq:
                _spin._store(ctl, _SLEEPING, 1)
                if _spin._load(ctl, _POSTED) != seq:
                    _call_c1(sem_wait, sem)  # EINTR or a spare permit: loop and re-check
                _spin._store(ctl, _SLEEPING, 0)
        addr = _spin._load(ctl, _JOB)
        if addr == 0:
            return
        n = numba.carray(_pointer(addr, np.int64), (_BOUNDS,))[_N]
        job = numba.carray(_pointer(addr, np.int64), (_BOUNDS + n + 1,))
        k = _spin._load(ctl, _K)
        ctl[_STARTS] += 1
        ran = _chunks(job, k)
        ctl[_CHUNKS] += ran
        _spin._store(ctl, _IDLE, 1)


@numba.njit(cache=True)
def _try_take(ctl: Any) -> bool:  # pragma: no cover - compiled
    """Whether the worker was idle, marking it taken. Compiled without ``nogil``: called
    with the GIL held, the check and the store are one step for every Python thread."""
    if _spin._load(ctl, _IDLE) != 1:
        return False
    _spin._store(ctl, _IDLE, 0)
    return True


@numba.njit(cache=True)
def _post(ctl: Any, addr: int, k: int, seq: int, sem: int, sem_post: int) -> None:
    """Posts job block ``addr`` as thread ``k`` to a worker taken by :func:`_try_take`,
    waking it if it sleeps."""
    _spin._store(ctl, _JOB, addr)
    _spin._store(ctl, _K, k)
    _spin._store(ctl, _POSTED, seq)
    if _spin._load(ctl, _SLEEPING):
        _call_c1(sem_post, sem)


@numba.njit(cache=True, nogil=True)
def _participate(job: Any, tries: int) -> bool:  # pragma: no cover - compiled
    """The caller's chunks, then a spin until every chunk finished (False: not within
    ``tries`` loads; the caller then polls with short sleeps)."""
    _chunks(job, np.int64(0))  # thread 0, an int64 (a literal would compile apart)
    n = job[_N]
    for _ in range(tries):
        if _spin._load(job, _FINISHED) == n:
            return True
        _spin._pause()
    return False


class _Worker:
    """A daemon thread parked in :func:`_serve`; its control block and semaphore are
    allocated with libc's malloc and never freed (the thread may still spin on them while
    the interpreter shuts down)."""

    def __init__(self) -> None:
        libc = _libc()
        assert libc is not None
        mem = libc.malloc(4 * 64)
        ctypes.memset(mem, 0, 4 * 64)
        mem += -mem % 64  # the control block on cache lines of its own, then the semaphore
        self.ctl = np.frombuffer((ctypes.c_int64 * 16).from_address(mem), np.int64)
        self.sem = mem + 128
        if libc.sem_init(ctypes.c_void_p(self.sem), 0, 0) != 0:
            raise OSError("sem_init failed")
        self.ctl[_IDLE] = 1
        self.ctl[_LINGER] = _linger_tries()
        self.ctl[_SLICE] = _linger_tries(YIELD_EVERY_US)
        self.seq = 0
        self.jobs: list[np.ndarray] = []
        args = (self.ctl, self.sem, _addr(libc.sem_wait), _addr(libc.sched_yield))
        threading.Thread(target=_serve, args=args, name="sporeling-jobs", daemon=True).start()

    def post(self, job: np.ndarray, k: int) -> None:
        self.seq += 1
        self.jobs = [*self.jobs[-1:], job]
        _post(self.ctl, job.ctypes.data, k, self.seq, self.sem, _addr(_libc().sem_post))


_LIBC: list[Any] = []


def _libc() -> Any:
    """glibc through ctypes (malloc, sem_init/sem_wait/sem_post, sched_yield), or None
    elsewhere."""
    if not _LIBC:
        lib = None
        if sys.platform.startswith("linux"):
            try:
                lib = ctypes.CDLL(None)
                lib.malloc.restype = ctypes.c_size_t
                lib.malloc.argtypes = [ctypes.c_size_t]
                lib.sem_init.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint]
                lib.sem_wait, lib.sem_post, lib.sched_yield  # noqa: B018 - present?
            except (OSError, AttributeError):
                lib = None
        _LIBC.append(lib)
    return _LIBC[0]


def _addr(fn: Any) -> int:
    return int(ctypes.cast(fn, ctypes.c_void_p).value or 0)


_tries_per_us: list[float] = []


def _linger_tries(us: float | None = None) -> int:
    """``us`` (default ``LINGER_US``) as a number of ``_spin.spin_until`` tries (the rate
    calibrated once)."""
    us = LINGER_US if us is None else us
    if us <= 0:
        return 0
    if not _tries_per_us:
        never = np.zeros(1, np.int64)
        n, best = 20_000, float("inf")
        _spin.spin_until(never, 0, -1, 100)
        for _ in range(5):
            t0 = time.perf_counter()
            _spin.spin_until(never, 0, -1, n)
            best = min(best, time.perf_counter() - t0)
        _tries_per_us.append(n / max(best * 1e6, 1e-3))
    return max(1, int(us * _tries_per_us[0]))


_ALL: list[_Worker] = []
_CPUS = os.cpu_count() or 1


def available() -> bool:
    """Whether jobs can run here: enabled, glibc found, more than one thread set."""
    return ENABLED and max_blocks() > 1 and _libc() is not None


def _take(n: int) -> list[_Worker]:
    """Up to ``n`` idle workers, taken (new ones while fewer than the CPUs less one exist)."""
    taken = []
    for w in _ALL:
        if len(taken) == n:
            break
        if _try_take(w.ctl):
            taken.append(w)
    while len(taken) < n and len(_ALL) < max(1, _CPUS - 1):
        w = _Worker()
        _try_take(w.ctl)
        _ALL.append(w)
        taken.append(w)
    return taken


def _forget_workers() -> None:  # a forked child has none of the parent's threads
    _ALL.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_workers)


def run(fn: int, args: np.ndarray, rows: int, blocks: int, chunks: int | None = None) -> None:
    """Call job function ``fn`` (from :func:`job`) as ``fn(args, k, lo, hi)`` for ``chunks``
    contiguous ranges of ``rows`` (default twice ``blocks``), on this thread (``k = 0``)
    and up to ``blocks - 1`` idle workers (``k`` says which thread runs a call: ranges one
    thread runs may share its buffers). Returns once every range ran."""
    n = max(1, min(rows, chunks if chunks is not None else 2 * blocks))
    job_ = np.empty(_BOUNDS + n + 1, np.int64)
    job_[_FN], job_[_ARGS], job_[_N], job_[_NEXT], job_[_FINISHED] = fn, args.ctypes.data, n, 0, 0
    job_[_BOUNDS:] = rows * np.arange(n + 1, dtype=np.int64) // n
    if blocks > 1 and n > 1:
        for k, w in enumerate(_take(blocks - 1), start=1):
            w.post(job_, k)
    if not _participate(job_, SPIN_TRIES):
        while _spin.load(job_, _FINISHED) != n:
            time.sleep(20e-6)


def stats() -> tuple[int, int]:
    """Jobs the workers started and chunks they ran, since the process began."""
    return (sum(int(w.ctl[_STARTS]) for w in _ALL), sum(int(w.ctl[_CHUNKS]) for w in _ALL))
