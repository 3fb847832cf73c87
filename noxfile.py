#!/usr/bin/env -S uv run --script

# /// script
# dependencies = ["nox>=2025.2.9", "packaging>=23"]
# ///

"""Every workflow of the Sporeling repository. `nox -l` lists the sessions.

Packages are found from `packages/*/pyproject.toml`; a session parametrized by package
takes the folder name, e.g. `nox -s "tests(package='core-runtime')"`. `nox -R` reuses the
virtualenvs and skips every install (all installs go through `install`).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import nox
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

nox.needs_version = ">=2025.2.9"
nox.options.default_venv_backend = "uv|virtualenv"

ROOT = Path(__file__).parent
PYPROJECT = nox.project.load_toml(ROOT / "pyproject.toml")
# Numba's on-disk cache (cache=True kernels), shared by every session and kept across runs.
NUMBA_ENV = {"NUMBA_CACHE_DIR": str(ROOT / ".nox" / ".numba-cache")}
PYTEST_DEFAULTS = ["-ra"]
LINT_TARGETS = ["packages", "shared", "benchmarks", "docs", "scripts", "README.md", "noxfile.py"]


@dataclass(frozen=True)
class Package:
    """One distribution of the repository, as its pyproject.toml describes it."""

    name: str  # folder name, the session parameter
    path: Path
    dist: str  # canonical distribution name
    version: str
    module: str  # import name, e.g. "sporeling.core"
    requires: tuple[Requirement, ...]  # dependencies and every extra's


def _load_package(path: Path) -> Package:
    meta = nox.project.load_toml(path / "pyproject.toml")
    project = meta["project"]
    version_file = meta.get("tool", {}).get("hatch", {}).get("version", {}).get("path")
    if version_file:
        text = (path / version_file).read_text()
        match = re.search(r"""^__version__\s*=\s*["']([^"']+)["']""", text, re.M)
        if match is None:
            raise ValueError(f"{path / version_file}: no __version__ = '...' line")
        version = match.group(1)
        # src/sporeling/core/_version.py -> sporeling.core
        module = ".".join(Path(version_file).parent.relative_to("src").parts)
    else:
        version = project["version"]
        module = path.name.replace("-", "_")
    reqs = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        reqs += extra
    return Package(
        name=path.name,
        path=path,
        dist=canonicalize_name(project["name"]),
        version=version,
        module=module,
        requires=tuple(Requirement(r) for r in reqs),
    )


PACKAGES = {
    p.parent.name: _load_package(p.parent) for p in sorted(ROOT.glob("packages/*/pyproject.toml"))
}
TESTING = _load_package(ROOT / "shared")  # sporeling-testing, dev only
BY_DIST = {p.dist: p for p in [*PACKAGES.values(), TESTING]}


def install(session: nox.Session, *args: str) -> None:
    """Install into the session's venv. Every install goes through here, so `nox -R`
    (reuse venvs, --no-install) skips them all, as pip's `run_install` does."""
    venv = session.virtualenv
    if session._runner.global_config.no_install and getattr(venv, "_reused", False):
        session.log(f"Reusing venv, skipping install of {' '.join(args)}")
        return
    session.install(*args)


def local_closure(*pkgs: Package) -> list[Package]:
    """The packages and their in-repo dependencies (transitively), dependencies first."""
    seen: dict[str, Package] = {}

    def visit(p: Package) -> None:
        for req in p.requires:
            sibling = BY_DIST.get(canonicalize_name(req.name))
            if sibling is not None and sibling.dist not in seen:
                visit(sibling)
        seen.setdefault(p.dist, p)

    for pkg in pkgs:
        visit(pkg)
    return list(seen.values())


def editable(*pkgs: Package, extras: str = "") -> list[str]:
    """`-e path` arguments for packages and their in-repo dependencies, so nothing of the
    family is taken from an index; `extras` go on the last package named."""
    args: list[str] = []
    for p in local_closure(*pkgs):
        spec = str(p.path.relative_to(ROOT))
        if p is pkgs[-1] and extras:
            spec += f"[{extras}]"
        args += ["-e", spec]
    return args


def group(name: str) -> tuple[str, ...]:
    """A dependency group of the root pyproject.toml."""
    return nox.project.dependency_groups(PYPROJECT, name)


