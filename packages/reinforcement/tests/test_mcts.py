"""The compiled MCTS against a plain Python UCT, tree reuse, batching, PUCT and errors."""

from __future__ import annotations

import numba as nb
import numpy as np
import pytest
from naive import ConnectFour, TicTacToe, minimax_ttt, uct_search

from sporeling.rl.environment import ConnectFourEnvironment, TicTacToeEnvironment
from sporeling.rl.mcts import MCTS, PRIOR_SIG, SCORE_SIG, AlgorithmFunc, BatchedMCTS

C = 1.4142135623730951


def _play(game, moves):
    for a in moves:
        game.step(a)
    return game


@pytest.mark.parametrize(
    ("game_cls", "env_cls", "moves", "sims", "seed"),
    [
        (TicTacToe, TicTacToeEnvironment, [], 400, 0),
        (TicTacToe, TicTacToeEnvironment, [4, 0], 300, 7),
        (TicTacToe, TicTacToeEnvironment, [0, 4, 8, 2], 200, 3),  # O must block at 6
        (ConnectFour, ConnectFourEnvironment, [3, 3, 2], 300, 5),
    ],
)
def test_same_visit_counts_as_plain_python_uct(game_cls, env_cls, moves, sims, seed):
    game = _play(game_cls(), moves)
    m = BatchedMCTS(env_cls, batch_size=1, max_nodes=sims + 1, c=C, seed=seed)
    m.set_roots(np.array(game.state(), np.float32)[None])
    assert m.run(sims) == 0
    want, _ = uct_search(game, sims, C, seed * 1_000_003)
    np.testing.assert_array_equal(m.visit_counts()[0], want)
    assert m.visit_counts().sum() == sims  # every simulation goes through one child


def test_batched_roots_equal_one_search_per_root():
    starts = [[], [4], [0, 4], [4, 0, 8]]
    states = np.array([_play(TicTacToe(), s).state() for s in starts], np.float32)
    batched = BatchedMCTS(TicTacToeEnvironment, batch_size=4, max_nodes=301, seed=2)
    batched.set_roots(states)
    batched.run(300)
    for b, s in enumerate(starts):
        want, _ = uct_search(_play(TicTacToe(), s), 300, C, 2 * 1_000_003 + b)
        np.testing.assert_array_equal(batched.visit_counts()[b], want)


def test_tree_reuse_keeps_the_chosen_subtree():
    m = BatchedMCTS(TicTacToeEnvironment, batch_size=1, max_nodes=3001, seed=1)
    m.set_roots(np.zeros((1, 11), np.float32))
    m.run(2000)
    a = int(m.best_actions()[0])
    child = m.tree["children"][0, 0, a]
    child_visits = m.tree["visits"][0, child]
    grand = m.visit_counts()  # root's children
    sub_children = m.tree["children"][0, child].copy()
    sub_visits = np.where(sub_children >= 0, m.tree["visits"][0, np.maximum(sub_children, 0)], 0)
    m.advance([a])
    assert m.tree["visits"][0, 0] == child_visits
    np.testing.assert_array_equal(m.visit_counts()[0], sub_visits)
    assert m.tree["n_nodes"][0] < 2000 and grand.sum() == 2000
    # the kept tree is consistent: children point back to their parent, and a node's
    # visits are its own first evaluation plus its children's visits
    t, n = m.tree, int(m.tree["n_nodes"][0])
    for i in range(n):
        kids = t["children"][0, i][t["children"][0, i] >= 0]
        assert (t["parent"][0, kids] == i).all()
        if not t["terminal"][0, i]:
            assert t["visits"][0, kids].sum() == t["visits"][0, i] - 1
    m.run(500)  # searching on from the kept tree works
    assert m.tree["visits"][0, 0] == child_visits + 500


