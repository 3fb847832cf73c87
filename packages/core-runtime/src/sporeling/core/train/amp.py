"""Mixed precision by level, as MindSpore defines it: ``auto_mixed_precision(network,
amp_level)`` and ``build_train_network(network, optimizer, loss_fn, level, ...)``.

* ``O0``: float32 throughout.
* ``O1``: the cells on a white list (Dense, the convolutions, the recurrent layers,
  MultiheadAttention) compute in float16 and hand float32 on; everything else stays
  float32 (MindSpore 2.x).
* ``O2``: the whole network computes in float16 except BatchNorm (kept float32 unless
  ``keep_batchnorm_fp32=False``); training uses a ``DynamicLossScaleManager`` unless one is
  given (MindSpore 1.8's O2).
* ``O3``: the whole network in float16, BatchNorm included, no loss scaling.
* ``auto``: ``O0`` on CPU (MindSpore picks O2 on GPU, O3 on Ascend; Sporeling runs on CPU).

Weights stay float32 (master copies) in every level: ``Cell.to_float`` computes through a
cast (``nn/_amp.py``). The network's output is cast back to float32 before the loss, so the
loss and its scaling run in float32. ``dtype=bfloat16`` swaps float16 for bfloat16.
"""

from __future__ import annotations

from typing import Any

from .. import dtype as _dt
from ..nn.cell import Cell

__all__ = ["auto_mixed_precision", "build_train_network", "LEVELS"]

LEVELS = ("O0", "O1", "O2", "O3", "auto")


def _white_list() -> tuple[type, ...]:
    from .. import nn

    names = ("Dense", "Conv1d", "Conv2d", "Conv3d", "Conv1dTranspose", "Conv2dTranspose",
             "Conv3dTranspose", "LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell",
             "MultiheadAttention")  # fmt: skip
    return tuple(getattr(nn, n) for n in names if hasattr(nn, n))


def _batch_norms() -> tuple[type, ...]:
    from ..nn.layers.normalization import _BatchNorm

    return (_BatchNorm,)


class _OutputTo32(Cell):
    """The network with its floating outputs cast to float32 (for the loss)."""

    def __init__(self, backbone: Cell) -> None:
        super().__init__(auto_prefix=False)
        self._backbone = backbone

    def construct(self, *inputs: Any) -> Any:
        from ..nn._amp import _cast

        return _cast(self._backbone(*inputs), _dt.float32)


def _back_to_float32(cell: Cell, inputs: Any, output: Any) -> Any:
    """O1: a white-listed cell's result goes on in float32 (MindSpore casts back)."""
    from ..nn._amp import _cast

    return _cast(output, _dt.float32)


def _check_level(level: Any) -> str:
    if level not in LEVELS:
        raise ValueError(f"amp: argument 'amp_level' expected one of {list(LEVELS)}, got {level!r}")
    return "O0" if level == "auto" else level


def auto_mixed_precision(
    network: Cell, amp_level: str = "O0", keep_batchnorm_fp32: bool = True, dtype: Any = None
) -> Cell:
    """Mark ``network`` for mixed precision at ``amp_level`` (in place; returns it)."""
    if not isinstance(network, Cell):
        raise TypeError(
            f"auto_mixed_precision: argument 'network' expected a Cell, got {network!r}"
        )
    level = _check_level(amp_level)
    low = _dt.to_dtype(dtype) if dtype is not None else _dt.float16
    if low not in (_dt.float16, _dt.bfloat16):
        raise ValueError(
            f"auto_mixed_precision: argument 'dtype' expected float16 or bfloat16, got {dtype!r}"
        )
    if level == "O1":
        white = _white_list()
        for _, cell in network.cells_and_names():
            if isinstance(cell, white):
                cell.to_float(low)
                cell.register_forward_hook(_back_to_float32)
    elif level in ("O2", "O3"):
        network.to_float(low)
        if level == "O2" and keep_batchnorm_fp32:
            for _, cell in network.cells_and_names():
                if isinstance(cell, _batch_norms()):
                    cell.to_float(_dt.float32)
    return network


def build_train_network(
    network: Cell,
    optimizer: Any,
    loss_fn: Any = None,
    level: str = "O0",
    boost_level: str = "O0",
    **kwargs: Any,
) -> Cell:
    """The training cell MindSpore's ``amp.build_train_network`` makes (see the module docstring).

    Keyword arguments: ``keep_batchnorm_fp32``, ``loss_scale_manager``, ``dtype``.
    """
    from .. import nn
    from ..nn.wrap.loss_scale import DynamicLossScaleManager

    lvl = _check_level(level)
    for key in kwargs:
        if key not in ("keep_batchnorm_fp32", "loss_scale_manager", "dtype", "cast_model_type"):
            raise ValueError(f"build_train_network: unexpected argument {key!r}")
    keep_bn = kwargs.get("keep_batchnorm_fp32")
    keep_bn = lvl == "O2" if keep_bn is None else bool(keep_bn)
    auto_mixed_precision(network, lvl, keep_bn, kwargs.get("dtype"))
    if lvl != "O0":
        network = _OutputTo32(network)
    if loss_fn is not None:
        network = nn.WithLossCell(network, loss_fn)
    lsm = kwargs.get("loss_scale_manager")
    if lsm is None and lvl == "O2":
        lsm = DynamicLossScaleManager()
    if lsm is not None:
        update_cell = lsm.get_update_cell()
        if update_cell is not None:
            return nn.TrainOneStepWithLossScaleCell(network, optimizer, scale_sense=update_cell)
        return nn.TrainOneStepCell(network, optimizer, float(lsm.get_loss_scale()))
    return nn.TrainOneStepCell(network, optimizer)
