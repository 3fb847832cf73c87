"""Dataflow fragments and distribution policies (one process or MPI ranks)."""

from .async_fragment import AsyncActorFragment, AsyncLearnerFragment, recv_arrays, send_arrays
from .fragment import Fragment, all_gather_rollout, get_all_fragments, join_rollouts
from .launcher import run_distributed, run_policy
from .policy import (
    AsyncMultiActorSingleLearnerDP,
    DistributionPolicy,
    MultiActorSingleLearnerDP,
    SingleProcessDP,
    get_policy,
)

__all__ = [
    "DistributionPolicy", "SingleProcessDP", "MultiActorSingleLearnerDP",
    "AsyncMultiActorSingleLearnerDP", "get_policy", "AsyncLearnerFragment", "AsyncActorFragment",
    "send_arrays", "recv_arrays",
    "Fragment", "get_all_fragments", "join_rollouts", "all_gather_rollout", "run_policy",
    "run_distributed",
]  # fmt: skip
