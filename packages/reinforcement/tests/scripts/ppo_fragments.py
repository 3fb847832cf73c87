"""PPO under a distribution policy; writes each rank's weights and losses.

usage: ppo_fragments.py POLICY ACTORS ITERATIONS OUT [ORDER] (writes OUT.rank<r>.npz)

POLICY ``async-replay`` runs, in one process, what the ``async`` policy ran over
``ACTORS + 1`` ranks, given the order in which its learner took the rollouts (``order`` in
the npz file ORDER that the async run's rank 0 wrote). With PPO_FRAGMENTS_SLOW_RANK=r, rank r
waits 2 s before its first rollout (so that the others' rollouts come first).
"""

import os
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

import sporeling.core as ms
from sporeling.core import communication as comm
from sporeling.rl.agent import Actor
from sporeling.rl.algorithm import ppo_config
from sporeling.rl.algorithm.ppo import PPOActor
from sporeling.rl.core import MSRL
from sporeling.rl.distribution import get_policy, run_policy

threadpool_limits(1)
policy_name, actors, iterations, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
ms.set_seed(0)
config = ppo_config(num_envs=2, learner_params={"epochs": 2, "batch_size": 32})


class Replay:
    """The async schedule in one process, given the learner's arrival order (the reference
    for the MPI run): an actor's rollout ``c + 1`` is collected with the weights it held when
    it sent rollout ``c``, i.e. those sent back after its rollout ``c - 1`` was learned."""

    def __init__(self, order):
        msrl = MSRL({**config, "actor": {**config["actor"], "number": actors, "share_env": False}})
        learner, self.losses, self.env_steps = msrl.learner, [], 0
        params = learner.trainable_params()

        def snapshot():
            return [p.asnumpy().copy() for p in params]

        def collect(actor, weights):
            current = snapshot()
            for p, w in zip(params, weights):
                p.set_data(w)
            rollout = msrl.actors_list[actor].act(Actor.COLLECT, 16)
            for p, w in zip(params, current):
                p.set_data(w)
            return rollout

        held = [snapshot() for _ in range(actors)]  # the weights each actor collects with
        ready = [collect(a, held[a]) for a in range(actors)]
        count = [0] * actors
        for rank in order:
            a = rank - 1
            part = ready[a]
            count[a] += 1
            if count[a] < iterations:  # collected while the learner learns on `part`
                ready[a] = collect(a, held[a])
            self.env_steps += part["rew"].size
            self.losses.append(float(learner.learn(part)))
            held[a] = snapshot()
        self.msrl = msrl

    def weights(self):
        return self.msrl.learner.trainable_params()


slow = os.environ.get("PPO_FRAGMENTS_SLOW_RANK")
if slow is not None:
    _act, _waited = PPOActor.act, []

    def slow_act(self, *args):
        if not _waited and comm.get_rank() == int(slow):
            time.sleep(2.0)
        _waited.append(True)
        return _act(self, *args)

    PPOActor.act = slow_act

if policy_name == "async-replay":
    comm.init()
    fragment = Replay([int(r) for r in np.load(sys.argv[5])["order"]])
else:
    msrl, fragment = run_policy(get_policy(policy_name, actors), config, iterations, num_steps=16)
weights = {f"{i}:{p.name}": p.asnumpy() for i, p in enumerate(fragment.weights())}
assert len(weights) == 12  # actor and critic: 3 dense layers each
# every rank saves what it holds: the broadcast weights must be the same everywhere
np.savez(f"{out}.rank{comm.get_rank()}.npz", losses=np.array(fragment.losses),
         steps=fragment.env_steps, order=np.array(getattr(fragment, "order", []), np.int64),
         **weights)  # fmt: skip
print(f"fragment OK rank {comm.get_rank()} of {comm.get_group_size()}", flush=True)
