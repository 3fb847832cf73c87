"""Atomic loads and stores on int64 flags, and a GIL-free spin-wait on them.

The row-block workers (:mod:`._rows`) hand work over through such flags instead of only
through OS locks: on this project's VM a thread woken from a futex takes 20-50 us to run,
and for tens of milliseconds after an idle spell much longer, while a thread spinning on a
flag sees a store within a microsecond. Stores and loads are sequentially consistent, so
the "post a job, then check whether the worker sleeps" / "announce sleep, then re-check for
a job" pairs cannot both miss each other.
"""

from __future__ import annotations

import platform
from typing import Any

import numba
from llvmlite import ir  # type: ignore[import-untyped]
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["load", "store", "fetch_add", "spin_until"]

# numba's stubs type an intrinsic as a call taking ``typingctx``; called from jitted code
# it takes only the arguments
_intrinsic: Any = intrinsic


def _int64_flags(flags: Any) -> bool:
    return isinstance(flags, types.Array) and flags.dtype == types.int64 and flags.ndim == 1


def _flag_pointer(context: Any, builder: Any, flags: Any, args: Any) -> Any:
    """The address of ``flags[i]`` for an intrinsic called as ``(flags, i, ...)``."""
    arr = context.make_array(flags)(context, builder, args[0])
    return cgutils.get_item_pointer(context, builder, flags, arr, [args[1]])


@_intrinsic
def _load(typingctx: Any, flags: Any, i: Any) -> Any:
    if not (_int64_flags(flags) and isinstance(i, types.Integer)):
        return None
    sig = types.int64(flags, i)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        ptr = _flag_pointer(context, builder, flags, args)
        return builder.load_atomic(ptr, "seq_cst", 8)

    return sig, codegen


@_intrinsic
def _store(typingctx: Any, flags: Any, i: Any, value: Any) -> Any:
    if not (_int64_flags(flags) and isinstance(i, types.Integer)):
        return None
    sig = types.none(flags, i, types.int64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        ptr = _flag_pointer(context, builder, flags, args)
        builder.store_atomic(args[2], ptr, "seq_cst", 8)
        return context.get_dummy_value()

    return sig, codegen


_X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")


@_intrinsic
def _pause(typingctx: Any) -> Any:
    """x86's ``pause`` (a spin-wait hint: the loop yields the core's shared resources to a
    sibling hyperthread and leaves the memory-order pipeline cheaply); nothing elsewhere."""
    sig = types.none()

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        if _X86:
            fnty = ir.FunctionType(ir.VoidType(), [])
            fn = builder.module.globals.get("llvm.x86.sse2.pause") or ir.Function(
                builder.module, fnty, "llvm.x86.sse2.pause"
            )
            builder.call(fn, [])
        return context.get_dummy_value()

    return sig, codegen


@_intrinsic
def _fetch_add(typingctx: Any, flags: Any, i: Any, value: Any) -> Any:
    if not (_int64_flags(flags) and isinstance(i, types.Integer)):
        return None
    sig = types.int64(flags, i, types.int64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        ptr = _flag_pointer(context, builder, flags, args)
        return builder.atomic_rmw("add", ptr, args[2], "seq_cst")

    return sig, codegen


@numba.njit(cache=True, nogil=True)
def fetch_add(flags: Any, i: int, value: int) -> int:  # pragma: no cover - compiled
    """``flags[i] += value`` atomically; returns the value before the add."""
    return _fetch_add(flags, i, value)


@numba.njit(cache=True, nogil=True)
def load(flags: Any, i: int) -> int:  # pragma: no cover - compiled
    """``flags[i]``, atomically."""
    return _load(flags, i)


@numba.njit(cache=True, nogil=True)
def store(flags: Any, i: int, value: int) -> None:  # pragma: no cover - compiled
    """``flags[i] = value``, atomically (a full barrier on x86)."""
    _store(flags, i, value)


@numba.njit(cache=True, nogil=True)
def spin_until(flags: Any, i: int, value: int, tries: int) -> bool:  # pragma: no cover
    """Whether ``flags[i]`` became ``value`` within ``tries`` atomic loads (GIL released)."""
    for _ in range(tries):  # noqa: SIM110 - a plain loop compiles to the tightest spin
        if _load(flags, i) == value:
            return True
        _pause()
    return False
