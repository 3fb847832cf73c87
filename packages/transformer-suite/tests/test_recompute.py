"""The recompute config: a GPT whose blocks recompute gives the same loss and gradients (dropout
on, same seed) and keeps fewer bytes between forward and backward, eagerly and compiled."""

import tracemalloc

import numpy as np
import pytest

from sporeling.core import Tensor, jit, set_seed, value_and_grad
from sporeling.transformer.models.gpt import GPT, GPTConfig, GPTWithLoss
from sporeling.transformer.modules import TransformerOpParallelConfig, TransformerRecomputeConfig


def _run(recompute, compiled=False, seq=16, width=32, layers=3, batch=4):
    set_seed(0)
    pc = TransformerOpParallelConfig(recompute=TransformerRecomputeConfig(recompute=recompute))
    cfg = GPTConfig(seq_length=seq, vocab_size=29, embedding_size=width, num_layers=layers,
                    num_heads=2, dropout_rate=0.2, parallel_config=pc)  # fmt: skip
    net = GPTWithLoss(GPT(cfg))
    net.set_train(True)
    ids = Tensor(np.random.default_rng(1).integers(0, 29, (batch, seq + 1)).astype(np.int32))
    fn = value_and_grad(net, None, weights=net.trainable_params())
    fn = jit(fn) if compiled else fn
    fn(ids)  # warm-up: one-time allocations (kernel caches) are not the model's
    set_seed(5)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        start = tracemalloc.get_traced_memory()[0]
        loss, grads = fn(ids)
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    return float(loss.asnumpy()), [g.asnumpy() for g in grads], peak


@pytest.mark.parametrize("compiled", [False, True])
def test_gpt_recompute_config_same_gradients_lower_peak(compiled):
    loss0, g0, peak0 = _run(False, compiled)
    loss1, g1, peak1 = _run(True, compiled)
    np.testing.assert_allclose(loss1, loss0, rtol=1e-6)
    for a, b in zip(g0, g1, strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6)
    if compiled:  # the compiled backward's copies compute the same values bit for bit
        assert loss1 == loss0 and all(np.array_equal(a, b) for a, b in zip(g0, g1, strict=True))
    assert peak1 < 0.9 * peak0, (peak1, peak0)


def test_plan_shows_the_recompute_config():
    from sporeling.transformer.plan import plan
    from sporeling.transformer.settings import load_config

    est = {}
    for flag in (False, True):
        cfg = load_config("gpt_tiny", [f"recompute_config.recompute={str(flag).lower()}"])
        result = plan(cfg, device_flops=1e9)
        assert [r["recompute"] for r in result["layers"]] == [flag] * 2
        est[flag] = result["estimate"]
    # the estimate follows: fewer activation bytes, more compute
    assert est[True].activation_bytes < 0.6 * est[False].activation_bytes
    assert est[True].compute_time > est[False].compute_time
