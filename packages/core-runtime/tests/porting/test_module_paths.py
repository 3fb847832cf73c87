"""The module paths MindSpore 1.8 scripts import from exist and hold the core's objects."""

import importlib

import numpy as np
import pytest

import sporeling.core as ms
from sporeling.core import Tensor, nn

PATHS = {
    "sporeling.core.ops.operations": ["MatMul", "ReduceSum", "BiasAdd", "Unique", "Print"],
    "sporeling.core.ops.composite": ["GradOperation", "HyperMap", "MultitypeFuncGraph"],
    "sporeling.core.ops.functional": ["depend", "stop_gradient", "cast", "dtype"],
    "sporeling.core.common.dtype": ["float16", "float32", "int32", "half", "single"],
    "sporeling.core.common.initializer": ["initializer", "TruncatedNormal", "Normal"],
    "sporeling.core.common.parameter": ["Parameter", "ParameterTuple"],
    "sporeling.core.common.tensor": ["Tensor"],
    "sporeling.core.common.api": ["ms_function", "jit"],
    "sporeling.core.train.serialization": ["save_checkpoint", "load_checkpoint"],
    "sporeling.core.train.callback": ["LossMonitor", "ModelCheckpoint", "CheckpointConfig"],
    "sporeling.core.train.loss_scale_manager": [
        "FixedLossScaleManager",
        "DynamicLossScaleManager",
    ],
    "sporeling.core.context": ["ParallelMode", "set_context", "set_auto_parallel_context"],
    "sporeling.core.nn.loss.loss": ["LossBase"],
}


@pytest.mark.parametrize("module", sorted(PATHS))
def test_module_path_holds_names(module):
    mod = importlib.import_module(module)
    missing = [n for n in PATHS[module] if not hasattr(mod, n)]
    assert not missing, missing


def test_the_same_objects_as_the_core():
    from sporeling.core.common import dtype as mstype
    from sporeling.core.common.parameter import Parameter
    from sporeling.core.context import ParallelMode
    from sporeling.core.train.loss_scale_manager import DynamicLossScaleManager

    assert mstype.float16 is ms.float16 and Parameter is ms.Parameter
    assert ParallelMode is ms.ParallelMode
    assert DynamicLossScaleManager is nn.DynamicLossScaleManager


class Block(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(3, 2)
        self.drop = nn.Dropout(keep_prob=0.9)

    def construct(self, x):
        return self.drop(self.dense(x))


def test_cell_flag_methods():
    net = nn.SequentialCell(Block(), Block())
    net.add_flags_recursive(fp16=True)
    assert all(c.get_flags() == {"fp16": True} for _, c in net.cells_and_names())
    net.add_flags(defer_inline=True)
    assert net.defer_inline is True
    net.recompute()
    assert all(c.get_flags()["recompute"] for _, c in net.cells_and_names())
    with pytest.raises(TypeError, match="unexpected argument 'bogus'"):
        net.recompute(bogus=1)
    assert net.set_grad() is net and net.requires_grad
    x = Tensor(np.ones((1, 3), np.float32))
    assert net[0](x).shape == (1, 2)  # eval mode: dropout is the identity
    assert net[0].drop.keep_prob == 0.9
