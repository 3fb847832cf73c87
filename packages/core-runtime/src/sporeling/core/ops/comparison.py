"""(being written) comparison ops."""

__all__: list[str] = []
