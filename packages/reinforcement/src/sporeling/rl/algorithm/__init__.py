"""Algorithms of MindSpore RL 0.5, each as policy/actor/learner/trainer and a default config."""

from .dqn import DQNActor, DQNLearner, DQNPolicy, DQNTrainer, dqn_config

__all__ = ["DQNPolicy", "DQNActor", "DQNLearner", "DQNTrainer", "dqn_config"]
