"""Numba's on-disk kernel cache, invalidated by a change to any kernel file of the package.

Numba reuses a cached kernel while its own source file is unchanged (the index's stamp
hashes that one file). Our kernels inline or link jitted functions from other files
(``vecmath``, ``microgemm``, ``_jobs``' intrinsics, the conv bodies), so after a
``git pull`` or a ``pip install -U`` that changed only a callee's file, a caller whose file
did not change would keep running the old callee's machine code. :func:`install` makes the
stamp of every function defined under a ``sporeling/<package>/`` folder also cover every
file of that package that mentions Numba: a change to any kernel code recompiles that
package's kernels once, and nothing runs stale code. Functions elsewhere keep Numba's stamp.

Generated kernels (:mod:`.codegen`) carry their callees' digests in their source already.
Numba's locator classes are not public API: where they are missing (another Numba), this
does nothing and Numba's own stamp stays in force.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Any

__all__ = ["install", "package_digest", "package_root"]

_DIGESTS: dict[Path, str] = {}
_LOCK = threading.Lock()
_INSTALLED: list[bool] = []


def package_root(py_file: str) -> Path | None:
    """The ``.../sporeling/<package>`` folder holding ``py_file``, or None outside one."""
    parts = Path(py_file).resolve().parts
    for i in range(len(parts) - 3, -1, -1):
        if parts[i] == "sporeling":
            return Path(*parts[: i + 2])
    return None


def package_digest(root: Path) -> str:
    """SHA-256 over the package's ``.py`` files that mention Numba (path and bytes), once
    per process: the code a kernel of the package can inline, link or call."""
    with _LOCK:
        digest = _DIGESTS.get(root)
        if digest is None:
            h = hashlib.sha256()
            for path in sorted(root.rglob("*.py")):
                data = path.read_bytes()
                if b"numba" in data:
                    h.update(path.relative_to(root).as_posix().encode() + b"\0")
                    h.update(hashlib.sha256(data).digest())
            digest = _DIGESTS[root] = h.hexdigest()
    return digest


def _with_package_stamp(base: Any) -> Any:
    """``base`` (a source-file-backed locator class) whose stamp adds the package digest."""

    class Locator(base):  # type: ignore[misc, valid-type]
        def get_source_stamp(self) -> Any:
            stamp = super().get_source_stamp()
            root = package_root(getattr(self, "_py_file", ""))
            return stamp if root is None else (stamp, package_digest(root))

    Locator.__name__ = Locator.__qualname__ = f"Sporeling{base.__name__}"
    return Locator


def install() -> bool:
    """Put the package-stamped locators in Numba's list (once); whether it could."""
    if _INSTALLED:
        return _INSTALLED[0]
    try:
        from numba.core import caching

        impl = caching.CacheImpl
        mixin = caching._SourceFileBackedLocatorMixin
        classes = list(impl._locator_classes)
    except (ImportError, AttributeError):
        _INSTALLED.append(False)
        return False
    impl._locator_classes = [
        _with_package_stamp(c) if issubclass(c, mixin) and hasattr(c, "get_source_stamp") else c
        for c in classes
    ]
    _INSTALLED.append(True)
    return True
