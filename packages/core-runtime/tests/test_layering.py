"""The core's layers import one way (DESIGN.md, "Layers"), checked over its whole import graph.

kernels <- primitive/tensor/autograd <- ops <- nn <- train, compiler <- parallel,
communication: a module never imports a higher layer, not even lazily inside a function
(a higher layer registers hooks into a lower one instead). Every import in the source counts.

The imports that still go upward are listed in :data:`KNOWN_UPWARD`, each with what it
is for. The test fails on any upward import not listed (a new one) and on a listed one that
is gone (so the list only shrinks). An import cycle spanning folders may not reach a folder
outside :data:`KNOWN_CYCLE_FOLDERS`. Both lists are empty now: any upward import, and any
cycle through two folders, fails.
"""

from pathlib import Path

import pytest
from _import_graph import (
    LAYERS,
    folder_of,
    import_graph,
    layer_of,
    strongly_connected,
    upward_imports,
)

SRC = Path(__file__).resolve().parents[1] / "src" / "sporeling" / "core"
C = "sporeling.core."

#: upward imports not yet replaced by hooks: (importer, imported) -> what it is for. Empty:
#: every lower layer reaches a higher one through sporeling.core._hooks (or the higher one
#: installs into it, as ops does the Tensor methods); keep it empty.
KNOWN_UPWARD: dict[tuple[str, str], str] = {}

#: folders whose modules are still held in one import cycle (lazy imports included). Empty:
#: no cycle spans two folders (the tape installs Tensor.backward, context tells _backend its
#: device_target); keep it empty.
KNOWN_CYCLE_FOLDERS: set[frozenset[str]] = set()


@pytest.fixture(scope="module")
def graph():
    return import_graph(SRC)


def test_every_module_has_a_layer(graph):
    for m in graph:
        layer_of(m)  # raises KeyError naming the module


def test_no_new_upward_import(graph):
    found = upward_imports(graph)
    new = sorted(found - set(KNOWN_UPWARD))
    assert not new, "imports into a higher layer (register a hook instead):\n" + "\n".join(
        f"  {a} -> {b}" for a, b in new
    )
    gone = sorted(set(KNOWN_UPWARD) - found)
    assert not gone, f"no longer imported: remove from KNOWN_UPWARD: {gone}"


def test_cycles_spanning_folders_only_shrink(graph):
    """No cycle reaches a folder outside the known ones (or joins two known cycles)."""
    spans = {
        frozenset(folder_of(m) for m in comp)
        for comp in strongly_connected(graph)
        if len({folder_of(m) for m in comp}) > 1
    }
    for span in spans:
        assert any(span <= known for known in KNOWN_CYCLE_FOLDERS), sorted(span)
    for known in KNOWN_CYCLE_FOLDERS:
        assert any(span <= known for span in spans), f"no longer a cycle: remove {sorted(known)}"


def test_the_check_fails_on_an_upward_import():
    """A synthetic graph: ops importing nn is upward, nn importing ops is not."""
    synthetic = {
        C + "ops.math": {C + "_primitive", C + "nn.cell"},
        C + "nn.cell": {C + "ops.math", C + "kernels.cpu.blas"},
        C + "kernels.cpu.blas": set(),
        C + "_primitive": {C + "dtype"},
        C + "dtype": set(),
    }
    assert upward_imports(synthetic) == {(C + "ops.math", C + "nn.cell")}
    assert strongly_connected(synthetic) == [{C + "ops.math", C + "nn.cell"}]
    synthetic[C + "ops.math"] = {C + "_primitive"}
    assert upward_imports(synthetic) == set() and strongly_connected(synthetic) == []


def test_layers_follow_the_design_order():
    order = [layer_of(C + name) for name in ("kernels", "tensor", "ops", "nn", "train")]
    assert order == sorted(order) and len(set(order)) == 5
    assert layer_of(C + "compiler") == layer_of(C + "train")
    assert layer_of(C + "parallel") == layer_of(C + "communication") > layer_of(C + "compiler")
    assert len(LAYERS) == 7
