"""Numba kernels of the vision transforms (serial, cached, GIL released)."""
