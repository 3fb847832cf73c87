"""ViT (Dosovitskiy et al. 2021) on the 1.8 ``TransformerEncoder``: non-overlapping patches
embedded by a strided convolution, a class token, learned positions, pre-norm blocks with no
mask, a final layer norm and a linear head on the class token."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from sporeling.core import Parameter, Tensor, nn, ops
from sporeling.core.initializer import TruncatedNormal, initializer

from ..modules import TransformerEncoder, TransformerOpParallelConfig
from ..modules.layers import LayerNorm
from .gpt import DTYPES

__all__ = ["ViTConfig", "ViT", "ViTWithLoss", "PatchEmbedding"]


@dataclass
class ViTConfig:
    """The ``model`` section of a ViT run config."""

    image_size: int = 224
    patch_size: int = 16
    num_channels: int = 3
    num_classes: int = 1000
    hidden_size: int = 768
    num_layers: int = 12
    num_heads: int = 12
    mlp_ratio: int = 4
    hidden_act: str = "gelu"
    dropout_rate: float = 0.0
    attention_dropout_rate: float = 0.0
    compute_dtype: str = "float32"
    param_init_type: str = "float32"
    init_std: float = 0.02

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ViTConfig:
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"ViTConfig: unknown model keys {unknown}; known: {sorted(names)}")
        cfg = cls(**d)
        if cfg.image_size % cfg.patch_size:
            raise ValueError(
                f"ViTConfig: 'image_size' {cfg.image_size} must be a multiple of 'patch_size' "
                f"{cfg.patch_size}"
            )
        return cfg

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def num_patches(self) -> int:
        return (self.image_size // self.patch_size) ** 2


def _keep_dtype(cell: nn.Cell, dt: Any) -> None:
    """The core's Dense/Conv2d make float32 parameters; give them the model's dtype."""
    for name in ("weight", "bias"):
        prm = getattr(cell, name)
        if prm.dtype != dt:
            setattr(cell, name, Parameter(ops.cast(prm, dt), name=prm.name))


class PatchEmbedding(nn.Cell):
    """(batch, channels, H, W) -> (batch, patches, hidden), patches in row-major order."""

    def __init__(self, config: ViTConfig) -> None:
        super().__init__()
        c = config
        self.hidden = c.hidden_size
        dt, p = DTYPES[c.param_init_type], c.patch_size
        w = initializer(TruncatedNormal(c.init_std), (c.hidden_size, c.num_channels, p, p), dt)
        self.projection = nn.Conv2d(
            c.num_channels,
            c.hidden_size,
            p,
            stride=p,
            pad_mode="valid",
            has_bias=True,
            weight_init=w,
            bias_init=initializer("zeros", (c.hidden_size,), dt),
        )
        _keep_dtype(self.projection, dt)

    def construct(self, x: Tensor) -> Tensor:
        y = self.projection(x)  # (b, hidden, gh, gw)
        b = y.shape[0]
        return ops.transpose(ops.reshape(y, (b, self.hidden, -1)), (0, 2, 1))


class ViT(nn.Cell):
    """``construct(images) -> logits (batch, num_classes)``."""

    def __init__(
        self, config: ViTConfig, parallel_config: TransformerOpParallelConfig | None = None
    ) -> None:
        super().__init__()
        self.config = c = config
        dt = DTYPES[c.param_init_type]
        self.patch_embedding = PatchEmbedding(c)
        self.cls_token = Parameter(
            initializer(TruncatedNormal(c.init_std), (1, 1, c.hidden_size), dt), name="cls_token"
        )
        self.position_embedding = Parameter(
            initializer(TruncatedNormal(c.init_std), (1, c.num_patches + 1, c.hidden_size), dt),
            name="position_embedding",
        )
        self.dropout = nn.Dropout(keep_prob=1.0 - c.dropout_rate)
        self.encoder = TransformerEncoder(
            None,
            c.num_layers,
            c.hidden_size,
            c.hidden_size * c.mlp_ratio,
            c.num_patches + 1,
            c.num_heads,
            attention_dropout_rate=c.attention_dropout_rate,
            hidden_dropout_rate=c.dropout_rate,
            hidden_act=c.hidden_act,
            layernorm_compute_type=dt,
            softmax_compute_type=dt,
            param_init_type=dt,
            parallel_config=parallel_config or TransformerOpParallelConfig(),
            compute_dtype=DTYPES[c.compute_dtype],
        )
        self.layernorm = LayerNorm((c.hidden_size,), param_init_type=dt)
        self.head = nn.Dense(
            c.hidden_size,
            c.num_classes,
            weight_init=initializer(
                TruncatedNormal(c.init_std), (c.num_classes, c.hidden_size), dt
            ),
            bias_init=initializer("zeros", (c.num_classes,), dt),
        )
        _keep_dtype(self.head, dt)

    def construct(self, images: Tensor) -> Tensor:
        x = embed_images(self, images)
        x, _ = self.encoder(x, None)
        x = self.layernorm(x)
        return self.head(ops.cast(x[:, 0], self.head.weight.dtype))


def embed_images(cell: nn.Cell, images: Tensor) -> Tensor:
    """Patches, class token and positions (and dropout) of ``images``: ViT's first part.

    ``cell`` holds ViT's ``config``, ``patch_embedding``, ``cls_token``,
    ``position_embedding`` and ``dropout``: the whole ViT, or the pipeline's first stage.
    """
    c = cell.config
    if images.ndim != 4 or images.shape[1:] != (c.num_channels, c.image_size, c.image_size):
        raise ValueError(
            f"ViT: 'images' must be (batch, {c.num_channels}, {c.image_size}, {c.image_size}), "
            f"but got {list(images.shape)}."
        )
    x = cell.patch_embedding(images)
    cls = ops.tile(cell.cls_token, (x.shape[0], 1, 1))
    return cell.dropout(ops.concat((cls, x), 1) + cell.position_embedding)


class ViTWithLoss(nn.Cell):
    """``construct(images, labels)``: mean softmax cross-entropy of the class logits."""

    def __init__(self, network: ViT) -> None:
        super().__init__(auto_prefix=False)
        self.network = network
        self.loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")

    def construct(self, images: Tensor, labels: Tensor) -> Tensor:
        return self.loss(self.network(images), labels)
