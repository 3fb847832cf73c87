"""Short training smoke runs through Session and Trainer, with callbacks and checkpoints."""

from __future__ import annotations

import os

import numpy as np
import pytest

import sporeling.core as ms
from sporeling.rl.algorithm import DQNTrainer, dqn_config
from sporeling.rl.core import Session
from sporeling.rl.utils import CheckpointCallback, EvaluateCallback, LossCallback

pytest.importorskip("gymnasium")


def small_dqn(seed=0):
    return dqn_config(
        "CartPole-v1", seed=seed, capacity=2000, batch_size=32,
        policy_params={"hidden_sizes": [32], "decay": 300.0},
        learner_params={"lr": 1e-3, "target_update_interval": 50},
    )  # fmt: skip


def test_dqn_session_trains_with_callbacks_and_checkpoints(tmp_path, capsys):
    ms.set_seed(0)
    loss_cb, eval_cb = LossCallback(print_rate=5), EvaluateCallback(eval_rate=10)
    ckpt = CheckpointCallback(save_per_episode=5, directory=str(tmp_path), max_ckpt_nums=2)
    session = Session(small_dqn(), callbacks=[loss_cb, eval_cb, ckpt])
    params = {"learning_starts": 100, "train_freq": 4, "gradient_steps": 1,
              "num_evaluate_episode": 2}  # fmt: skip
    session.run(class_type=DQNTrainer, episode=20, params=params)
    out = capsys.readouterr().out
    assert "Episode 0: loss is" in out and "Evaluate for episode 9 total rewards is" in out
    assert len(loss_cb.history) == 20 and len(eval_cb.history) == 2
    assert any(loss > 0 for _, loss, _ in loss_cb.history)
    assert sorted(os.listdir(tmp_path)) == ["policy_net_14.ckpt", "policy_net_19.ckpt"]
    # load_and_eval restores the saved network into a fresh one
    net = session.msrl.learner.policy_network
    saved = {p.name: p.asnumpy().copy() for p in net.trainable_params()}
    fresh = Session(small_dqn(seed=1))
    fresh.run(class_type=DQNTrainer, is_train=False,
              params={"ckpt_path": str(tmp_path), "num_evaluate_episode": 1})  # fmt: skip
    loaded = {p.name: p.asnumpy() for p in fresh.msrl.learner.policy_network.trainable_params()}
    for name, value in saved.items():
        np.testing.assert_array_equal(loaded[name], value)


def test_trainer_argument_errors():
    session = Session(small_dqn())
    with pytest.raises(ValueError, match="episodes expected an int >= 0, got -1"):
        session.run(class_type=DQNTrainer, episode=-1)
    with pytest.raises(ValueError, match="class_type"):
        Session(small_dqn()).run()


@pytest.mark.parametrize("algo", ["ppo", "a2c", "ac"])
def test_on_policy_smoke_runs_learn(algo):
    from sporeling.rl.algorithm.registry import get_algorithm

    entry = get_algorithm(algo)
    msrl, trainer = entry.build("CartPole-v1", seed=0)
    before = [p.asnumpy().copy() for p in msrl.learner.trainable_params()]
    for _ in range(3):
        loss, _, steps, _ = trainer.train_one_episode()
        assert np.isfinite(loss) and steps > 0
    after = [p.asnumpy() for p in msrl.learner.trainable_params()]
    assert any(not np.array_equal(a, b) for a, b in zip(before, after))
    trainer.num_evaluate_episode = 1
    assert trainer.evaluate() >= 8  # a CartPole episode lasts at least 8 steps


def test_training_means_match_a_plain_rolling_mean():
    from sporeling.rl.algorithm.registry import training_means

    rng = np.random.default_rng(0)
    returns = rng.uniform(0, 500, 250).tolist()
    means = [sum(returns[i : i + 100]) / 100 for i in range(151)]
    got = training_means(returns)
    assert got["train_episodes"] == 250
    assert got["train_last100_mean"] == pytest.approx(means[-1], rel=1e-12)
    assert got["train_best100_mean"] == pytest.approx(max(means), rel=1e-12)
    assert training_means(returns[:99])["train_best100_mean"] is None


def test_train_under_the_single_process_policy(capsys):
    from sporeling.rl.cli import main

    assert main(["train", "--algo", "ppo", "--policy", "single", "--actors", "2",
                 "--steps", "1024", "--eval-episodes", "1"]) == 0  # fmt: skip
    import json

    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["env_steps"] == 1024 and result["policy"] == "single"
    assert main(["train", "--algo", "dqn", "--policy", "single", "--steps", "10"]) == 1
    assert "on-policy" in capsys.readouterr().err


