"""Griffe extension for the docs build: render doctest examples as ``pycon`` code blocks.

Our docstrings carry runnable examples as bare doctest lines (``>>> expr`` followed by the
expected output), without a numpydoc ``Examples`` section. Left alone, Markdown reads
``>>>`` as nested block quotes and an output such as ``[[3.0, 2.0], [1, 2]]`` as a
reference link, which mkdocs-autorefs then reports as a missing cross-reference. This
extension wraps every doctest block (a ``>>>`` line up to the next blank line, as doctest
itself delimits examples) in a fenced ``pycon`` block before the docstring is parsed, so
every current and future example renders as highlighted code.

Loaded by path from ``mkdocs.yml`` (``plugins.mkdocstrings.handlers.python.options.extensions``).
"""

from __future__ import annotations

from typing import Any

import griffe

_FENCE = "```"


def fence_doctests(text: str) -> str:
    """Wrap each doctest block of ``text`` in a fenced ``pycon`` block at its indentation.

    Lines already inside a fenced block are left as they are.
    """
    out: list[str] = []
    lines = text.splitlines()
    in_fence = False
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip()
        if stripped.startswith(_FENCE):
            in_fence = not in_fence
        if in_fence or not stripped.startswith(">>>"):
            out.append(line)
            i += 1
            continue
        indent = line[: len(line) - len(stripped)]
        block = []
        while i < len(lines) and lines[i].strip() and lines[i].startswith(indent):
            block.append(lines[i])
            i += 1
        if out and out[-1].strip():
            out.append("")  # a fence must not continue the paragraph above
        out += [f"{indent}{_FENCE}pycon", *block, f"{indent}{_FENCE}"]
        if i < len(lines) and lines[i].strip():
            out.append("")
    return "\n".join(out)


class DoctestBlocks(griffe.Extension):
    """Fence the doctest examples of every docstring once the object tree is loaded."""

    def on_object(self, *, obj: griffe.Object, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence_doctests(obj.docstring.value)
