"""SAC: the squashed Gaussian against NumPy and finite differences, the soft critic target
against NumPy, and a short run on Pendulum-v1 whose updates move every network."""

from __future__ import annotations

import numpy as np
import pytest

import sporeling.core as ms
from sporeling.core import Tensor
from sporeling.rl.algorithm.sac import squashed_gaussian
from sporeling_testing import check_grad

pytest.importorskip("gymnasium")
RNG = np.random.default_rng(0)


def numpy_squashed_gaussian(mean, log_std, eps):
    u = mean + np.exp(log_std) * eps
    std = np.exp(log_std)
    normal = -0.5 * ((u - mean) / std) ** 2 - np.log(std) - 0.5 * np.log(2 * np.pi)
    return np.tanh(u), np.sum(normal - np.log(1.0 - np.tanh(u) ** 2), -1, keepdims=True)


def test_squashed_gaussian_against_numpy_and_finite_differences():
    mean, log_std, eps = RNG.normal(size=(3, 5, 2)) * [[[1.0]], [[0.5]], [[1.0]]]
    action, log_prob = squashed_gaussian(Tensor(mean), Tensor(log_std), Tensor(eps))
    ref_a, ref_lp = numpy_squashed_gaussian(mean, log_std, eps)
    np.testing.assert_allclose(action.asnumpy(), ref_a, rtol=1e-12)
    np.testing.assert_allclose(log_prob.asnumpy(), ref_lp, rtol=1e-10, atol=1e-12)
    # |u| = 30: 1 - tanh(u)^2 underflows in float64, the softplus form does not
    _, far = squashed_gaussian(Tensor(np.array([[30.0]])), Tensor(np.zeros((1, 1))),
                               Tensor(np.zeros((1, 1))))  # fmt: skip
    assert np.isfinite(far.asnumpy()).all() and far.asnumpy()[0, 0] > 50
    check_grad(lambda m, s, e: squashed_gaussian(m, s, e), [mean, log_std, eps])


def small_sac(seed=0):
    from sporeling.rl.algorithm import sac_config

    return sac_config(batch_size=32, capacity=1000, policy_params={"hidden_sizes": [32]},
                      seed=seed)  # fmt: skip


def test_soft_critic_target_against_numpy():
    from sporeling.rl.core import MSRL

    ms.set_seed(0)
    msrl = MSRL(small_sac())
    learner, pol = msrl.learner, msrl.policy_and_network.policy
    s2 = RNG.normal(size=(8, 3)).astype(np.float32)
    r = RNG.normal(size=(8, 1)).astype(np.float32)
    term = (RNG.random((8, 1)) < 0.3).astype(np.float32)
    eps = RNG.normal(size=(8, 1)).astype(np.float32)
    y = learner.critic_target(r, s2, term, eps)
    # NumPy twin: the actor's and target critics' layers applied by hand
    a_w = [p.asnumpy().astype(np.float64) for p in pol.actor_net.trainable_params()]
    h = np.maximum(s2 @ a_w[0].T + a_w[1], 0.0) @ a_w[2].T + a_w[3]
    mean, log_std = h[:, :1], np.clip(h[:, 1:], -20.0, 2.0)
    act, logp = numpy_squashed_gaussian(mean, log_std, eps)
    x = np.concatenate([s2, 2.0 * act], 1)
    c_w = [p.asnumpy().astype(np.float64) for p in pol.target_critic_net.trainable_params()]
    q = [np.maximum(x @ c_w[i].T + c_w[i + 1], 0.0) @ c_w[i + 2].T + c_w[i + 3] for i in (0, 4)]
    ref = r + 0.99 * (1 - term) * (np.minimum(q[0], q[1]) - learner.alpha * logp)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


def test_sac_smoke_run_on_pendulum_moves_every_network():
    from sporeling.rl.algorithm import SACTrainer
    from sporeling.rl.core import MSRL

    ms.set_seed(0)
    msrl = MSRL(small_sac())
    trainer = SACTrainer(msrl, {"learning_starts": 150, "num_evaluate_episode": 1})
    learner = msrl.learner
    nets = (learner.actor_net, learner.critic_net, learner.target_critic_net)
    before = [[p.asnumpy().copy() for p in n.trainable_params()] for n in nets]
    loss, ret, steps, _ = trainer.train_one_episode()
    assert steps == 200 and np.isfinite(loss) and loss > 0 and ret < 0
    for net, old in zip(nets, before):
        new = [p.asnumpy() for p in net.trainable_params()]
        assert all(not np.array_equal(a, b) for a, b in zip(old, new)), type(net).__name__
    assert (
        learner.alpha != 1.0
        and np.isfinite(learner.alpha)
        and set(learner.last_losses) == {"critic", "actor", "alpha", "alpha_value"}
    )
    action = msrl.actors.get_action(3, np.zeros(3, np.float32))
    assert action.shape == (1,) and abs(action[0]) <= 2.0
    assert np.isfinite(trainer.evaluate())
