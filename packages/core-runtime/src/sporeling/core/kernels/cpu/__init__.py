"""Numba CPU kernels, one module per op family; settings in :mod:`._config`."""
