"""Build the thin legacy modules (`c_transforms`, `py_transforms`): the unified classes
with the implementation pinned and `_legacy = True`, so mixing them with unified ops in
one list raises MindSpore's RuntimeError."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sporeling.data.transforms._base import Transform


def legacy_class(cls: type[Transform], implementation: str, module: str) -> type[Transform]:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        cls.__init__(self, *args, **kwargs)
        self.implementation = implementation

    return type(
        cls.__name__,
        (cls,),
        {
            "__init__": __init__,
            "__module__": module,
            "__doc__": f"Legacy {cls.__name__} ({implementation} implementation). {cls.__doc__}",
            "_legacy": True,
            "implementation": implementation,
        },
    )


def build(
    names: list[str], source: dict[str, Any], implementation: str, module: str
) -> dict[str, type]:
    return {n: legacy_class(source[n], implementation, module) for n in names}
