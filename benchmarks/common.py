"""What every benchmark module shares: the device context, tensor factories, thread info."""

from __future__ import annotations

import ctypes
import os
import platform
from pathlib import Path
from typing import Any

import numpy as np


def numpy_blas_threads() -> tuple[int, str]:
    """Threads NumPy's BLAS uses, and how that was found out."""
    try:
        from threadpoolctl import threadpool_info

        for info in threadpool_info():
            if info.get("user_api") == "blas" and "numpy" in info.get("filepath", ""):
                return int(info["num_threads"]), f"threadpoolctl ({info.get('internal_api')})"
    except ImportError:
        pass
    # NumPy's wheels ship OpenBLAS under numpy.libs/ (scipy-openblas symbol names); the
    # library is already loaded, so CDLL returns the same handle.
    libs = Path(np.__file__).parent.parent / "numpy.libs"
    for lib in sorted(libs.glob("*openblas*.so*")):
        try:
            dll = ctypes.CDLL(str(lib))
        except OSError:
            continue
        for sym in (
            "scipy_openblas_get_num_threads64_",
            "scipy_openblas_get_num_threads",
            "openblas_get_num_threads64_",
            "openblas_get_num_threads",
        ):
            fn = getattr(dll, sym, None)
            if fn is not None:
                fn.restype = ctypes.c_int
                return int(fn()), f"{lib.name}:{sym}"
    return os.cpu_count() or 1, "os.cpu_count() (BLAS not identified)"


def blas_kernels(torch: Any = None) -> str:
    """Which BLAS each side multiplies with, and NumPy's OpenBLAS kernels: the ratios of the
    product-heavy cases depend on them more than on anything in the core (on an AMD Zen 5
    PyTorch's MKL runs AVX2 code at half the speed of OpenBLAS's SkylakeX kernels, on an
    Intel Xeon it was 10-25% ahead; ``OPENBLAS_CORETYPE=Haswell`` halves OpenBLAS's on
    either). Empty parts are left out when unknown."""
    parts = []
    try:
        from threadpoolctl import threadpool_info

        for info in threadpool_info():
            if info.get("user_api") == "blas" and "numpy" in info.get("filepath", ""):
                arch = info.get("architecture")
                parts.append(
                    f"NumPy {info.get('internal_api')} {info.get('version')}"
                    + (f" ({arch} kernels)" if arch else "")
                )
                break
    except ImportError:
        pass
    core = os.environ.get("OPENBLAS_CORETYPE")
    if core:
        parts.append(f"OPENBLAS_CORETYPE={core}")
    if torch is not None:
        show = torch.__config__.show()
        if "BLAS_INFO=" in show:
            parts.append("PyTorch " + show.split("BLAS_INFO=", 1)[1].split(",", 1)[0].strip())
    return ", ".join(parts) or "unknown"


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


class Context:
    """The device pair under test and factories that build the same data for both sides."""

    def __init__(self, device: str, quick: bool) -> None:
        import torch

        from sporeling import core

        core.set_context(enable_graph_kernel=True)  # graph numbers are measured with fusion
        self.core = core
        self.ops = core.ops
        self.torch = torch
        self.device = device.upper()  # Sporeling's device target: "CPU" or "GPU"
        self.quick = quick
        cuda = self.device == "GPU" and torch.cuda.is_available()
        self.torch_device = torch.device("cuda" if cuda else "cpu")
        self._cupy: Any = None
        if self.device == "GPU":
            import cupy

            self._cupy = cupy

    def rng(self, seed: int = 0) -> np.random.Generator:
        return np.random.default_rng(seed)

    def sp(self, arr: np.ndarray, requires_grad: bool = False) -> Any:
        """A Sporeling tensor holding ``arr`` on the device under test."""
        t = self.core.Tensor(np.ascontiguousarray(arr), device=self.device)
        t.requires_grad = requires_grad
        return t

    def sp_param(self, arr: np.ndarray, name: str) -> Any:
        return self.core.Parameter(np.ascontiguousarray(arr), name=name, device=self.device)

    def th(self, arr: np.ndarray, requires_grad: bool = False) -> Any:
        """A PyTorch tensor holding a copy of ``arr`` on the peer's device."""
        t = self.torch.tensor(np.ascontiguousarray(arr), device=self.torch_device)
        return t.requires_grad_(requires_grad)

    def sync(self) -> None:
        """Wait for queued GPU work on both sides (a no-op on CPU)."""
        if self._cupy is not None:
            self._cupy.cuda.runtime.deviceSynchronize()
        if self.torch_device.type == "cuda":
            self.torch.cuda.synchronize()
