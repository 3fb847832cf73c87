"""``DistributionPolicy``: where an algorithm's actors and learner run, and how they talk.

The later MindSpore RL form (0.6+, the MSRL paper): a policy names how many of each part
are replicated, which part feeds which (topology), and the collective on each edge
(interfaces). :func:`get_all_fragments` turns a policy into the per-rank fragments of 0.5's
form. Built in: :func:`SingleProcessDP`, :func:`MultiActorSingleLearnerDP` and
:func:`AsyncMultiActorSingleLearnerDP`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class DistributionPolicy:
    """``replicate``: parts and their counts; ``topology``: consumer -> producers;
    ``interfaces``: ``(producer, consumer) -> (collective, what)``; ``fragments``: the number
    of processes; ``synchronous``: every actor step waits for the learner's new weights."""

    name: str
    replicate: dict[str, int]
    topology: dict[str, list[str]]
    interfaces: dict[tuple[str, str], tuple[str, str]]
    fragments: int
    synchronous: bool = True
    boundary: str = "algorithmic"
    fuse: list[str] = field(default_factory=list)

    @property
    def actor_number(self) -> int:
        return self.replicate.get("Actor", 1)


def SingleProcessDP(actors: int = 1) -> DistributionPolicy:  # noqa: N802  (MSRL's naming)
    """Every actor and the learner in one process, actors one after the other."""
    return DistributionPolicy(
        "SingleProcessDP", {"Actor": actors, "Learner": 1}, {"Learner": ["Actor"]},
        {("Actor", "Learner"): ("Concat", "rollout"), ("Learner", "Actor"): ("Share", "weights")},
        fragments=1,
    )  # fmt: skip


def MultiActorSingleLearnerDP(actors: int) -> DistributionPolicy:  # noqa: N802
    """One actor per MPI rank; rank 0 also runs the learner. Each iteration the ranks'
    rollouts are all-gathered (rank order) and rank 0's new weights broadcast: synchronous,
    so ``n`` ranks compute exactly what :func:`SingleProcessDP` (``n`` actors) computes."""
    return DistributionPolicy(
        "MultiActorSingleLearnerDP", {"Actor": actors, "Learner": 1}, {"Learner": ["Actor"]},
        {("Actor", "Learner"): ("AllGather", "rollout"),
         ("Learner", "Actor"): ("Broadcast", "weights")},
        fragments=actors,
    )  # fmt: skip


def AsyncMultiActorSingleLearnerDP(actors: int) -> DistributionPolicy:  # noqa: N802
    """Rank 0 learns, ranks 1..``actors`` act (``actors + 1`` processes). Actors send each
    rollout point to point and collect the next with the weights they hold while the learner
    learns; the learner takes rollouts as they arrive (receive from any rank) and sends the
    new weights back to each rollout's sender (see :mod:`.async_fragment`)."""
    return DistributionPolicy(
        "AsyncMultiActorSingleLearnerDP", {"Actor": actors, "Learner": 1},
        {"Learner": ["Actor"]},
        {("Actor", "Learner"): ("Send", "rollout"), ("Learner", "Actor"): ("Send", "weights")},
        fragments=actors + 1, synchronous=False,
    )  # fmt: skip


POLICIES = {
    "single": SingleProcessDP,
    "multi-actor": MultiActorSingleLearnerDP,
    "async": AsyncMultiActorSingleLearnerDP,
}


def get_policy(name: str, actors: int) -> DistributionPolicy:
    if name not in POLICIES:
        raise ValueError(
            f"unknown distribution policy {name!r}; expected one of {sorted(POLICIES)}"
        )
    return POLICIES[name](actors)


def describe(policy: DistributionPolicy) -> dict[str, Any]:
    return {"policy": policy.name, "actors": policy.actor_number, "fragments": policy.fragments}
