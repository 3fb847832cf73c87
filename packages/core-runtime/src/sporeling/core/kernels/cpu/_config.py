"""Numba settings shared by every CPU kernel.

``FASTMATH`` allows reassociation and contraction (SIMD-friendly reductions) but never
assumes away NaN or infinity, so ``isnan``-style behaviour stays exact. Serial kernels are
cached on disk (``cache=True``); parallel ones are not (Numba cannot reliably cache them).
Use them with ``numba.njit`` (or ``numba.jit``, which compiles in nopython mode by default).
"""

from typing import Any

FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}
JIT_SERIAL: dict[str, Any] = {"cache": True, "fastmath": FASTMATH}
JIT_PARALLEL: dict[str, Any] = {"cache": False, "parallel": True, "fastmath": FASTMATH}
