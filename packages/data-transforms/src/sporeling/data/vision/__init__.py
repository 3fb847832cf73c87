"""sporeling.data.vision."""

__all__: list[str] = []
