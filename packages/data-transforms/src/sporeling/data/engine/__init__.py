"""sporeling.data.engine."""

__all__: list[str] = []
