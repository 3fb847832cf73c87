"""Each module against the float64 NumPy reference in naive.py, plus gradient checks."""

import naive
import numpy as np
import pytest

from sporeling.core import Tensor
from sporeling.core import dtype as mt
from sporeling.transformer.modules import (
    AttentionMask,
    CrossEntropyLoss,
    FeedForward,
    MoE,
    MoEConfig,
    MultiHeadAttention,
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
    VocabEmbedding,
)
from sporeling_testing.gradcheck import check_grad

F64 = {
    "param_init_type": mt.float64,
    "compute_dtype": mt.float64,
    "softmax_compute_type": mt.float64,
}
LN64 = {"layernorm_compute_type": mt.float64}
DROP0 = {"hidden_dropout_rate": 0.0, "attention_dropout_rate": 0.0}


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def causal(b, s, lengths=None):
    m = np.tril(np.ones((s, s)))[None].repeat(b, 0)
    if lengths is not None:
        for i, n in enumerate(lengths):
            m[i, n:, :] = 0
            m[i, :, n:] = 0
    return m


def bump(cell, scale=0.3, seed=1):
    """Give every parameter a non-trivial value (biases and layernorm are 0/1 at init)."""
    rng = np.random.default_rng(seed)
    for _, prm in cell.parameters_and_names():
        a = prm.asnumpy()
        prm.set_data(Tensor((a + scale * rng.standard_normal(a.shape)).astype(a.dtype)))
    return cell


def test_attention_mask_matches_formula():
    m = np.array([[1, 1, 1, 0], [1, 1, 0, 0]])
    got = AttentionMask(4)(Tensor(m.astype(np.int32))).asnumpy()
    want = m[:, :, None] * m[:, None, :] * np.tril(np.ones((4, 4)))
    np.testing.assert_array_equal(got, want)


def test_vocab_embedding_returns_lookup_and_table():
    emb = VocabEmbedding(10, 4)
    ids = np.array([[1, 2, 9], [0, 0, 3]], np.int32)
    out, table = emb(Tensor(ids))
    np.testing.assert_array_equal(out.asnumpy(), table.asnumpy()[ids])
    assert table is emb.embedding_table


def test_mha_forward_matches_reference_and_present_layout():
    m = bump(MultiHeadAttention(2, 5, 6, 8, 2, **DROP0, **F64))
    q, kv, mask = rand(2, 5, 8), rand(2, 6, 8, seed=1), causal(2, 6)[:, :5, :]
    out, (k, v) = m(Tensor(q), Tensor(kv), Tensor(kv), Tensor(mask))
    want = naive.mha(naive.params(m), "", q, kv, kv, mask, 2)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-10, atol=1e-10)
    assert k.shape == (2, 2, 4, 6) and v.shape == (2, 2, 6, 4)


def test_mha_accepts_2d_inputs():
    m = bump(MultiHeadAttention(2, 5, 5, 8, 2, **DROP0, **F64))
    x = rand(2, 5, 8)
    out3, _ = m(Tensor(x), Tensor(x), Tensor(x), Tensor(causal(2, 5)))
    out2, _ = m(
        Tensor(x.reshape(10, 8)),
        Tensor(x.reshape(10, 8)),
        Tensor(x.reshape(10, 8)),
        Tensor(causal(2, 5)),
    )
    assert out2.shape == (10, 8)
    np.testing.assert_allclose(out2.asnumpy().reshape(2, 5, 8), out3.asnumpy(), rtol=1e-12)


def test_mha_gradients():
    m = bump(MultiHeadAttention(None, 3, 3, 4, 2, **DROP0, **F64))
    mask = Tensor(causal(2, 3))
    check_grad(lambda q, kv: m(q, kv, kv, mask)[0], [rand(2, 3, 4), rand(2, 3, 4, seed=3)])


