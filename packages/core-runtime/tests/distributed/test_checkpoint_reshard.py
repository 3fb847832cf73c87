"""Distributed checkpoints: shard files for simulated layouts, reshard between them, exactly."""

from __future__ import annotations

import numpy as np
import pytest

from sporeling.core import cli, nn, set_seed
from sporeling.core.parallel.checkpoint import (
    ParallelLayout,
    layout_axes_of,
    load_distributed_checkpoint,
    merge_checkpoints,
    save_distributed_checkpoint,
    save_layout_checkpoints,
    shard_tensors,
    transform_checkpoints,
)
from sporeling.core.parallel.tensor_parallel import ColumnParallelDense, ParallelMultiheadAttention
from sporeling.core.train.serialization import load_checkpoint

AXES = {"fc1.weight": 0, "fc1.bias": 0, "fc2.weight": 1, "attn.in_proj_weight": (0, 3)}


def _full():
    rng = np.random.default_rng(0)
    return {
        "fc1.weight": rng.standard_normal((8, 6)).astype(np.float32),
        "fc1.bias": rng.standard_normal(8).astype(np.float32),
        "moment1.fc1.weight": rng.standard_normal((8, 6)).astype(np.float32),
        "fc2.weight": rng.standard_normal((3, 8)).astype(np.float32),
        "fc2.bias": rng.standard_normal(3).astype(np.float32),
        "attn.in_proj_weight": rng.standard_normal((24, 4)).astype(np.float32),
        "global_step": np.array(7, np.int32),
    }


LAYOUTS = [
    (1, 1, False),
    (2, 1, True),
    (1, 2, False),
    (2, 2, True),
    (4, 2, True),
    (1, 4, False),
    (2, 4, False),
]


def _files(d, world):
    return [str(d / f"rank_{r}" / f"checkpoint_{r}.ckpt") for r in range(world)]


@pytest.mark.parametrize("src", LAYOUTS)
@pytest.mark.parametrize("dst", LAYOUTS[::2])
def test_reshard_round_trips_exactly(tmp_path, src, dst):
    full = _full()
    a = ParallelLayout(*src, mp_axes=AXES)
    save_layout_checkpoints(full, str(tmp_path / "a"), a)
    transform_checkpoints(
        str(tmp_path / "a"), str(tmp_path / "b"), dp=dst[0], mp=dst[1], optimizer_shard=dst[2]
    )
    transform_checkpoints(
        str(tmp_path / "b"), str(tmp_path / "c"), dp=src[0], mp=src[1], optimizer_shard=src[2]
    )
    for d, lay in (("b", a.with_shape(*dst)), ("c", a)):
        merged, got = merge_checkpoints(_files(tmp_path / d, lay.world_size))
        assert got == lay
        for name, arr in full.items():
            np.testing.assert_array_equal(merged[name], arr)
    for r in range(a.world_size):  # the round trip restores every rank's file bit for bit
        one = load_checkpoint(_files(tmp_path / "a", a.world_size)[r])
        two = load_checkpoint(_files(tmp_path / "c", a.world_size)[r])
        for name in full:
            np.testing.assert_array_equal(one[name].asnumpy(), two[name].asnumpy())


def test_shard_slices_by_hand():
    lay = ParallelLayout(2, 2, True, AXES)
    # rank 3 = (dp 1, mp 1): fc1.weight rows 4..8 (mp), then rows 6..8 (optimizer shard)
    assert lay.slices("fc1.weight", (8, 6), 3) == [(6, 8), (0, 6)]
    assert lay.slices("moment1.fc1.weight", (8, 6), 3) == [(6, 8), (0, 6)]
    # fc2.weight: columns split by mp, rows (3) do not divide by dp: replicated over dp
    assert lay.slices("fc2.weight", (3, 8), 2) == [(0, 3), (0, 4)]
    pieces, _ = shard_tensors(_full(), lay, 1)
    q = _full()["attn.in_proj_weight"]
    want = np.concatenate([q[4:8], q[12:16], q[20:24]])  # mp rank 1 of each q/k/v block
    np.testing.assert_array_equal(pieces["attn.in_proj_weight"], want)


def test_real_layers_save_and_load_into_dense(tmp_path):
    set_seed(11)
    dense = nn.SequentialCell([nn.Dense(6, 8), nn.Dense(8, 3)])
    mha = nn.MultiheadAttention(8, 4)
    # simulate mp=2 by slicing by hand (what ColumnParallelDense holds on each rank)
    axes = {
        **layout_axes_of(nn.SequentialCell([ColumnParallelDense(6, 8)])),
        "in_proj_weight": (0, 3),
        "out_proj.weight": 1,
    }
    assert axes["0.weight"] == 0 and axes["0.bias"] == 0
    lay = ParallelLayout(1, 2, False, {"0.weight": 0, "0.bias": 0, **axes})
    full = {p.name: p.asnumpy() for _, p in dense.parameters_and_names()}
    for r in range(2):
        pieces, _ = shard_tensors(full, lay, r)
        save_distributed_checkpoint(
            pieces, str(tmp_path / f"rank_{r}" / f"checkpoint_{r}.ckpt"), lay, rank=r
        )
    twin = nn.SequentialCell([nn.Dense(6, 8), nn.Dense(8, 3)])
    load_distributed_checkpoint(twin, _files(tmp_path, 2))
    for (_, p), (_, q) in zip(
        dense.parameters_and_names(), twin.parameters_and_names(), strict=True
    ):
        np.testing.assert_array_equal(p.asnumpy(), q.asnumpy())
    pm = ParallelMultiheadAttention.from_dense(mha)
    assert pm.tensor_parallel_axes["in_proj_weight"] == (0, 3)


def test_wrong_piece_shape_and_missing_rank(tmp_path):
    lay = ParallelLayout(1, 2, False, {"w": 0})
    with pytest.raises(ValueError, match="holds a"):
        save_distributed_checkpoint(
            {"w": np.zeros((3, 2), np.float32)},
            str(tmp_path / "x.ckpt"),
            lay,
            rank=0,
            global_shapes={"w": (8, 2)},
        )
    save_layout_checkpoints({"w": np.ones((4, 2), np.float32)}, str(tmp_path / "s"), lay)
    with pytest.raises(ValueError, match="missing"):
        merge_checkpoints(_files(tmp_path / "s", 1))


def test_reshard_cli(tmp_path, capsys):
    save_layout_checkpoints(_full(), str(tmp_path / "a"), ParallelLayout(2, 2, True, AXES))
    code = cli.main(
        [
            "reshard",
            str(tmp_path / "a"),
            str(tmp_path / "b"),
            "--dp",
            "1",
            "--mp",
            "4",
            "--no-optimizer-shard",
            "--check",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "to dp=1 mp=4 optimizer_shard=False" in out and "equals the source exactly" in out
    merged, lay = merge_checkpoints(_files(tmp_path / "b", 4))
    assert (lay.dp, lay.mp) == (1, 4)
    np.testing.assert_array_equal(merged["fc2.weight"], _full()["fc2.weight"])
