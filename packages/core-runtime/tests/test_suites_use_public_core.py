"""The other packages (custom-op, the suites) import only the core's public names.

DESIGN.md, "Layers": they use ``sporeling.core``, its public subpackages and the extension
API (``sporeling.core.extend``), never a module or a name that starts with ``_``, so the
core can reorganise its internals without breaking them. Every import of every package
under ``packages/`` other than core-runtime is read (module level or inside a function).
"""

import ast
from pathlib import Path

PACKAGES = Path(__file__).resolve().parents[2]


def _private_core_imports(path: Path, root: Path = PACKAGES) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            mods = [(a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            mods = [(node.module, a.name) for a in node.names]
        else:
            continue
        for mod, name in mods:
            if mod != "sporeling.core" and not mod.startswith("sporeling.core."):
                continue
            parts = mod.split(".")[2:] + ([name] if name else [])
            if any(p.startswith("_") for p in parts):
                found.append(f"{path.relative_to(root)}:{node.lineno}: {mod} {name or ''}")
    return found


def test_no_package_imports_a_private_core_module_or_name():
    files = [
        p
        for pkg in sorted(PACKAGES.iterdir())
        if pkg.name != "core-runtime" and (pkg / "src").is_dir()
        for p in sorted((pkg / "src").rglob("*.py"))
    ]
    assert files, f"no package sources found under {PACKAGES}"
    bad = [line for p in files for line in _private_core_imports(p)]
    assert not bad, "private core imports (use sporeling.core.extend or a public name):\n" + (
        "\n".join(bad)
    )


def test_the_check_sees_a_private_import(tmp_path):
    src = tmp_path / "m.py"
    src.write_text(
        "from sporeling.core._primitive import Primitive\n"
        "from sporeling.core.ops import _core\n"
        "import sporeling.core.nn\n"
        "def f():\n    from sporeling.core.ops._core import as_tensor\n",
        encoding="utf-8",
    )
    lines = _private_core_imports(src, tmp_path)
    assert [line.split(": ", 1)[1] for line in lines] == [
        "sporeling.core._primitive Primitive",
        "sporeling.core.ops _core",
        "sporeling.core.ops._core as_tensor",
    ]
