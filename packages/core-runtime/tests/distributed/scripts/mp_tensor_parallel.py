"""Run under ``mpiexec -n N``: every tensor-parallel layer against its dense twin.

For each layer: the dense twin and the sharded layer (``from_dense``) see the same input;
the loss ``sum(out * R)`` (R fixed, the same on every rank) is differentiated; the sharded
outputs, input gradients and parameter gradients (shards all-gathered and assembled) must
match the dense ones. Prints ``OK <checks>`` on rank 0.
"""

from __future__ import annotations

import sys

import numpy as np

from sporeling.core import Tensor, nn, ops, set_seed
from sporeling.core.communication import get_group_size, get_rank, init
from sporeling.core.communication.management import GlobalComm, get_group
from sporeling.core.parallel.tensor_parallel import (
    ColumnParallelDense,
    ParallelEmbeddingLookup,
    ParallelMultiheadAttention,
    RowParallelDense,
    VocabParallelEmbedding,
)

RTOL, ATOL = 1e-4, 1e-5


def world():
    return get_group(GlobalComm.WORLD_COMM_GROUP, "test")


def assemble(local: np.ndarray, axis, size: int) -> np.ndarray:
    """All shards of ``local`` put back together along ``axis`` (int or (axis, blocks))."""
    if axis is None:
        return local
    blocks = 1
    if isinstance(axis, tuple):
        axis, blocks = axis
    parts = world().allgather_object(local)  # shards may differ in size (field_slice)
    if blocks == 1:
        return np.concatenate(parts, axis=axis)
    per_rank = [np.split(p, blocks, axis=axis) for p in parts]
    return np.concatenate(
        [np.concatenate([pr[b] for pr in per_rank], axis=axis) for b in range(blocks)], axis=axis
    )


def dense_grad(g) -> np.ndarray:
    return np.asarray(g.asnumpy())


def run(name, dense, par, inputs, out_fn=lambda y: y, local_out=None, reduce_param=()):
    """Compare outputs, input grads and parameter grads of ``par`` with ``dense``."""
    size = get_group_size()
    rng = np.random.default_rng(7)
    y_dense = out_fn(dense(*inputs))
    r = Tensor(rng.standard_normal(y_dense.shape).astype(np.float32))
    float_pos = tuple(i for i, t in enumerate(inputs) if t.dtype.category == 2)

    def loss_of(layer, rr):
        def f(*xs):
            y = out_fn(layer(*xs))
            return ops.reduce_sum(y * rr)

        return f

    d_params = dense.trainable_params()
    p_params = par.trainable_params()
    gp = float_pos if float_pos else None
    fd = ops.value_and_grad(loss_of(dense, r), grad_position=gp, weights=d_params)
    r_local = r if local_out is None else Tensor(local_out(r.asnumpy()))
    fp = ops.value_and_grad(loss_of(par, r_local), grad_position=gp, weights=p_params)
    (ld, gd), (lp, gpar) = fd(*inputs), fp(*inputs)
    y_par = out_fn(par(*inputs)).asnumpy()
    want = y_dense.asnumpy() if local_out is None else local_out(y_dense.asnumpy())
    np.testing.assert_allclose(y_par, want, RTOL, ATOL, err_msg=f"{name}: forward")
    if local_out is not None:  # batch-sliced output: the loss is a sum of local losses
        lp = Tensor(world().allreduce(np.asarray(lp.asnumpy(), np.float32).reshape(1)))[0]
    np.testing.assert_allclose(lp.asnumpy(), ld.asnumpy(), 1e-4, 1e-4, err_msg=f"{name}: loss")
    if gp is not None:
        gxd, gxp = gd[0], gpar[0]
        gxd = gxd if isinstance(gxd, tuple) else (gxd,)
        gxp = gxp if isinstance(gxp, tuple) else (gxp,)
        for a, b in zip(gxd, gxp, strict=True):
            np.testing.assert_allclose(
                b.asnumpy(), a.asnumpy(), RTOL, ATOL, err_msg=f"{name}: input gradient"
            )
    wd, wp = gd[1] if gp is not None else gd, gpar[1] if gp is not None else gpar
    axes = {}
    for cell_name, cell in par.cells_and_names():
        for attr, ax in getattr(cell, "tensor_parallel_axes", {}).items():
            axes[(cell_name + "." if cell_name else "") + attr] = ax
    names = [n for n, _ in par.parameters_and_names()]
    trainable = {id(p) for p in p_params}
    pnames = [n for n, p in par.parameters_and_names() if id(p) in trainable]
    assert len(pnames) == len(p_params), names
    for pname, a, b in zip(pnames, wd, wp, strict=True):
        local = b.asnumpy()
        if pname in reduce_param:  # replicated table of a batch-sliced lookup: sum the parts
            local = world().allreduce(np.ascontiguousarray(local))
        full = assemble(local, axes.get(pname), size)
        np.testing.assert_allclose(
            full, dense_grad(a), RTOL, ATOL, err_msg=f"{name}: gradient of {pname}"
        )
    return 1


