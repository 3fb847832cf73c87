"""Device kernels: Numba for the CPU (``kernels.cpu``), CuPy for the GPU (``kernels.gpu``).

Importing this package installs :mod:`.numba_cache` first, before any kernel is defined, so
a cached kernel is recompiled when any kernel file of its package changed."""

from . import numba_cache

numba_cache.install()
