"""The core's public names, per public module, against tests/api_snapshot.txt.

A change of the public surface shows in review as a change of that file, and a name lost by
accident (a MindSpore name among them) fails here; new names pass until the file is
regenerated. After an intended change:
``SPORELING_UPDATE_API_SNAPSHOT=1 pytest packages/core-runtime/tests/test_api_snapshot.py``.
"""

from pathlib import Path

from sporeling_testing.api_snapshot import check_snapshot, public_names

MODULES = [
    "sporeling.core",
    "sporeling.core.ops",
    "sporeling.core.ops.operations",
    "sporeling.core.ops.functional",
    "sporeling.core.ops.composite",
    "sporeling.core.nn",
    "sporeling.core.train",
    "sporeling.core.communication",
    "sporeling.core.parallel",
    "sporeling.core.context",
    "sporeling.core.dtype",
    "sporeling.core.initializer",
    "sporeling.core.extend",
    "sporeling.core.rewrite",
    "sporeling.core.errors",  # the validators the suites share (check_int, check_bool...)
]


def test_public_api_snapshot():
    added = check_snapshot(MODULES, Path(__file__).with_name("api_snapshot.txt"))
    assert all(": " in line for line in added)


def test_ops_does_not_export_its_helpers():
    """Helpers for defining ops live in sporeling.core.extend, not among MindSpore's ops."""
    helpers = {"unary_op", "binary_op", "promote_args", "as_tensor", "sum_to", "float_input"}
    assert helpers.isdisjoint(public_names("sporeling.core.ops"))
