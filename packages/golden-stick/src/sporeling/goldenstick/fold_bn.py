"""Inference fusion for exports: each eval-mode BatchNorm2d that reads only a Conv2d's output
is folded into that conv's weight and bias (MindSpore Lite's conv+BN fusion at export).

Per output channel ``s = gamma / sqrt(moving_variance + eps)``: ``weight' = weight * s``,
``bias' = (bias - moving_mean) * s + beta`` (in float64, stored in the conv's dtype). The
folded network computes the eval-mode output of the original within float rounding, with
one pass over each activation fewer (a BN's pass cost as much as a third of its conv on
SCOP's pruned ResNet-20, see the README's Benchmarks). It no longer has the BN's moving
statistics, so it is for inference: fold after training, before :func:`.export_network`.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import Any

import numpy as np

from sporeling.core import Tensor, nn
from sporeling.core.rewrite import Node, PatternEngine, Replacement, SymbolTree

from .layer_spec import layer_kwargs

__all__ = ["fold_batchnorm", "folded_conv"]


def folded_conv(conv: nn.Conv2d, bn: nn.BatchNorm2d) -> nn.Conv2d | None:
    """A new Conv2d (with a bias) computing ``bn(conv(x))`` in eval mode, or None when the
    pair cannot fold: subclasses (a quantizing conv, say), NHWC layers, a BN told to use
    batch statistics, channel counts that differ."""
    if (
        type(conv) is not nn.Conv2d
        or type(bn) is not nn.BatchNorm2d
        or conv.format != "NCHW"
        or bn.format != "NCHW"
        or bn.use_batch_statistics
        or bn.num_features != conv.out_channels
    ):
        return None
    w = conv.weight.asnumpy()
    gamma = bn.gamma.asnumpy().astype(np.float64)
    scale = gamma / np.sqrt(bn.moving_variance.asnumpy().astype(np.float64) + bn.eps)
    bias = conv.bias.asnumpy().astype(np.float64) if conv.has_bias else 0.0
    shift = (bias - bn.moving_mean.asnumpy()) * scale + bn.beta.asnumpy()
    weight = w.astype(np.float64) * scale.reshape((-1,) + (1,) * (w.ndim - 1))
    kw = {**layer_kwargs(conv), "has_bias": True}
    return nn.Conv2d(
        **kw,
        weight_init=Tensor(weight.astype(w.dtype)),
        bias_init=Tensor(shift.astype(w.dtype)),
    )


class _Fold(Replacement):
    def __init__(self) -> None:
        super().__init__()
        self.folded: set[int] = set()  # ids of the convs and BNs folded away

    def build(self, pattern: Any, is_chain: bool, matched: OrderedDict[str, Node]) -> list[Node]:
        conv_node, bn_node = list(matched.values())
        cell = folded_conv(conv_node.get_instance(), bn_node.get_instance())
        if cell is None:
            return []  # unchanged
        self.folded |= {id(conv_node.get_instance()), id(bn_node.get_instance())}
        name = f"{conv_node.get_name()}_bn"
        return [Node.create_call_cell(cell, [name], conv_node.get_args(), name=name)]


class _FoldRelu(_Fold):
    """Conv2d -> BatchNorm2d -> ReLU as one ``nn.Conv2dBnAct`` (folded conv, no BN, ReLU):
    in eager mode the core adds its bias and applies the ReLU in one pass."""

    def build(self, pattern: Any, is_chain: bool, matched: OrderedDict[str, Node]) -> list[Node]:
        conv_node, bn_node, act_node = list(matched.values())
        conv, act = conv_node.get_instance(), act_node.get_instance()
        fused = folded_conv(conv, bn_node.get_instance()) if type(act) is nn.ReLU else None
        if fused is None:
            return []  # unchanged (the Conv2d -> BatchNorm2d pass may still fold it)
        self.folded |= {id(conv), id(bn_node.get_instance()), id(act)}
        kw = {k: v for k, v in layer_kwargs(fused).items() if k != "data_format"}
        cell = nn.Conv2dBnAct(**kw, activation="relu")
        cell.conv = fused
        # plain names ("weight"): the rewritten network names a new cell's fresh parameters
        # by their path only when so (else every block's would be "conv.weight")
        for path, param in cell.parameters_and_names():
            param.name = path.rsplit(".", 1)[-1]
        name = f"{conv_node.get_name()}_bn_relu"
        return [Node.create_call_cell(cell, [name], conv_node.get_args(), name=name)]


def fold_batchnorm(network: nn.Cell) -> nn.Cell:
    """``network`` rewritten with every Conv2d -> BatchNorm2d pair (the conv's output read by
    the BN alone, sub-networks included) replaced by one folded Conv2d (:func:`folded_conv`),
    and where a ReLU alone reads the BN, the three by one ``nn.Conv2dBnAct(has_bn=False,
    activation="relu")`` holding the folded conv; the result (in eval mode) shares its
    other layers with ``network``, which is not changed otherwise."""
    if not isinstance(network, nn.Cell):
        raise TypeError(
            f"fold_batchnorm: argument 'network' expected an nn.Cell, got {type(network).__name__}"
        )
    stree = SymbolTree.create(network)
    fold_relu, fold = _FoldRelu(), _Fold()
    PatternEngine([nn.Conv2d, nn.BatchNorm2d, nn.ReLU], fold_relu).apply(stree)
    PatternEngine([nn.Conv2d, nn.BatchNorm2d], fold).apply(stree)
    fold.folded |= fold_relu.folded
    out = stree.get_network()
    # the rewritten cells still hold the folded layers as children: drop those their
    # construct no longer calls (a layer also called elsewhere stays), so that neither
    # their parameters nor their descriptions are exported
    for _, cell in list(out.cells_and_names()):
        source = getattr(type(cell), "_rewrite_source", None)
        if source is None:
            continue
        for name, child in list(cell._cells.items()):
            if id(child) in fold.folded and not re.search(rf"\bself\.{re.escape(name)}\b", source):
                del cell._cells[name]
    out.set_train(False)
    return out
