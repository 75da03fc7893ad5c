"""Tabular LSVI/RLSVI/PSRL/UCRL2: update rules against value iteration and the posterior."""
import numpy as np
import pytest
from scipy.optimize import linprog

from rvfx.agents.tabular.psrl import PSRL, PSRLParams
from rvfx.agents.tabular.rlsvi import RLSVIParams, TabularRLSVI
from rvfx.agents.tabular.ucrl2 import UCRL2, UCRL2Params, optimistic_transition
from rvfx.core.transition import Transition

H, S, A = 3, 3, 2
QUARTERS = 4   # transition probabilities are multiples of 1/4 so data can match them exactly


def small_mdp(seed=0):
    rng = np.random.default_rng(seed)
    P = rng.multinomial(QUARTERS, np.ones(S) / S, size=(H, S, A)) / QUARTERS
    R = rng.normal(size=(H, S, A))
    return P, R


def value_iteration(P, R):
    """Algorithm 2 on the layered MDP (backward induction)."""
    Q = np.zeros((H, S, A))
    V = np.zeros(S)
    for h in range(H - 1, -1, -1):
        Q[h] = R[h] + (P[h] @ V if h < H - 1 else 0.0)
        V = Q[h].max(axis=1)
    return Q


def feed_complete_data(agent, P, R, copies=1):
    """Every (h, s, a) with next states in exact proportion to P."""
    for h in range(H):
        for s in range(S):
            for a in range(A):
                for s2 in range(S):
                    for _ in range(int(round(P[h, s, a, s2] * QUARTERS)) * copies):
                        new = (h + 1, s2) if h < H - 1 else None
                        agent.update_buffer(Transition((h, s), a, R[h, s, a], new, h))


def test_lsvi_on_complete_data_equals_value_iteration():
    P, R = small_mdp()
    agent = TabularRLSVI((H, S, A), np.random.default_rng(0), RLSVIParams(v=1.0, lam=1e12), "none")
    feed_complete_data(agent, P, R)
    agent.learn_from_buffer()
    np.testing.assert_allclose(agent.q, value_iteration(P, R), atol=1e-9)


def test_lsvi_shrinks_towards_prior_mean_by_v_over_lambda():
    agent = TabularRLSVI((1, 1, 2), np.random.default_rng(0), RLSVIParams(v=2.0, lam=1.0, prior_mean=5.0), "none")
    for _ in range(3):
        agent.update_buffer(Transition((0, 0), 0, 1.0, None, 0))
    agent.learn_from_buffer()
    # (3 * 1 / 2 + 5 / 1) / (3 / 2 + 1) = 2.6 ; unvisited action keeps the prior mean
    np.testing.assert_allclose(agent.q[0, 0], [2.6, 5.0])


def test_grlsvi_sample_has_posterior_mean_and_variance():
    """Last layer: Q(s,a) ~ N((sum r / v + mean / lam) / prec, 1 / prec), prec = n / v + 1 / lam."""
    v, lam, n, r = 4.0, 2.0, 5, 0.3
    agent = TabularRLSVI((1, 1, 1), np.random.default_rng(7), RLSVIParams(v=v, lam=lam, prior_mean=1.0), "gaussian")
    for _ in range(n):
        agent.update_buffer(Transition((0, 0), 0, r, None, 0))
    draws = 20000
    samples = np.empty(draws)
    for i in range(draws):
        agent.learn_from_buffer()
        samples[i] = agent.q[0, 0, 0]
    prec = n / v + 1 / lam
    mean, var = (n * r / v + 1.0 / lam) / prec, 1 / prec
    assert abs(samples.mean() - mean) < 4 * np.sqrt(var / draws)
    assert abs(samples.var() / var - 1) < 4 * np.sqrt(2 / draws)


def test_bootstrap_resamples_counts_with_replacement():
    agent = TabularRLSVI((1, 1, 2), np.random.default_rng(3), RLSVIParams(v=1.0, lam=1.0), "bootstrap")
    for a in [0] * 30 + [1] * 10:
        agent.update_buffer(Transition((0, 0), a, 0.0, None, 0))
    counts = np.array([agent.store.bootstrap_statistics(agent.rng)[0][0, 0] for _ in range(4000)])
    np.testing.assert_array_equal(counts.sum(axis=1), 40)          # resample of the same size
    # count of action 1 ~ Binomial(40, 1/4)
    assert abs(counts[:, 1].mean() - 10) < 4 * np.sqrt(40 * 0.25 * 0.75 / 4000)


def test_psrl_concentrates_on_value_iteration_with_much_data():
    P, R = small_mdp(1)
    # data_weight multiplies every count: 200 copies counted 100 times each are 20,000 copies
    agent = PSRL((H, S, A), np.random.default_rng(0), PSRLParams(data_weight=100.0))
    feed_complete_data(agent, P, R, copies=200)
    agent.learn_from_buffer()
    np.testing.assert_allclose(agent.q, value_iteration(P, R), atol=0.05)


