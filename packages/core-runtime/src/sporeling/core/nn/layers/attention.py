"""Attention layers (MindSpore 2.x ``nn.MultiheadAttention``)."""

__all__: list[str] = []
