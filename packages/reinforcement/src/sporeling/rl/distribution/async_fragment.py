"""Fragments of the asynchronous policy (:func:`~.policy.AsyncMultiActorSingleLearnerDP`):
rank 0 learns, ranks 1..n each run one actor, and collecting overlaps learning.

The learner takes rollouts in the order they arrive (the core's ``probe`` with
``ANY_SOURCE`` names the rank whose rollout is queued first), learns on each, and sends its
new weights straight back to that actor, so a slow actor holds back no one. An actor sends
its rollout and at once collects the next one with the weights it holds, then takes the
weights the learner sent back: an actor's rollout ``k + 2`` is collected with the weights
the learner had right after learning its rollout ``k`` (policy lag of one of its own
rollouts plus whatever the other actors' rollouts moved the weights meanwhile, as in A3C
and IMPALA). The learner records the arrival order (:attr:`AsyncLearnerFragment.order`);
given that order the run is deterministic, and ``tests/scripts/ppo_fragments.py`` replays
it in one process and the test compares the two bitwise. At the end rank 0's weights are
broadcast, so every rank ends with the learned weights.
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
    """Rank 0: ``episode`` rollouts from each actor rank, learned on in arrival order, each
    answered with the new weights to its sender."""

    def __init__(self, msrl: Any, rank: int, duration: int, episode: int, actors: int) -> None:
        self.msrl, self.rank, self.duration, self.episode = msrl, rank, duration, episode
        self.actor_ranks = list(range(1, actors + 1))
        self.losses: list[float] = []
        self.order: list[int] = []  # the actor rank of each rollout learned, in order
        self.env_steps = 0

    def weights(self) -> list[Any]:
        return self.msrl.learner.trainable_params()

    def run(self) -> AsyncLearnerFragment:
        _broadcast(self.weights())
        for _ in range(self.episode * len(self.actor_ranks)):
            src = comm.probe(comm.ANY_SOURCE, tag=_TAG_HEADER)
            rollout = recv_arrays(src)
            self.order.append(src)
            self.env_steps += rollout["rew"].size
            self.losses.append(float(self.msrl.learner.learn(rollout)))
            for p in self.weights():
                comm.send(Tensor(p.asnumpy()), src, tag=_TAG_WEIGHTS)
        _broadcast(self.weights())
        return self


class AsyncActorFragment:
    """Rank ``r`` >= 1 runs actor ``r - 1``: send a rollout, collect the next one with the
    weights at hand, then take the weights the learner sent back."""

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
        _broadcast(self.weights())
        return self
