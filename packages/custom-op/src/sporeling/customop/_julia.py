"""``func_type="julia"``: ``"file.jl:Module:function"`` through juliacall (``[julia]`` extra).

As in MindSpore, the function is called with (inputs..., outputs...) and writes outputs in
place (``.=``). Arrays are passed without copying: Julia is column-major, so a row-major
array of shape ``(m, n)`` arrives as an ``n x m`` Julia array (the same memory), exactly as
MindSpore hands them over; elementwise code needs no change, other code permutes
(``permutedims``) as MindSpore's documentation shows.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

__all__ = ["JuliaKernel", "julia_available", "JULIA_HINT", "parse_julia_func"]

JULIA_HINT = (
    "Julia kernels need Julia through juliacall: pip install 'sporeling-custom-op[julia]' "
    "(juliacall downloads a Julia >= 1.6 on first use, or set PYTHON_JULIACALL_EXE to an "
    "installed julia)"
)


def julia_available() -> bool:
    try:
        import juliacall  # noqa: F401
    except Exception:
        return False
    return True


def parse_julia_func(func: Any) -> tuple[Path, str, str]:
    """Validate ``"file.jl:Module:function"`` (file exists, module and function defined)."""
    parts = func.rsplit(":", 2) if isinstance(func, str) else []
    if len(parts) != 3 or not all(parts):
        raise ValueError(
            f"Custom: argument 'func' expected 'file.jl:Module:function' for func_type "
            f"'julia', got {func!r}"
        )
    path, module, function = Path(parts[0]), parts[1], parts[2]
    if not path.is_file():
        raise FileNotFoundError(f"Custom julia: file {str(path)!r} does not exist")
    text = path.read_text()
    if not re.search(rf"^\s*module\s+{re.escape(module)}\b", text, re.M):
        raise ValueError(f"Custom julia: {path} does not define `module {module}`")
    if not re.search(rf"^\s*function\s+{re.escape(function)}\b", text, re.M):
        raise ValueError(f"Custom julia: {path} does not define `function {function}`")
    return path.resolve(), module, function


class JuliaKernel:
    def __init__(self, func: str) -> None:
        self.path, self.module, self.function = parse_julia_func(func)
        self._fn: Any = None

    def _load(self) -> Any:
        if self._fn is None:
            try:
                from juliacall import Main as jl
            except Exception as exc:
                raise RuntimeError(f"Custom julia: {JULIA_HINT} ({exc})") from exc
            jl.include(str(self.path))
            self._fn = getattr(getattr(jl, self.module), self.function)
        return self._fn

    def __call__(self, inputs: list[Any], outputs: list[Any]) -> None:
        fn = self._load()
        # a.T is an F-ordered view of the same memory: Julia sees the reversed shape.
        fn(*[a.T for a in inputs], *[o.T for o in outputs])