def test_mha_weight_gradients():
    from sporeling.core import grad

    m = bump(MultiHeadAttention(None, 3, 3, 4, 2, **DROP0, **F64))
    x = Tensor(rand(2, 3, 4))
    mask = Tensor(causal(2, 3))
    w = m.dense2.weight

    def loss_of(wv):
        w.set_data(Tensor(wv))
        return float((m(x, x, x, mask)[0].asnumpy() ** 2).sum())

    base = w.asnumpy().copy()
    g = grad(lambda xx: (m(xx, xx, xx, mask)[0] ** 2).sum(), grad_position=None, weights=[w])(x)[
        0
    ].asnumpy()
    num = np.zeros_like(base)
    eps = 1e-6
    for i in np.ndindex(base.shape):
        d = np.zeros_like(base)
        d[i] = eps
        num[i] = (loss_of(base + d) - loss_of(base - d)) / (2 * eps)
    w.set_data(Tensor(base))
    np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("post", [False, True])
def test_encoder_layer_matches_reference(post):
    layer = bump(
        TransformerEncoderLayer(
            2, 8, 16, 2, 5, post_layernorm_residual=post, **DROP0, **F64, **LN64
        )
    )
    x, mask = rand(2, 5, 8), causal(2, 5, [5, 3])
    out, (k, v) = layer(Tensor(x), Tensor(mask))
    want = naive.encoder_layer(naive.params(layer), "", x, mask, 2, post)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-9, atol=1e-9)


def test_encoder_layer_gradients():
    layer = bump(TransformerEncoderLayer(None, 4, 8, 2, 3, **DROP0, **F64, **LN64))
    mask = Tensor(causal(2, 3))
    check_grad(lambda x: layer(x, mask)[0], [rand(2, 3, 4)])


def test_decoder_layer_matches_reference_and_gradients():
    layer = bump(TransformerDecoderLayer(8, 16, 2, 2, 6, 4, **DROP0, **F64, **LN64))
    x, enc = rand(2, 4, 8), rand(2, 6, 8, seed=2)
    mask, mem = causal(2, 4), np.ones((2, 4, 6))
    mem[1, :, 4:] = 0
    out, present = layer(Tensor(x), Tensor(mask), Tensor(enc), Tensor(mem))
    want = naive.decoder_layer(naive.params(layer), "", x, mask, enc, mem, 2)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-9, atol=1e-9)
    assert len(present) == 4 and present[2].shape == (2, 2, 4, 6)
    small = bump(TransformerDecoderLayer(4, 8, 2, None, 3, 2, **DROP0, **F64, **LN64))
    check_grad(
        lambda a, e: small(a, Tensor(causal(1, 2)), e, None)[0],
        [rand(1, 2, 4), rand(1, 3, 4, seed=5)],
    )


def test_stacks_and_transformer_chain_their_blocks():
    tr = bump(
        Transformer(
            8,
            None,
            16,
            5,
            4,
            encoder_layers=2,
            decoder_layers=2,
            num_heads=2,
            **DROP0,
            **F64,
            **LN64,
        )
    )
    x, y = rand(2, 5, 8), rand(2, 4, 8, seed=4)
    em, dm, mm = np.ones((2, 5, 5)), causal(2, 4), np.ones((2, 4, 5))
    out, ep, dp = tr(Tensor(x), Tensor(em), Tensor(y), Tensor(dm), Tensor(mm))
    P = naive.params(tr)
    h = x
    for i in range(2):
        h = naive.encoder_layer(P, f"encoder.blocks.{i}.", h, em, 2)
    d = y
    for i in range(2):
        d = naive.decoder_layer(P, f"decoder.blocks.{i}.", d, dm, h, mm, 2)
    np.testing.assert_allclose(out.asnumpy(), d, rtol=1e-9, atol=1e-9)
    assert len(ep) == 2 and len(dp) == 2
    enc_only = Transformer(8, None, 16, 5, 4, encoder_layers=1, decoder_layers=0, num_heads=2)
    out, _, dp = enc_only(Tensor(x.astype(np.float32)), Tensor(em.astype(np.float32)))
    assert out.shape == (2, 5, 8) and dp is None


