"""The package ``__all__`` lists are written out by hand (so type checkers see every name);
each must stay the ``__all__`` of the submodules it imports from, nothing more or less."""

import importlib

import pytest

# package -> (names listed before the submodules, submodules in import order)
PACKAGES = {
    "sporeling.core.nn": (
        ["Cell", "SequentialCell", "CellList", "CellDict"],
        ["dynamic_lr", "layers", "learning_rate_schedule", "loss", "optim", "wrap"],
    ),
    "sporeling.core.nn.layers": (
        [],
        ["activation", "attention", "basic", "conv", "embedding"]
        + ["micro_batch", "normalization", "pooling", "rnn", "activation_more", "combined"]
        + ["image", "pipeline_cell", "sync_batch_norm"],
    ),
    "sporeling.core.train": ([], ["callback", "dataset", "metrics", "model", "serialization"]),
    "sporeling.core.train.callback": (
        [],
        ["_callback", "_monitors", "_plateau", "checkpoint", "learning_curve"],
    ),
}


def _exported(module: str) -> list[str]:
    return list(importlib.import_module(module).__all__)


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_all_is_the_submodules_all(package):
    own, submodules = PACKAGES[package]
    expected = own + [n for sub in submodules for n in _exported(f"{package}.{sub}")]
    actual = importlib.import_module(package).__all__
    assert len(actual) == len(set(actual)), "duplicate names in __all__"
    assert sorted(actual) == sorted(expected)


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_star_import_gives_exactly_all(package):
    mod = importlib.import_module(package)
    namespace: dict = {}
    exec(f"from {package} import *", namespace)
    namespace.pop("__builtins__")
    assert sorted(namespace) == sorted(mod.__all__)
    assert all(namespace[n] is getattr(mod, n) for n in namespace)
