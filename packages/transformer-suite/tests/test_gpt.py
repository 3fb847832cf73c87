"""GPT: loss, gradients, and KV-cache generation equal to full recomputation."""

import numpy as np
import pytest

from sporeling.core import Parameter, Tensor
from sporeling.transformer.generation import generate, sample_next
from sporeling.transformer.models.gpt import GPT, GPTConfig, GPTWithLoss


def tiny(**kw):
    base = dict(
        seq_length=12,
        vocab_size=23,
        embedding_size=16,
        num_layers=2,
        num_heads=2,
        dropout_rate=0.0,
        compute_dtype="float64",
        layernorm_dtype="float64",
        softmax_dtype="float64",
        param_init_type="float64",
        init_std=0.3,
    )
    base.update(kw)
    return GPTConfig(**base)


def twin(**kw):
    """The same weights with and without the cache."""
    a, b = GPT(tiny(use_past=True, **kw)), GPT(tiny(use_past=False, **kw))
    for (_, pa), (_, pb) in zip(a.parameters_and_names(), b.parameters_and_names()):
        pb.set_data(pa)
    return a, b


def test_loss_is_shifted_cross_entropy():
    m = GPT(tiny())
    ids = np.random.default_rng(0).integers(0, 23, (2, 13)).astype(np.int32)
    loss = float(GPTWithLoss(m)(Tensor(ids)).asnumpy())
    logits = m(Tensor(ids[:, :-1])).asnumpy()
    lp = logits - logits.max(-1, keepdims=True)
    lp -= np.log(np.exp(lp).sum(-1, keepdims=True))
    want = -lp[np.arange(24), ids[:, 1:].reshape(-1)].mean()
    np.testing.assert_allclose(loss, want * 24 / (24 + 1e-5), rtol=1e-10)


def test_eos_positions_are_left_out_of_the_loss():
    m = GPT(tiny(eos_token=0))
    ids = np.array([[5, 6, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]], np.int32)
    loss = float(GPTWithLoss(m)(Tensor(ids)).asnumpy())
    logits = m(Tensor(ids[:, :-1]), Tensor((ids[:, :-1] != 0).astype(np.float32))).asnumpy()[:3]
    lp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    want = -lp[np.arange(3), ids[0, 1:4]].sum() / (3 + 1e-5)
    np.testing.assert_allclose(loss, want, rtol=1e-10)


@pytest.mark.parametrize("lengths", [(3, 3), (2, 5, 4)])
def test_incremental_logits_equal_full_recompute_padded_batch(lengths):
    cached, full = twin()
    rng = np.random.default_rng(1)
    prompts = [rng.integers(1, 23, n).tolist() for n in lengths]
    la, lb = [], []
    out_a = generate(cached, prompts, 5, step_logits=la)
    out_b = generate(full, prompts, 5, step_logits=lb)
    assert out_a == out_b and all(len(o) == 5 for o in out_a)
    assert len(la) == 5
    for x, y in zip(la, lb):
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("lengths", [(3,), (3, 17, 5)])
def test_short_prompt_pass_equals_full_window(lengths, monkeypatch):
    """The cached prompt pass over the bucket that holds the prompts (16 or 32 of 40
    positions) gives the full recomputation's logits, and the same caches as 1.8's pass over
    the whole window."""
    import sporeling.transformer.generation as gen

    cached, full = twin(seq_length=40)
    rng = np.random.default_rng(2)
    prompts = [rng.integers(1, 23, n).tolist() for n in lengths]
    la, lb = [], []
    assert generate(cached, prompts, 6, step_logits=la) == generate(
        full, prompts, 6, step_logits=lb
    )
    for x, y in zip(la, lb):
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-9)
    blocks = cached.backbone.transformer.encoder.blocks
    ids = np.zeros((len(prompts), 40), np.int32)
    for i, p in enumerate(prompts):
        ids[i, : len(p)] = p
    valid = np.array(lengths, np.int32)
    short = gen._window_logits(cached, ids, valid, first=True)
    caches = [(b.key_past.asnumpy(), b.value_past.asnumpy()) for b in blocks]
    assert caches[0][0].shape == (len(prompts), 2, 8, 40)
    monkeypatch.setattr(gen, "PROMPT_BUCKET", 64)  # the whole 40-position window
    whole = gen._window_logits(cached, ids, valid, first=True)
    np.testing.assert_allclose(short, whole, rtol=1e-10, atol=1e-10)
    for (k, v), b in zip(caches, blocks):
        np.testing.assert_allclose(k, b.key_past.asnumpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(v, b.value_past.asnumpy(), rtol=1e-10, atol=1e-12)
    from sporeling.transformer.modules import add_flags_recursive

    add_flags_recursive(cached, is_first_iteration=True)


def test_compiled_decode_step_equals_op_by_op():
    """The jit decode step gives the eager step's logits, compiles once for all steps of
    every call with one batch size, and reads the current weights."""
    cached, _ = twin(seq_length=40)
    prompts = [[1, 2, 3], [4, 5, 6, 7, 8]]
    la, lb = [], []
    a = generate(cached, prompts, 6, step_logits=la)
    b = generate(cached, prompts, 6, step_logits=lb, compiled=False)
    assert a == b
    for x, y in zip(la, lb):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)
    generate(cached, [[9, 9], [3]], 4)
    assert cached.__dict__["_sporeling_decode_step"].compile_count == 1
    blocks = cached.backbone.transformer.encoder.blocks
    kept = blocks[0].key_past
    assert isinstance(kept, Parameter)  # the caches are Parameters updated in place
    table = cached.backbone.position_embedding.embedding_table
    table.set_data(Tensor(table.asnumpy() * 2))
    la, lb = [], []
    generate(cached, prompts, 3, step_logits=la)
    assert blocks[0].key_past is kept  # the same cache Parameters (made once per shape)
    generate(cached, prompts, 3, step_logits=lb, compiled=False)
    for x, y in zip(la, lb):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)