@pytest.mark.parametrize("ou", [None, 0.15])
def test_ddpg_smoke_run_on_pendulum(ou):
    from sporeling.rl.algorithm import DDPGTrainer, ddpg_config
    from sporeling.rl.core import MSRL

    ms.set_seed(0)
    config = ddpg_config(batch_size=16, capacity=1000,
                         policy_params={"hidden_sizes": [16], "ou_damping": ou})  # fmt: skip
    msrl = MSRL(config)
    trainer = DDPGTrainer(msrl, {"learning_starts": 150, "num_evaluate_episode": 1})
    actor_before = [p.asnumpy().copy() for p in msrl.learner.actor_net.trainable_params()]
    target_before = [p.asnumpy().copy() for p in msrl.learner.target_critic_net.trainable_params()]
    loss, ret, steps, _ = trainer.train_one_episode()
    assert steps == 200 and np.isfinite(loss) and loss > 0 and ret < 0
    moved = [p.asnumpy() for p in msrl.learner.actor_net.trainable_params()]
    assert any(not np.array_equal(a, b) for a, b in zip(actor_before, moved))
    target = [p.asnumpy() for p in msrl.learner.target_critic_net.trainable_params()]
    assert any(not np.array_equal(a, b) for a, b in zip(target_before, target))
    action = msrl.actors.get_action(3, np.zeros(3, np.float32))
    assert action.shape == (1,) and abs(action[0]) <= 2.0


def test_qmix_finds_the_two_step_optimum_that_vdn_misses():
    from sporeling.rl.algorithm import QMIXTrainer, qmix_config
    from sporeling.rl.core import MSRL

    returns = {}
    for mixer in ("qmix", "vdn"):
        ms.set_seed(0)
        trainer = QMIXTrainer(MSRL(qmix_config(0, policy_params={"mixer": mixer})))
        for _ in range(200):  # 200 episodes: 8 vs 7 on seeds 0, 1, 2
            trainer.train_one_episode()
        returns[mixer] = trainer.evaluate()
    # the QMIX paper's table 1: QMIX learns the joint action worth 8, VDN the safe 7
    assert returns == {"qmix": 8.0, "vdn": 7.0}


def test_two_step_game_rules():
    from sporeling.rl.environment import TwoStepGameEnvironment

    env = TwoStepGameEnvironment()
    env.reset_np()
    assert env.observations().shape == (2, 5)
    assert env.step_np([1, 0])[1:] == (0.0, False)
    assert env.step_np([1, 1])[1:] == (8.0, True)
    with pytest.raises(ValueError, match="the episode is over"):
        env.step_np([0, 0])
    env.reset_np()
    env.step_np([0, 1])
    assert env.step_np([0, 0])[1] == 7.0


def _np_dqn_grads(w, batch, gamma):
    """Float64 NumPy reference: Huber (smooth L1, mean) loss of Q(s, a) against
    ``r + gamma (1 - done) max Q_target(s')`` (target = the same weights), and its gradient."""
    (w1, b1, w2, b2), (s, a, r, s2, d) = w, batch

    def q(x):
        h = np.maximum(x @ w1.T + b1, 0.0)
        return h, h @ w2.T + b2

    target = r + gamma * (1.0 - d) * q(s2)[1].max(axis=1, keepdims=True)
    h, out = q(s)
    diff = np.take_along_axis(out, a, 1) - target
    dq = np.zeros_like(out)
    np.put_along_axis(dq, a, np.clip(diff, -1.0, 1.0) / len(s), 1)
    dh = (dq @ w2) * (h > 0)
    return [dh.T @ s, dh.sum(0), dq.T @ h, dq.sum(0)]


@pytest.mark.parametrize("optimizer", ["adam", "torch_adam"])
def test_dqn_learner_first_step_against_numpy(optimizer):
    """One learn step: the gradient of the Huber TD loss, then the first Adam step, which is
    ``lr g / (|g| + eps)`` for PyTorch's Adam and ``lr g / (|g| + eps / sqrt(1 - beta2))`` for
    MindSpore's (the two differ only for gradients near eps)."""
    from sporeling.rl.algorithm.dqn import DQNLearner, DQNPolicy

    ms.set_seed(3)
    pol = DQNPolicy({"state_space_dim": 4, "action_space_dim": 2, "hidden_sizes": [8],
                     "bias_init": None})  # fmt: skip
    lr, gamma = 0.01, 0.9
    learner = DQNLearner({"policy_network": pol.policy_network,
                          "target_network": pol.target_network, "gamma": gamma, "lr": lr,
                          "optimizer": optimizer, "max_grad_norm": 1e6})  # fmt: skip
    rng = np.random.default_rng(0)
    batch = [rng.normal(size=(16, 4)), rng.integers(0, 2, (16, 1)),
             rng.normal(0, 2, (16, 1)), rng.normal(size=(16, 4)),
             (rng.random((16, 1)) < 0.3).astype(np.float64)]  # fmt: skip
    w = [p.asnumpy().astype(np.float64) for p in pol.policy_network.trainable_params()]
    grads = _np_dqn_grads(w, batch, gamma)
    learner.learn([b.astype(np.int32 if i == 1 else np.float32) for i, b in enumerate(batch)])
    eps = 1e-8 if optimizer == "torch_adam" else 1e-8 / np.sqrt(1 - 0.999)
    for p, w0, g in zip(pol.policy_network.trainable_params(), w, grads):
        expected = w0 - lr * g / (np.abs(g) + eps)
        np.testing.assert_allclose(p.asnumpy(), expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="params\\['optimizer'\\] expected 'adam' or"):
        DQNLearner({"policy_network": pol.policy_network, "target_network": pol.target_network,
                    "optimizer": "sgd"})  # fmt: skip
