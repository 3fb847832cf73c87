"""(being written) sparse ops."""

__all__: list[str] = []
