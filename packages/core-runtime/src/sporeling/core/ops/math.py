"""(being written) math ops."""

__all__: list[str] = []
