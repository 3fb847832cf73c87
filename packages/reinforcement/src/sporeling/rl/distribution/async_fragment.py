"""Fragments of the asynchronous policy (:func:`~.policy.AsyncMultiActorSingleLearnerDP`):
rank 0 learns, ranks 1..n each run one actor, and collecting overlaps learning.

Each round the learner takes one rollout from each actor (in rank order: the core's
``recv`` names its source, there is no receive-from-any), learns on each as it comes, then
sends its new weights to every actor. An actor sends its rollout and at once collects the
next one with the weights it holds, then takes the new weights: rollout ``k + 1`` is
collected with the weights of round ``k - 1``, so the actors never wait for a learning step
and the learner never waits for a whole collection (one round of policy lag, as in A3C and
IMPALA). The schedule is fixed, so a run is reproducible; ``tests/scripts/ppo_fragments.py``
replays it in one process and the test compares the two bitwise.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from sporeling.core import Tensor
from sporeling.core import communication as comm

from ..agent import Actor

_TAG_HEADER, _TAG_DATA, _TAG_WEIGHTS = 11, 12, 13


def send_arrays(arrays: dict[str, np.ndarray], dst: int) -> None:
    """A dict of arrays to rank ``dst``: a JSON header (names, dtypes, shapes), then each
    array, all with the core's point-to-point ``send``."""
    header = json.dumps({k: [a.dtype.str, list(a.shape)] for k, a in arrays.items()}).encode()
    comm.send(Tensor(np.array([len(header)], np.int64)), dst, tag=_TAG_HEADER)
    comm.send(Tensor(np.frombuffer(header, np.uint8).copy()), dst, tag=_TAG_HEADER)
    for a in arrays.values():
        comm.send(Tensor(np.ascontiguousarray(a)), dst, tag=_TAG_DATA)


def recv_arrays(src: int) -> dict[str, np.ndarray]:
    """What :func:`send_arrays` on rank ``src`` sent."""
    size = int(comm.recv(Tensor(np.zeros(1, np.int64)), src, tag=_TAG_HEADER).asnumpy()[0])
    raw = comm.recv(Tensor(np.zeros(size, np.uint8)), src, tag=_TAG_HEADER).asnumpy()
    header = json.loads(raw.tobytes().decode())
    return {k: comm.recv(Tensor(np.zeros(shape, np.dtype(dt))), src, tag=_TAG_DATA).asnumpy()
            for k, (dt, shape) in header.items()}  # fmt: skip


def _broadcast(params: list[Any]) -> None:
    for p in params:
        p.set_data(comm.broadcast(Tensor(p.asnumpy()), 0).asnumpy())


class AsyncLearnerFragment:
    """Rank 0: ``episode`` rounds of (one rollout from each actor rank, learned on in rank
    order), then the new weights to every actor."""

    def __init__(self, msrl: Any, rank: int, duration: int, episode: int, actors: int) -> None:
        self.msrl, self.rank, self.duration, self.episode = msrl, rank, duration, episode
        self.actor_ranks = list(range(1, actors + 1))
        self.losses: list[float] = []
        self.env_steps = 0

    def weights(self) -> list[Any]:
        return self.msrl.learner.trainable_params()

    def run(self) -> AsyncLearnerFragment:
        _broadcast(self.weights())
        for _ in range(self.episode):
            for r in self.actor_ranks:
                rollout = recv_arrays(r)
                self.env_steps += rollout["rew"].size
                self.losses.append(float(self.msrl.learner.learn(rollout)))
            for r in self.actor_ranks:
                for p in self.weights():
                    comm.send(Tensor(p.asnumpy()), r, tag=_TAG_WEIGHTS)
        return self


class AsyncActorFragment:
    """Rank ``r`` >= 1 runs actor ``r - 1``: send a rollout, collect the next one with the
    weights at hand, then take the learner's new weights."""

    def __init__(self, msrl: Any, rank: int, duration: int, episode: int) -> None:
        self.msrl, self.rank, self.duration, self.episode = msrl, rank, duration, episode
        self.actor = msrl.actors_list[rank - 1]
        self.losses: list[float] = []
        self.env_steps = 0

    def weights(self) -> list[Any]:
        return self.msrl.learner.trainable_params()

    def run(self) -> AsyncActorFragment:
        _broadcast(self.weights())
        rollout = self.actor.act(Actor.COLLECT, self.duration)
        for k in range(self.episode):
            send_arrays(rollout, 0)
            self.env_steps += rollout["rew"].size
            if k + 1 < self.episode:
                rollout = self.actor.act(Actor.COLLECT, self.duration)
            for p in self.weights():
                p.set_data(comm.recv(Tensor(p.asnumpy()), 0, tag=_TAG_WEIGHTS).asnumpy())
        return self
