"""Algorithms of MindSpore RL 0.5, each as policy/actor/learner/trainer and a default config."""

from .ac import ACLearner, ACTrainer, a2c_config, ac_config
from .ddpg import DDPGActor, DDPGLearner, DDPGPolicy, DDPGTrainer, ddpg_config
from .dqn import DQNActor, DQNLearner, DQNPolicy, DQNTrainer, dqn_config
from .ppo import PPOActor, PPOLearner, PPOPolicy, PPOTrainer, ppo_config
from .qmix import QMIXActor, QMixer, QMIXLearner, QMIXPolicy, QMIXTrainer, VDNMixer, qmix_config
from .sac import SACActor, SACLearner, SACPolicy, SACTrainer, sac_config

__all__ = [
    "DQNPolicy", "DQNActor", "DQNLearner", "DQNTrainer", "dqn_config",
    "PPOPolicy", "PPOActor", "PPOLearner", "PPOTrainer", "ppo_config",
    "ACLearner", "ACTrainer", "a2c_config", "ac_config",
    "DDPGPolicy", "DDPGActor", "DDPGLearner", "DDPGTrainer", "ddpg_config",
    "SACPolicy", "SACActor", "SACLearner", "SACTrainer", "sac_config",
    "QMIXPolicy", "QMIXActor", "QMIXLearner", "QMIXTrainer", "QMixer", "VDNMixer", "qmix_config",
]  # fmt: skip
