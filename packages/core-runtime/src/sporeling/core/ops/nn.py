"""(being written) nn ops."""

__all__: list[str] = []
