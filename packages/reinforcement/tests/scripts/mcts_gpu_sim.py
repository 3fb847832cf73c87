"""The GPU search under Numba's CUDA simulator against the CPU kernel (run as a subprocess
by test_mcts_gpu.py: the simulator must be switched on before numba is imported).
Prints one line per check and ``ALL OK`` at the end; sizes are tiny (the simulator is slow).
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
# the simulator runs the 64-bit generators in NumPy scalars, whose wraparound NumPy reports
warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning)

import numpy as np  # noqa: E402

from sporeling.rl.environment import ConnectFourEnvironment, TicTacToeEnvironment  # noqa: E402
from sporeling.rl.mcts import MCTS, AlgorithmFunc, BatchedMCTS  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from mcts_gpu_sim_value import centre_value  # noqa: E402


def states_of(env_cls, starts):
    out = np.zeros((len(starts), env_cls.state_size), np.float32)
    rew = np.zeros(2, np.float32)
    for b, moves in enumerate(starts):
        for a in moves:
            env_cls.step_fn(out[b], a, rew)
    return out


def same_visits(env_cls, starts, sims, node_policy, seed):
    states = states_of(env_cls, starts)
    func = AlgorithmFunc(simulation=centre_value)
    got = []
    for device in ("CPU", "GPU"):
        m = BatchedMCTS(env_cls, len(starts), sims + 1, node_policy, customized_func=func,
                        seed=seed, device=device)  # fmt: skip
        m.set_roots(states)
        assert m.run(sims) == 0
        got.append((m.visit_counts(), {k: v.copy() for k, v in m.tree.items()}, m.rng.copy()))
    (vc_cpu, t_cpu, r_cpu), (vc_gpu, t_gpu, r_gpu) = got
    np.testing.assert_array_equal(vc_gpu, vc_cpu)
    for key in t_cpu:  # the whole tree, not only the root's counts
        np.testing.assert_array_equal(t_gpu[key], t_cpu[key], err_msg=key)
    np.testing.assert_array_equal(r_gpu, r_cpu)
    assert vc_cpu.sum() == sims * len(starts)
    print("same tree", env_cls.name, node_policy, starts, vc_gpu.tolist())


same_visits(TicTacToeEnvironment, [[], [4, 0], [0, 4, 8]], 40, "UCT", 3)
same_visits(TicTacToeEnvironment, [[0, 4]], 30, "PUCT", 1)
same_visits(ConnectFourEnvironment, [[3, 3], [0]], 30, "UCT", 5)

# the built-in random rollout (numba.cuda.random): a legal move, and the forced one
ttt = BatchedMCTS(TicTacToeEnvironment, 2, 301, device="GPU", seed=0)
best = ttt.search(states_of(TicTacToeEnvironment, [[0, 4, 8, 2], [0, 1, 3]]), 300)
assert best.tolist() == [6, 6], best  # X must block O's 2-4-6; O must block X's 0-3-6
print("forced blocks", best.tolist())
c4 = BatchedMCTS(ConnectFourEnvironment, 1, 201, device="GPU", seed=1)
best = c4.search(states_of(ConnectFourEnvironment, [[0, 6, 1, 6, 2]]), 200)
assert best.tolist() == [3], best  # O must block X's three in the bottom row
print("connect-four block", best.tolist())
ttt.advance([6, 6])  # tree reuse on the host, then searching on on the device
ttt.run(50)
assert ttt.visit_counts().sum(axis=1).min() >= 50
print("advance + run", ttt.visit_counts().sum(axis=1).tolist())

# the MindSpore-style front with device="GPU"
env = TicTacToeEnvironment()
env.reset()
mcts = MCTS(env, "GPUCommon", "CPUVanilla", 0, None, "GPU", (1.4142135623730951,),
            max_iteration=60)  # fmt: skip
action, handle = mcts.mcts_search()
mask = np.zeros(9, np.bool_)
TicTacToeEnvironment.legal_action_fn(np.asarray(env.save(), np.float32), mask)
assert mask[action], action
mcts.destroy(handle)
print("MCTS(device='GPU') action", action)
print("ALL OK")
