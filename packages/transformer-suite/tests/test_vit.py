"""ViT: patch embedding against a reshape reference, the whole model against NumPy, gradients,
and a few training steps."""

import naive
import numpy as np
import pytest

from sporeling.core import Tensor, nn
from sporeling.transformer.models.vit import ViT, ViTConfig, ViTWithLoss
from sporeling_testing.gradcheck import check_grad


def tiny(**kw):
    base = dict(
        image_size=8,
        patch_size=4,
        num_channels=2,
        num_classes=3,
        hidden_size=8,
        num_layers=2,
        num_heads=2,
        param_init_type="float64",
        compute_dtype="float64",
        init_std=0.3,
    )
    base.update(kw)
    return ViTConfig(**base)


def test_forward_matches_numpy_reference():
    m = ViT(tiny())
    x = np.random.default_rng(0).standard_normal((2, 2, 8, 8))
    P = naive.params(m)
    # patches in row-major order, each flattened (channel, row, col) like the conv weight
    patches = x.reshape(2, 2, 2, 4, 2, 4).transpose(0, 2, 4, 1, 3, 5).reshape(2, 4, 32)
    w = P["patch_embedding.projection.weight"].reshape(8, 32)
    h = patches @ w.T + P["patch_embedding.projection.bias"]
    h = np.concatenate([np.repeat(P["cls_token"], 2, 0), h], 1) + P["position_embedding"]
    for i in range(2):
        h = naive.encoder_layer(P, f"encoder.blocks.{i}.", h, None, 2)
    h = naive.layer_norm(h, P["layernorm.gamma"], P["layernorm.beta"])
    want = h[:, 0] @ P["head.weight"].T + P["head.bias"]
    np.testing.assert_allclose(m(Tensor(x)).asnumpy(), want, rtol=1e-9, atol=1e-10)


def test_gradients_through_the_whole_model():
    m = ViT(tiny(num_layers=1))
    check_grad(lambda x: m(x), [np.random.default_rng(1).standard_normal((1, 2, 8, 8))])


def test_training_reduces_loss_and_shape_errors():
    m = ViT(tiny(param_init_type="float32", compute_dtype="float32", init_std=0.02))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 2, 8, 8)).astype(np.float32)
    y = np.array([0, 1, 2, 0, 1, 2], np.int32)
    x[:, 0] += y[:, None, None]  # a learnable signal
    step = nn.TrainOneStepCell(ViTWithLoss(m), nn.Adam(m.trainable_params(), learning_rate=1e-2))
    losses = [float(step(Tensor(x), Tensor(y)).asnumpy()) for _ in range(12)]
    assert losses[-1] < 0.75 * losses[0]  # 1.10 -> 0.71 when written
    with pytest.raises(ValueError, match=r"'images' must be \(batch, 2, 8, 8\)"):
        m(Tensor(x[:, :1]))
    with pytest.raises(ValueError, match="multiple of 'patch_size'"):
        ViTConfig.from_dict({"image_size": 10, "patch_size": 4})
