"""Load every op-table record from tests/ops so graph mode can be checked op by op."""

from __future__ import annotations

import importlib.util
from pathlib import Path

OPS_DIR = Path(__file__).resolve().parent.parent / "ops"
MODULES = [
    "test_core_ops",
    "test_math",
    "test_comparison",
    "test_reduction",
    "test_linalg",
    "test_array",
    "test_scatter",
    "test_nn",
    "test_activation",
    "test_loss",
]


def load_records() -> list:
    records = []
    for name in MODULES:
        spec = importlib.util.spec_from_file_location(f"_jit_src_{name}", OPS_DIR / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        records += [(name, r) for r in module.RECORDS]
    return records
