"""(being written) scatter ops."""

__all__: list[str] = []
