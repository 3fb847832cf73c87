"""PPO under a distribution policy; writes each rank's weights and losses.

usage: ppo_fragments.py POLICY ACTORS ITERATIONS OUT (writes OUT.rank<r>.npz)
"""

import sys

import numpy as np
from threadpoolctl import threadpool_limits

import sporeling.core as ms
from sporeling.core import communication as comm
from sporeling.rl.algorithm import ppo_config
from sporeling.rl.distribution import get_policy, run_policy

threadpool_limits(1)
policy_name, actors, iterations, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
ms.set_seed(0)
config = ppo_config(num_envs=2, learner_params={"epochs": 2, "batch_size": 32})
msrl, fragment = run_policy(get_policy(policy_name, actors), config, iterations, num_steps=16)
weights = {f"{i}:{p.name}": p.asnumpy() for i, p in enumerate(fragment.weights())}
assert len(weights) == 12  # actor and critic: 3 dense layers each
# every rank saves what it holds: the broadcast weights must be the same everywhere
np.savez(f"{out}.rank{comm.get_rank()}.npz", losses=np.array(fragment.losses),
         steps=fragment.env_steps, **weights)  # fmt: skip
print(f"fragment OK rank {comm.get_rank()} of {comm.get_group_size()}", flush=True)
