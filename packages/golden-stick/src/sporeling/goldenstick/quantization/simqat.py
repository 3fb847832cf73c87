"""SimQAT: ``SimulatedQuantizationAwareTraining`` (Golden Stick 0.1's default QAT).

``apply`` rewrites the network through :mod:`sporeling.core.rewrite`: optional fusion of
Conv2d/Dense + BatchNorm (+ ReLU) chains (a Dense with its own ``activation`` before a
BN is left unfused: that activation runs before the BN), then the user's
``custom_transforms`` (``PatternEngine`` objects), a layer policy attached to every node
whose cell type has one (``custom_policies`` first, then the built-in Conv2d / Dense /
fused-cell policies; ``node.set_attribute("quant_policy", ...)``), each such node
replaced by its policy's ``wrap_cell`` (a :class:`QuantizeWrapperCell`), then input
quantizers that repeat the previous layer's output quantizer removed. ``convert`` gives
the int8 deploy network (see :mod:`.int8`).
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from sporeling.core import nn
from sporeling.core.errors import check_bool, check_int
from sporeling.core.rewrite import (
    Node,
    NodeType,
    PatternEngine,
    Replacement,
    SymbolTree,
    TreeNodeHelper,
)

from ..comp_algo import CompAlgo
from .layer_policy import ConvBnLayerPolicy, ConvLayerPolicy, DenseLayerPolicy, LayerPolicy
from .quant_cells import Conv2dBnAct, DenseBnAct, QuantizeWrapperCell
from .quant_dtype import QuantDtype

__all__ = ["SimulatedQuantizationAwareTraining"]

_CLS = "SimulatedQuantizationAwareTraining"
_DEFAULTS: dict[str, Any] = {
    "quant_delay": (0, 0),
    "quant_dtype": (QuantDtype.INT8, QuantDtype.INT8),
    "per_channel": (False, True),
    "symmetric": (False, True),
    "narrow_range": (False, False),
    "enable_fusion": False,
    "freeze_bn": 10000000,
    "bn_fold": False,
    "one_conv_fold": True,
}


def _pair(key: str, value: Any) -> tuple[Any, Any]:
    if isinstance(value, (list, tuple)):
        if len(value) != 2:
            raise ValueError(
                f"{_CLS}: config '{key}' expected one value or an (activation, weight) pair, "
                f"got {value!r}"
            )
        return value[0], value[1]
    return value, value


def _check_bool(name: str, value: Any) -> bool:
    return check_bool(_CLS, name, value)


def _check_delay(name: str, value: Any) -> int:
    return check_int(_CLS, name, value, 0)


def _check_dtype(name: str, value: Any) -> QuantDtype:
    if not isinstance(value, QuantDtype):
        raise TypeError(f"{_CLS}: argument '{name}' expected a QuantDtype, got {value!r}")
    if value != QuantDtype.INT8:
        raise NotImplementedError(
            f"{_CLS}: only QuantDtype.INT8 is supported for '{name}', got {value}"
        )
    return value


class _FuseReplacement(Replacement):
    def __init__(self, fused_cls: type) -> None:
        self.fused_cls = fused_cls

    def build(
        self, pattern: Any, is_chain_pattern: bool, matched: OrderedDict[str, Node]
    ) -> list[Node]:
        cells = [n.get_instance() for n in matched.values()]
        op = cells[0]
        bn = next((c for c in cells[1:] if isinstance(c, (nn.BatchNorm1d, nn.BatchNorm2d))), None)
        act = next((c for c in cells[1:] if isinstance(c, nn.ReLU)), None)
        if bn is not None and getattr(op, "activation", None) is not None:
            # the layer's own activation runs before the BN (as in MindSpore): not the
            # layer + BN pattern; left unfused (layer quantized alone, BN in float)
            return []
        first = next(iter(matched.values()))
        fused = self.fused_cls(op, bn, act)
        name = "_".join(n.get_name() for n in matched.values())
        return [Node.create_call_cell(fused, [name], first.get_args(), name=name)]


_LEAVES = (Conv2dBnAct, DenseBnAct, QuantizeWrapperCell)


def _walk_trees(stree: SymbolTree, leaves: tuple[type, ...]) -> list[SymbolTree]:
    """The tree and its sub-trees, not entering cells of the ``leaves`` types."""
    out: list[SymbolTree] = []
    todo = [stree]
    while todo:
        tree = todo.pop(0)
        if any(t is tree for t in out):
            continue
        out.append(tree)
        for node in tree.nodes():
            sub = TreeNodeHelper.get_sub_tree(node)
            if sub is not None and not isinstance(node.get_instance(), leaves):
                todo.append(sub)
    return out


def _check_transforms(value: Any) -> list[PatternEngine]:
    if not isinstance(value, (list, tuple)):
        raise TypeError(
            f"{_CLS}: config 'custom_transforms' expected a list of PatternEngine, got {value!r}"
        )
    for i, engine in enumerate(value):
        if not isinstance(engine, PatternEngine):
            raise TypeError(
                f"{_CLS}: config 'custom_transforms' item {i} expected a PatternEngine "
                f"(sporeling.core.rewrite), got {engine!r}"
            )
    return list(value)


PolicyEntry = LayerPolicy | Callable[[nn.Cell], LayerPolicy | None]


def _check_policies(value: Any) -> dict[type, PolicyEntry]:
    if not isinstance(value, Mapping):
        raise TypeError(
            f"{_CLS}: config 'custom_policies' expected a dict from Cell types to layer "
            f"policies, got {value!r}"
        )
    for key, policy in value.items():
        if not (isinstance(key, type) and issubclass(key, nn.Cell)):
            raise TypeError(
                f"{_CLS}: config 'custom_policies' key {key!r} expected a Cell type "
                "(a subclass of nn.Cell)"
            )
        if not isinstance(policy, LayerPolicy) and not callable(policy):
            raise TypeError(
                f"{_CLS}: config 'custom_policies' value for {key.__name__} expected a "
                f"LayerPolicy or a callable cell -> LayerPolicy | None, got {policy!r}"
            )
    return dict(value)


def _same_grid(a: nn.Cell, b: nn.Cell) -> bool:
    """Two activation quantizers that put one tensor on the same grid."""
    return type(a) is type(b) and a.extend_repr() == b.extend_repr()


class SimulatedQuantizationAwareTraining(CompAlgo):
    """8-bit simulated quantization-aware training (Jacob et al. 2018).

    ``config`` keys (pairs are (activation, weight)): ``quant_delay`` (0, 0),
    ``quant_dtype`` (INT8, INT8), ``per_channel`` (False, True), ``symmetric``
    (False, True), ``narrow_range`` (False, False), ``enable_fusion`` False, ``freeze_bn``
    10000000, ``bn_fold`` False, ``one_conv_fold`` True, and two extension hooks:

    * ``custom_transforms``: a list of ``PatternEngine`` objects (``sporeling.core.rewrite``)
      applied to the network's symbol tree after the built-in fusions (whether or not
      ``enable_fusion`` is set), e.g. to fuse ``[Conv2d, ReLU6]`` into a cell of your own.
    * ``custom_policies``: a dict ``{Cell type: policy}``, looked up before the built-in
      policies (a layer's class, then its base classes). ``policy`` is a
      :class:`~.layer_policy.LayerPolicy` (each matching layer gets a deep copy) or a
      callable ``policy(cell) -> LayerPolicy | None`` (None: that layer stays float). The
      layer is replaced by ``policy.wrap_cell(cell)``; a cell of a type with a policy is
      not entered (its own sub-layers are not quantized separately).
    """

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        super().__init__(config)
        unknown = set(self._config) - set(_DEFAULTS) - {"custom_transforms", "custom_policies"}
        if unknown:
            raise ValueError(f"{_CLS}: unknown config keys {sorted(unknown)}")
        transforms = self._config.get("custom_transforms")
        self._custom_transforms = [] if transforms is None else _check_transforms(transforms)
        policies = self._config.get("custom_policies")
        self._custom_policies = {} if policies is None else _check_policies(policies)
        cfg = {**_DEFAULTS, **self._config}
        act, weight = _pair("quant_delay", cfg["quant_delay"])
        self.set_act_quant_delay(act)
        self.set_weight_quant_delay(weight)
        act, weight = _pair("quant_dtype", cfg["quant_dtype"])
        self.set_act_quant_dtype(act)
        self.set_weight_quant_dtype(weight)
        act, weight = _pair("per_channel", cfg["per_channel"])
        self.set_act_per_channel(act)
        self.set_weight_per_channel(weight)
        act, weight = _pair("symmetric", cfg["symmetric"])
        self.set_act_symmetric(act)
        self.set_weight_symmetric(weight)
        act, weight = _pair("narrow_range", cfg["narrow_range"])
        self.set_act_narrow_range(act)
        self.set_weight_narrow_range(weight)
        self.set_enable_fusion(cfg["enable_fusion"])
        self.set_bn_fold(cfg["bn_fold"])
        self.set_one_conv_fold(cfg["one_conv_fold"])
        self.set_freeze_bn(cfg["freeze_bn"])

    # ---- setters (MindSpore's names and checks) ----------------------------------------
    def set_act_quant_delay(self, act_quant_delay: int) -> None:
        self._act_quant_delay = _check_delay("act_quant_delay", act_quant_delay)

    def set_weight_quant_delay(self, weight_quant_delay: int) -> None:
        self._weight_quant_delay = _check_delay("weight_quant_delay", weight_quant_delay)

    def set_act_quant_dtype(self, act_quant_dtype: QuantDtype) -> None:
        self._act_quant_dtype = _check_dtype("act_quant_dtype", act_quant_dtype)

    def set_weight_quant_dtype(self, weight_quant_dtype: QuantDtype) -> None:
        self._weight_quant_dtype = _check_dtype("weight_quant_dtype", weight_quant_dtype)

    def set_act_per_channel(self, act_per_channel: bool) -> None:
        if _check_bool("act_per_channel", act_per_channel):
            raise NotImplementedError(
                f"{_CLS}: per-channel activation quantization is not supported"
            )
        self._act_per_channel = False

    def set_weight_per_channel(self, weight_per_channel: bool) -> None:
        self._weight_per_channel = _check_bool("weight_per_channel", weight_per_channel)

    def set_act_symmetric(self, act_symmetric: bool) -> None:
        self._act_symmetric = _check_bool("act_symmetric", act_symmetric)

    def set_weight_symmetric(self, weight_symmetric: bool) -> None:
        self._weight_symmetric = _check_bool("weight_symmetric", weight_symmetric)

    def set_act_narrow_range(self, act_narrow_range: bool) -> None:
        self._act_narrow_range = _check_bool("act_narrow_range", act_narrow_range)

    def set_weight_narrow_range(self, weight_narrow_range: bool) -> None:
        self._weight_narrow_range = _check_bool("weight_narrow_range", weight_narrow_range)

    def set_enable_fusion(self, enable_fusion: bool) -> None:
        self._enable_fusion = _check_bool("enable_fusion", enable_fusion)

    def set_bn_fold(self, bn_fold: bool) -> None:
        self._bn_fold = _check_bool("bn_fold", bn_fold)

    def set_one_conv_fold(self, one_conv_fold: bool) -> None:
        self._one_conv_fold = _check_bool("one_conv_fold", one_conv_fold)

    def set_freeze_bn(self, freeze_bn: int) -> None:
        self._freeze_bn = _check_delay("freeze_bn", freeze_bn)

    # ---- apply --------------------------------------------------------------------------
    def policy(self) -> dict[str, Any]:
        """The settings of the built-in layer policies (each quantized node's policy)."""
        return {
            "act_quant_delay": self._act_quant_delay,
            "weight_quant_delay": self._weight_quant_delay,
            "act_symmetric": self._act_symmetric,
            "weight_symmetric": self._weight_symmetric,
            "act_narrow_range": self._act_narrow_range,
            "weight_narrow_range": self._weight_narrow_range,
            "weight_per_channel": self._weight_per_channel,
            "freeze_bn": self._freeze_bn,
            "bn_fold": self._bn_fold,
            "one_conv_fold": self._one_conv_fold,
        }

    def _layer_policy(self, cell: nn.Cell) -> LayerPolicy | None:
        """``cell``'s policy: the custom one for its class (or nearest base), else built-in."""
        for cls in type(cell).__mro__:
            entry = self._custom_policies.get(cls)
            if entry is None:
                continue
            if isinstance(entry, LayerPolicy):
                return copy.deepcopy(entry)
            policy = entry(cell)
            if policy is not None and not isinstance(policy, LayerPolicy):
                raise TypeError(
                    f"{_CLS}: config 'custom_policies' factory for {cls.__name__} expected to "
                    f"return a LayerPolicy or None, got {policy!r}"
                )
            return policy
        if isinstance(cell, nn.Conv2d):
            return ConvLayerPolicy(self.policy())
        if isinstance(cell, nn.Dense):
            return DenseLayerPolicy(self.policy())
        if isinstance(cell, (Conv2dBnAct, DenseBnAct)):
            return ConvBnLayerPolicy(self.policy())
        return None

    def apply(self, network: nn.Cell) -> nn.Cell:
        """The fake-quant form of ``network`` (parameters shared with it)."""
        super().apply(network)
        stree = SymbolTree.create(network)
        if self._enable_fusion:
            conv, dense = nn.Conv2d, nn.Dense
            for chain, fused in (
                ([conv, nn.BatchNorm2d, nn.ReLU], Conv2dBnAct),
                ([conv, nn.BatchNorm2d], Conv2dBnAct),
                ([conv, nn.ReLU], Conv2dBnAct),
                ([dense, nn.BatchNorm1d, nn.ReLU], DenseBnAct),
                ([dense, nn.BatchNorm1d], DenseBnAct),
                ([dense, nn.ReLU], DenseBnAct),
            ):
                PatternEngine(chain, _FuseReplacement(fused)).apply(stree)
        for engine in self._custom_transforms:
            engine.apply(stree)
        leaves = _LEAVES + tuple(self._custom_policies)
        for tree in _walk_trees(stree, leaves):
            self._quantize_tree(tree)
        return stree.get_network()

    def _quantize_tree(self, tree: SymbolTree) -> None:
        wrapped: dict[int, QuantizeWrapperCell] = {}
        for node in tree.nodes():
            if node.get_node_type() not in (NodeType.CallCell, NodeType.Tree):
                continue
            policy = self._layer_policy(node.get_instance())
            if policy is None:
                continue
            cell = policy.wrap_cell(node.get_instance())
            if cell is None:
                continue
            if not isinstance(cell, nn.Cell):
                raise TypeError(
                    f"{_CLS}: {type(policy).__name__}.wrap_cell expected to return a Cell or "
                    f"None, got {cell!r}"
                )
            node.set_attribute("quant_policy", policy)
            new = Node.create_call_cell(
                cell,
                node.get_targets(),
                node.get_args(),
                node.get_kwargs(),
                f"{node.get_name()}_quant",
            )
            new.set_attribute("quant_policy", policy)
            tree.replace(node, [new])
            if isinstance(cell, QuantizeWrapperCell):
                wrapped[id(new)] = cell
        # redundant quantizers: an input quantizer right after the previous layer's output
        # quantizer of the same kind (same class and settings)
        for node in tree.nodes():
            wrapper = wrapped.get(id(node))
            if wrapper is None or wrapper._input_quantizer is None:
                continue
            providers = node.get_inputs()
            if len(providers) != 1:
                continue
            prev = wrapped.get(id(providers[0]))
            if prev is None or prev._output_quantizer is None:
                continue
            if _same_grid(prev._output_quantizer, wrapper._input_quantizer):
                node.get_attribute("quant_policy").set_input_not_insert_fq()
                wrapper._input_quantizer = None
                wrapper.set_input_source(prev._output_quantizer)

    def convert(self, net_opt: nn.Cell, ckpt_path: str = "") -> nn.Cell:
        """The int8 deploy network: every QuantizeWrapperCell becomes an int8 layer."""
        super().convert(net_opt, ckpt_path)
        from .int8 import convert_to_int8

        return convert_to_int8(net_opt)
