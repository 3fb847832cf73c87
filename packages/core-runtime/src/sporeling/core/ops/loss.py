"""(being written) loss ops."""

__all__: list[str] = []
