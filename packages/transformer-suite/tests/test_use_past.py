"""``use_past``: incremental decoding through the fixed-length caches equals recomputing the
whole (padded) sequence, as MindSpore 1.8 does it."""

import numpy as np

from sporeling.core import Tensor
from sporeling.core import dtype as mt
from sporeling.transformer.modules import TransformerEncoder, add_flags_recursive

F64 = {
    "param_init_type": mt.float64,
    "compute_dtype": mt.float64,
    "softmax_compute_type": mt.float64,
    "layernorm_compute_type": mt.float64,
    "hidden_dropout_rate": 0.0,
    "attention_dropout_rate": 0.0,
}


def test_incremental_steps_equal_full_recompute_with_padding():
    S, H = 6, 8
    enc = TransformerEncoder(None, 2, H, 16, S, 2, use_past=True, **F64)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, S, H))
    lengths = np.array([2, 4])  # prompts of different lengths, padded to S
    prompt_mask = np.zeros((2, S, S))
    for b, n in enumerate(lengths):
        prompt_mask[b, :n, :n] = np.tril(np.ones((n, n)))
    add_flags_recursive(enc, is_first_iteration=True)
    out, present = enc(Tensor(x), Tensor(prompt_mask), True, Tensor(lengths.astype(np.int32)))
    k0 = present[0][0].asnumpy()
    assert (
        k0.shape == (2, 2, 4, S) and np.all(k0[0, :, :, 2:] == 0) and np.all(k0[1, :, :, 4:] == 0)
    )
    enc.add_flags_recursive(is_first_iteration=False)  # the 1.8 method form
    full = TransformerEncoder(None, 2, H, 16, S, 2, use_past=False, **F64)
    for (_, a), (_, b) in zip(full.parameters_and_names(), enc.parameters_and_names()):
        a.set_data(b)
    cur = lengths.copy()
    for _ in range(2):
        step_x = rng.standard_normal((2, 1, H))
        for b, n in enumerate(cur):
            x[b, n] = step_x[b, 0]
        step_mask = (np.arange(S)[None, None, :] <= cur[:, None, None]).astype(np.float64)
        y, _ = enc(Tensor(step_x), Tensor(step_mask), False, Tensor(cur.astype(np.int32)))
        ref_mask = np.zeros((2, S, S))
        for b, n in enumerate(cur + 1):
            ref_mask[b, :n, :n] = np.tril(np.ones((n, n)))
        ref, _ = full(Tensor(x), Tensor(ref_mask))
        for b, n in enumerate(cur):
            np.testing.assert_allclose(
                y.asnumpy()[b, 0], ref.asnumpy()[b, n], rtol=1e-10, atol=1e-10
            )
        cur = cur + 1


def test_short_prompt_window_needs_batch_valid_length():
    """A first-iteration window shorter than the cache is accepted only with
    ``batch_valid_length`` (the cache keeps its length, zero after each prompt); without it
    the 1.8 shape error stays."""
    import pytest

    from sporeling.transformer.modules import MultiHeadAttention

    S, H = 6, 8
    att = MultiHeadAttention(
        None,
        S,
        S,
        H,
        2,
        use_past=True,
        **{k: v for k, v in F64.items() if k != "layernorm_compute_type"},
    )
    x = Tensor(np.random.default_rng(0).standard_normal((2, 4, H)))
    mask = Tensor(np.tile(np.tril(np.ones((4, 4))), (2, 1, 1)))
    with pytest.raises(ValueError, match="'query_tensor' must be one of"):
        att(x, x, x, mask)
    out, (k, v) = att(x, x, x, mask, None, None, Tensor(np.array([4, 2], np.int32)))
    assert out.shape == (2, 4, H) and k.shape == (2, 2, 4, S) and v.shape == (2, 2, S, 4)
    k, v = k.asnumpy(), v.asnumpy()
    assert np.all(k[..., 4:] == 0) and np.all(k[1, ..., 2:] == 0) and np.all(v[1, :, 2:] == 0)
    assert np.all(k[0, ..., :4] != 0)


def test_cache_parameters_are_updated_in_place_with_the_same_values():
    """Caches held as Parameters take the new key/value in place (``scatter_nd_add``), eagerly
    and under ``jit``, with the values of the one-hot add on plain tensors; a full cache
    (every position valid) takes nothing, as the one-hot add leaves it."""
    from sporeling.core import Parameter, jit
    from sporeling.transformer.modules import MultiHeadAttention

    S, H, b = 5, 8, 3
    att = MultiHeadAttention(
        None, S, S, H, 2, use_past=True,
        **{k: v for k, v in F64.items() if k != "layernorm_compute_type"},
    )  # fmt: skip
    att.add_flags_recursive(is_first_iteration=False)
    rng = np.random.default_rng(4)
    k0 = rng.standard_normal((b, 2, 4, S))
    v0 = rng.standard_normal((b, 2, S, 4))
    for r, n in enumerate([2, 4, S]):  # valid positions per row; the last row is full
        k0[r, :, :, n:] = 0
        v0[r, :, n:, :] = 0
    x = Tensor(rng.standard_normal((b, 1, H)))
    mask = Tensor(np.ones((b, 1, S)))
    bvl = Tensor(np.array([2, 4, S], np.int32))
    ref, (rk, rv) = att(x, x, x, mask, Tensor(k0), Tensor(v0), bvl)
    for run in ("eager", "jit"):
        pk = Parameter(Tensor(k0.copy()), name="k", requires_grad=False)
        pv = Parameter(Tensor(v0.copy()), name="v", requires_grad=False)

        def step(x, mask, bvl, pk=pk, pv=pv):
            return att(x, x, x, mask, pk, pv, bvl)

        fn = jit(step) if run == "jit" else step
        out, (k, v) = fn(x, mask, bvl)
        np.testing.assert_allclose(out.asnumpy(), ref.asnumpy(), rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(pk.asnumpy(), rk.asnumpy())
        np.testing.assert_array_equal(pv.asnumpy(), rv.asnumpy())
        np.testing.assert_array_equal(k.asnumpy(), rk.asnumpy())
        if run == "eager":
            assert k is pk and v is pv  # the cache Parameters themselves
        assert np.array_equal(pk.asnumpy()[2], k0[2]) and not np.array_equal(pk.asnumpy(), k0)
