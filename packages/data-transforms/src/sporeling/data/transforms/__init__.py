"""sporeling.data.transforms."""

__all__: list[str] = []
