"""(being written) reduction ops."""

__all__: list[str] = []
