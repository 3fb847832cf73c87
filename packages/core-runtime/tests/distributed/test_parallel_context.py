"""The parallel context, dataset sharding and the one-process communication world."""

import numpy as np
import pytest

import sporeling.core as ms
from sporeling.core import communication as comm
from sporeling.core import context
from sporeling.core.parallel import ParallelMode
from sporeling.core.train.dataset import ArrayDataset


@pytest.fixture(autouse=True)
def _reset():
    yield
    ms.reset_auto_parallel_context()


def test_mindspore_names_and_defaults():
    assert context.set_auto_parallel_context is ms.set_auto_parallel_context
    assert context.ParallelMode.DATA_PARALLEL == "data_parallel"
    assert ms.get_auto_parallel_context("parallel_mode") == "stand_alone"
    assert ms.get_auto_parallel_context("gradients_mean") is False
    cfg = ms.get_auto_parallel_context("parallel_optimizer_config")
    assert cfg == {"gradient_accumulation_shard": True, "parallel_optimizer_threshold": 64}
    ms.set_auto_parallel_context(
        parallel_mode=ParallelMode.DATA_PARALLEL,
        gradients_mean=True,
        enable_parallel_optimizer=True,
        parallel_optimizer_config={"parallel_optimizer_threshold": 0},
        comm_fusion={"allreduce": {"mode": "size", "config": 32}},
    )
    assert (
        ms.get_auto_parallel_context("parallel_optimizer_config")["parallel_optimizer_threshold"]
        == 0
    )
    ms.reset_auto_parallel_context()
    assert ms.get_auto_parallel_context("enable_parallel_optimizer") is False


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"parallel_mode": "pipeline"}, "parallel_mode"),
        ({"device_num": 0}, "device_num"),
        ({"gradients_mean": 1}, "gradients_mean"),
        ({"comm_fusion": {"allreduce": {"mode": "size", "config": -1}}}, "comm_fusion"),
        ({"no_such_key": 1}, "unknown argument 'no_such_key'"),
    ],
)
def test_bad_settings_name_the_argument(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        ms.set_auto_parallel_context(**kwargs)


def test_world_of_one_and_group_errors():
    comm.init()
    assert (comm.get_rank(), comm.get_group_size(), comm.get_local_rank()) == (0, 1)[:2] + (0,)
    x = ms.Tensor(np.arange(4.0))
    assert comm.all_gather(x).tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="does not exist"):
        comm.all_reduce(x, group="nope")
    with pytest.raises(ValueError, match="'op'"):
        comm.all_reduce(x, op="mean")
    with pytest.raises(ValueError, match="hccl"):
        comm.release()
        comm.init("hccl")
    comm.init()


def test_data_parallel_needs_init():
    comm.release()
    ms.set_auto_parallel_context(parallel_mode="data_parallel")
    net = ms.nn.Dense(2, 2)
    with pytest.raises(RuntimeError, match="communication.init"):
        ms.nn.TrainOneStepCell(
            ms.nn.WithLossCell(net, ms.nn.MSELoss()), ms.nn.SGD(net.trainable_params())
        )
    comm.init()


def test_dataset_shards_cover_the_global_batches():
    x = np.arange(20.0)
    full = [b[0].tolist() for b in ArrayDataset(x, batch_size=8, shuffle=True, seed=3)]
    parts = [
        [b[0].tolist() for b in ArrayDataset(x, batch_size=4, shuffle=True, seed=3,
                                             num_shards=2, shard_id=r)]
        for r in range(2)
    ]  # fmt: skip
    for b in range(2):
        assert sorted(parts[0][b] + parts[1][b]) == sorted(full[b])
    assert ArrayDataset(np.arange(5), num_shards=2, shard_id=1).get_dataset_size() == 3
    with pytest.raises(ValueError, match="shard_id"):
        ArrayDataset(x, num_shards=2, shard_id=2)
    with pytest.raises(ValueError, match="together"):
        ArrayDataset(x, num_shards=2)