def main() -> int:
    init()
    rank, size = get_rank(), get_group_size()
    set_seed(1234)
    rng = np.random.default_rng(0)
    checks = 0
    f32 = np.float32
    x = Tensor(rng.standard_normal((6, 8)).astype(f32))
    x3 = Tensor(rng.standard_normal((2, 3, 8)).astype(f32))

    dense = nn.Dense(8, 4 * size, activation="tanh")
    for gather in (True, False):
        col = ColumnParallelDense.from_dense(dense, gather_output=gather)
        if gather:
            checks += run("column(gather)", dense, col, [x])
        else:
            # local outputs, gathered again by _Gather: gather_output=False keeps slices
            checks += run("column(local)", dense, nn.SequentialCell([col, _Gather()]), [x3])
    dense_row = nn.Dense(4 * size, 5)
    xr = Tensor(rng.standard_normal((6, 4 * size)).astype(f32))
    checks += run("row", dense_row, RowParallelDense.from_dense(dense_row), [xr])

    # column (local) -> row (parallel input): the Megatron MLP block
    mlp = nn.SequentialCell([nn.Dense(8, 4 * size, activation="relu"), nn.Dense(4 * size, 8)])
    pmlp = nn.SequentialCell(
        [
            ColumnParallelDense.from_dense(mlp[0], gather_output=False),
            RowParallelDense.from_dense(mlp[1], input_is_parallel=True),
        ]
    )
    checks += run("mlp", mlp, pmlp, [x3])

    ids = Tensor(rng.integers(-1, 4 * size + 1, (4, 2 * size)))
    emb = nn.Embedding(4 * size, 6)
    checks += run("vocab-embedding", emb, VocabParallelEmbedding.from_dense(emb), [ids])
    emb1 = nn.Embedding(4 * size, 6, use_one_hot=True)
    ids_ok = Tensor(rng.integers(0, 4 * size, (4, 2 * size)))
    checks += run(
        "vocab-embedding(one-hot)", emb1, VocabParallelEmbedding.from_dense(emb1), [ids_ok]
    )

    for mode in ("table_row_slice", "table_column_slice", "batch_slice", "field_slice"):
        shapes = tuple(2 * (r + 1) for r in range(size)) if mode == "field_slice" else None
        vocab = sum(shapes) if shapes else 4 * size
        look = nn.EmbeddingLookup(
            vocab, 2 * size, target="DEVICE", slice_mode=mode, manual_shapes=shapes, sparse=False
        )
        if mode == "field_slice":  # field block r (2 fields) holds ids of rank r's rows
            starts = np.cumsum((0,) + shapes[:-1])
            cols = [rng.integers(starts[r], starts[r] + shapes[r], (4, 2)) for r in range(size)]
            fid = Tensor(np.concatenate(cols, axis=1))
        else:
            fid = Tensor(rng.integers(0, vocab + 1, (2 * size, 3)))
        plook = ParallelEmbeddingLookup.from_dense(look)
        if mode == "batch_slice":

            def local(a, size=size, rank=rank):
                return np.split(a, size, axis=0)[rank]

            checks += run(
                f"lookup({mode})",
                look,
                plook,
                [fid],
                local_out=local,
                reduce_param=("embedding_table",),
            )
        else:
            checks += run(f"lookup({mode})", look, plook, [fid])
    # sparse (RowTensor) gradients through a row-sliced table
    look = nn.EmbeddingLookup(4 * size, 3, slice_mode="table_row_slice", sparse=True)
    checks += run(
        "lookup(row, sparse)",
        look,
        ParallelEmbeddingLookup.from_dense(look),
        [Tensor(rng.integers(0, 4 * size, (5,)))],
    )

    heads = 2 * size
    mha = nn.MultiheadAttention(4 * heads, heads)
    q = Tensor(rng.standard_normal((5, 2, 4 * heads)).astype(f32))
    kv = Tensor(rng.standard_normal((7, 2, 4 * heads)).astype(f32))
    pmha = ParallelMultiheadAttention.from_dense(mha)
    checks += run("mha(out)", mha, pmha, [q, kv, kv], out_fn=lambda o: o[0])
    checks += run("mha(weights)", mha, pmha, [q, kv, kv], out_fn=lambda o: o[1])
    mask = Tensor(rng.random((5, 7)) < 0.3)
    mask[:, 0] = False

    class Masked(nn.Cell):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def construct(self, a, b):
            return self.inner(a, b, b, attn_mask=mask, average_attn_weights=False)

    checks += run("mha(mask)", Masked(mha), Masked(pmha), [q, kv], out_fn=lambda o: o[0] + 0)
    if rank == 0:
        print(f"OK {checks} size={size}")
    return 0


class _Gather(nn.Cell):
    """Gathers a column-parallel layer's local output (for the gather_output=False check)."""

    def construct(self, y):
        from sporeling.core.parallel.tensor_parallel import gather_from_mp

        return gather_from_mp(y, -1)


if __name__ == "__main__":
    sys.exit(main())
