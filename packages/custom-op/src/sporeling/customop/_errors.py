"""Errors of the custom-op package.

Hybrid DSL errors follow MindSpore's types: a construct the DSL does not have (``while``,
``break``, ``continue``, ``try``, comprehensions, ...) is a :class:`DSLTypeError` (a
``TypeError``); a misuse of names, tensors or calls (an unknown function, a tensorised
expression, redefining a tensor, a scalar used outside its loop) is a
:class:`DSLValueError` (a ``ValueError``). Both carry the kernel name, file, line and a
stable kebab-case ``code``, and their message quotes the offending source line.
"""

from __future__ import annotations

__all__ = ["HybridDSLError", "DSLTypeError", "DSLValueError", "AutodiffError"]

DOCS = "https://sporeling.dev/custom-op/hybrid-dsl#errors"


class HybridDSLError(Exception):
    """A Hybrid DSL function breaks a rule; points at the offending source line."""

    def __init__(
        self,
        func: str,
        message: str,
        *,
        code: str,
        filename: str = "<unknown>",
        lineno: int | None = None,
        col: int = 0,
        source_line: str = "",
    ) -> None:
        self.func = func
        self.code = code
        self.filename = filename
        self.lineno = lineno
        self.col = col
        self.source_line = source_line
        self.reason = message
        where = f'\n  File "{filename}", line {lineno}' if lineno is not None else ""
        if source_line:
            stripped = source_line.lstrip()
            caret = " " * max(col - (len(source_line) - len(stripped)), 0)
            where += f"\n    {stripped}\n    {caret}^"
        super().__init__(f"hybrid kernel '{func}': {message} [{code}]{where}\n  see {DOCS}")


class DSLTypeError(HybridDSLError, TypeError):
    """A Python construct the Hybrid DSL does not have (MindSpore raises TypeError)."""


class DSLValueError(HybridDSLError, ValueError):
    """A misuse of names, tensors, calls or scopes (MindSpore raises ValueError)."""


class AutodiffError(ValueError):
    """The automatic backward cannot be derived for a hybrid kernel; pass ``bprop=``."""
