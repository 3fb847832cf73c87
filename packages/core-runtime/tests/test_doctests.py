"""The ``>>>`` examples in the core's docstrings run and give what they show.

Each public module's docstring examples are collected with :mod:`doctest` and run here, in
the ordinary test session (pytest's ``--doctest-modules`` would import the source tree under
a second package name). A module whose examples fail fails its own test.
"""

import doctest
import importlib
import pkgutil

import pytest

import sporeling.core

#: not imported here: the entry point runs the CLI on import
SKIP = {"sporeling.core.__main__"}


def _modules():
    names = ["sporeling.core"]
    for info in pkgutil.walk_packages(sporeling.core.__path__, "sporeling.core."):
        if info.name not in SKIP:
            names.append(info.name)
    return sorted(names)


def _tests(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    try:
        found = finder.find(module, name)
    except Exception:  # an attribute that raises on inspection (control flow's sentinel)
        found = []
        for attr, obj in vars(module).items():
            if getattr(obj, "__module__", None) == name and (callable(obj) or attr == "__doc__"):
                try:
                    found += finder.find(obj, f"{name}.{attr}", module=module, globs=vars(module))
                except Exception:
                    continue
    return [t for t in found if t.examples and t.name.startswith(name)]


MODULES = [m for m in _modules() if _tests(m)]


def test_the_examples_are_found():
    assert len(MODULES) > 40
    assert sum(len(t.examples) for m in MODULES for t in _tests(m)) > 150


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in _tests(name):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed"
