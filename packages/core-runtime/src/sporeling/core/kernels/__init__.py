"""Device kernels: Numba for the CPU (``kernels.cpu``), CuPy for the GPU (``kernels.gpu``)."""
