"""The primitives ``import sporeling.core`` registers, read in a fresh interpreter.

Tests register primitives of their own in the same process (``huge_op``...); the registry
walks check only the core's, named here, and look them up in the live registry.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys

from sporeling.core._primitive import REGISTRY, Primitive


@functools.cache
def core_names() -> tuple[str, ...]:
    code = "import json, sporeling.core; from sporeling.core._primitive import REGISTRY; "
    code += "print(json.dumps(sorted(REGISTRY)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    )
    return tuple(json.loads(out.stdout.strip().splitlines()[-1]))


def core_registry() -> dict[str, Primitive]:
    """Name -> primitive for the core's own primitives."""
    return {n: REGISTRY[n] for n in core_names()}
