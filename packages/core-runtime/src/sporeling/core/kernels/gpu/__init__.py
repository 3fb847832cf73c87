"""CuPy GPU kernels, one module per op family; every module imports without CuPy."""
