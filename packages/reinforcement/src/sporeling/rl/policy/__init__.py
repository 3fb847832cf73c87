"""Policies (``mindspore_rl.policy``)."""

from .policy import EpsilonGreedyPolicy, GreedyPolicy, Policy, RandomPolicy

__all__ = ["Policy", "RandomPolicy", "GreedyPolicy", "EpsilonGreedyPolicy"]
