"""Embedding / EmbeddingLookup: lookups, dense and row-sparse gradients, sparse updates."""

import numpy as np
import pytest
from _layer_refs import call_with

from sporeling.core import Tensor, grad, nn, ops, value_and_grad
from sporeling.core.nn.layers.embedding import _DATA_SLOT, RowTensor
from sporeling_testing import check_grad


def _table(layer, rng):
    t = rng.standard_normal(layer.embedding_table.shape)
    layer.embedding_table.set_data(Tensor(t.astype(np.float32)))
    return layer.embedding_table.asnumpy()


def _ref_lookup(table, ids):
    ok = (ids >= 0) & (ids < table.shape[0])
    out = table[np.where(ok, ids, 0)]
    out[~ok] = 0
    return out


@pytest.mark.parametrize("use_one_hot", [False, True])
def test_embedding_forward_and_dense_grad(use_one_hot):
    rng = np.random.default_rng(0)
    emb = nn.Embedding(6, 3, use_one_hot=use_one_hot)
    assert [(n, p.shape) for n, p in emb.parameters_and_names()] == [("embedding_table", (6, 3))]
    table = _table(emb, rng)
    ids = np.array([[0, 5, 2], [2, 7, -1]], np.int32)  # 7 and -1 are out of range: zero rows
    out = emb(Tensor(ids))
    assert out.shape == (2, 3, 3) and out.dtype == emb.embedding_table.dtype
    np.testing.assert_allclose(out.asnumpy(), _ref_lookup(table, ids), rtol=1e-6)
    (g,) = grad(
        lambda i: (emb(i) * Tensor(np.arange(18.0, dtype=np.float32).reshape(2, 3, 3))).sum(),
        None,
        emb.trainable_params(),
    )(Tensor(ids))
    assert not isinstance(g, RowTensor)  # nn.Embedding has dense gradients
    ref = np.zeros((6, 3))
    w = np.arange(18.0).reshape(2, 3, 3)
    for (a, b), i in np.ndenumerate(ids):
        if 0 <= i < 6:
            ref[i] += w[a, b]
    np.testing.assert_allclose(g.asnumpy(), ref)


def test_embedding_grad_check_and_padding_idx():
    emb = nn.Embedding(5, 2, padding_idx=1)
    np.testing.assert_array_equal(emb.embedding_table.asnumpy()[1], 0)
    ids = np.array([[0, 1, 1, 4]], np.int64)
    table = np.random.default_rng(0).standard_normal((5, 2))
    check_grad(lambda t: call_with(emb, ["embedding_table"], Tensor(ids), t), [table])
    with pytest.raises(ValueError, match="Embedding: argument 'padding_idx'"):
        nn.Embedding(5, 2, padding_idx=5)
    with pytest.raises(TypeError, match="Embedding: the input expected an integer Tensor"):
        emb(Tensor(np.zeros((2,), np.float32)))
    with pytest.raises(TypeError, match="Embedding: argument 'use_one_hot'"):
        nn.Embedding(5, 2, use_one_hot=1)


def test_embedding_lookup_sparse_gradient_is_row_tensor():
    rng = np.random.default_rng(0)
    el = nn.EmbeddingLookup(10, 3)
    assert (el.target, el.sparse, el.slice_mode) == ("CPU", True, "batch_slice")
    table = _table(el, rng)
    ids = np.array([[7, 2, 7], [2, 12, 0]], np.int32)
    np.testing.assert_allclose(el(Tensor(ids)).asnumpy(), _ref_lookup(table, ids))
    w = rng.standard_normal((2, 3, 3)).astype(np.float32)
    loss, (g,) = value_and_grad(lambda i: (el(i) * Tensor(w)).sum(), None, el.trainable_params())(
        Tensor(ids)
    )
    assert isinstance(g, RowTensor) and isinstance(g, Tensor)
    assert g.shape == g.dense_shape == (10, 3) and g.dtype == el.embedding_table.dtype
    assert g.indices.tolist() == [0, 2, 7]  # unique, sorted, out-of-range id 12 dropped
    np.testing.assert_allclose(
        g.values.asnumpy(), [w[1, 2], w[0, 1] + w[1, 0], w[0, 0] + w[0, 2]], rtol=1e-6
    )
    with pytest.raises(AttributeError):
        _DATA_SLOT.__get__(g, RowTensor)  # the dense form has not been built
    dense = np.zeros((10, 3))
    dense[[0, 2, 7]] = g.values.asnumpy()
    np.testing.assert_allclose(g.asnumpy(), dense)  # reading it densely materialises it
    np.testing.assert_allclose((g * 1.0 + 0).asnumpy(), dense)  # and dense ops just work


def test_sparse_update_writes_only_touched_rows():
    rng = np.random.default_rng(1)
    el = nn.EmbeddingLookup(1000, 4)
    table = _table(el, rng).copy()
    ids = Tensor(np.array([3, 999, 3, 10], np.int32))
    _, (g,) = value_and_grad(lambda i: (el(i) ** 2).sum(), None, el.trainable_params())(ids)
    g = g * 0.5  # sensitivity scaling keeps it sparse
    assert isinstance(g, RowTensor)
    # a lazy (row-wise) SGD step as a sparse optimizer performs it: only g.indices are written
    param = el.embedding_table
    rows = g.indices.asnumpy()
    param._data[rows] -= 0.1 * g.values.asnumpy()
    new = param.asnumpy()
    untouched = np.setdiff1d(np.arange(1000), [3, 10, 999])
    np.testing.assert_array_equal(new[untouched], table[untouched])
    np.testing.assert_allclose(new[3], table[3] - 0.1 * 0.5 * 2 * 2 * table[3], rtol=1e-6)
    np.testing.assert_allclose(new[10], table[10] - 0.1 * table[10], rtol=1e-6)
    with pytest.raises(AttributeError):
        _DATA_SLOT.__get__(g, RowTensor)  # no dense gradient was ever built