def pytest_args(session: nox.Session, tests_dir: Path) -> list[str]:
    """posargs override the defaults; the package's tests/ is added unless they name a path."""
    if not session.posargs:
        return [str(tests_dir), *PYTEST_DEFAULTS]
    names_path = any(
        Path(a.split("::")[0]).exists() for a in session.posargs if not a.startswith("-")
    )
    return list(session.posargs) if names_path else [str(tests_dir), *session.posargs]


@nox.session
@nox.parametrize("package", list(PACKAGES))
def tests(session: nox.Session, package: str) -> None:
    """Run one package's tests (CPU), with its in-repo dependencies installed editable."""
    pkg = PACKAGES[package]
    tests_dir = pkg.path.relative_to(ROOT) / "tests"
    if not tests_dir.is_dir():
        session.skip(f"{tests_dir} does not exist yet")
    # extras the tests exercise, from [tool.sporeling] test-extras in the package's pyproject
    # (core-runtime: mpi for tests/distributed; data-transforms: cli for YAML specs)
    meta = nox.project.load_toml(pkg.path / "pyproject.toml")
    extras = ",".join(meta.get("tool", {}).get("sporeling", {}).get("test-extras", []))
    install(session, *group("test"), *editable(TESTING, pkg, extras=extras))
    session.run("pytest", *pytest_args(session, tests_dir), env=NUMBA_ENV)


@nox.session(default=False, tags=["gpu"])
@nox.parametrize("package", list(PACKAGES))
def gpu_tests(session: nox.Session, package: str) -> None:
    """Run one package's GPU tests (`-m gpu`) with the [gpu] extra (CuPy) installed."""
    pkg = PACKAGES[package]
    tests_dir = pkg.path.relative_to(ROOT) / "tests"
    if not tests_dir.is_dir():
        session.skip(f"{tests_dir} does not exist yet")
    install(session, *group("test"), *editable(TESTING, pkg, extras="gpu"))
    session.run("pytest", "-m", "gpu", *pytest_args(session, tests_dir), env=NUMBA_ENV)


@nox.session(default=False)
@nox.parametrize("package", list(PACKAGES))
def minimums(session: nox.Session, package: str) -> None:
    """Run one package's tests against the lowest versions its dependency ranges allow."""
    if session.venv_backend != "uv":
        session.skip("needs the uv backend (--resolution lowest-direct)")
    pkg = PACKAGES[package]
    tests_dir = pkg.path.relative_to(ROOT) / "tests"
    if not tests_dir.is_dir():
        session.skip(f"{tests_dir} does not exist yet")
    install(session, "--resolution", "lowest-direct", *group("test"), *editable(TESTING, pkg))
    session.run("pytest", *pytest_args(session, tests_dir), env=NUMBA_ENV)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check over the whole repository."""
    install(session, *group("lint"))
    targets = [t for t in LINT_TARGETS if (ROOT / t).exists()]
    session.run("ruff", "check", *targets, *session.posargs)
    session.run("ruff", "format", "--check", *targets)


@nox.session
@nox.parametrize("package", list(PACKAGES))
def typecheck(session: nox.Session, package: str) -> None:
    """mypy over one package's sources, with the settings of the root pyproject.toml."""
    pkg = PACKAGES[package]
    install(session, *group("typecheck"), *editable(pkg))
    src = pkg.path.relative_to(ROOT) / "src"
    session.run("mypy", "-p", pkg.module, *session.posargs, env={"MYPYPATH": str(src)})


@nox.session(venv_backend="none")
def pins(session: nox.Session) -> None:
    """Check that every in-repo dependency range admits the sibling's current version."""
    problems, checked = [], 0
    for pkg in BY_DIST.values():
        for req in pkg.requires:
            sibling = BY_DIST.get(canonicalize_name(req.name))
            if sibling is None:
                continue
            checked += 1
            where = f"{pkg.path.relative_to(ROOT)}/pyproject.toml: {req}"
            if not req.specifier:
                problems.append(f"{where}: give {sibling.dist} a range, e.g. >=0.1,<0.2")
            elif not req.specifier.contains(sibling.version, prereleases=True):
                problems.append(f"{where}: excludes {sibling.dist} {sibling.version}")
    if problems:
        session.error("\n".join(problems))
    session.log(f"{checked} in-repo pin(s) checked over {len(BY_DIST)} distributions: all fine")


