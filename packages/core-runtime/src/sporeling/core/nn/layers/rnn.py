"""Recurrent layers: MindSpore 1.8's ``nn.RNN``, ``nn.LSTM``, ``nn.GRU`` and their cells.

The time loop is written with ops (matmul, sigmoid, tanh, split, select), so gradients come
from autograd. The input projection ``x @ W_ih.T + b_ih`` is one matmul over the whole
sequence; each step then does one ``h @ W_hh.T`` and the gate arithmetic.

Layouts follow MindSpore (and PyTorch): ``weight_ih_l{k}`` is ``(gates * hidden, in)``,
``weight_hh_l{k}`` is ``(gates * hidden, hidden)``, reverse-direction parameters end in
``_reverse``; gate order is ``i, f, g, o`` for LSTM and ``r, z, n`` for GRU. Every weight
and bias starts as ``U(-1/sqrt(hidden), 1/sqrt(hidden))``.

With ``seq_length``, the steps at or past a sequence's length leave its state unchanged and
output zeros, so the final state is the one at its length; the reverse direction of a
bidirectional layer walks each sequence backwards from its own last valid step.

>>> import numpy as np
>>> from sporeling.core import Tensor, nn
>>> lstm = nn.LSTM(3, 4, num_layers=2, bidirectional=True)
>>> out, (h, c) = lstm(Tensor(np.ones((5, 2, 3), np.float32)))
>>> out.shape, h.shape, c.shape
((5, 2, 8), (4, 2, 4), (4, 2, 4))
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from ... import dtype as _dt
from ... import ops
from ...initializer import Uniform, initializer
from ...tensor import Parameter, Tensor
from ..cell import Cell

__all__ = ["RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


# ---- argument checks ------------------------------------------------------------------------


def _positive_int(cls: str, name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{cls}: argument '{name}' expected a positive int, got {type(value).__name__} "
            f"{value!r}"
        )
    if value <= 0:
        raise ValueError(f"{cls}: argument '{name}' expected a positive int, got {value}")
    return int(value)


def _bool(cls: str, name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        hint = ""
        if name == "has_bias" and value in ("tanh", "relu"):
            hint = " (pass nonlinearity by keyword: RNN(..., nonlinearity='relu'))"
        raise TypeError(
            f"{cls}: argument '{name}' expected a bool, got {type(value).__name__} {value!r}{hint}"
        )
    return bool(value)


def _nonlinearity(cls: str, value: Any) -> str:
    if value not in ("tanh", "relu"):
        raise ValueError(f"{cls}: argument 'nonlinearity' expected 'tanh' or 'relu', got {value!r}")
    return str(value)


def _float_tensor(cls: str, name: str, value: Any) -> Tensor:
    if not isinstance(value, Tensor):
        raise TypeError(f"{cls}: input '{name}' expected a Tensor, got {type(value).__name__}")
    if value.dtype.category != 2:
        raise TypeError(
            f"{cls}: input '{name}' expected a floating Tensor (float16/float32/float64), "
            f"got {value.dtype}"
        )
    return value


def _state(cls: str, name: str, value: Any, x: Tensor, shape: tuple[int, ...]) -> Tensor:
    t = _float_tensor(cls, name, value)
    if t.dtype != x.dtype:
        raise TypeError(
            f"{cls}: input '{name}' must have the dtype of 'x' ({x.dtype}), got {t.dtype}"
        )
    if t.shape != shape:
        raise ValueError(f"{cls}: input '{name}' expected shape {shape}, got {t.shape}")
    return t


def _uniform_param(shape: tuple[int, ...], bound: float, name: str) -> Parameter:
    return Parameter(initializer(Uniform(bound), shape), name=name)


# ---- one step of each recurrence (shared by the cells and the stacked layers) ----------------
#
# ``gi`` is the input projection x @ W_ih.T (+ b_ih; + b_hh where it can be folded in),
# ``w_hh_t`` is W_hh transposed, ``b_hh`` is None when already folded or absent.


def _rnn_step(mode: str, gi: Tensor, state: Any, w_hh_t: Tensor, b_hh: Tensor | None) -> Any:
    if mode == "LSTM":
        h, c = state
        gates = gi + ops.matmul(h, w_hh_t)
        if b_hh is not None:
            gates = gates + b_hh
        i, f, g, o = ops.split(gates, 1, 4)
        c_new = ops.sigmoid(f) * c + ops.sigmoid(i) * ops.tanh(g)
        return ops.sigmoid(o) * ops.tanh(c_new), c_new
    gh = ops.matmul(state, w_hh_t)
    if b_hh is not None:
        gh = gh + b_hh
    if mode == "GRU":
        i_r, i_z, i_n = ops.split(gi, 1, 3)
        h_r, h_z, h_n = ops.split(gh, 1, 3)
        r = ops.sigmoid(i_r + h_r)
        z = ops.sigmoid(i_z + h_z)
        n = ops.tanh(i_n + r * h_n)
        return n + z * (state - n)  # (1 - z) * n + z * h
    pre = gi + gh
    return ops.tanh(pre) if mode == "RNN_TANH" else ops.relu(pre)


def _cast(w: Tensor, dtype: _dt.DType) -> Tensor:
    return w if w.dtype == dtype else ops.cast(w, dtype)


def _projection(
    mode: str, x: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None, b_hh: Tensor | None
) -> tuple[Tensor, Tensor, Tensor | None]:
    """``(x @ W_ih.T + biases, W_hh.T, b_hh still to add per step)`` in x's dtype."""
    w_ih, w_hh = _cast(w_ih, x.dtype), _cast(w_hh, x.dtype)
    gi = ops.matmul(x, ops.transpose(w_ih, (1, 0)))
    if b_ih is not None and b_hh is not None:
        b_ih, b_hh = _cast(b_ih, x.dtype), _cast(b_hh, x.dtype)
        if mode == "GRU":  # b_hn sits inside r * (W_hn h + b_hn): keep b_hh per step
            gi = gi + b_ih
        else:
            gi = gi + (b_ih + b_hh)
            b_hh = None
    return gi, ops.transpose(w_hh, (1, 0)), b_hh


