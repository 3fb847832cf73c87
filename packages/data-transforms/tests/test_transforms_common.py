"""sporeling.data.transforms common ops and config."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sporeling.core import dtype as mstype
from sporeling.data import config
from sporeling.data import transforms as T


def test_compose_typecast_onehot():
    out = T.Compose([T.OneHot(3), T.TypeCast(np.float32)])(np.array([0, 2]))
    np.testing.assert_array_equal(out, [[1, 0, 0], [0, 0, 1]])
    assert out.dtype == np.float32
    assert T.TypeCast(mstype.int32)(np.ones(2)).dtype == np.int32
    smooth = T.OneHot(4, smoothing_rate=0.2)(np.array(1))
    np.testing.assert_allclose(smooth, [0.05, 0.85, 0.05, 0.05], rtol=1e-6)
    with pytest.raises(ValueError, match="OneHot: labels must be in"):
        T.OneHot(2)(np.array([3]))
    with pytest.raises(ValueError, match="OneHot: num_classes"):
        T.OneHot(0)


def test_random_apply_choice_order():
    add1 = T.Fill(1)
    with T.use_rng(np.random.default_rng(0)):
        outs = {int(T.RandomApply([add1], 0.5)(np.array([0]))[0]) for _ in range(30)}
    assert outs == {0, 1}
    assert T.RandomApply([add1], 1.0)(np.array([0]))[0] == 1
    choice = T.RandomChoice([T.Fill(1), T.Fill(2)])
    assert {int(choice(np.array([0]))[0]) for _ in range(30)} == {1, 2}
    order = T.RandomOrder([lambda x: x * 2, lambda x: x + 1])
    assert {int(order(np.array(1))) for _ in range(30)} == {3, 4}
    with pytest.raises(ValueError, match="RandomApply: prob"):
        T.RandomApply([add1], 2)
    with pytest.raises(ValueError, match="RandomChoice: transforms must not be empty"):
        T.RandomChoice([])


def test_duplicate_fill_mask_padend_slice_concat_unique():
    a, b = T.Duplicate()(np.arange(3))
    np.testing.assert_array_equal(a, b)
    assert a is not b
    np.testing.assert_array_equal(T.Fill(7)(np.zeros(3, np.int32)), [7, 7, 7])
    np.testing.assert_array_equal(
        T.Mask(T.Relational.GE, 2)(np.arange(4)), [False, False, True, True]
    )
    assert T.Mask(T.Relational.EQ, 1, np.int32)(np.arange(3)).dtype == np.int32
    np.testing.assert_array_equal(T.PadEnd([4], -1)(np.arange(2)), [0, 1, -1, -1])
    np.testing.assert_array_equal(T.PadEnd([2, 3])(np.ones((1, 1))), [[1, 0, 0], [0, 0, 0]])
    np.testing.assert_array_equal(T.PadEnd([3])(np.array([b"a"])), [b"a", b"", b""])
    np.testing.assert_array_equal(T.Slice(slice(1, 3))(np.arange(5)), [1, 2])
    np.testing.assert_array_equal(T.Slice([0, 2])(np.arange(5)), [0, 2])
    np.testing.assert_array_equal(T.Slice(None, 1)(np.arange(6).reshape(2, 3)), [[1], [4]])
    np.testing.assert_array_equal(
        T.Concatenate(0, np.array([9]), np.array([8]))(np.arange(2)), [9, 0, 1, 8]
    )
    u, idx, cnt = T.Unique()(np.array([5, 3, 5, 1, 3, 5]))
    np.testing.assert_array_equal(u, [5, 3, 1])
    np.testing.assert_array_equal(idx, [0, 1, 0, 2, 1, 0])
    np.testing.assert_array_equal(cnt, [3, 2, 1])
    with pytest.raises(ValueError, match="Unique: input must be 1-D"):
        T.Unique()(np.ones((2, 2)))


def test_plugin(tmp_path):
    lib = tmp_path / "plug.py"
    lib.write_text("def twice(x, arg=None):\n    return x * 2 if arg is None else x * int(arg)\n")
    np.testing.assert_array_equal(T.Plugin(str(lib), "twice")(np.arange(3)), [0, 2, 4])
    np.testing.assert_array_equal(T.Plugin(str(lib), "twice", "3")(np.arange(2)), [0, 3])
    with pytest.raises(ValueError, match="Plugin: .* has no callable"):
        T.Plugin(str(lib), "nope")


def test_config_roundtrip(tmp_path):
    old = config.get_num_parallel_workers()
    config.set_num_parallel_workers(3)
    assert config.get_num_parallel_workers() == 3
    config.set_num_parallel_workers(old)
    config.set_prefetch_size(4)
    assert config.get_prefetch_size() == 4
    with pytest.raises(ValueError, match="config.set_seed"):
        config.set_seed(-1)
    with pytest.raises(TypeError, match="config.set_prefetch_size"):
        config.set_prefetch_size("4")
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps({"seed": 3, "numParallelWorkers": 2}))
    config.load(path)
    assert config.get_seed() == 3 and config.get_num_parallel_workers() == 2
    config.set_num_parallel_workers(old)
    with pytest.raises(RuntimeError, match="config.load"):
        config.load(tmp_path / "missing.json")
