"""Public-API snapshots: a package's public names, kept in a text file its tests compare against.

A change to the public surface then shows in review as a change of that file, and a name lost
by accident fails the tests. New names do not fail (several people add ops at once); they are
recorded the next time the file is regenerated. Each line is ``<module>: <name>``; a module's
public names are its ``__all__`` when it has one, else every attribute not starting with ``_``
that is not a module.

In a package's tests::

    from sporeling_testing.api_snapshot import check_snapshot

    def test_public_api_snapshot():
        check_snapshot(["sporeling.data", "sporeling.data.vision"], SNAPSHOT_PATH)

Run with ``SPORELING_UPDATE_API_SNAPSHOT=1`` to write the file after an intended change.
"""

from __future__ import annotations

import importlib
import os
import types
from collections.abc import Iterable
from pathlib import Path

__all__ = ["public_names", "snapshot_lines", "check_snapshot"]


def public_names(module_name: str) -> list[str]:
    """The public names of one module (see the module docstring)."""
    mod = importlib.import_module(module_name)
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [
            n
            for n, v in vars(mod).items()
            if not n.startswith("_") and not isinstance(v, types.ModuleType)
        ]
    return sorted(set(names))


def snapshot_lines(modules: Iterable[str]) -> list[str]:
    return [f"{m}: {n}" for m in modules for n in public_names(m)]


def check_snapshot(modules: Iterable[str], path: Path) -> list[str]:
    """Compare the modules' public names with the snapshot at ``path`` (or write it when
    ``SPORELING_UPDATE_API_SNAPSHOT=1``); fails naming what was lost, returns what was
    added (not yet recorded)."""
    now = snapshot_lines(modules)
    if os.environ.get("SPORELING_UPDATE_API_SNAPSHOT", "") not in ("", "0"):
        path.write_text("\n".join(now) + "\n", encoding="utf-8")
        return []
    before = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    added = sorted(set(now) - set(before))
    lost = sorted(set(before) - set(now))
    if lost:
        raise AssertionError(
            f"public names lost since {path.name}:\n"
            + "".join(f"  - {line}\n" for line in lost)
            + "if intended, rerun with SPORELING_UPDATE_API_SNAPSHOT=1 and commit the file"
        )
    return added
