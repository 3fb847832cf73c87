"""The content-addressed cache directory: generated kernel modules and compiled libraries.

``$SPORELING_CUSTOMOP_CACHE`` or ``~/.cache/sporeling/customop``. Generated Numba sources
are written there as real modules and imported, so Numba's ``cache=True`` can store their
machine code next to them and a second process loads it instead of compiling.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
from pathlib import Path
from types import ModuleType

__all__ = ["cache_dir", "digest", "write_atomic", "load_module"]

ENV = "SPORELING_CUSTOMOP_CACHE"


def cache_dir(sub: str = "") -> Path:
    """The cache folder (created on first use); ``sub`` names a subfolder."""
    root = os.environ.get(ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "sporeling", "customop"
    )
    path = Path(root) / sub if sub else Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def digest(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\0")
    return h.hexdigest()[:20]


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename (no torn files)."""
    mode = "wb" if isinstance(data, bytes) else "w"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, mode) as f:
        f.write(data)
    os.replace(tmp, path)


def load_module(source: str, stem: str) -> ModuleType:
    """Import ``source`` from ``<cache>/kernels/<stem>_<hash>.py`` (written once)."""
    import numba

    key = digest(source, numba.__version__, sys.version)
    name = f"_sporeling_customop_{stem}_{key}"
    mod = sys.modules.get(name)
    if mod is not None:
        return mod
    path = cache_dir("kernels") / f"{stem}_{key}.py"
    if not path.exists():  # keep the mtime stable: Numba's cache index depends on it
        write_atomic(path, source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod
