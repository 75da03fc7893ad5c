"""DeepSea (Example 1): rewards, optimal values, and the per-instance action mapping."""
import itertools

import numpy as np
import pytest

from rvfx.envs.deep_sea import DeepSea, DeepSeaParams


def play(env, actions):
    t = env.reset()
    total, steps = 0.0, 0
    for a in actions:
        t = env.step(a)
        total += t.reward
        steps += 1
        if t.new_state is None:
            break
    return total, steps, env.expected_return


@pytest.mark.parametrize("n", [3, 5, 10])
def test_oracle_path_earns_099_with_treasure(n):
    env = DeepSea(DeepSeaParams(size=n, treasure=True), np.random.default_rng(n))
    t = env.reset()
    total = 0.0
    while t.new_state is not None:
        row, col = t.new_state
        t = env.step(int(env.right_action[row, col]))
        total += t.reward
    assert total == pytest.approx(0.99, abs=1e-12)
    assert env.optimal_return == 0.99


@pytest.mark.parametrize("treasure, best", [(True, 0.99), (False, 0.0)])
def test_optimal_return_by_enumerating_every_policy(treasure, best):
    n = 5
    env = DeepSea(DeepSeaParams(size=n, treasure=treasure), np.random.default_rng(3))
    returns = [play(env, seq)[0] for seq in itertools.product([0, 1], repeat=n)]
    assert max(returns) == pytest.approx(best, abs=1e-12)
    assert env.optimal_return == pytest.approx(best)


def test_episode_lasts_n_steps_and_moves_down_one_row():
    env = DeepSea(DeepSeaParams(size=6), np.random.default_rng(0))
    t = env.reset()
    rows = []
    while t.new_state is not None:
        t = env.step(0)
        rows.append(t.old_state[0])
    assert rows == list(range(6))


def test_mapping_fixed_across_episodes_and_differs_across_seeds():
    a = DeepSea(DeepSeaParams(size=10), np.random.default_rng(1))
    mapping = a.right_action.copy()
    for _ in range(20):
        play(a, [1] * 10)
    np.testing.assert_array_equal(a.right_action, mapping)
    b = DeepSea(DeepSeaParams(size=10), np.random.default_rng(2))
    assert (a.right_action != b.right_action).any()
    # action meanings really are randomised: both indices mean "right" somewhere
    assert 0 < mapping.mean() < 1


def test_move_cost_diagonal_vs_every_right():
    for mode, expected in (("diagonal", -0.0), ("every_right", -0.01 / 4)):
        env = DeepSea(DeepSeaParams(size=4, move_cost=mode), np.random.default_rng(0))
        # (2, 0) is off the diagonal: only bsuite's reading charges "right" there
        assert env.mean_reward(2, 0, right=True) == pytest.approx(expected)
        assert env.mean_reward(2, 0, right=False) == 0.0


def test_reward_noise_leaves_expected_return_unchanged():
    n = 6
    env = DeepSea(DeepSeaParams(size=n, reward_noise=1.0), np.random.default_rng(0))
    oracle = [int(env.right_action[i, i]) for i in range(n)]
    observed, _, expected = play(env, oracle)
    assert expected == pytest.approx(0.99)
    assert observed != pytest.approx(0.99)


def test_action_one_always_right_when_not_randomised():
    env = DeepSea(DeepSeaParams(size=5, randomize_actions=False), np.random.default_rng(0))
    assert play(env, [1] * 5)[0] == pytest.approx(0.99)
