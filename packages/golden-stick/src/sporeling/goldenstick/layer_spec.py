"""Constructor arguments of the core's layers, read back from an instance.

Pruning rebuilds layers with fewer channels from them, and the export writes them as the
Cell description (``nn.Conv2d(3, 16, (3, 3), ...)``) that plain Sporeling can load.
"""

from __future__ import annotations

from typing import Any

from sporeling.core import nn

__all__ = ["layer_kwargs", "rebuild_layer", "layer_source", "UnsupportedLayer"]


class UnsupportedLayer(TypeError):
    """A layer this module cannot describe (its arguments are not known here)."""


_ACTS = (nn.ReLU, nn.ReLU6, nn.Sigmoid, nn.Tanh, nn.SiLU, nn.HSwish, nn.HSigmoid, nn.Mish)


def layer_kwargs(cell: nn.Cell) -> dict[str, Any]:
    """Keyword arguments that rebuild ``cell``'s structure (parameters not included)."""
    if isinstance(cell, nn.Conv2d):
        return {
            "in_channels": cell.in_channels,
            "out_channels": cell.out_channels,
            "kernel_size": tuple(cell.kernel_size),
            "stride": tuple(cell.stride),
            "pad_mode": cell.pad_mode,
            "padding": tuple(cell.padding) if cell.pad_mode == "pad" else 0,
            "dilation": tuple(cell.dilation),
            "group": cell.group,
            "has_bias": cell.has_bias,
            "data_format": cell.format,
        }
    if isinstance(cell, nn.Conv2dBnAct):  # (BN folding makes it: a conv, a bias, a ReLU)
        act = cell.activation if cell.has_act else None
        if act is not None and type(act) is not nn.ReLU:
            raise UnsupportedLayer(f"Conv2dBnAct with activation {type(act).__name__}")
        kw = {k: v for k, v in layer_kwargs(cell.conv).items() if k != "data_format"}
        kw.update(has_bn=cell.has_bn, activation=None if act is None else "relu")
        if cell.has_bn:
            kw.update(momentum=cell.batchnorm.momentum, eps=cell.batchnorm.eps)
        return kw
    if isinstance(cell, nn.Dense):
        act = cell.activation
        if act is not None and type(act) not in _ACTS:
            raise UnsupportedLayer(f"Dense with activation {type(act).__name__}")
        return {
            "in_channels": cell.in_channels,
            "out_channels": cell.out_channels,
            "has_bias": cell.has_bias,
            "activation": act,
        }
    if isinstance(cell, (nn.BatchNorm2d, nn.BatchNorm1d)):
        kw = {
            "num_features": cell.num_features,
            "eps": cell.eps,
            "momentum": cell.momentum,
            "affine": cell.affine,
            "use_batch_statistics": cell.use_batch_statistics,
        }
        if isinstance(cell, nn.BatchNorm2d):
            kw["data_format"] = cell.format
        return kw
    if isinstance(cell, (nn.MaxPool2d, nn.AvgPool2d)):
        return {
            "kernel_size": tuple(cell.kernel_size),
            "stride": tuple(cell.stride),
            "pad_mode": cell.pad_mode,
            "data_format": cell.format,
        }
    if isinstance(cell, nn.Flatten):
        return {"start_dim": cell.start_dim, "end_dim": cell.end_dim}
    if isinstance(cell, _ACTS + (nn.Identity,)):
        return {}
    raise UnsupportedLayer(f"no constructor description for {type(cell).__name__}")


def rebuild_layer(cell: nn.Cell, **changes: Any) -> nn.Cell:
    """A new layer like ``cell`` (with ``changes``), holding copies of its parameters
    where the shapes still agree (the caller slices the others)."""
    kw = {**layer_kwargs(cell), **changes}
    new = type(cell)(**kw)
    return new


def layer_source(cell: nn.Cell) -> str:
    """``nn.Conv2d(in_channels=3, ...)``: the layer as Python source."""
    parts = []
    for k, v in layer_kwargs(cell).items():
        if isinstance(v, nn.Cell):
            parts.append(f"{k}=nn.{type(v).__name__}()")
        else:
            parts.append(f"{k}={v!r}")
    return f"nn.{type(cell).__name__}({', '.join(parts)})"
