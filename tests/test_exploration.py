"""Section 4's exploration methods on deep sea: the learning times Table 1 derives, measured.

Statistical checks use fixed seeds and tolerances of 4 standard errors of the sample size.
"""
import math

import numpy as np
import pytest
from scipy import stats

from rvfx.agents import AGENTS
from rvfx.agents.tabular.exploration import DeepSeaKnownStructure, first_open
from rvfx.core.live import live
from rvfx.envs.deep_sea import DeepSea, DeepSeaParams


def make(name, n, seed, treasure=True, **params):
    env = DeepSea(DeepSeaParams(size=n, treasure=treasure), np.random.default_rng(seed))
    factory, params_cls = AGENTS[name].factory, AGENTS[name].params
    return factory(params_cls(**params), env, np.random.default_rng(10_000 + seed)), env


def first_opens(name, n, seeds, budget, **params):
    out = []
    for seed in range(seeds):
        agent, env = make(name, n, seed, **params)
        out.append(first_open(agent, env, budget))
    return out


def test_optimal_learner_first_opens_the_chest_at_1_plus_binomial_n_half():
    """Each of the N diagonal cells costs one failed episode with probability 1/2:
    first opening = 1 + Binomial(N, 1/2), mean (N + 2)/2, variance N/4."""
    n, seeds = 10, 1500
    k = np.array(first_opens("deepsea_optimal", n, seeds, budget=n + 1))
    assert k.min() >= 1 and k.max() <= n + 1               # never more than N + 1 episodes
    se = math.sqrt(n / 4 / seeds)
    assert abs(k.mean() - (n + 2) / 2) < 4 * se
    assert abs(k.var() - n / 4) < 0.15 * n / 4
    observed = np.bincount(k - 1, minlength=n + 1)
    expected = stats.binom(n, 0.5).pmf(np.arange(n + 1)) * seeds
    keep = expected >= 5                                    # chi-square on the well-populated cells
    chi2 = ((observed[keep] - expected[keep]) ** 2 / expected[keep]).sum()
    assert stats.chi2(keep.sum() - 1).sf(chi2) > 1e-3


def test_optimal_learner_knows_the_optimal_policy_after_opening_and_eq_7_1_is_linear():
    for n in (5, 20):
        times = []
        for seed in range(40):
            agent, env = make("deepsea_optimal", n, seed)
            result = live(agent, env, 10 * n, stop_at_learning=True)
            assert result["learning_time"] is not None
            times.append(result["learning_time"])
            # after learning it takes the optimal path every episode
            agent.learn_from_buffer()
            assert np.all(agent.known_right.diagonal() == env.right_action.diagonal())
        # eq. 7.1 for a learner that opens at k and then exploits: about 2(k - 1) ~ N
        assert 0.6 * n < np.mean(times) < 1.4 * n + 2


def test_optimal_learner_avoids_a_bomb_once_found():
    agent, env = make("deepsea_optimal", 6, 0, treasure=False)
    k = first_open(agent, env, 7)
    assert k is not None and agent.chest == -1.0
    result = live(agent, env, 20)
    assert all(r["regret"] == 0.0 for r in result["episodes"])


def test_pure_exploitation_and_myopic_never_open_the_chest_after_episode_1():
    n, seeds, budget = 12, 30, 300
    for name, params in (("deepsea_exploitation", {}), ("deepsea_myopic", {"bonus": 1.0})):
        opened = first_opens(name, n, seeds, budget, **params)
        assert all(k is None or k == 1 for k in opened)      # only the first episode can open it
        assert sum(k is not None for k in opened) == 0       # P = 2^-12 per seed
        agent, env = make(name, n, 0, **params)
        assert live(agent, env, budget, stop_at_learning=True)["learning_time"] is None


def test_pure_exploitation_opens_in_episode_1_with_probability_2_to_the_minus_n():
    n, seeds = 3, 800
    opened = np.array([k is not None for k in first_opens("deepsea_exploitation", n, seeds, budget=20)])
    p = 2.0 ** -n
    assert abs(opened.mean() - p) < 4 * math.sqrt(p * (1 - p) / seeds)


def test_uniform_random_actions_take_2_to_the_n_episodes_on_average():
    """epsilon-greedy with epsilon = 1 acts uniformly: first opening ~ Geometric(2^-N), mean 2^N."""
    for n, seeds in ((3, 600), (5, 300)):
        k = np.array(first_opens("lsvi", n, seeds, budget=100 * 2 ** n, act="epsilon_greedy", epsilon=1.0),
                     dtype=float)
        mean, sd = 2.0 ** n, math.sqrt((1 - 2.0 ** -n) * 4.0 ** n)
        assert abs(k.mean() - mean) < 4 * sd / math.sqrt(seeds)


def test_epsilon_greedy_and_boltzmann_take_at_least_2_to_the_n():
    n, seeds = 4, 60
    uniform_mean, uniform_sd = 2.0 ** n, math.sqrt((1 - 2.0 ** -n) * 4.0 ** n)
    for params in ({"act": "epsilon_greedy", "epsilon": 0.2}, {"act": "epsilon_greedy", "epsilon": 0.5}):
        k = first_opens("lsvi", n, seeds, budget=200_000, **params)
        assert None not in k
        # (2/epsilon)^(N-1)-type growth: far above 2^N
        assert np.mean(k) - 4 * np.std(k) / math.sqrt(seeds) > uniform_mean
    k = first_opens("lsvi", n, 200, budget=20_000, act="boltzmann", temperature=0.1)
    # Boltzmann over LSVI is biased (slightly) against the costly 'right': at least 2^N
    assert np.mean(k) > uniform_mean - 4 * uniform_sd / math.sqrt(200)


def test_thompson_sampling_with_the_section_4_prior_learns_in_about_2n():
    n, seeds = 10, 300
    k = np.array(first_opens("deepsea_thompson", n, seeds, budget=20 * n), dtype=float)
    # it explores (samples treasure) in half of the episodes: about twice the optimal learner
    assert abs(k.mean() - (n + 2)) < 0.2 * (n + 2)


def test_associations_and_chest_are_learnt_from_transitions_only():
    agent, env = make("deepsea_optimal", 4, 3)
    assert np.all(agent.known_right == -1) and agent.chest is None
    first_open(agent, env, 10)
    known = agent.known_right >= 0
    assert known.any()
    assert np.all(agent.known_right[known] == env.right_action[known])
    assert agent.chest == 1.0


def test_structured_agents_refuse_noisy_rewards_and_other_environments():
    env = DeepSea(DeepSeaParams(size=4, reward_noise=0.1), np.random.default_rng(0))
    with pytest.raises(ValueError):
        DeepSeaKnownStructure(env, np.random.default_rng(0), "mean")
    from rvfx.envs.random_mdp import RandomMDP, RandomMDPParams
    with pytest.raises(TypeError):
        DeepSeaKnownStructure(RandomMDP(RandomMDPParams(), np.random.default_rng(0)),
                              np.random.default_rng(0), "mean")


def test_every_right_cost_variant_is_handled():
    env = DeepSea(DeepSeaParams(size=6, move_cost="every_right"), np.random.default_rng(1))
    agent = AGENTS["deepsea_optimal"].factory(AGENTS["deepsea_optimal"].params(), env, np.random.default_rng(2))
    assert first_open(agent, env, 7) is not None
