"""``ForwardValueAndGrad``: a cell returning the network's output and its gradients
(MindSpore 1.8's ``nn.ForwardValueAndGrad``), with ``GradOperation``'s options."""

from __future__ import annotations

from typing import Any

from ...autograd.functional import _differentiate
from ..cell import Cell

__all__ = ["ForwardValueAndGrad"]


class ForwardValueAndGrad(Cell):
    """``(output, gradients)`` of ``network``: with respect to the first input (default),
    every input (``get_all``), the ``weights`` (``get_by_list``) or both as ``(inputs,
    weights)``; ``sens_param``: the last input is the output's sensitivity."""

    def __init__(
        self,
        network: Cell,
        weights: Any = None,
        get_all: bool = False,
        get_by_list: bool = False,
        sens_param: bool = False,
    ) -> None:
        super().__init__(auto_prefix=False)
        if not isinstance(network, Cell):
            raise TypeError(
                f"ForwardValueAndGrad: argument 'network' expected a Cell, got {network!r}"
            )
        for arg, value in (("get_all", get_all), ("get_by_list", get_by_list),
                           ("sens_param", sens_param)):  # fmt: skip
            if not isinstance(value, bool):
                raise TypeError(
                    f"ForwardValueAndGrad: argument '{arg}' expected a bool, got {value!r}"
                )
        if get_by_list and weights is None:
            raise ValueError("ForwardValueAndGrad: get_by_list=True needs 'weights'")
        self.network = network
        self.weights = weights
        self.get_all, self.get_by_list, self.sens_param = get_all, get_by_list, sens_param

    def construct(self, *inputs: Any) -> Any:
        sens = None
        if self.sens_param:
            inputs, sens = inputs[:-1], inputs[-1]
        if self.get_all:
            position: Any = tuple(range(len(inputs)))
        elif self.get_by_list:
            position = None
        else:
            position = 0
        ws = self.weights if self.get_by_list else None
        out, grads, _ = _differentiate(self.network, position, ws, False, sens, inputs, {})
        return out, grads
