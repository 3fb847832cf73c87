"""The suite's models: GPT, T5 and ViT on the 1.8 ``nn.transformer`` blocks, and Hugging
Face's T5 architecture for its checkpoints."""

from .gpt import GPT, GPTConfig, GPTModel, GPTWithLoss
from .hf_t5 import HFT5Config, HFT5ForConditionalGeneration
from .t5 import T5Config, T5Model, T5WithLoss
from .vit import ViT, ViTConfig, ViTWithLoss

__all__ = [
    "GPTConfig",
    "GPTModel",
    "GPT",
    "GPTWithLoss",
    "T5Config",
    "T5Model",
    "T5WithLoss",
    "ViTConfig",
    "ViT",
    "ViTWithLoss",
    "HFT5Config",
    "HFT5ForConditionalGeneration",
]
