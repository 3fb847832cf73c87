"""``GruNet``: a GRU with MindSpore RL's ``(x, h) -> (y, h)`` interface (used by QMIX)."""

from __future__ import annotations

from typing import Any

from sporeling.core import initializer, nn


class GruNet(nn.Cell):
    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        weight_init: Any = "normal",
        num_layers: int = 1,
        has_bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
    ) -> None:
        super().__init__()
        self.gru = nn.GRU(
            input_size,
            hidden_size,
            num_layers=num_layers,
            has_bias=has_bias,
            batch_first=batch_first,
            dropout=dropout,
            bidirectional=bidirectional,
        )
        if weight_init is not None:  # 0.5 re-initialises the GRU's weights (default 'normal')
            for param in self.gru.trainable_params():
                param.set_data(initializer.initializer(weight_init, param.shape, param.dtype))

    def construct(self, x_in: Any, h_in: Any) -> tuple[Any, Any]:
        """``x_in`` (seq, batch, input) (or batch first); ``h_in`` (layers*dirs, batch, hidden)."""
        return self.gru(x_in, h_in)
