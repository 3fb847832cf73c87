"""``func_type="aot"``: ahead-of-time compiled kernels with MindSpore's ABI.

``int func(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes,
void* stream, void* extra)`` — inputs first, then outputs; 0 means success. ``func`` is
``"path/lib.so:func"``; a ``.cc``/``.cpp`` path is compiled with the system C++ compiler
(``$CXX`` or ``g++``, ``-std=c++17 -O2 -shared -fPIC``) and a ``.cu`` path with ``nvcc``
into the content-addressed cache, once per source content and command line.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from ._cache import cache_dir, digest

__all__ = ["split_func", "compile_source", "AotKernel"]

SOURCES = {".cc": "cxx", ".cpp": "cxx", ".cu": "cuda"}


def split_func(func: str, kind: str) -> tuple[str, str]:
    """``"path:name"`` -> (path, name), with a clear error."""
    if not isinstance(func, str) or ":" not in func:
        raise ValueError(
            f"Custom: argument 'func' expected '{kind}' as 'path/file.so:function' "
            f"(or a .cc/.cpp/.cu source), got {func!r}"
        )
    path, name = func.rsplit(":", 1)
    if not name.isidentifier():
        raise ValueError(f"Custom: function name {name!r} in func={func!r} is not an identifier")
    return path, name


def compile_source(path: str | Path, flags: list[str] | None = None) -> Path:
    """Compile a .cc/.cpp/.cu file into ``<cache>/aot/<hash>.so`` (once per content)."""
    src = Path(path)
    if not src.is_file():
        raise FileNotFoundError(f"Custom aot: source file {str(src)!r} does not exist")
    kind = SOURCES.get(src.suffix)
    if kind is None:
        raise ValueError(f"Custom aot: cannot compile {src.name}; expected .cc, .cpp or .cu")
    if kind == "cxx":
        cc = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
        if cc is None:
            raise RuntimeError("Custom aot: no C++ compiler found; install g++ or set $CXX")
        cmd = [cc, "-std=c++17", "-O2", "-shared", "-fPIC", *(flags or [])]
    else:
        cc = shutil.which("nvcc")
        if cc is None:
            raise RuntimeError("Custom aot: compiling .cu needs nvcc (the CUDA toolkit) on PATH")
        cmd = [cc, "-std=c++17", "-O2", "-shared", "-Xcompiler", "-fPIC", *(flags or [])]
    key = digest(src.read_bytes(), " ".join(cmd))
    out = cache_dir("aot") / f"{src.stem}_{key}.so"
    if out.exists():
        return out
    tmp = out.with_suffix(f".{os.getpid()}.tmp.so")
    proc = subprocess.run([*cmd, str(src), "-o", str(tmp)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(
            f"Custom aot: compiling {src} failed ({' '.join(cmd)}):\n{proc.stderr[-4000:]}"
        )
    os.replace(tmp, out)
    return out


class AotKernel:
    """A loaded ABI function; call with host (or device) arrays: inputs then outputs."""

    def __init__(self, func: str) -> None:
        path, name = split_func(func, "aot")
        self.source = path
        self.gpu = path.endswith(".cu")
        lib_path = compile_source(path) if Path(path).suffix in SOURCES else Path(path)
        if not lib_path.is_file():
            raise FileNotFoundError(f"Custom aot: library {str(lib_path)!r} does not exist")
        self.lib = ctypes.CDLL(str(lib_path))
        try:
            self.fn = getattr(self.lib, name)
        except AttributeError:
            raise ValueError(
                f'Custom aot: {lib_path} has no function {name!r} (declare it extern "C")'
            ) from None
        self.fn.restype = ctypes.c_int
        self.fn.argtypes = [
            ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int),
            ctypes.POINTER(ctypes.POINTER(ctypes.c_int64)), ctypes.POINTER(ctypes.c_char_p),
            ctypes.c_void_p, ctypes.c_void_p,
        ]  # fmt: skip
        self.name = name

    def __call__(self, arrays: list[Any], stream: int | None = None) -> None:
        n = len(arrays)
        ptrs = (ctypes.c_void_p * n)()
        ndims = (ctypes.c_int * n)()
        shapes = (ctypes.POINTER(ctypes.c_int64) * n)()
        dtypes = (ctypes.c_char_p * n)()
        keep = []
        for i, a in enumerate(arrays):
            ptrs[i] = a.data.ptr if self.gpu else a.ctypes.data
            ndims[i] = a.ndim
            shp = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
            keep.append(shp)
            shapes[i] = ctypes.cast(shp, ctypes.POINTER(ctypes.c_int64))
            dtypes[i] = str(a.dtype).encode()
        rc = self.fn(n, ptrs, ndims, shapes, dtypes, stream, None)
        if rc != 0:
            raise RuntimeError(f"Custom aot: {self.source}:{self.name} returned error code {rc}")
