"""sporeling.data.datasets."""

__all__: list[str] = []
