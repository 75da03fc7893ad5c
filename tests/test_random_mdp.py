"""random_mdp: MDPs drawn from the Dirichlet prior satisfy Assumptions 1 and 2 of Section 6."""
import itertools
import math

import numpy as np
import pytest

from rvfx.core.live import live
from rvfx.envs import ENVS
from rvfx.envs.random_mdp import RandomMDP, RandomMDPParams
from rvfx.experiment.params import SpecError, build

PARAMS = RandomMDPParams(horizon=3, states=3, actions=2, beta=3.0)


def sample(seed, params=PARAMS):
    return RandomMDP(params, np.random.default_rng(seed))


class RandomPolicy:
    def __init__(self, A, rng):
        self.A, self.rng = A, rng

    def learn_from_buffer(self):
        pass

    def act(self, state):
        return int(self.rng.integers(self.A))

    def update_buffer(self, transition):
        pass


def test_assumption_1_layered_and_terminates_after_h_steps_under_any_policy():
    env = sample(0, RandomMDPParams(horizon=5, states=4, actions=3, beta=4.0))
    H, X, A = env.shape
    assert env.outcome.shape == (H - 1, X, A, 2, X)
    np.testing.assert_allclose(env.outcome.sum(axis=(-2, -1)), 1.0)          # mass 1 on the next layer
    rng = np.random.default_rng(1)
    for _ in range(200):
        tr = env.reset()
        steps = 0
        while tr.new_state is not None:
            h, _ = tr.new_state
            assert h == steps                                                # period advances by one
            tr = env.step(int(rng.integers(A)))
            steps += 1
            assert tr.reward in (0.0, 1.0)                                   # Assumption 2: r in {0, 1}
        assert steps == H                                                    # terminates in period H


def test_assumption_2_outcome_distributions_have_dirichlet_moments():
    """Across sampled MDPs each P^O_{t,x,a}(o) has the Dirichlet(alpha_0) mean alpha_i/beta and
    variance alpha_i (beta - alpha_i) / (beta^2 (beta + 1)), and distinct (t,x,a) are independent."""
    n = 1500
    draws = np.stack([sample(s).outcome.reshape(-1, 2 * PARAMS.states) for s in range(n)])  # (n, txa, 2X)
    alpha = PARAMS.beta / (2 * PARAMS.states)
    beta = PARAMS.beta
    mean, var = alpha / beta, alpha * (beta - alpha) / (beta ** 2 * (beta + 1))
    sd_of_mean = math.sqrt(var / n)
    assert np.all(np.abs(draws.mean(axis=0) - mean) < 4.5 * sd_of_mean)
    # sample variance of a Beta(alpha, beta - alpha) marginal: relative s.e. ~ 0.07 at n = 1500
    assert np.all(np.abs(draws.var(axis=0) / var - 1) < 0.2)
    # independence across (t, x, a): correlation of the first outcome's probability ~ 0
    c = np.corrcoef(draws[:, :, 0].T)
    off = c[~np.eye(len(c), dtype=bool)]
    assert np.all(np.abs(off) < 4.5 / math.sqrt(n))
    # within one (t, x, a), outcome probabilities are negatively correlated: -alpha/(beta - alpha)
    expected = -alpha / (beta - alpha)
    r = np.corrcoef(draws[:, 0, 0], draws[:, 0, 1])[0, 1]
    assert abs(r - expected) < 4.5 / math.sqrt(n)


def test_last_period_reward_is_the_dirichlet_reward_marginal():
    n = 3000
    p = np.array([sample(s).reward_prob[-1].ravel() for s in range(n)])
    # Beta(beta/2, beta/2): mean 1/2, variance 1 / (4 (beta + 1))
    assert abs(p.mean() - 0.5) < 4 * math.sqrt(1 / 16 / (n * p.shape[1]))
    assert abs(p.var() / (1 / (4 * (PARAMS.beta + 1))) - 1) < 0.1


def test_outcomes_are_drawn_from_the_sampled_distribution():
    env = sample(3)
    counts = np.zeros((2, PARAMS.states))
    n = 20000
    for _ in range(n):
        env.reset()
        tr = env.step(1)                                 # (0, x0) with action 1
        counts[int(tr.reward), tr.new_state[1]] += 1
    p = env.outcome[0, 0, 1]
    assert np.all(np.abs(counts / n - p) < 4 * np.sqrt(p * (1 - p) / n) + 1e-12)


def test_optimal_return_is_the_best_deterministic_policy_by_enumeration():
    params = RandomMDPParams(horizon=2, states=2, actions=2, beta=3.0)
    for seed in range(5):
        env = sample(seed, params)
        best = max(env.policy_value(np.array(p).reshape(2, 2))
                   for p in itertools.product(range(2), repeat=4))
        assert env.optimal_return == pytest.approx(best)


def test_expected_return_is_unbiased_for_the_policy_value():
    env = sample(7)
    policy = np.random.default_rng(0).integers(0, 2, size=(3, 3))
    total, n = [], 20000
    for _ in range(n):
        tr = env.reset()
        while tr.new_state is not None:
            h, x = tr.new_state
            tr = env.step(int(policy[h, x]))
        total.append(env.expected_return)
    total = np.array(total)
    assert abs(total.mean() - env.policy_value(policy)) < 4 * total.std() / math.sqrt(n)


def test_same_seed_same_mdp_and_registry():
    a, b, c = sample(11), sample(11), sample(12)
    np.testing.assert_array_equal(a.outcome, b.outcome)
    assert not np.array_equal(a.outcome, c.outcome)
    assert ENVS["random_mdp"] == (RandomMDP, RandomMDPParams)
    result = live(RandomPolicy(2, np.random.default_rng(0)), sample(0), 50)
    assert result["episodes_run"] == 50 and result["final_cum_regret"] > 0


def test_beta_below_3_is_rejected():
    with pytest.raises(SpecError):
        build(RandomMDPParams, {"beta": 2.5}, "env")
    with pytest.raises(ValueError):
        RandomMDP(RandomMDPParams(states=2, start_state=2), np.random.default_rng(0))