def test_encoder_and_decoder_stacks_alone():
    enc = TransformerEncoder(None, 2, 8, 16, 5, 2, **DROP0, **F64, **LN64)
    out, present = enc(Tensor(rand(2, 5, 8)), Tensor(causal(2, 5)))
    assert out.shape == (2, 5, 8) and len(present) == 2
    dec = TransformerDecoder(2, None, 8, 16, 5, 4, 2, **DROP0, **F64, **LN64)
    out, present = dec(
        Tensor(rand(2, 4, 8)),
        Tensor(causal(2, 4)),
        Tensor(rand(2, 5, 8)),
        Tensor(np.ones((2, 4, 5))),
    )
    assert out.shape == (2, 4, 8) and len(present[0]) == 4


def test_feed_forward_matches_reference_and_gradients():
    f = bump(FeedForward(4, 8, 0.0, param_init_type=mt.float64, compute_dtype=mt.float64))
    x = rand(2, 3, 4)
    np.testing.assert_allclose(
        f(Tensor(x)).asnumpy(), naive.ffn(naive.params(f), "", x), rtol=1e-12
    )
    check_grad(lambda a: f(a), [x])
    experts = FeedForward(
        4, 8, 0.0, expert_num=3, param_init_type=mt.float64, compute_dtype=mt.float64
    )
    assert experts.mapping.weight.shape == (3, 4, 8)
    assert experts(Tensor(rand(3, 5, 4))).shape == (3, 5, 4)


@pytest.mark.parametrize("k,cap", [(1, 1.1), (1, 0.5), (2, 1.0)])
def test_moe_matches_reference(k, cap):
    cfg = MoEConfig(expert_num=4, capacity_factor=cap, aux_loss_factor=0.05, num_experts_chosen=k)
    m = bump(MoE(4, 8, 0.0, param_init_type=mt.float64, moe_config=cfg, compute_dtype=mt.float64))
    x = rand(10, 4)
    out, aux = m(Tensor(x))
    want, want_aux = naive.moe(naive.params(m), "", x, 4, cap, 0.05, k)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(float(aux.asnumpy()), want_aux, rtol=1e-10)
    if cap < 1:
        assert (np.abs(want).sum(-1) == 0).any(), "capacity 0.5 must drop some tokens"


def test_moe_gradients_and_layer_aux_loss():
    cfg = MoEConfig(expert_num=2, capacity_factor=2.0)
    m = bump(MoE(4, 8, 0.0, param_init_type=mt.float64, moe_config=cfg, compute_dtype=mt.float64))
    check_grad(lambda a: m(a), [rand(6, 4)])
    enc = TransformerEncoder(
        None, 2, 8, 16, 4, 2, moe_config=MoEConfig(expert_num=2), **DROP0, **F64, **LN64
    )
    out, present, aux = enc(Tensor(rand(2, 4, 8)), Tensor(causal(2, 4)))
    auxes = [blk(Tensor(rand(2, 4, 8)), Tensor(causal(2, 4)))[2] for blk in enc.blocks]
    assert float(aux.asnumpy()) > 0 and all(float(a.asnumpy()) > 0 for a in auxes)


def test_cross_entropy_matches_reference_and_gradients():
    logits, label = rand(6, 5), np.array([0, 4, 2, 2, 1, 3])
    mask = np.array([1, 1, 0, 1, 1, 0], np.float64)
    loss = CrossEntropyLoss()(Tensor(logits), Tensor(label.astype(np.int32)), Tensor(mask))
    np.testing.assert_allclose(
        float(loss.asnumpy()), naive.cross_entropy(logits, label, mask), rtol=1e-12
    )
    check_grad(
        lambda z: CrossEntropyLoss()(z, Tensor(label.astype(np.int32)), Tensor(mask)), [logits]
    )


def test_default_compute_dtype_is_float16_like_1_8():
    m = MultiHeadAttention(2, 3, 3, 4, 2)
    x = Tensor(rand(2, 3, 4).astype(np.float32))
    out, _ = m(x, x, x, Tensor(causal(2, 3).astype(np.float32)))
    assert out.dtype == mt.float16
