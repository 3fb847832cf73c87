"""Numba's disk cache of a kernel is not reused after a change to a callee in another file of
the same ``sporeling/<package>`` (kernels/numba_cache.py): with Numba's own stamp the
unchanged caller would keep running the old callee's machine code."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from sporeling.core.kernels import numba_cache

CALLER = """\
import numba
from .callee import value

@numba.njit(cache=True)
def caller():
    return value() + 1
"""

CALLEE = """\
import numba

@numba.njit(cache=True)
def value():
    return {}
"""

RUN = textwrap.dedent(
    """\
    import sys
    {install}
    sys.path.insert(0, sys.argv[1])
    from sporeling.fakepkg.caller import caller
    print(caller(), caller.stats.cache_hits.get(caller.signatures[0], 0))
    """
)


def _run(tmp_path: Path, install: bool) -> tuple[int, int]:
    code = RUN.format(install="import sporeling.core.kernels" if install else "")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / ("cache" if install else "plain"))}
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "src")],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return int(out[0]), int(out[1])


def _package(tmp_path: Path, value: int) -> None:
    pkg = tmp_path / "src" / "sporeling" / "fakepkg"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "caller.py").write_text(CALLER)
    (pkg / "callee.py").write_text(CALLEE.format(value))


def test_a_changed_callee_file_recompiles_the_caller(tmp_path):
    _package(tmp_path, 1)
    assert _run(tmp_path, install=True) == (2, 0)  # compiled and cached
    assert _run(tmp_path, install=True) == (2, 1)  # loaded from the cache
    _package(tmp_path, 41)  # only the callee's file changes
    assert _run(tmp_path, install=True) == (42, 0)  # recompiled, not the stale 2
    assert _run(tmp_path, install=True) == (42, 1)


def test_numba_alone_keeps_the_stale_caller(tmp_path):
    """What the locator is for (if Numba ever tracks callees, this test says so)."""
    _package(tmp_path, 1)
    assert _run(tmp_path, install=False) == (2, 0)
    _package(tmp_path, 41)
    assert _run(tmp_path, install=False) == (2, 1)


def test_package_root_and_digest(tmp_path):
    core_file = Path(numba_cache.__file__)
    root = numba_cache.package_root(str(core_file))
    assert root is not None and root.name == "core" and root.parent.name == "sporeling"
    assert numba_cache.package_root(str(tmp_path / "elsewhere.py")) is None
    assert numba_cache.install() is True  # already installed by the import: still true
    pkg = tmp_path / "sporeling" / "p"
    pkg.mkdir(parents=True)
    (pkg / "k.py").write_text("import numba\n")
    (pkg / "plain.py").write_text("x = 1\n")
    first = numba_cache.package_digest(pkg)
    assert len(first) == 64
    numba_cache._DIGESTS.clear()
    (pkg / "plain.py").write_text("x = 2\n")  # no Numba in it: not part of the digest
    assert numba_cache.package_digest(pkg) == first
    numba_cache._DIGESTS.clear()
    (pkg / "k.py").write_text("import numba  # changed\n")
    assert numba_cache.package_digest(pkg) != first