def test_psrl_prior_sample_moments_for_an_unvisited_pair():
    """With no data, the sampled mean reward is N(prior mean, 1 / prior precision)."""
    agent = PSRL((1, 1, 1), np.random.default_rng(0), PSRLParams(reward_prior_mean=0.5, reward_prior_precision=4.0))
    samples = []
    for _ in range(10000):
        agent.learn_from_buffer()
        samples.append(agent.q[0, 0, 0])
    samples = np.array(samples)
    assert abs(samples.mean() - 0.5) < 4 * np.sqrt(0.25 / 10000)
    assert abs(samples.var() / 0.25 - 1) < 4 * np.sqrt(2 / 10000)


@pytest.mark.parametrize("seed", range(5))
def test_optimistic_transition_solves_the_l1_ball_linear_program(seed):
    rng = np.random.default_rng(seed)
    n = 6
    p_hat = rng.dirichlet(np.ones(n), size=4)
    width = rng.uniform(0, 1.5, size=4)
    v = rng.normal(size=n)
    before = p_hat.copy()
    p = optimistic_transition(p_hat, width, v)
    np.testing.assert_array_equal(p_hat, before)                     # never an alias
    for i in range(4):
        # max p.v s.t. sum p = 1, p >= 0, |p - p_hat|_1 <= w  (variables p, t with t >= |p - p_hat|)
        c = np.concatenate([-v, np.zeros(n)])
        A_ub = np.block([[np.eye(n), -np.eye(n)], [-np.eye(n), -np.eye(n)], [np.zeros((1, n)), np.ones((1, n))]])
        b_ub = np.concatenate([p_hat[i], -p_hat[i], [width[i]]])
        A_eq = np.concatenate([np.ones(n), np.zeros(n)])[None]
        lp = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=[1.0], bounds=[(0, None)] * (2 * n))
        assert p[i].sum() == pytest.approx(1.0)
        assert (p[i] >= -1e-12).all()
        assert np.abs(p[i] - p_hat[i]).sum() <= width[i] + 1e-9
        assert p[i] @ v == pytest.approx(-lp.fun, abs=1e-8)


def test_ucrl2_widths_shrink_with_steps_not_episodes():
    """t_k is the number of steps: the same counts with more steps give wider sets."""
    q = []
    for steps in (10, 10_000):
        agent = UCRL2((1, 1, 2), np.random.default_rng(0), UCRL2Params(data_weight=1.0, reward_max=10.0))
        agent.update_buffer(Transition((0, 0), 0, 0.0, None, 0))
        agent.steps = steps
        agent.learn_from_buffer()
        q.append(agent.q[0, 0, 0])
    assert q[1] > q[0]


def test_ucrl2_converges_to_value_iteration_with_much_data():
    P, R = small_mdp(2)
    # data_weight multiplies every count and the step count: 1,000 copies stand for 100,000
    agent = UCRL2((H, S, A), np.random.default_rng(0), UCRL2Params(data_weight=100.0, reward_max=10.0))
    feed_complete_data(agent, P, R, copies=1000)
    agent.learn_from_buffer()
    Q = value_iteration(P, R)
    assert (agent.q >= Q - 1e-9).all()                 # optimism
    np.testing.assert_allclose(agent.q, Q, atol=0.1)


def reference_bootstrap_statistics(transitions, shape, rng):
    """The store's resample as it was first written: one float row per transition, the indices
    converted and the terminal ones masked out at every resample (a reference for byte identity)."""
    H_, S_, A_ = shape
    rows = np.array([((h * S_ + s) * A_ + a, r, -1 if nxt is None else ((h * S_ + s) * A_ + a) * S_ + nxt[1])
                     for (h, s), a, r, nxt in transitions], dtype=float).reshape(-1, 3)
    n = len(rows)
    w = np.bincount(rng.integers(0, n, n), minlength=n).astype(float) if n else np.zeros(0)
    size = H_ * S_ * A_
    idx = rows[:, 0].astype(np.int64)
    has_next = rows[:, 2] >= 0
    return (np.bincount(idx, weights=w, minlength=size).reshape(shape),
            np.bincount(idx, weights=w * rows[:, 1], minlength=size).reshape(shape),
            np.bincount(rows[has_next, 2].astype(np.int64), weights=w[has_next],
                        minlength=size * S_).reshape(shape + (S_,)))


@pytest.mark.parametrize("steps", [0, 1, 7, 1500])
def test_transition_store_resample_is_bit_identical_to_the_row_layout(steps):
    """Columns with integer indices and a terminal bin give the same bytes as float rows with a mask:
    the same draws, and every bin sums the same weights in the same order (noisy rewards, terminals)."""
    from rvfx.agents.tabular.base import TransitionStore
    shape = (4, 5, 2)
    data = np.random.default_rng(steps)
    transitions = []
    for t in range(steps):
        h = t % shape[0]
        old = (h, int(data.integers(shape[1])))
        nxt = None if h == shape[0] - 1 or data.random() < 0.1 else (h + 1, int(data.integers(shape[1])))
        transitions.append((old, int(data.integers(shape[2])), float(data.normal()) / 3, nxt))
    store = TransitionStore(shape)
    for old, a, r, nxt in transitions:
        store.add(Transition(old, a, r, nxt, 0))
    for seed in range(3):
        got = store.bootstrap_statistics(np.random.default_rng(seed))
        want = reference_bootstrap_statistics(transitions, shape, np.random.default_rng(seed))
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.tobytes() == w.tobytes()