def _run_direction(
    mode: str,
    gi_steps: tuple[Tensor, ...],
    state: Any,
    w_hh_t: Tensor,
    b_hh: Tensor | None,
    masks: tuple[Tensor, ...] | None,
    reverse: bool,
) -> tuple[list[Tensor], Any]:
    """Run the recurrence over the steps; returns per-step outputs (in time order) and the
    final state. ``masks[t]`` (bool, ``(batch, 1)``) is False past each sequence's length."""
    steps = len(gi_steps)
    outputs: list[Any] = [None] * steps
    order = range(steps - 1, -1, -1) if reverse else range(steps)
    is_lstm = mode == "LSTM"
    for t in order:
        new = _rnn_step(mode, gi_steps[t], state, w_hh_t, b_hh)
        if masks is None:
            state = new
            outputs[t] = new[0] if is_lstm else new
            continue
        m = masks[t]
        if is_lstm:
            state = (ops.select(m, new[0], state[0]), ops.select(m, new[1], state[1]))
            outputs[t] = ops.select(m, new[0], 0.0)
        else:
            state = ops.select(m, new, state)
            outputs[t] = ops.select(m, new, 0.0)
    return outputs, state


# ---- stacked layers -----------------------------------------------------------------------------


class _RNNBase(Cell):
    """Stacked (optionally bidirectional) recurrent layers of one ``mode``."""

    mode: str
    is_lstm: bool
    num_directions: int
    dropout: float

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        has_bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
    ) -> None:
        super().__init__()
        cls = type(self).__name__
        self.input_size = _positive_int(cls, "input_size", input_size)
        self.hidden_size = _positive_int(cls, "hidden_size", hidden_size)
        self.num_layers = _positive_int(cls, "num_layers", num_layers)
        self.has_bias = _bool(cls, "has_bias", has_bias)
        self.batch_first = _bool(cls, "batch_first", batch_first)
        self.bidirectional = _bool(cls, "bidirectional", bidirectional)
        if isinstance(dropout, bool) or not isinstance(dropout, numbers.Real):
            raise TypeError(
                f"{cls}: argument 'dropout' expected a float in [0, 1), got "
                f"{type(dropout).__name__} {dropout!r}"
            )
        if not 0 <= dropout < 1:
            raise ValueError(f"{cls}: argument 'dropout' expected a float in [0, 1), got {dropout}")
        self.dropout = float(dropout)
        self.mode = mode
        self.is_lstm = mode == "LSTM"
        self.num_directions = 2 if self.bidirectional else 1
        gate_size = _GATES[mode] * self.hidden_size
        bound = 1.0 / math.sqrt(self.hidden_size)
        # Registered in MindSpore's order: every weight_ih, then weight_hh, bias_ih, bias_hh.
        names = [
            f"l{layer}{'_reverse' if d else ''}"
            for layer in range(self.num_layers)
            for d in range(self.num_directions)
        ]
        for k, suffix in enumerate(names):
            in_size = (
                self.input_size
                if k < self.num_directions
                else (self.hidden_size * self.num_directions)
            )
            self._add_param(f"weight_ih_{suffix}", (gate_size, in_size), bound)
        for suffix in names:
            self._add_param(f"weight_hh_{suffix}", (gate_size, self.hidden_size), bound)
        if self.has_bias:
            for kind in ("ih", "hh"):
                for suffix in names:
                    self._add_param(f"bias_{kind}_{suffix}", (gate_size,), bound)

    def _add_param(self, name: str, shape: tuple[int, ...], bound: float) -> None:
        setattr(self, name, _uniform_param(shape, bound, name))

    def extend_repr(self) -> str:
        s = f"input_size={self.input_size}, hidden_size={self.hidden_size}"
        if self.mode.startswith("RNN_"):
            s += f", nonlinearity={self.mode[4:].lower()}"
        return (
            f"{s}, num_layers={self.num_layers}, has_bias={self.has_bias}, "
            f"batch_first={self.batch_first}, dropout={self.dropout}, "
            f"bidirectional={self.bidirectional}"
        )

    def _weights(self, layer: int, direction: int) -> tuple[Any, ...]:
        suffix = f"l{layer}{'_reverse' if direction else ''}"
        b_ih = getattr(self, f"bias_ih_{suffix}") if self.has_bias else None
        b_hh = getattr(self, f"bias_hh_{suffix}") if self.has_bias else None
        return (
            getattr(self, f"weight_ih_{suffix}"),
            getattr(self, f"weight_hh_{suffix}"),
            b_ih,
            b_hh,
        )

    def _check_inputs(self, x: Any, hx: Any, seq_length: Any) -> tuple[Tensor, Any, Any]:
        cls = self.cls_name
        x = _float_tensor(cls, "x", x)
        if x.ndim != 3:
            layout = (
                "(batch, seq_len, input_size)"
                if self.batch_first
                else ("(seq_len, batch, input_size)")
            )
            raise ValueError(
                f"{cls}: input 'x' expected a 3-d Tensor {layout}, got shape {x.shape}"
            )
        if x.shape[2] != self.input_size:
            raise ValueError(
                f"{cls}: input 'x' expected {self.input_size} features (input_size) in its last "
                f"dimension, got shape {x.shape}"
            )
        batch, steps = (x.shape[0], x.shape[1]) if self.batch_first else (x.shape[1], x.shape[0])
        if steps == 0:
            raise ValueError(f"{cls}: input 'x' has no time steps (shape {x.shape})")
        shape = (self.num_layers * self.num_directions, batch, self.hidden_size)
        if hx is None:
            zeros = ops.zeros(shape, x.dtype)
            if x.device != zeros.device:
                zeros = zeros.to(x.device)
            hx = (zeros, zeros) if self.is_lstm else zeros
        elif self.is_lstm:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise TypeError(f"{cls}: input 'hx' expected a tuple (h_0, c_0) of two Tensors")
            hx = (_state(cls, "hx[0]", hx[0], x, shape), _state(cls, "hx[1]", hx[1], x, shape))
        else:
            hx = _state(cls, "hx", hx, x, shape)
        if seq_length is not None:
            if not isinstance(seq_length, Tensor):
                raise TypeError(
                    f"{cls}: input 'seq_length' expected a Tensor of int32/int64, got "
                    f"{type(seq_length).__name__}"
                )
            if seq_length.dtype not in (_dt.int32, _dt.int64):
                raise TypeError(
                    f"{cls}: input 'seq_length' expected int32 or int64, got {seq_length.dtype}"
                )
            if seq_length.shape != (batch,):
                raise ValueError(
                    f"{cls}: input 'seq_length' expected shape ({batch},) (the batch size of "
                    f"'x'), got {seq_length.shape}"
                )
            host = seq_length.asnumpy()
            if host.min() < 0 or host.max() > steps:
                raise ValueError(
                    f"{cls}: input 'seq_length' values must lie in [0, {steps}] (seq_len), got "
                    f"{host.tolist()}"
                )
        return x, hx, seq_length

    def construct(self, x: Tensor, hx: Any = None, seq_length: Tensor | None = None) -> Any:
        x, hx, seq_length = self._check_inputs(x, hx, seq_length)
        if self.batch_first:
            x = ops.transpose(x, (1, 0, 2))
        steps = x.shape[0]
        masks = None
        if seq_length is not None:
            valid = ops.transpose(ops.sequence_mask(seq_length, steps), (1, 0))  # (T, B)
            masks = ops.unstack(ops.expand_dims(valid, 2), 0)  # T x (B, 1)
        h_n: list[Tensor] = []
        c_n: list[Tensor] = []
        layer_in = x
        for layer in range(self.num_layers):
            outs = []
            for d in range(self.num_directions):
                k = layer * self.num_directions + d
                state = (hx[0][k], hx[1][k]) if self.is_lstm else hx[k]
                gi, w_hh_t, b_hh = _projection(self.mode, layer_in, *self._weights(layer, d))
                steps_out, state = _run_direction(
                    self.mode, ops.unstack(gi, 0), state, w_hh_t, b_hh, masks, reverse=d == 1
                )
                outs.append(ops.stack(steps_out, 0))
                if self.is_lstm:
                    h_n.append(state[0])
                    c_n.append(state[1])
                else:
                    h_n.append(state)
            layer_in = outs[0] if len(outs) == 1 else ops.concat(outs, 2)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_in = ops.dropout(layer_in, self.dropout)[0]
        output = ops.transpose(layer_in, (1, 0, 2)) if self.batch_first else layer_in
        if self.is_lstm:
            return output, (ops.stack(h_n, 0), ops.stack(c_n, 0))
        return output, ops.stack(h_n, 0)


