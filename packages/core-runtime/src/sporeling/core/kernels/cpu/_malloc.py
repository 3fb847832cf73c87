"""glibc's malloc kept from handing large freed blocks back to the kernel between steps.

An eager training step allocates and frees hundreds of arrays of 0.1-4 MB (activations,
gradients). glibc serves such blocks with ``mmap`` or trims them off the heap top on
``free``, so the next step's arrays start as fresh pages and every 4 KB page faults on its
first write. A ResNet-20 step (batch 64, 1 thread) took ~18,000 minor faults and 45-55 ms
of system time (of ~320 ms); with a fixed mmap threshold of 32 MiB and a trim threshold
of 256 MiB it takes ~260 faults and ~5 ms, and the step ~280-300 ms (load average ~4).
Freed memory up to the trim threshold stays in the process (RSS does not fall back after
a peak by more than what lies above it), as with PyTorch's or jemalloc's caching.

Applied when the core is imported (the end of this module), on glibc only.
``SPORELING_MALLOC=default`` leaves malloc as it is; so does any of glibc's own
``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_`` or ``MALLOC_TOP_PAD_`` in the
environment (the user's choice wins).
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Mapping

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "wanted", "tune"]

#: glibc's ``mallopt`` parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: blocks above this still come from ``mmap`` (glibc's largest allowed value on 64-bit)
MMAP_THRESHOLD = 32 << 20
#: free memory at the heap top kept for reuse before glibc trims it
TRIM_THRESHOLD = 256 << 20
_GLIBC_VARS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_")

#: whether :func:`tune` changed malloc's settings in this process
applied = False


def wanted(environ: Mapping[str, str]) -> bool:
    """Whether to tune malloc under ``environ``; raises on an unknown ``SPORELING_MALLOC``."""
    mode = environ.get("SPORELING_MALLOC", "retain")
    if mode not in ("retain", "default"):
        raise ValueError(
            f"SPORELING_MALLOC={mode!r}: expected 'retain' (keep freed blocks for reuse, "
            "the default) or 'default' (glibc's own settings)"
        )
    return mode == "retain" and not any(v in environ for v in _GLIBC_VARS)


def tune() -> bool:
    """Apply the settings above once, on Linux with glibc; returns whether they are applied."""
    global applied
    if applied or not sys.platform.startswith("linux") or not wanted(os.environ):
        return applied
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018  (absent on musl and other libcs)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    # mallopt returns 1 on success; a fixed threshold also turns off glibc's dynamic one
    applied = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
    return applied


tune()
