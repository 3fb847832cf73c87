"""``CompAlgo``: the one interface every compression algorithm implements (Golden Stick).

``apply(net)`` rewrites a network into its compression form (the only call needed before
normal training), ``callback()`` (0.1's name) / ``callbacks()`` (0.2+) give the training
callbacks, ``loss(fn)`` may wrap the loss, and ``convert(net)`` turns a trained
compression network into its deploy form (0.3+; here it is where compression pays off).
"""

from __future__ import annotations

from typing import Any

from sporeling.core import nn
from sporeling.core.train import Callback

__all__ = ["CompAlgo"]


class CompAlgo:
    """Base class: ``CompAlgo(config: dict)``; subclasses read their options from config."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        if config is None:
            config = {}
        if not isinstance(config, dict):
            raise TypeError(
                f"{type(self).__name__}: argument 'config' expected a dict, "
                f"got {type(config).__name__}"
            )
        self._config = dict(config)

    def apply(self, network: nn.Cell) -> nn.Cell:
        """The compression form of ``network`` (the base class returns it unchanged)."""
        _check_cell(type(self).__name__ + ".apply", network)
        return network

    def callback(self) -> Callback:
        """Golden Stick 0.1's single training callback (the base gives an empty one)."""
        return Callback()

    def callbacks(self, *args: Any, **kwargs: Any) -> list[Callback]:
        """Golden Stick 0.2+'s list of training callbacks."""
        return [self.callback()]

    def loss(self, loss_fn: Any) -> Any:
        """The loss to train with (unchanged unless the algorithm needs to wrap it)."""
        return loss_fn

    def convert(self, net_opt: nn.Cell, ckpt_path: str = "") -> nn.Cell:
        """The deploy form of a trained compression network (base: unchanged).

        ``ckpt_path`` (0.3's argument) loads trained parameters into ``net_opt`` first.
        """
        _check_cell(type(self).__name__ + ".convert", net_opt)
        if ckpt_path:
            from sporeling.core import load_checkpoint, load_param_into_net

            load_param_into_net(net_opt, load_checkpoint(ckpt_path))
        return net_opt


def _check_cell(where: str, net: Any) -> None:
    if not isinstance(net, nn.Cell):
        raise TypeError(f"{where}: argument 'network' expected a Cell, got {type(net).__name__}")