class RNN(_RNNBase):
    r"""Stacked Elman RNN: ``h_t = act(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)`` with
    ``act`` = tanh or ReLU.

    ``RNN(input_size, hidden_size, num_layers=1, has_bias=True, batch_first=False,
    dropout=0.0, bidirectional=False, *, nonlinearity='tanh')``. As in MindSpore 1.8 (which
    takes ``nonlinearity`` from ``**kwargs``), the fourth positional argument is ``has_bias``;
    give ``nonlinearity`` by keyword.

    ``construct(x, hx=None, seq_length=None) -> (output, h_n)``: ``x`` is
    ``(seq_len, batch, input_size)`` (``(batch, seq_len, input_size)`` with ``batch_first``),
    ``hx`` and ``h_n`` are ``(num_directions * num_layers, batch, hidden_size)``, ``output``
    is ``(seq_len, batch, num_directions * hidden_size)``.
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        has_bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        *,
        nonlinearity: str = "tanh",
    ) -> None:
        mode = "RNN_" + _nonlinearity("RNN", nonlinearity).upper()
        super().__init__(
            mode, input_size, hidden_size, num_layers, has_bias, batch_first, dropout, bidirectional
        )


class LSTM(_RNNBase):
    r"""Stacked LSTM (gates ``i, f, g, o``)::

        i, f, o = sigmoid(...), g = tanh(...)
        c_t = f * c_{t-1} + i * g,   h_t = o * tanh(c_t)

    ``construct(x, hx=None, seq_length=None) -> (output, (h_n, c_n))``; ``hx`` is a tuple
    ``(h_0, c_0)``. Shapes as :class:`RNN`.
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        has_bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
    ) -> None:
        super().__init__(
            "LSTM",
            input_size,
            hidden_size,
            num_layers,
            has_bias,
            batch_first,
            dropout,
            bidirectional,
        )


