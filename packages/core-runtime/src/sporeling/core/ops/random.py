"""(being written) random ops."""

__all__: list[str] = []