def test_lazy_adam_updates_only_touched_rows():
    rng = np.random.default_rng(2)
    el = nn.EmbeddingLookup(50, 4)
    table = _table(el, rng).copy()
    opt = nn.LazyAdam(el.trainable_params(), learning_rate=0.1)
    step = value_and_grad(lambda i: el(i).sum(), None, opt.parameters)
    _, grads = step(Tensor(np.array([4, 9], np.int32)))
    assert isinstance(grads[0], RowTensor)
    opt(grads)
    after1 = el.embedding_table.asnumpy().copy()
    assert np.flatnonzero(np.any(after1 != table, axis=1)).tolist() == [4, 9]
    _, grads = step(Tensor(np.array([9, 11], np.int32)))
    opt(grads)
    after2 = el.embedding_table.asnumpy()
    # lazy: row 4 keeps its value although its Adam moments are non-zero
    assert np.flatnonzero(np.any(after2 != after1, axis=1)).tolist() == [9, 11]


def test_shared_table_gradients_merge_sparsely():
    el = nn.EmbeddingLookup(8, 2)
    f = value_and_grad(lambda a, b: el(a).sum() + 2 * el(b).sum(), None, el.trainable_params())
    _, (g,) = f(Tensor(np.array([1, 5], np.int32)), Tensor(np.array([5, 6], np.int32)))
    assert isinstance(g, RowTensor)
    assert g.indices.tolist() == [1, 5, 6]
    np.testing.assert_allclose(g.values.asnumpy(), [[1, 1], [3, 3], [2, 2]])


def test_dense_target_and_higher_order():
    el = nn.EmbeddingLookup(6, 2, target="DEVICE", sparse=False)
    (g,) = grad(lambda i: el(i).sum(), None, el.trainable_params())(
        Tensor(np.array([1, 1], np.int32))
    )
    assert not isinstance(g, RowTensor) and g.asnumpy()[1].tolist() == [2.0, 2.0]
    sparse = nn.EmbeddingLookup(6, 2)
    table = np.random.default_rng(0).standard_normal((6, 2))
    ids = Tensor(np.array([[0, 3], [3, 5]], np.int64))
    # first and second order through the lookup (recorded gradients are dense)
    check_grad(lambda t: call_with(sparse, ["embedding_table"], ids, t), [table])
    from sporeling_testing import check_grad_grad

    check_grad_grad(lambda t: call_with(sparse, ["embedding_table"], ids, t) ** 2, [table])


def test_embedding_lookup_max_norm():
    el = nn.EmbeddingLookup(4, 3, max_norm=1.0)
    table = np.array([[3.0, 4.0, 0.0], [0.1, 0.2, 0.2], [0, 0, 0], [1, 1, 1]], np.float64)
    out = call_with(
        el, ["embedding_table"], Tensor(np.array([0, 1, 2, 3])), Tensor(table)
    ).asnumpy()
    norms = np.linalg.norm(table, axis=1, keepdims=True)
    np.testing.assert_allclose(out, table / np.maximum(norms, 1.0), rtol=1e-12)
    check_grad(
        lambda t: call_with(el, ["embedding_table"], Tensor(np.array([0, 1, 3])), t), [table]
    )


def test_embedding_lookup_errors():
    with pytest.raises(ValueError, match="target='CPU' requires sparse=True"):
        nn.EmbeddingLookup(4, 2, sparse=False)
    with pytest.raises(ValueError, match="EmbeddingLookup: argument 'target'"):
        nn.EmbeddingLookup(4, 2, target="GPU")
    with pytest.raises(ValueError, match="EmbeddingLookup: argument 'slice_mode'"):
        nn.EmbeddingLookup(4, 2, slice_mode="rows")
    with pytest.raises(ValueError, match="parameter-server mode"):
        nn.EmbeddingLookup(4, 2, vocab_cache_size=2)
    with pytest.raises(ValueError, match="EmbeddingLookup: argument 'max_norm'"):
        nn.EmbeddingLookup(4, 2, max_norm=0.0)
    el = nn.EmbeddingLookup(4, 2, slice_mode=nn.EmbeddingLookup.FIELD_SLICE, manual_shapes=(2, 2))
    assert el.manual_shapes == (2, 2)


def test_row_tensor_api():
    rt = RowTensor(Tensor([2, 0, 2]), Tensor([[1.0], [2.0], [3.0]]), (3, 1))
    assert rt.asnumpy().tolist() == [[2.0], [0.0], [4.0]]  # duplicates add up
    c = rt.coalesce()
    assert c.indices.tolist() == [0, 2] and c.values.asnumpy().tolist() == [[2.0], [4.0]]
    assert (
        isinstance(-rt, RowTensor)
        and isinstance(rt / 2, RowTensor)
        and isinstance(2 * rt, RowTensor)
    )
    assert (rt / 2).asnumpy().tolist() == [[1.0], [0.0], [2.0]]
    d = Tensor(np.ones((3, 1), np.float32)) + rt
    assert not isinstance(d, RowTensor) and d.asnumpy().tolist() == [[3.0], [1.0], [5.0]]
    assert RowTensor(row_tensor=rt).indices.tolist() == [2, 0, 2]
    assert ops.reduce_sum(rt).item() == 6.0
    with pytest.raises(ValueError, match="RowTensor: argument 'values'"):
        RowTensor(Tensor([0]), Tensor([[1.0, 2.0]]), (3, 1))
    with pytest.raises(TypeError, match="RowTensor: argument 'indices'"):
        RowTensor(Tensor([0.0]), Tensor([[1.0]]), (3, 1))
