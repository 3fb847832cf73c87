"""(being written) array ops."""

__all__: list[str] = []
