"""Devices and array libraries: the only module that knows NumPy from CuPy.

A :class:`Device` pairs a device kind (``"cpu"`` or ``"gpu"``) with the array module
that holds its data. The GPU device normally uses CuPy; with ``SPORELING_GPU_STANDIN=1``
it uses NumPy instead, so the array-library-generic GPU code paths run (and are tested)
on machines without a GPU. Only CuPy-specific kernels then remain for a real GPU.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy

__all__ = [
    "Device",
    "CPU",
    "get_device",
    "device_of",
    "gpu_available",
    "require_cupy",
    "is_host",
    "scatter_at",
]


def _cpu_target() -> str:
    return "CPU"


#: the context's ``device_target`` (where tensors go when no device is given); context.py
#: points this at its setting when it is imported (it imports this module, not the reverse)
default_target: Callable[[], str] = _cpu_target


class Device:
    """A place where tensors live: its kind, its array module and a display name."""

    __slots__ = ("kind", "xp", "standin")

    def __init__(self, kind: str, xp: ModuleType, standin: bool = False) -> None:
        self.kind = kind
        self.xp = xp
        self.standin = standin

    @property
    def name(self) -> str:
        """The MindSpore-style device target name: ``"CPU"`` or ``"GPU"``."""
        return self.kind.upper()

    def asarray(self, data: Any, dtype: Any = None) -> Any:
        """Copy or move ``data`` (any array-like, NumPy or CuPy) onto this device."""
        if self.xp is numpy:
            if hasattr(data, "get") and not isinstance(data, numpy.ndarray):
                data = data.get()  # CuPy -> host
            return numpy.asarray(data, dtype=dtype)
        return self.xp.asarray(data, dtype=dtype)

    def __repr__(self) -> str:
        return f"Device({self.name}{', stand-in' if self.standin else ''})"


CPU = Device("cpu", numpy)
_gpu: Device | None = None


def require_cupy() -> ModuleType:
    """Import CuPy or explain which extra provides it."""
    try:
        import cupy
    except ImportError as exc:  # pragma: no cover - depends on the machine
        raise RuntimeError(
            "device_target='GPU' needs CuPy, which is not installed: "
            "pip install 'sporeling-core-runtime[gpu]' "
            "(or set SPORELING_GPU_STANDIN=1 to run the GPU code path over NumPy for testing)"
        ) from exc
    return cupy


def _standin_requested() -> bool:
    return os.environ.get("SPORELING_GPU_STANDIN", "") not in ("", "0")


def gpu_device() -> Device:
    """The GPU device (created on first use so that CuPy stays optional)."""
    global _gpu
    if _gpu is None:
        if _standin_requested():
            _gpu = Device("gpu", numpy, standin=True)
        else:
            _gpu = Device("gpu", require_cupy())
    return _gpu


def gpu_available() -> bool:
    """True when CuPy imports and sees at least one CUDA device."""
    try:
        import cupy

        return bool(cupy.cuda.runtime.getDeviceCount() > 0)
    except Exception:
        return False


def get_device(target: str | Device | None) -> Device:
    """Resolve ``"CPU"``/``"GPU"`` (any case) or a :class:`Device` to a device."""
    if isinstance(target, Device):
        return target
    if target is None:
        target = default_target()
    name = str(target).upper()
    if name == "CPU":
        return CPU
    if name in ("GPU", "CUDA"):
        return gpu_device()
    raise ValueError(f"device_target must be 'CPU' or 'GPU', got {target!r}")


def device_of(array: Any) -> Device:
    """The device an array lives on (NumPy arrays are on the CPU)."""
    if isinstance(array, numpy.ndarray) or numpy.isscalar(array):
        return CPU
    return gpu_device()


def is_host(xp: Any) -> bool:
    """True when ``xp`` is NumPy: arrays in host memory (the CPU, or the GPU stand-in), where
    the CPU kernels (Numba, BLAS) and NumPy-only functions apply; False for CuPy."""
    return xp is numpy


_UFUNCS = {"add": numpy.add, "sub": numpy.subtract, "max": numpy.maximum, "min": numpy.minimum}


def scatter_at(xp: Any, op: str, out: Any, where: Any, values: Any) -> None:
    """Unbuffered ``out[where] (op)= values`` in place, every repeated index counting: NumPy's
    ``ufunc.at`` or CuPy's ``cupyx.scatter_add/max/min``; ``op`` is "add", "sub", "max" or
    "min". CuPy raises TypeError/ValueError for a dtype it cannot scatter."""
    if op not in _UFUNCS:
        raise ValueError(f"scatter_at: argument 'op' expected one of {sorted(_UFUNCS)}, got {op!r}")
    if is_host(xp):
        _UFUNCS[op].at(out, where, values)
        return
    import cupyx  # pragma: no cover - needs CuPy

    if op in ("add", "sub"):  # pragma: no cover - needs CuPy
        cupyx.scatter_add(out, where, values if op == "add" else -values)
    else:  # pragma: no cover - needs CuPy
        getattr(cupyx, f"scatter_{op}")(out, where, values)
