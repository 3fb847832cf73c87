#!/usr/bin/env bash
# PPO on CartPole-v1 under the synchronous multi-actor policy (one actor per MPI rank,
# the learner on rank 0) with 1, 2 and 4 ranks and the same total step budget, then the
# asynchronous policy with 2 actors on 3 ranks.
# Needs the [mpi] extra: pip install "sporeling-reinforcement[gym,mpi]"
set -euo pipefail
steps=${STEPS:-100000}
sporeling-rl train --algo ppo --policy single --actors 1 --steps "$steps"
for n in 2 4; do
  sporeling launch -n "$n" sporeling-rl train --algo ppo --policy multi-actor --actors "$n" \
    --steps "$steps" --eval-episodes 100
done
# the asynchronous policy: rank 0 learns on rollouts as they arrive, the other ranks act
sporeling launch -n 3 sporeling-rl train --algo ppo --policy async --actors 2 \
  --steps "$steps" --eval-episodes 100
