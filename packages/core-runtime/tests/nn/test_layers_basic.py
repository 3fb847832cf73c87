"""Dense, Flatten, Dropout, Identity and the activation cells."""

import math

import numpy as np
import pytest
from _layer_refs import check_layer_grad

from sporeling.core import Tensor, nn
from sporeling.core.random_state import set_seed


def test_dense_reference_names_and_grads():
    d = nn.Dense(3, 4)
    assert [(n, p.shape) for n, p in d.parameters_and_names()] == [
        ("weight", (4, 3)),
        ("bias", (4,)),
    ]
    # MindSpore 2.x defaults: HeUniform(sqrt(5)) weight and U(-1/sqrt(fan_in), ..) bias
    big = nn.Dense(300, 200)
    bound = 1 / math.sqrt(300)
    w, b = big.weight.asnumpy(), big.bias.asnumpy()
    assert np.abs(w).max() <= bound and abs(float(w.std()) - bound / math.sqrt(3)) < 0.1 * bound
    assert np.abs(b).max() <= bound and float(np.abs(b).max()) > 0.5 * bound
    # MindSpore 1.8's defaults stay one argument away
    old = nn.Dense(3, 4, weight_init="normal", bias_init="zeros")
    assert abs(float(old.weight.asnumpy().std()) - 0.01) < 0.006  # Normal(0.01)
    np.testing.assert_array_equal(old.bias.asnumpy(), 0)
    rng = np.random.default_rng(0)
    d.weight.set_data(Tensor(rng.standard_normal((4, 3))))
    d.bias.set_data(Tensor(rng.standard_normal(4)))
    x = rng.standard_normal((2, 5, 3))  # more than 2 dims: last axis is contracted
    ref = x @ d.weight.asnumpy().T + d.bias.asnumpy()
    np.testing.assert_allclose(d(Tensor(x)).asnumpy(), ref, atol=1e-12)
    check_layer_grad(d, rng.standard_normal((2, 3)), ["weight", "bias"])
    assert repr(d) == "Dense<input_channels=3, output_channels=4, has_bias=True>"


def test_dense_activation_no_bias_and_errors():
    d = nn.Dense(2, 3, has_bias=False, activation="relu", weight_init="ones")
    assert d.bias is None and [n for n, _ in d.parameters_and_names()] == ["weight"]
    x = np.array([[1.0, -3.0]])
    np.testing.assert_array_equal(d(Tensor(x)).asnumpy(), np.zeros((1, 3)))
    assert isinstance(nn.Dense(2, 2, activation=nn.Tanh()).activation, nn.Tanh)
    with pytest.raises(ValueError, match="Dense: argument 'weight_init'.*shape \\(3, 2\\)"):
        nn.Dense(2, 3, weight_init=Tensor(np.zeros((2, 3), np.float32)))
    with pytest.raises(TypeError, match="Dense: argument 'in_channels'"):
        nn.Dense(2.0, 3)
    with pytest.raises(ValueError, match="unknown activation name 'relu7'"):
        nn.Dense(2, 3, activation="relu7")
    with pytest.raises(ValueError, match="last dimension is 3.*in_channels=2"):
        nn.Dense(2, 3)(Tensor(np.zeros((1, 3), np.float32)))


def test_flatten_identity():
    x = Tensor(np.arange(24.0).reshape(2, 3, 4))
    assert nn.Flatten()(x).shape == (2, 12)
    assert nn.Flatten(0, 1)(x).shape == (6, 4)
    assert nn.Identity()(x) is x
    with pytest.raises(ValueError, match="Flatten: start_dim=2 and end_dim=1"):
        nn.Flatten(2, 1)(x)


def test_dropout_train_eval_and_scaling():
    set_seed(0)
    d = nn.Dropout(keep_prob=0.8)
    x = Tensor(np.ones((200, 50), np.float32))
    assert d(x) is x  # evaluation mode (the default) is the identity
    d.set_train()
    y = d(x).asnumpy()
    kept = y != 0
    np.testing.assert_allclose(y[kept], 1 / 0.8, rtol=1e-6)
    assert abs(kept.mean() - 0.8) < 0.02
    assert nn.Dropout(p=0.25).keep_prob == 0.75
    assert nn.Dropout().keep_prob == 0.5 and repr(nn.Dropout()) == "Dropout<keep_prob=0.5>"
    assert nn.Dropout(keep_prob=1.0).set_train()(x) is x
    with pytest.raises(ValueError, match="Dropout: argument 'keep_prob' expected a float in \\(0"):
        nn.Dropout(keep_prob=0.0)
    with pytest.raises(ValueError, match="not both"):
        nn.Dropout(keep_prob=0.5, p=0.5)


