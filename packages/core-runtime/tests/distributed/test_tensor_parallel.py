"""Tensor-parallel layers and ``shard()`` strategies against their dense twins under MPI."""

from __future__ import annotations

import numpy as np
import pytest
from _mp_launch import run_mpi

from sporeling.core import Tensor, nn, set_seed
from sporeling.core.parallel.tensor_parallel import (
    ColumnParallelDense,
    ParallelEmbeddingLookup,
    ParallelMultiheadAttention,
    RowParallelDense,
)


@pytest.mark.parametrize("n", [2, 4])
def test_layers_match_dense_twins(n):
    out = run_mpi("mp_tensor_parallel.py", n)
    assert f"OK 14 size={n}" in out


@pytest.mark.parametrize("n", [2, 4])
def test_shard_strategies_match_unsharded(n):
    out = run_mpi("mp_shard.py", n)
    assert f"size={n}" in out and "OK" in out


def test_one_rank_layers_are_their_dense_twins():
    set_seed(0)
    x = Tensor(np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32))
    d = nn.Dense(8, 4)
    for layer in (ColumnParallelDense.from_dense(d), RowParallelDense.from_dense(d)):
        np.testing.assert_array_equal(layer(x).asnumpy(), d(x).asnumpy())
    m = nn.MultiheadAttention(8, 2)
    q = Tensor(np.ones((2, 1, 8), np.float32))
    np.testing.assert_allclose(
        ParallelMultiheadAttention.from_dense(m)(q, q, q)[0].asnumpy(),
        m(q, q, q)[0].asnumpy(),
        1e-6,
    )


def test_same_seed_builds_the_dense_parameters():
    set_seed(5)
    d = nn.Dense(4, 6)
    set_seed(5)
    c = ColumnParallelDense(4, 6)
    np.testing.assert_array_equal(c.weight.asnumpy(), d.weight.asnumpy())


def test_clear_errors():
    with pytest.raises(ValueError, match="argument 'add_bias_kv'=True is not supported"):
        ParallelMultiheadAttention(8, 2, add_bias_kv=True)
    with pytest.raises(ValueError, match="argument 'kdim'=4 is not supported"):
        ParallelMultiheadAttention(8, 2, kdim=4)
    with pytest.raises(ValueError, match="from_dense: argument 'mha' with .* is not supported"):
        ParallelMultiheadAttention.from_dense(nn.MultiheadAttention(8, 2, add_zero_attn=True))
    with pytest.raises(ValueError, match="manual_shapes"):
        ParallelEmbeddingLookup(8, 2, slice_mode="field_slice")
    with pytest.raises(TypeError, match="group"):
        ColumnParallelDense(4, 4, group=3)
