"""(being written) activation ops."""

__all__: list[str] = []