def test_sampling_is_seeded_and_window_stops():
    cached, full = twin()
    prompts = [[1, 2, 3], [4]]
    kw = dict(do_sample=True, top_k=5, top_p=0.9, temperature=0.8, seed=3)
    assert generate(cached, prompts, 4, **kw) == generate(full, prompts, 4, **kw)
    out = generate(cached, [[1] * 10], 8)
    assert len(out[0]) == 3  # logits at the 12th (last) position still give one token


def test_sample_next_filters():
    rng = np.random.default_rng(0)
    logits = np.log(np.array([[0.5, 0.3, 0.15, 0.05]]))
    assert sample_next(logits, rng).tolist() == [0]
    draws = {int(sample_next(logits, rng, True, top_k=2)[0]) for _ in range(200)}
    assert draws == {0, 1}
    draws = {int(sample_next(logits, rng, True, top_p=0.6)[0]) for _ in range(200)}
    assert draws == {0, 1}  # 0.5 < 0.6, so the token crossing 0.6 is kept too
    draws = {int(sample_next(logits, rng, True, top_p=0.5)[0]) for _ in range(50)}
    assert draws == {0}
    with pytest.raises(ValueError, match="'temperature' must be > 0"):
        sample_next(logits, rng, True, temperature=0)


def test_prompt_errors():
    m = GPT(tiny())
    with pytest.raises(ValueError, match="every prompt needs 1..seq_length=12 tokens"):
        generate(m, [[1] * 13], 2)


def test_sliding_window_continues_past_seq_length():
    cached, full = twin()
    prompts = [[1] * 10, [2, 3]]
    la, lb = [], []
    a = generate(cached, prompts, 20, slide=True, step_logits=la)
    b = generate(full, prompts, 20, slide=True, step_logits=lb)
    assert a == b and [len(o) for o in a] == [20, 20]
    for x, y in zip(la, lb):
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-9)


def test_nanogpt_initialisation_option():
    """``dense_init_std`` redraws the blocks' matrices; ``scaled_residual_init`` divides the
    residual projections' std by sqrt(2 * num_layers) (GPT-2 / nanoGPT)."""
    import sporeling.core as ms

    def stds(**kw):
        ms.set_seed(0)
        net = GPT(tiny(embedding_size=64, num_layers=4, param_init_type="float32", **kw))
        out: dict[str, list[float]] = {"projection": [], "other": []}
        for p in net.trainable_params():
            if "blocks" in p.name and p.name.endswith("weight") and len(p.shape) == 2:
                key = "projection" if p.name.endswith("projection.weight") else "other"
                out[key].append(float(p.asnumpy().std()))
        return {k: np.array(v) for k, v in out.items()}

    default = stds()
    np.testing.assert_allclose(default["projection"], 0.01, rtol=0.1)  # 1.8's "normal"
    np.testing.assert_allclose(default["other"], 0.01, rtol=0.1)
    nano = stds(dense_init_std=0.02, scaled_residual_init=True)
    np.testing.assert_allclose(nano["other"], 0.02, rtol=0.1)
    np.testing.assert_allclose(nano["projection"], 0.02 / np.sqrt(8), rtol=0.1)
    assert len(nano["projection"]) == 8 and len(nano["other"]) == 16


@pytest.mark.parametrize("mode", ["pynative", "graph"])
def test_bias_false_freezes_zero_biases(mode):
    """``bias=False`` (nanoGPT's default): the biases and betas are zero, not trained, and stay
    zero through AdamW steps with weight decay; the matrices and gammas still train."""
    import sporeling.core as ms
    from sporeling.core import nn
    from sporeling.transformer.runner import make_optimizer

    ms.set_seed(0)
    net = GPT(tiny(embedding_size=16, num_layers=2, param_init_type="float32", bias=False))
    frozen = [p for p in net.get_parameters() if not p.requires_grad]
    names = {p.name.rsplit(".", 1)[-1] for p in frozen}
    # a block: q, k, v, attention and feed-forward projections, mapping; two norms
    assert names == {"bias", "beta"} and len(frozen) == 2 * (6 + 2) + 1
    before = {p.name: p.asnumpy().copy() for p in net.trainable_params()}
    opt = make_optimizer(net, {"learning_rate": 1e-2, "weight_decay": 0.1}, 3)
    step = nn.TrainOneStepCell(GPTWithLoss(net), opt)
    x = Tensor(np.random.default_rng(0).integers(0, 23, (3, 13)).astype(np.int32))
    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    try:
        for _ in range(3):
            step(x)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    for p in frozen:
        assert not np.any(p.asnumpy())
    assert all(not np.allclose(p.asnumpy(), before[p.name]) for p in net.trainable_params())
