"""(being written) linalg ops."""

__all__: list[str] = []
