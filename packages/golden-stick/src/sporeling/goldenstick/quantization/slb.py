"""SLB: ``SlbQuantAwareTraining``, "Searching for Low-Bit Weights" (NeurIPS 2020).

Every Conv2d weight becomes a vector of logits over a fixed value set (``{-1, +1}`` for one
bit, ``linspace(-1, 1, 2**bits)`` otherwise). In training the weight is
``sum(softmax(logits * T) * values)``; once the temperature end flag is set, and always in
eval, it is the value of the arg-max. ``TemperatureScheduler`` (1.8's sample-script
callback, with its defaults) raises ``T`` by ``t_factor`` per epoch between
``t_start_time`` and ``t_end_time`` of the run, then sets the end flag. ``convert`` packs
the chosen value indices into 1/2/4 bits per weight.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sporeling.core import Parameter, Tensor, nn, ops
from sporeling.core.common.initializer import HeNormal, initializer
from sporeling.core.rewrite import Node, NodeType, SymbolTree, TreeNodeHelper
from sporeling.core.train import Callback

from ..comp_algo import CompAlgo
from ..deploy_runtime import (
    FixedFakeQuant,
    PackedConv2d,
    QuantizedLayer,
    pack_bits,
    slb_values,
    unpack_bits,
)
from .fake_quant import SimulatedFakeQuantizerPerLayer
from .quant_cells import QuantizeWrapperCell, linear_forward
from .quant_dtype import QuantDtype

__all__ = [
    "SlbFakeQuantizerPerLayer",
    "Conv2dSlbQuant",
    "SlbQuantAwareTraining",
    "TemperatureScheduler",
    "PackedConv2d",
    "pack_bits",
    "unpack_bits",
    "slb_values",
]

_BITS = {QuantDtype.INT1: 1, QuantDtype.INT2: 2, QuantDtype.INT4: 4}


class SlbFakeQuantizerPerLayer(nn.Cell):
    """Logits (..., n_values) -> weights: softmax-weighted values in training, the arg-max
    value after the end flag and in eval."""

    def __init__(self, bit_num: int = 1) -> None:
        super().__init__()
        if bit_num not in (1, 2, 4):
            raise NotImplementedError(
                f"SlbFakeQuantizerPerLayer: argument 'bit_num' expected 1, 2 or 4, got {bit_num!r}"
            )
        self.num_bits = bit_num
        self.w_list = slb_values(bit_num)
        # Parameters, not Python values, so a jit-compiled network sees every change
        self.temp = Parameter(np.ones(1, np.float32), name="temp", requires_grad=False)
        self.end_flag = Parameter(np.zeros(1, np.float32), name="end_flag", requires_grad=False)

    @property
    def temperature(self) -> float:
        return float(self.temp.asnumpy()[0])

    @property
    def temperature_end(self) -> bool:
        return bool(self.end_flag.asnumpy()[0] > 0)

    def set_temperature(self, t: float) -> None:
        if isinstance(t, bool) or not isinstance(t, (int, float)) or t <= 0:
            raise ValueError(f"set_temperature: argument 't' expected a float > 0, got {t!r}")
        self.temp.set_data(Tensor(np.array([t], np.float32)))

    def set_temperature_end_flag(self) -> None:
        self.end_flag.set_data(Tensor(np.ones(1, np.float32)))

    def construct(self, logits: Tensor) -> Tensor:
        values = Tensor(self.w_list)
        n = len(self.w_list)
        hard = ops.stop_gradient(
            ops.reduce_sum(ops.one_hot(ops.argmax(logits, -1), n, 1.0, 0.0) * values, -1)
        )
        if not self.training:
            return hard
        soft = ops.reduce_sum(ops.softmax(logits * self.temp, -1) * values, -1)
        return ops.select(ops.broadcast_to(self.end_flag > 0.5, soft.shape), hard, soft)

    def extend_repr(self) -> str:
        return (
            f"bit_num={self.num_bits}, temperature={self.temperature}, end={self.temperature_end}"
        )


class Conv2dSlbQuant(nn.Cell):
    """A Conv2d whose weight comes from SLB logits (``weight`` has a trailing value axis).

    The logits start as Golden Stick 0.1's ``Conv2dSlbQuant.from_float`` has them:
    ``HeNormal(mode='fan_out', nonlinearity='relu')`` over the 5-d shape (std
    ``sqrt(2 / (out * kh * kw * n_values))``, about 0.015 for a 64-channel 3x3 W4 conv); the
    float weight is not used. Small logits keep the softmax near uniform at ``T = 1``, so
    every value gets a gradient. (Logits derived from the float weight with gaps of several
    units saturate the softmax: in a 2-epoch CIFAR-10 run not one weight's arg-max changed.)"""

    def __init__(self, conv: nn.Conv2d, weight_bit_num: int) -> None:
        super().__init__(auto_prefix=False)
        self.conv = conv
        self.fake_quant_weight = SlbFakeQuantizerPerLayer(weight_bit_num)
        shape = (*conv.weight.shape, len(slb_values(weight_bit_num)))
        init = HeNormal(mode="fan_out", nonlinearity="relu")
        self.weight = Parameter(initializer(init, shape), name="weight")

    def construct(self, x: Tensor) -> Tensor:
        return linear_forward(self.conv, x, self.fake_quant_weight(self.weight), self.conv.bias)

    def indices(self) -> np.ndarray:
        """The chosen value of every weight (arg-max of its logits)."""
        return np.argmax(self.weight.asnumpy(), axis=-1)


def _packed_conv(conv: nn.Conv2d, indices: np.ndarray, num_bits: int) -> PackedConv2d:
    """The deploy form of an SLB conv: its chosen indices packed, its bias copied."""
    layer = PackedConv2d(
        tuple(conv.weight.shape),
        num_bits,
        tuple(conv.stride),
        conv.pad_mode,
        tuple(conv.padding) if isinstance(conv.padding, (list, tuple)) else conv.padding,
        tuple(conv.dilation),
        conv.group,
        conv.bias is not None,
    )
    layer.packed.set_data(Tensor(pack_bits(indices, num_bits)))
    if conv.bias is not None:
        layer.bias.set_data(Tensor(conv.bias.asnumpy().copy()))
    return layer


def _fix_grid(fixed: FixedFakeQuant | None, quantizer: Any) -> None:
    """Copy a calibrated fake quantizer's grid into its deploy form (NaN: not calibrated)."""
    if fixed is None or quantizer is None or not quantizer.calibrated:
        return
    nmin, nmax, scale, _ = quantizer.quant_params()
    fixed.grid.set_data(Tensor(np.array([nmin[0], nmax[0], scale[0]], np.float64)))


def _param(params: Any, key: str) -> Any:
    """A cb_params entry (a dict, or the run's attribute-style params)."""
    return params.get(key) if isinstance(params, dict) else getattr(params, key, None)


class TemperatureScheduler(Callback):
    """1.8's sample callback: at each epoch's start ``T = t_start_val * t_factor **
    (min(epoch, end) - start)`` once ``epoch > start`` (``start = int(epoch_size *
    t_start_time)``, ``end = int(epoch_size * t_end_time)``); the end flag from ``end`` on."""

    def __init__(
        self,
        model: Any = None,
        epoch_size: int = 100,
        has_trained_epoch: int = 0,
        t_start_val: float = 1.0,
        t_start_time: float = 0.2,
        t_end_time: float = 0.6,
        t_factor: float = 1.2,
    ) -> None:
        super().__init__()
        if isinstance(epoch_size, bool) or not isinstance(epoch_size, int) or epoch_size < 1:
            raise ValueError(
                "TemperatureScheduler: argument 'epoch_size' expected an int >= 1, "
                f"got {epoch_size!r}"
            )
        if not 0.0 <= t_start_time <= t_end_time <= 1.0:
            raise ValueError(
                "TemperatureScheduler: expected 0 <= t_start_time <= t_end_time <= 1, got "
                f"{t_start_time!r} and {t_end_time!r}"
            )
        self.model = model
        self.epochs = epoch_size
        self.has_trained_epoch = has_trained_epoch
        self.t_start_val = float(t_start_val)
        self.t_start_time = t_start_time
        self.t_end_time = t_end_time
        self.t_factor = float(t_factor)

    def schedule(self, epoch: int) -> tuple[float | None, bool]:
        """(temperature or None if unchanged, end flag) at the start of ``epoch`` (1-based)."""
        start = int(self.epochs * self.t_start_time)
        end = int(self.epochs * self.t_end_time)
        t = None
        if epoch > start:
            t = self.t_start_val * self.t_factor ** (min(epoch, end) - start)
        return t, epoch >= end

    def _network(self, run_context: Any) -> nn.Cell:
        net = _param(run_context.original_args(), "train_network")
        if net is None and self.model is not None:
            net = self.model.train_network
        return net

    def on_train_epoch_begin(self, run_context: Any) -> None:
        epoch = _param(run_context.original_args(), "cur_epoch_num") + self.has_trained_epoch
        t, end = self.schedule(epoch)
        for _, cell in self._network(run_context).cells_and_names():
            if cell.cls_name == "SlbFakeQuantizerPerLayer":
                if t is not None:
                    cell.set_temperature(t)
                if end:
                    cell.set_temperature_end_flag()


class SlbQuantAwareTraining(CompAlgo):
    """SLB weight quantization of every Conv2d. ``config``: ``quant_dtype`` (INT1 default,
    INT2 or INT4; 0.1's key), ``enable_act_quant`` (False; 8-bit activations, Golden Stick
    0.3), and 0.2's built-in schedule keys ``epoch_size``, ``has_trained_epoch``,
    ``t_start_val``, ``t_start_time``, ``t_end_time``, ``t_factor``."""

    _SCHEDULE = ("epoch_size", "has_trained_epoch", "t_start_val", "t_start_time")
    _SCHEDULE += ("t_end_time", "t_factor")

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        super().__init__(config)
        cls = type(self).__name__
        unknown = set(self._config) - {"quant_dtype", "enable_act_quant", *self._SCHEDULE}
        if unknown:
            raise ValueError(f"{cls}: unknown config keys {sorted(unknown)}")
        self.set_weight_quant_dtype(self._config.get("quant_dtype", QuantDtype.INT1))
        self.set_enable_act_quant(self._config.get("enable_act_quant", False))
        self._schedule = {k: self._config[k] for k in self._SCHEDULE if k in self._config}

    def set_weight_quant_dtype(self, weight_quant_dtype: QuantDtype) -> None:
        if not isinstance(weight_quant_dtype, QuantDtype):
            raise TypeError(
                f"SlbQuantAwareTraining: argument 'weight_quant_dtype' expected a QuantDtype, "
                f"got {weight_quant_dtype!r}"
            )
        if weight_quant_dtype not in _BITS:
            raise NotImplementedError(
                "SlbQuantAwareTraining: only INT1, INT2 and INT4 weights are supported, got "
                f"{weight_quant_dtype}"
            )
        self._weight_bits = _BITS[weight_quant_dtype]

    def set_enable_act_quant(self, enable_act_quant: bool) -> None:
        if not isinstance(enable_act_quant, bool):
            raise TypeError(
                f"SlbQuantAwareTraining: argument 'enable_act_quant' expected a bool, "
                f"got {enable_act_quant!r}"
            )
        self._act_quant = enable_act_quant

    def apply(self, network: nn.Cell) -> nn.Cell:
        super().apply(network)
        stree = SymbolTree.create(network)
        todo, seen = [stree], set()
        while todo:
            tree = todo.pop()
            if id(tree) in seen:
                continue
            seen.add(id(tree))
            for node in tree.nodes():
                sub = TreeNodeHelper.get_sub_tree(node)
                if sub is not None:
                    todo.append(sub)
                    continue
                if node.get_node_type() != NodeType.CallCell:
                    continue
                cell = node.get_instance()
                if not isinstance(cell, nn.Conv2d):
                    continue
                act = SimulatedFakeQuantizerPerLayer if self._act_quant else None
                wrapper = QuantizeWrapperCell(
                    Conv2dSlbQuant(cell, self._weight_bits),
                    act() if act else None,
                    act() if act else None,
                )
                new = Node.create_call_cell(
                    wrapper,
                    node.get_targets(),
                    node.get_args(),
                    node.get_kwargs(),
                    f"{node.get_name()}_quant",
                )
                tree.replace(node, [new])
        return stree.get_network()

    def callbacks(self, *args: Any, **kwargs: Any) -> list[Callback]:
        """0.2's built-in TemperatureScheduler (needs ``epoch_size`` in the config)."""
        if "epoch_size" not in self._schedule:
            raise ValueError(
                "SlbQuantAwareTraining.callbacks: set 'epoch_size' (and optionally the other "
                "schedule keys) in the config, or add TemperatureScheduler yourself as in 1.8"
            )
        model = args[0] if args else kwargs.get("model")
        return [TemperatureScheduler(model, **self._schedule)]

    def convert(self, net_opt: nn.Cell, ckpt_path: str = "") -> nn.Cell:
        """Replace each SLB conv by a :class:`PackedConv2d` (in place); returns the network."""
        super().convert(net_opt, ckpt_path)
        net_opt.set_train(False)
        for _, cell in list(net_opt.cells_and_names()):
            for name, child in list(cell.name_cells().items()):
                if isinstance(child, QuantizeWrapperCell) and isinstance(
                    child._handler, Conv2dSlbQuant
                ):
                    h = child._handler
                    packed = _packed_conv(h.conv, h.indices(), self._weight_bits)
                    inq, outq = child._input_quantizer, child._output_quantizer
                    if inq is None and outq is None:
                        cell.insert_child_to_cell(name, packed)
                    else:
                        layer = QuantizedLayer(packed, inq is not None, outq is not None)
                        _fix_grid(layer.in_quant, inq)
                        _fix_grid(layer.out_quant, outq)
                        cell.insert_child_to_cell(name, layer)
        from ..pruner.physical import drop_unused_cells

        drop_unused_cells(net_opt)  # the float convs the packed ones replaced
        fresh = {
            id(p)
            for _, c in net_opt.cells_and_names()
            if isinstance(c, (PackedConv2d, FixedFakeQuant))
            for p in c.get_parameters()
        }
        for path, param in net_opt.parameters_and_names():
            if id(param) in fresh:
                param.name = path
        return net_opt
