"""Output arrays placed so that streaming kernels do not hit 4K aliasing.

A store and a later load whose addresses agree in their low 12 bits look dependent to the
CPU (Intel's "4K aliasing"): the load waits for the store. Large NumPy arrays come from
glibc at nearly the same offset within a 4 KB page, so a fresh output often starts a few
bytes *after* an input modulo 4 KB; then every vector store to ``out[i]`` stalls the loads
of ``in[i + k]`` that follow it. In a LeNet-5 step ReLU's gradient (64x6x28x28 float32,
``g`` at page offset 3504, ``out`` at 3520) ran 1.5 ms against 0.17 ms for the same call
with another output buffer. :func:`empty_apart` returns an output that starts at least
:data:`GAP` bytes *before* (modulo 4 KB) every input it is given, at the cost of one page.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._jobs import _data_address

__all__ = ["GAP", "MIN_BYTES", "empty_apart"]

PAGE = 4096
#: the least distance kept between the output and each input, in the low 12 bits: the loads
#: a vectorised loop has in flight ahead of its stores (a few 64-byte vectors) stay clear
GAP = 512
#: smaller outputs are allocated as usual (the stalls only add up over long streams)
MIN_BYTES = 1 << 16


def _clear(start: int, inputs: tuple[int, ...]) -> bool:
    # an output start ``d`` bytes after an input (mod 4 KB) stalls when 0 <= d < GAP
    return all((start - a) % PAGE >= GAP for a in inputs)


def empty_apart(shape: Any, dtype: Any, *inputs: np.ndarray) -> np.ndarray:
    """``np.empty(shape, dtype)``, C-contiguous, placed clear of the ``inputs``' page
    offsets (see the module docstring); a plain ``np.empty`` below :data:`MIN_BYTES`.

    The first clear start is either the first aligned one or the first aligned one past an
    input's window, so only those few are tried (stepping 64 bytes at a time from the
    first had taken up to 64 tests, ~0.1 ms a call in a LeNet-5 step under cProfile)."""
    dt = np.dtype(dtype)
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    nbytes = math.prod(shape) * dt.itemsize
    if nbytes < MIN_BYTES or not inputs:
        return np.empty(shape, dt)
    buf = np.empty(nbytes + PAGE, np.uint8)
    base = _data_address(buf)  # (``ctypes.data`` took ~1.7 us an array)
    addrs = tuple(_data_address(a) for a in inputs)
    align = max(64, dt.itemsize)
    first = (-base) % align
    best = None
    for cand in (first, *((a + GAP - base) % PAGE for a in addrs)):
        off = cand + (-(base + cand)) % align  # the first aligned offset from cand
        if off + nbytes <= buf.size and _clear(base + off, addrs):
            best = off if best is None else min(best, off)
    off = first if best is None else best  # None cannot happen with < 8 inputs
    return buf[off : off + nbytes].view(dt).reshape(shape)