@nox.session(default=False)
def build(session: nox.Session) -> None:
    """Build each package's sdist and wheel into dist/, install the wheels in a fresh venv,
    import each; then check the READMEs' install line from a clone with plain pip
    (`pip install --find-links dist sporeling-<package>`, dependencies from the index).

    uv builds the wheel from the sdist, so a file missing from the sdist shows up here too.
    """
    tmp = Path(session.create_tmp()).resolve()
    dist_dir, venv_dir = ROOT / "dist", tmp / "clean-venv"
    shutil.rmtree(dist_dir, ignore_errors=True)
    for pkg in PACKAGES.values():
        session.run("uv", "build", "--out-dir", str(dist_dir), str(pkg.path))
    wheels = sorted(dist_dir.glob("*.whl"))
    for wheel in wheels:
        check_wheel(session, wheel)
    session.run("uv", "venv", "--quiet", "--clear", "--python", sys.executable, str(venv_dir))
    python = str(venv_dir / "bin" / "python")
    session.run("uv", "pip", "install", "--quiet", "--python", python, *map(str, wheels))
    for pkg in PACKAGES.values():
        code = f"import {pkg.module} as m; print(m.__name__, m.__file__)"
        session.run(python, "-c", code, env=NUMBA_ENV, external=True)
    if (venv_dir / "bin" / "sporeling").exists():
        session.run(str(venv_dir / "bin" / "sporeling"), "--help", external=True)
    pip_venv = tmp / "pip-venv"  # the README line, with the stdlib venv and plain pip
    shutil.rmtree(pip_venv, ignore_errors=True)
    session.run(sys.executable, "-m", "venv", str(pip_venv), external=True)
    pip = [str(pip_venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    dists = [p.dist for p in PACKAGES.values()]
    session.run(*pip, "--find-links", str(dist_dir), *dists, external=True)
    code = "; ".join(f"import {p.module}" for p in PACKAGES.values())
    session.run(str(pip_venv / "bin" / "python"), "-c", code, env=NUMBA_ENV, external=True)


def check_wheel(session: nox.Session, wheel: Path) -> None:
    """A wheel keeps `sporeling` a namespace and ships every file its src/ folder holds."""
    names = set(zipfile.ZipFile(wheel).namelist())
    if "sporeling/__init__.py" in names:
        session.error(f"{wheel.name}: ships sporeling/__init__.py (must stay a PEP 420 namespace)")
    pkg = next(p for p in PACKAGES.values() if wheel.name.split("-")[0] == p.dist.replace("-", "_"))
    src = pkg.path / "src"
    # Files git tracks or would track (.gitignore'd caches such as __pycache__, .mypy_cache
    # and Numba's *.nbi/*.nbc excluded), as hatchling selects them.
    ls_files = ["ls-files", "-z", "--cached", "--others", "--exclude-standard"]
    listed = session.run("git", "-C", str(ROOT), *ls_files, str(src), silent=True, external=True)
    expected = {
        (ROOT / name).relative_to(src).as_posix()
        for name in str(listed).split("\0")
        if name and (ROOT / name).is_file()
    }
    if missing := sorted(expected - names):
        session.error(f"{wheel.name}: missing {', '.join(missing)}")
    session.log(f"{wheel.name}: {len(names)} files, namespace kept, all of src/ shipped")


@nox.session(default=False)
def docs(session: nox.Session) -> None:
    """Build the documentation site (mkdocs, strict); posargs replace `build --strict`."""
    install(session, *group("docs"))
    env = {"NO_MKDOCS_2_WARNING": "1"}  # a banner about MkDocs 2, not about our docs
    session.run("mkdocs", *(session.posargs or ["build", "--strict"]), env=env)


@nox.session(default=False)
def demo(session: nox.Session) -> None:
    """Train LeNet-5 on the embedded MNIST sample (`sporeling demo`, with the [demo] extra
    for the plot); output in build/demo unless posargs give --out. `-- --data DIR` trains on
    the full MNIST idx files."""
    install(session, *editable(PACKAGES["core-runtime"], extras="demo"))
    out = [] if "--out" in session.posargs else ["--out", str(ROOT / "build" / "demo")]
    session.run("sporeling", "demo", *out, *session.posargs, env=NUMBA_ENV)


@nox.session(default=False, venv_backend="virtualenv")
def bench(session: nox.Session) -> None:
    """Run benchmarks/run.py against the peers (PyTorch CPU), with pip in a virtualenv."""
    if not (ROOT / "benchmarks" / "run.py").exists():
        session.error("benchmarks/run.py does not exist yet")
    # pip, not uv: torch==2.13.0 resolves to the CPU wheel through pip's configuration.
    # The core is editable: `nox -R` skips installs, and a copy installed when the venv was
    # made had the idle runs of 2026-12-02 time an old core (run.py now warns of that).
    install(
        session,
        "torch==2.13.0",
        "threadpoolctl",  # the 1-thread mode limits NumPy's BLAS with it
        "-e",
        str(PACKAGES["core-runtime"].path.relative_to(ROOT)),
    )
    # Let each library pick its own BLAS kernels: unset machine-wide OpenBLAS overrides.
    env = {**NUMBA_ENV, "OPENBLAS_CORETYPE": None, "OPENBLAS_L2_SIZE": None}
    session.run("python", "benchmarks/run.py", *session.posargs, env=env)


@nox.session(default=False)
def bench_tests(session: nox.Session) -> None:
    """Unit-test the benchmark harness's logic (quiet detection, disturbed marking, spreads)."""
    install(session, *group("test"), "numba", "threadpoolctl")
    session.run("pytest", "benchmarks/tests", *session.posargs, env=NUMBA_ENV)


@nox.session(default=False, venv_backend="virtualenv")
def bench_data(session: nox.Session) -> None:
    """Run benchmarks/data/run.py: the data pipeline vs torchvision v2, PIL and MindSpore.

    torchvision from PyPI does not import beside torch 2.13.0, so this venv takes torch
    2.14.1 + torchvision 0.29.1 (pip finds both on this machine's disk; the CPU runs them).
    MindSpore's CPU wheel (~800 MB) is tried too; set SPORELING_DATA_BENCH_MINDSPORE=0 to
    skip it (its pipeline is then reported as skipped).
    """
    pkg = PACKAGES["data-transforms"]
    install(session, "torch==2.14.1", "torchvision==0.29.1", "scikit-learn")
    install(session, *editable(pkg, extras="cli"))
    if os.environ.get("SPORELING_DATA_BENCH_MINDSPORE", "1") != "0":
        try:
            install(session, "mindspore")
        except nox.command.CommandFailed:
            session.warn("mindspore did not install: its pipeline will be reported as skipped")
    env = {**NUMBA_ENV, "OPENBLAS_CORETYPE": None, "OPENBLAS_L2_SIZE": None}
    session.run("python", "benchmarks/data/run.py", *session.posargs, env=env)


@nox.session(default=False, venv_backend="virtualenv")
def bench_recommender(session: nox.Session) -> None:
    """Run a script of benchmarks/recommender/ (default bench_throughput.py) beside PyTorch."""
    install(session, "torch==2.13.0", *editable(PACKAGES["recommender"]))
    env = {**NUMBA_ENV, "OPENBLAS_CORETYPE": None, "OPENBLAS_L2_SIZE": None}
    args = session.posargs or ["bench_throughput.py"]
    session.chdir("benchmarks/recommender")
    session.run("python", *args, env=env)


@nox.session(default=False, venv_backend="virtualenv")
def bench_rl(session: nox.Session) -> None:
    """Run benchmarks/rl/sb3_compare.py: DQN and PPO on CartPole-v1 beside Stable-Baselines3."""
    install(session, "torch==2.13.0", "stable-baselines3==2.9.2", "threadpoolctl")
    install(session, *editable(PACKAGES["reinforcement"], extras="gym"))
    env = {**NUMBA_ENV, "OPENBLAS_CORETYPE": None, "OPENBLAS_L2_SIZE": None}
    session.run("python", "benchmarks/rl/sb3_compare.py", *session.posargs, env=env)


if __name__ == "__main__":
    nox.main()
