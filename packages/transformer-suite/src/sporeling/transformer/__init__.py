"""Sporeling transformer suite: MindSpore 1.8's ``nn.transformer`` and GPT/T5/ViT on the core."""

from ._version import __version__

__all__ = ["__version__"]
