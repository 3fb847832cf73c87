"""``FullyConnectedLayers``: the MLP MindSpore RL's algorithms build their networks from."""

from __future__ import annotations

from typing import Any

from sporeling.core import nn


class FullyConnectedLayers(nn.Cell):
    """Dense layers of sizes ``fc_layer_params`` (input size first, output size last), the
    activation after every layer but the last, optional dropout rates between them."""

    def __init__(
        self,
        fc_layer_params: list[int],
        dropout_layer_params: list[float] | None = None,
        activation_fn: Any = None,
        weight_init: Any = "normal",
        bias_init: Any = "zeros",
    ) -> None:
        super().__init__()
        sizes = list(fc_layer_params)
        if len(sizes) < 2 or not all(isinstance(s, int) and s > 0 for s in sizes):
            raise ValueError(
                f"FullyConnectedLayers: fc_layer_params expected >= 2 positive ints (input, "
                f"..., output), got {fc_layer_params!r}"
            )
        if dropout_layer_params is not None and len(dropout_layer_params) != len(sizes) - 2:
            raise ValueError(
                f"FullyConnectedLayers: dropout_layer_params expected {len(sizes) - 2} rates "
                f"(one per hidden layer), got {dropout_layer_params!r}"
            )
        act = nn.ReLU() if activation_fn is None else activation_fn
        cells: list[nn.Cell] = []
        for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            cells.append(nn.Dense(n_in, n_out, weight_init=weight_init, bias_init=bias_init))
            if i < len(sizes) - 2:
                cells.append(act)
                if dropout_layer_params:
                    cells.append(nn.Dropout(p=dropout_layer_params[i]))
        self.fc_layers = nn.SequentialCell(cells)

    def construct(self, x: Any) -> Any:
        return self.fc_layers(x)
