"""Numba settings shared by every CPU kernel.

``FASTMATH`` allows reassociation and contraction (SIMD-friendly reductions) but never
assumes away NaN or infinity, so ``isnan``-style behaviour stays exact. Kernels are serial
and cached on disk (``cache=True``; Numba cannot reliably cache ``parallel=True`` ones); large
inputs run them on row blocks across threads (:mod:`._rows`). Use them with ``numba.njit``
(or ``numba.jit``, which compiles in nopython mode by default).
"""

from typing import Any

FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}
#: ``error_model="numpy"``: a float division by zero gives inf/nan as in NumPy instead of a
#: Python ZeroDivisionError check, whose branch stops loops from vectorising.
JIT_SERIAL: dict[str, Any] = {"cache": True, "fastmath": FASTMATH, "error_model": "numpy"}
