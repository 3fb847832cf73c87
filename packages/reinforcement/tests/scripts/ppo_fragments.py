"""PPO under a distribution policy; writes each rank's weights and losses.

usage: ppo_fragments.py POLICY ACTORS ITERATIONS OUT (writes OUT.rank<r>.npz)

POLICY ``async-replay`` runs, in one process, the schedule the ``async`` policy runs over
``ACTORS + 1`` ranks: rollout ``k + 1`` of every actor is collected with the weights as they
were before round ``k``'s learning, and round ``k`` learns on each actor's rollout in order.
"""

import sys

import numpy as np
from threadpoolctl import threadpool_limits

import sporeling.core as ms
from sporeling.core import communication as comm
from sporeling.rl.agent import Actor
from sporeling.rl.algorithm import ppo_config
from sporeling.rl.core import MSRL
from sporeling.rl.distribution import get_policy, run_policy

threadpool_limits(1)
policy_name, actors, iterations, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
ms.set_seed(0)
config = ppo_config(num_envs=2, learner_params={"epochs": 2, "batch_size": 32})


class Replay:
    """The async schedule in one process (the reference for the MPI run)."""

    def __init__(self):
        msrl = MSRL({**config, "actor": {**config["actor"], "number": actors, "share_env": False}})
        learner, self.losses, self.env_steps = msrl.learner, [], 0
        rollouts = [a.act(Actor.COLLECT, 16) for a in msrl.actors_list]
        for k in range(iterations):
            if k + 1 < iterations:
                following = [a.act(Actor.COLLECT, 16) for a in msrl.actors_list]
            for part in rollouts:
                self.env_steps += part["rew"].size
                self.losses.append(float(learner.learn(part)))
            rollouts = following
        self.msrl = msrl

    def weights(self):
        return self.msrl.learner.trainable_params()


if policy_name == "async-replay":
    comm.init()
    fragment = Replay()
else:
    msrl, fragment = run_policy(get_policy(policy_name, actors), config, iterations, num_steps=16)
weights = {f"{i}:{p.name}": p.asnumpy() for i, p in enumerate(fragment.weights())}
assert len(weights) == 12  # actor and critic: 3 dense layers each
# every rank saves what it holds: the broadcast weights must be the same everywhere
np.savez(f"{out}.rank{comm.get_rank()}.npz", losses=np.array(fragment.losses),
         steps=fragment.env_steps, **weights)  # fmt: skip
print(f"fragment OK rank {comm.get_rank()} of {comm.get_group_size()}", flush=True)
