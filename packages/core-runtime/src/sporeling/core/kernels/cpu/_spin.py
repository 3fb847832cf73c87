"""Atomic loads and stores on int64 flags, and a GIL-free spin-wait on them.

The row-block workers (:mod:`._rows`) hand work over through such flags instead of only
through OS locks: on this project's VM a thread woken from a futex takes 20-50 us to run,
and for tens of milliseconds after an idle spell much longer, while a thread spinning on a
flag sees a store within a microsecond. Stores and loads are sequentially consistent, so
the "post a job, then check whether the worker sleeps" / "announce sleep, then re-check for
a job" pairs cannot both miss each other.
"""

from __future__ import annotations

from typing import Any

import numba
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["load", "store", "spin_until", "spin_until_or"]

# numba's stubs type an intrinsic as a call taking ``typingctx``; called from jitted code
# it takes only the arguments
_intrinsic: Any = intrinsic


def _int64_flags(flags: Any) -> bool:
    return isinstance(flags, types.Array) and flags.dtype == types.int64 and flags.ndim == 1


@_intrinsic
def _load(typingctx: Any, flags: Any, i: Any) -> Any:
    if not (_int64_flags(flags) and isinstance(i, types.Integer)):
        return None
    sig = types.int64(flags, i)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        arr = context.make_array(flags)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, flags, arr, [args[1]])
        return builder.load_atomic(ptr, "seq_cst", 8)

    return sig, codegen


@_intrinsic
def _store(typingctx: Any, flags: Any, i: Any, value: Any) -> Any:
    if not (_int64_flags(flags) and isinstance(i, types.Integer)):
        return None
    sig = types.none(flags, i, types.int64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        arr = context.make_array(flags)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, flags, arr, [args[1]])
        builder.store_atomic(args[2], ptr, "seq_cst", 8)
        return context.get_dummy_value()

    return sig, codegen


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
    return False


@numba.njit(cache=True, nogil=True)
def spin_until_or(flags: Any, i: int, value: int, j: int, tries: int) -> bool:  # pragma: no cover
    """Like :func:`spin_until`, but giving up (False) as soon as ``flags[j]`` is nonzero."""
    for _ in range(tries):
        if _load(flags, i) == value:
            return True
        if _load(flags, j) != 0:
            return False
    return False
