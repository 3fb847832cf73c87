"""Numba settings shared by every CPU kernel.

``FASTMATH`` allows reassociation and contraction (SIMD-friendly reductions) but never
assumes away NaN or infinity, so ``isnan``-style behaviour stays exact. Serial kernels are
cached on disk (``cache=True``); parallel ones are not (Numba cannot reliably cache them).
Use them with ``numba.njit`` (or ``numba.jit``, which compiles in nopython mode by default).
"""

from typing import Any

FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}
#: ``error_model="numpy"``: a float division by zero gives inf/nan as in NumPy instead of a
#: Python ZeroDivisionError check, whose branch stops loops from vectorising.
JIT_SERIAL: dict[str, Any] = {"cache": True, "fastmath": FASTMATH, "error_model": "numpy"}
JIT_PARALLEL: dict[str, Any] = {
    "cache": False,
    "parallel": True,
    "fastmath": FASTMATH,
    "error_model": "numpy",
}
