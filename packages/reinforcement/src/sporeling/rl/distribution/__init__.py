"""Dataflow fragments and distribution policies (one process or MPI ranks)."""

from .fragment import Fragment, all_gather_rollout, get_all_fragments, join_rollouts
from .launcher import run_distributed, run_policy
from .policy import DistributionPolicy, MultiActorSingleLearnerDP, SingleProcessDP, get_policy

__all__ = [
    "DistributionPolicy", "SingleProcessDP", "MultiActorSingleLearnerDP", "get_policy",
    "Fragment", "get_all_fragments", "join_rollouts", "all_gather_rollout", "run_policy",
    "run_distributed",
]  # fmt: skip
