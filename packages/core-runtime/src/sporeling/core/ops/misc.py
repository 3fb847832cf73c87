"""(being written) misc ops."""

__all__: list[str] = []