def _sig(x):
    return 1 / (1 + np.exp(-x))


_ERF = np.vectorize(math.erf)
ACTIVATIONS = [
    (nn.ReLU(), lambda x: np.maximum(x, 0)),
    (nn.ReLU6(), lambda x: np.clip(x, 0, 6)),
    (nn.LeakyReLU(), lambda x: np.where(x >= 0, x, 0.2 * x)),
    (nn.LeakyReLU(0.1), lambda x: np.where(x >= 0, x, 0.1 * x)),
    (nn.ELU(), lambda x: np.where(x > 0, x, np.exp(x) - 1)),
    (nn.CELU(2.0), lambda x: np.maximum(x, 0) + np.minimum(0, 2 * (np.exp(x / 2) - 1))),
    (nn.GELU(), lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))),
    (nn.GELU(False), lambda x: 0.5 * x * (1 + _ERF(x / np.sqrt(2)))),
    (nn.FastGelu(), lambda x: x * _sig(1.702 * x)),
    (nn.Sigmoid(), _sig),
    (nn.LogSigmoid(), lambda x: np.log(_sig(x))),
    (nn.Tanh(), np.tanh),
    (nn.Softmax(), lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True)),
    (nn.Softmax(0), lambda x: np.exp(x) / np.exp(x).sum(0, keepdims=True)),
    (nn.LogSoftmax(), lambda x: x - np.log(np.exp(x).sum(-1, keepdims=True))),
    (nn.SiLU(), lambda x: x * _sig(x)),
    (nn.HSwish(), lambda x: x * np.clip(x + 3, 0, 6) / 6),
    (nn.HSigmoid(), lambda x: np.clip(x + 3, 0, 6) / 6),
    (nn.Mish(), lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    (nn.SoftShrink(), lambda x: np.where(x > 0.5, x - 0.5, np.where(x < -0.5, x + 0.5, 0))),
    (nn.HShrink(), lambda x: np.where(np.abs(x) > 0.5, x, 0)),
    (nn.Softsign(), lambda x: x / (1 + np.abs(x))),
    (nn.Softplus(), lambda x: np.log1p(np.exp(x))),
]


@pytest.mark.parametrize(
    "cell,ref", ACTIVATIONS, ids=lambda v: repr(v) if isinstance(v, nn.Cell) else ""
)
def test_activation_forward_and_grad(cell, ref):
    rng = np.random.default_rng(0)
    x = rng.uniform(-4, 4, (3, 4))
    x[np.abs(np.abs(x) - 0.5) < 0.05] += 0.2  # away from the shrink kinks
    x[np.abs(x) < 0.05] += 0.2
    np.testing.assert_allclose(cell(Tensor(x)).asnumpy(), ref(x), rtol=1e-7, atol=1e-10)
    check_layer_grad(cell, x[:2, :3], [])


def test_prelu():
    p = nn.PReLU(3, 0.1)
    assert [(n, q.name, q.shape) for n, q in p.parameters_and_names()] == [("w", "a", (3,))]
    x = np.random.default_rng(0).uniform(-2, 2, (2, 3, 4))
    np.testing.assert_allclose(p(Tensor(x)).asnumpy(), np.where(x > 0, x, 0.1 * x), rtol=1e-6)
    check_layer_grad(p, x[:, :, :2] + 0.05, ["w"])
    assert nn.PReLU().w.shape == (1,)
    with pytest.raises(ValueError, match="PReLU: the input has shape"):
        p(Tensor(np.zeros((2, 4), np.float32)))


def test_get_activation():
    assert isinstance(nn.get_activation("relu"), nn.ReLU)
    assert isinstance(nn.get_activation("leakyrelu"), nn.LeakyReLU)
    assert nn.get_activation(None) is None
    with pytest.raises(KeyError):
        nn.get_activation("nope")
    with pytest.raises(TypeError, match="get_activation: argument 'name'"):
        nn.get_activation(3)
    with pytest.raises(TypeError, match="ReLU: the input expected a Tensor"):
        nn.ReLU()(np.zeros(3))