def test_mcts_class_never_loses_to_perfect_play_or_random():
    rng = np.random.default_rng(0)
    cache: dict = {}
    for game_no in range(8):
        env = TicTacToeEnvironment({"num_envs": 1})
        env.reset()
        mcts = MCTS(env, "CPUCommon", "CPUVanilla", 0, None, "CPU", (C,), max_iteration=3000,
                    seed=game_no)  # fmt: skip
        twin = TicTacToe()
        mcts_player = game_no % 2
        opponent_random = game_no >= 4
        done = False
        while not done:
            if twin.player == mcts_player:
                a, handle = mcts.mcts_search()
                mcts.restore_tree_data(handle)
            elif opponent_random:
                a = int(rng.choice(twin.legal()))
            else:
                a = minimax_ttt(twin, cache)[1]
            _, r, d = env.step([a])
            reward, done = twin.step(a)
            assert bool(d[0]) == done
        assert reward[mcts_player] >= 0, f"MCTS lost game {game_no}"
    mcts.destroy()
    with pytest.raises(RuntimeError, match="destroyed"):
        mcts.mcts_search()


def test_mcts_class_reuses_its_tree_between_moves():
    env = TicTacToeEnvironment()
    env.reset_np()
    mcts = MCTS(env, max_iteration=2000, seed=4)
    a, handle = mcts.mcts_search()
    env.step_np([a])
    mcts.advance(a)
    kept = mcts.searcher.tree["visits"][0, 0]
    assert kept > 100  # the chosen child's subtree came along
    reply, _ = mcts.mcts_search()  # tops the kept tree up to max_iteration visits
    assert mcts.searcher.tree["visits"][0, 0] == 2000
    assert mcts.searcher.tree["n_nodes"][0] <= 2001
    assert env.legal_action_np()[0, reply]
    mcts.restore_tree_data(handle)
    with pytest.raises(ValueError, match="is not this tree's"):
        mcts.restore_tree_data(handle + 1000)


@nb.njit(PRIOR_SIG)
def _prior_on_action_8(state, mask, prior, rng):
    for a in range(prior.shape[0]):
        prior[a] = 0.0
    prior[8] = 1.0


def test_puct_follows_a_user_prior():
    m = BatchedMCTS(TicTacToeEnvironment, 1, 201, "PUCT", 1.0, AlgorithmFunc(_prior_on_action_8))
    m.set_roots(np.zeros((1, 11), np.float32))
    m.run(200)
    visits = m.visit_counts()[0]
    assert visits.argmax() == 8 and visits[8] > 0.5 * visits.sum()


@nb.njit(SCORE_SIG)
def _prefer_low_actions(value, visits, parent_visits, prior, c):
    return -visits  # the least visited child (lowest action on ties): breadth first


def test_a_user_node_policy_plugs_in():
    m = BatchedMCTS(TicTacToeEnvironment, 1, 100, _prefer_low_actions)
    m.set_roots(np.zeros((1, 11), np.float32))
    m.run(18)
    np.testing.assert_array_equal(m.visit_counts()[0], np.full(9, 2.0))


def test_clear_errors():
    with pytest.raises(ValueError, match="node_type 'Bogus' is unknown"):
        BatchedMCTS(TicTacToeEnvironment, node_policy="Bogus")
    with pytest.raises(TypeError, match="must be a Numba function"):
        BatchedMCTS(TicTacToeEnvironment, customized_func=AlgorithmFunc(lambda *a: None))
    env = TicTacToeEnvironment()
    with pytest.raises(ValueError, match="device expected 'CPU' or 'GPU', got 'Ascend'"):
        MCTS(env, device="Ascend")
    with pytest.raises(ValueError, match="max_iteration expected"):
        MCTS(env, max_iteration=0)
    m = BatchedMCTS(TicTacToeEnvironment, 1, 10)
    m.set_roots(np.zeros((1, 11), np.float32))
    assert m.run(50) == 1  # the tree filled up: reported, not overrun
    assert m.tree["n_nodes"][0] == 10