class GRU(_RNNBase):
    r"""Stacked GRU (gates ``r, z, n``)::

        r = sigmoid(W_ir x + b_ir + W_hr h + b_hr),  z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)
        n = tanh(W_in x + b_in + r * (W_hn h + b_hn)),  h_t = (1 - z) * n + z * h_{t-1}

    ``construct(x, hx=None, seq_length=None) -> (output, h_n)``; shapes as :class:`RNN`.
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        has_bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
    ) -> None:
        super().__init__(
            "GRU",
            input_size,
            hidden_size,
            num_layers,
            has_bias,
            batch_first,
            dropout,
            bidirectional,
        )


# ---- single-step cells --------------------------------------------------------------------------


class _RNNCellBase(Cell):
    mode: str
    bias_ih: Parameter | None
    bias_hh: Parameter | None

    def __init__(self, mode: str, input_size: int, hidden_size: int, has_bias: bool) -> None:
        super().__init__()
        cls = type(self).__name__
        self.input_size = _positive_int(cls, "input_size", input_size)
        self.hidden_size = _positive_int(cls, "hidden_size", hidden_size)
        self.has_bias = _bool(cls, "has_bias", has_bias)
        self.mode = mode
        gate_size = _GATES[mode] * self.hidden_size
        bound = 1.0 / math.sqrt(self.hidden_size)
        self.weight_ih = _uniform_param((gate_size, self.input_size), bound, "weight_ih")
        self.weight_hh = _uniform_param((gate_size, self.hidden_size), bound, "weight_hh")
        if self.has_bias:
            self.bias_ih = _uniform_param((gate_size,), bound, "bias_ih")
            self.bias_hh = _uniform_param((gate_size,), bound, "bias_hh")
        else:
            self.bias_ih = None
            self.bias_hh = None

    def extend_repr(self) -> str:
        s = f"input_size={self.input_size}, hidden_size={self.hidden_size}"
        if self.mode.startswith("RNN_"):
            s += f", nonlinearity={self.mode[4:].lower()}"
        return f"{s}, has_bias={self.has_bias}"

    def _step(self, x: Any, hx: Any) -> Any:
        cls = self.cls_name
        x = _float_tensor(cls, "x", x)
        if x.ndim != 2 or x.shape[1] != self.input_size:
            raise ValueError(
                f"{cls}: input 'x' expected shape (batch_size, {self.input_size}), got {x.shape}"
            )
        shape = (x.shape[0], self.hidden_size)
        is_lstm = self.mode == "LSTM"
        if hx is None:
            zeros = ops.zeros(shape, x.dtype)
            if x.device != zeros.device:
                zeros = zeros.to(x.device)
            hx = (zeros, zeros) if is_lstm else zeros
        elif is_lstm:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise TypeError(f"{cls}: input 'hx' expected a tuple (h, c) of two Tensors")
            hx = (_state(cls, "hx[0]", hx[0], x, shape), _state(cls, "hx[1]", hx[1], x, shape))
        else:
            hx = _state(cls, "hx", hx, x, shape)
        gi, w_hh_t, b_hh = _projection(
            self.mode, x, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh
        )
        return _rnn_step(self.mode, gi, hx, w_hh_t, b_hh)


class RNNCell(_RNNCellBase):
    """One Elman RNN step: ``h' = act(W_ih x + b_ih + W_hh h + b_hh)``.

    ``RNNCell(input_size, hidden_size, has_bias=True, nonlinearity='tanh')``;
    ``construct(x, hx) -> h'`` with ``x`` ``(batch, input_size)`` and ``hx``
    ``(batch, hidden_size)`` (zeros when None).
    """

    def __init__(
        self, input_size: int, hidden_size: int, has_bias: bool = True, nonlinearity: str = "tanh"
    ) -> None:
        mode = "RNN_" + _nonlinearity("RNNCell", nonlinearity).upper()
        super().__init__(mode, input_size, hidden_size, has_bias)

    def construct(self, x: Tensor, hx: Tensor | None = None) -> Tensor:
        return self._step(x, hx)


class LSTMCell(_RNNCellBase):
    """One LSTM step: ``construct(x, hx) -> (h', c')`` with ``hx = (h, c)`` (zeros when None).

    ``LSTMCell(input_size, hidden_size, has_bias=True)``; gates ``i, f, g, o``.
    """

    def __init__(self, input_size: int, hidden_size: int, has_bias: bool = True) -> None:
        super().__init__("LSTM", input_size, hidden_size, has_bias)

    def construct(self, x: Tensor, hx: Any = None) -> tuple[Tensor, Tensor]:
        return self._step(x, hx)


class GRUCell(_RNNCellBase):
    """One GRU step: ``construct(x, hx) -> h'`` (gates ``r, z, n``; ``hx`` zeros when None).

    ``GRUCell(input_size, hidden_size, has_bias=True)``.
    """

    def __init__(self, input_size: int, hidden_size: int, has_bias: bool = True) -> None:
        super().__init__("GRU", input_size, hidden_size, has_bias)

    def construct(self, x: Tensor, hx: Tensor | None = None) -> Tensor:
        return self._step(x, hx)
