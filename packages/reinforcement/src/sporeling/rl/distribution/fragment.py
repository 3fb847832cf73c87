"""Dataflow fragments: the per-rank programs an algorithm is split into (0.5's form).

A fragment is built as ``Fragment(msrl, rank, duration, episode)`` and ``run()``; the
launcher runs ``get_all_fragments(n)[rank]`` on every rank. The fragments generated from a
:class:`~.policy.DistributionPolicy` drive an on-policy algorithm written as
``actor.act(COLLECT, num_steps) -> rollout`` and ``learner.learn(rollout)``: rollouts are
dicts of arrays shaped ``(T, N, ...)`` (``N`` environments) plus ``(N,)`` entries, joined
along ``N`` in actor order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sporeling.core import Tensor
from sporeling.core import communication as comm

from ..agent import Actor
from .policy import DistributionPolicy


def join_rollouts(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Concatenate rollouts along the environment axis (1 for (T, N, ...), 0 for (N,))."""
    return {k: np.concatenate([p[k] for p in parts], axis=1 if parts[0][k].ndim >= 2 else 0)
            for k in parts[0]}  # fmt: skip


def all_gather_rollout(part: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every rank's rollout joined in rank order, on every rank (AllGather on axis N)."""
    out = {}
    for k, a in part.items():
        env_first = np.ascontiguousarray(np.swapaxes(a, 0, 1) if a.ndim >= 2 else a)
        g = comm.all_gather(Tensor(env_first)).asnumpy()
        out[k] = np.swapaxes(g, 0, 1) if a.ndim >= 2 else g
    return out


def broadcast_weights(params: list[Any], src: int = 0) -> None:
    for p in params:
        p.set_data(comm.broadcast(Tensor(p.asnumpy()), src).asnumpy())


class Fragment:
    """``Fragment(msrl, rank, duration, episode)``; ``run()`` does ``episode`` iterations.

    ``actor_ids`` are the actors this fragment runs; ``learner`` says whether it learns.
    """

    def __init__(
        self,
        msrl: Any,
        rank: int,
        duration: int,
        episode: int,
        actor_ids: list[int] | None = None,
        learner: bool = False,
        collective: bool = False,
    ) -> None:
        self.msrl, self.rank, self.duration, self.episode = msrl, rank, duration, episode
        self.actor_ids = actor_ids if actor_ids is not None else [rank]
        self.learner = learner
        self.collective = collective
        self.losses: list[float] = []
        self.env_steps = 0

    def weights(self) -> list[Any]:
        """The learner's trainable parameters (its networks'), the same objects the actors use."""
        return self.msrl.learner.trainable_params()

    def run(self) -> Fragment:
        num_steps = self.duration
        if self.collective:
            broadcast_weights(self.weights())  # start from rank 0's initial weights
        for _ in range(self.episode):
            parts = [self.msrl.actors_list[i].act(Actor.COLLECT, num_steps) for i in self.actor_ids]
            rollout = join_rollouts(parts)
            if self.collective:
                rollout = all_gather_rollout(rollout)
            self.env_steps += rollout["rew"].size
            if self.learner:
                self.losses.append(float(self.msrl.learner.learn(rollout)))
            if self.collective:
                broadcast_weights(self.weights())
        return self


def get_all_fragments(policy: DistributionPolicy) -> list[Any]:
    """The fragment (a factory taking ``(msrl, rank, duration, episode)``) of every rank."""
    n = policy.fragments
    if not policy.synchronous:
        from .async_fragment import AsyncActorFragment, AsyncLearnerFragment

        actors = policy.actor_number
        if n != actors + 1:
            raise ValueError(f"{policy.name}: {actors} actors on {n} ranks; expected one "
                             f"learner rank and one rank per actor ({actors + 1})")  # fmt: skip
        learner = [lambda msrl, r, d, e: AsyncLearnerFragment(msrl, r, d, e, actors)]
        return learner + [AsyncActorFragment] * actors
    if n == 1:
        ids = list(range(policy.actor_number))
        return [lambda msrl, rank, d, e: Fragment(msrl, rank, d, e, ids, learner=True)]
    if policy.actor_number != n:
        raise ValueError(
            f"{policy.name}: {policy.actor_number} actors on {n} ranks; expected one per rank"
        )

    def make(rank: int) -> Any:
        return lambda msrl, r, d, e: Fragment(msrl, r, d, e, [rank], learner=rank == 0,
                                              collective=True)  # fmt: skip

    return [make(r) for r in range(n)]
