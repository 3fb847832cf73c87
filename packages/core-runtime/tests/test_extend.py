"""The extension API (`sporeling.core.extend`) is what custom-op and the suites build on."""

import numpy as np
import pytest

import sporeling.core as ms
from sporeling.core import extend, ops


def test_registered_primitives_is_a_read_only_view_of_the_ops():
    prims = extend.registered_primitives()
    assert prims["exp"].name == "exp"
    with pytest.raises(TypeError):
        prims["exp"] = prims["log"]  # type: ignore[index]


def test_as_tensor_accepts_arrays_and_numbers():
    t = extend.as_tensor(np.arange(3, dtype=np.float32), "my_op", "x")
    assert isinstance(t, ms.Tensor)
    np.testing.assert_array_equal(t.asnumpy(), [0.0, 1.0, 2.0])
    assert isinstance(extend.as_tensor(2.0, "my_op", "x"), ms.Tensor)


def test_as_tensor_names_the_op_and_argument_on_bad_input():
    with pytest.raises(TypeError, match="my_op.*x"):
        extend.as_tensor("abc", "my_op", "x")


def test_shaped_array_describes_an_abstract_value():
    a = extend.ShapedArray((2, 3), ms.float32)
    assert a.shape == (2, 3) and a.ndim == 2 and a.size == 6
    assert a == extend.ShapedArray([2, 3], ms.float32)


def test_custom_op_uses_no_private_core_module():
    """Suites and custom-op import only public names of the core (DESIGN.md, Layers)."""
    import pathlib
    import re

    packages = pathlib.Path(__file__).resolve().parents[2]  # the repository's packages/
    private = re.compile(r"sporeling\.core(\.\w+)*\._\w+")
    offenders = []
    for pkg in packages.iterdir():
        src = pkg / "src" / "sporeling"
        if pkg.name == "core-runtime" or not src.is_dir():
            continue
        for path in src.rglob("*.py"):
            for lineno, line in enumerate(path.read_text().splitlines(), 1):
                if line.lstrip().startswith(("import ", "from ")) and private.search(line):
                    offenders.append(f"{path.relative_to(packages)}:{lineno}: {line.strip()}")
    assert offenders == []


def test_exp_through_the_extension_api_matches_ops():
    x = ms.Tensor(np.array([0.0, 1.0], np.float32))
    prim = extend.registered_primitives()["exp"]
    np.testing.assert_allclose(prim.bind(x).asnumpy(), ops.exp(x).asnumpy())
