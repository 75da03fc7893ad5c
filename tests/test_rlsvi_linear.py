"""Linear RLSVI on deep sea (Algorithms 3-4, eqs. 5.3-5.6, Section 7.1.2)."""
import numpy as np
import pytest

from rvfx.agents.linear.rlsvi import SOLVE_ERRSTATE, LinearRLSVI, LinearRLSVIParams, backward_solve, solve_into
from rvfx.agents.tabular.rlsvi import RLSVIParams, TabularRLSVI
from rvfx.core.backward_induction import backward_induction
from rvfx.core.live import live
from rvfx.envs.deep_sea import DeepSea, DeepSeaParams
from rvfx.envs.features import coherent_basis
from rvfx.experiment.params import SpecError, build


def make_env(size, seed=3, **kw):
    return DeepSea(DeepSeaParams(size=size, **kw), np.random.default_rng(seed))


def random_episodes(env, episodes, rng):
    """Transitions of a uniformly random policy."""
    out = []
    for _ in range(episodes):
        t = env.reset()
        while t.new_state is not None:
            t = env.step(int(rng.integers(2)))
            out.append(t)
    return out


# (a) One-hot features: linear RLSVI is tabular RLSVI, draw for draw.

def q_trace(agent, env, episodes):
    """The agent's Q table at the end of each episode."""
    trace = []
    live(agent, env, episodes, on_episode=lambda _: trace.append(agent.q.copy()))
    return trace


@pytest.mark.parametrize("perturbation", ["none", "gaussian", "bootstrap"])
@pytest.mark.parametrize("noise", [0.0, 1.0])
def test_one_hot_linear_equals_tabular_along_a_whole_run(perturbation, noise):
    qs = {}
    for kind in ("tabular", "linear"):
        env = make_env(8, reward_noise=noise)
        rng = np.random.default_rng(7)
        if kind == "tabular":
            agent = TabularRLSVI(env.shape, rng, RLSVIParams(prior_mean=0.1), perturbation)
        else:
            params = LinearRLSVIParams(v="H**2/25", lam="v", prior_mean=0.1, basis="one_hot")
            agent = LinearRLSVI(env, rng, params, perturbation)
        qs[kind] = np.array(q_trace(agent, env, 150))
    np.testing.assert_allclose(qs["linear"], qs["tabular"], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("act", ["epsilon_greedy", "boltzmann"])
def test_one_hot_linear_equals_tabular_with_dithering(act):
    returns = {}
    for kind in ("tabular", "linear"):
        env, rng = make_env(6), np.random.default_rng(11)
        if kind == "tabular":
            agent = TabularRLSVI(env.shape, rng, RLSVIParams(act=act, epsilon=0.2), "gaussian")
        else:
            agent = LinearRLSVI(env, rng, LinearRLSVIParams(v="H**2/25", lam="v", basis="one_hot",
                                                            act=act, epsilon=0.2), "gaussian")
        returns[kind] = [row["cum_regret"] for row in live(agent, env, 60, log_every="all")["episodes"]]
    np.testing.assert_allclose(returns["linear"], returns["tabular"], atol=1e-12)


# (b) The row-wise solve is the D x D regression of Algorithm 4.

def full_ridge_rlsvi(env, phi, transitions, z, theta_hat, v, lam):
    """Algorithm 4 literally: H sweeps of one D = N*M ridge regression over the replayed data."""
    n, _, _, m = phi.shape
    d = n * m

    def global_features(h, s, a):
        x = np.zeros(d)
        x[h * m:(h + 1) * m] = phi[h, s, a]
        return x

    X = np.array([global_features(*t.old_state, t.action) for t in transitions])
    r = np.array([t.reward for t in transitions])
    theta = np.zeros(d)
    for _ in range(n):
        q_next = np.array([0.0 if t.new_state is None else
                           max(global_features(*t.new_state, a) @ theta for a in (0, 1))
                           for t in transitions])
        y = r + z + q_next
        theta = np.linalg.solve(X.T @ X / v + np.eye(d) / lam, X.T @ y / v + theta_hat / lam)
    return theta.reshape(n, m)


def test_agent_lsvi_equals_full_dimensional_ridge_solution():
    env = make_env(5, reward_noise=0.5)
    data = random_episodes(env, 25, np.random.default_rng(0))
    params = LinearRLSVIParams(M=3, v=0.3, lam=4.0, prior_mean=0.2)
    agent = LinearRLSVI(env, np.random.default_rng(1), params, "none")
    for t in data:
        agent.update_buffer(t)
    agent.learn_from_buffer()
    full = full_ridge_rlsvi(env, agent.phi, data, np.zeros(len(data)), np.full(5 * 3, 0.2), 0.3, 4.0)
    np.testing.assert_allclose(agent.theta, full, rtol=1e-9, atol=1e-9)


def row_statistics(phi, transitions, z=None):
    """Gram, X^T (r + z), next-state sums and counts of each row, one transition at a time."""
    H, S, A, M = phi.shape
    gram, targets, next_sum, count = np.zeros((H, M, M)), np.zeros((H, M)), np.zeros((H, M, S)), np.zeros((H, S, A))
    for i, t in enumerate(transitions):
        h, x = t.old_state[0], phi[t.old_state + (t.action,)]
        gram[h] += np.outer(x, x)
        targets[h] += (t.reward + (0.0 if z is None else z[i])) * x
        if t.new_state is not None:
            next_sum[h, :, t.new_state[1]] += x
        count[t.old_state + (t.action,)] += 1.0
    return gram, targets, next_sum, count


def test_rowwise_perturbed_solve_equals_full_dimensional_ridge_solution():
    env = make_env(5, reward_noise=0.5)
    data = random_episodes(env, 25, np.random.default_rng(0))
    phi = coherent_basis(env, 4, np.random.default_rng(2))
    v, lam, rng = 0.3, 4.0, np.random.default_rng(3)
    z = np.sqrt(v) * rng.standard_normal(len(data))
    theta_hat = np.sqrt(lam) * rng.standard_normal(5 * 4)
    full = full_ridge_rlsvi(env, phi, data, z, theta_hat, v, lam)
    gram, targets, next_sum, _ = row_statistics(phi, data, z)
    theta, q = backward_solve(phi.reshape(5, 10, 4), gram, targets, next_sum,
                              theta_hat.reshape(5, 4), v, lam, 2)
    np.testing.assert_allclose(theta, full, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(q.reshape(5, 5, 2), np.einsum("hsam,hm->hsa", phi, theta), atol=1e-12)



def reference_backward_solve(phi_rows, gram, targets, next_sum, prior, v, lam, num_actions):
    """backward_solve as first written (a byte-identity reference): np.linalg.solve on fresh arrays."""
    theta = np.empty(prior.shape)

    def backup(h, v_next):
        rhs = (targets[h] + next_sum[h] @ v_next) / v + prior[h] / lam
        theta[h] = np.linalg.solve(gram[h] / v + np.eye(prior.shape[1]) / lam, rhs)
        return (phi_rows[h] @ theta[h]).reshape(-1, num_actions)

    return theta, backward_induction(backup, len(prior), np.zeros(next_sum.shape[2])).reshape(phi_rows.shape[:2])


@pytest.mark.parametrize("M", [1, 3, 20, 90])
def test_backward_solve_is_bit_identical_to_np_linalg_solve_per_row(M):
    """The reused system buffer and the direct gufunc call change no bit: same products, same dgesv."""
    H, S, A = 6, 7, 2
    rng = np.random.default_rng(M)
    phi_rows = rng.normal(size=(H, S * A, M))
    X = rng.normal(size=(H, 3 * M, M))
    gram = X.transpose(0, 2, 1) @ X
    targets, next_sum, prior = rng.normal(size=(H, M)), rng.random((H, M, S)), rng.normal(size=(H, M))
    got = backward_solve(phi_rows, gram, targets, next_sum, prior, 0.01, 100.0, A)
    want = reference_backward_solve(phi_rows, gram, targets, next_sum, prior, 0.01, 100.0, A)
    for g, w in zip(got, want):
        assert g.tobytes() == w.tobytes()


def test_solve_into_matches_np_linalg_solve_and_refuses_a_singular_system():
    rng = np.random.default_rng(0)
    a, b, out = rng.normal(size=(12, 12)), rng.normal(size=12), np.empty(12)
    with np.errstate(**SOLVE_ERRSTATE):
        solve_into(a, b, out)
    assert out.tobytes() == np.linalg.solve(a, b).tobytes()
    with pytest.raises(np.linalg.LinAlgError), np.errstate(**SOLVE_ERRSTATE):
        solve_into(np.zeros((3, 3)), np.ones(3), np.empty(3))

# (d) One regression step of learn_grlsvi samples the posterior of eq. 5.3.

@pytest.mark.parametrize("episodes", [2, 40])      # 2: rank-deficient Gram; 40: full rank
def test_grlsvi_last_row_sample_has_posterior_mean_and_covariance(episodes):
    n, m, v, lam, prior_mean = 3, 5, 0.5, 2.0, 0.3
    env = make_env(n, reward_noise=1.0)
    data = random_episodes(env, episodes, np.random.default_rng(0))
    params = LinearRLSVIParams(M=m, v=v, lam=lam, prior_mean=prior_mean)
    agent = LinearRLSVI(env, np.random.default_rng(1), params, "gaussian")
    for t in data:
        agent.update_buffer(t)
    # Eq. 5.3 for the last row (targets are rewards only), from the replayed transitions.
    last = [t for t in data if t.old_state[0] == n - 1]
    X = np.array([agent.phi[t.old_state + (t.action,)] for t in last])
    y = np.array([t.reward for t in last])
    cov = np.linalg.inv(X.T @ X / v + np.eye(m) / lam)
    mean = cov @ (X.T @ y / v + prior_mean / lam)
    assert (np.linalg.matrix_rank(X.T @ X) < m) == (episodes == 2)

    K = 4000
    samples = np.empty((K, m))
    for k in range(K):
        agent.learn_from_buffer()
        samples[k] = agent.theta[n - 1]
    sd = np.sqrt(np.diag(cov))
    assert np.all(np.abs(samples.mean(0) - mean) <= 5 * sd / np.sqrt(K))
    # Var of a sample covariance entry under normality: (S_ii S_jj + S_ij^2) / K.
    tol = 5 * np.sqrt((np.outer(sd ** 2, sd ** 2) + cov ** 2) / K)
    assert np.all(np.abs(np.cov(samples.T) - cov) <= tol)


def test_lsvi_is_the_posterior_mean():
    n, m, v, lam = 3, 4, 0.5, 2.0
    env = make_env(n, reward_noise=1.0)
    data = random_episodes(env, 10, np.random.default_rng(0))
    agent = LinearRLSVI(env, np.random.default_rng(1), LinearRLSVIParams(M=m, v=v, lam=lam), "none")
    for t in data:
        agent.update_buffer(t)
    agent.learn_from_buffer()
    last = [t for t in data if t.old_state[0] == n - 1]
    X = np.array([agent.phi[t.old_state + (t.action,)] for t in last])
    y = np.array([t.reward for t in last])
    mean = np.linalg.solve(X.T @ X / v + np.eye(m) / lam, X.T @ y / v)
    np.testing.assert_allclose(agent.theta[n - 1], mean, atol=1e-12)


# (e) It explores deeply: learns deep sea where LSVI does not.

@pytest.mark.parametrize("perturbation,bound", [("gaussian", 300), ("bootstrap", 500)])
def test_linear_rlsvi_learns_deep_sea(perturbation, bound):
    env = make_env(10, seed=0)
    agent = LinearRLSVI(env, np.random.default_rng(100), LinearRLSVIParams(M=10), perturbation)
    result = live(agent, env, bound, stop_at_learning=True)
    assert result["learning_time"] is not None and result["learning_time"] <= bound


def test_lsvi_without_randomization_does_not_learn_deep_sea():
    env = make_env(10, seed=0)
    agent = LinearRLSVI(env, np.random.default_rng(100), LinearRLSVIParams(M=10), "none")
    assert live(agent, env, 300, stop_at_learning=True)["learning_time"] is None


# Cost, parameters.

def _state_bytes(agent):
    return sum(x.nbytes for x in vars(agent).values() if isinstance(x, np.ndarray))


@pytest.mark.parametrize("perturbation", ["none", "gaussian"])
def test_state_does_not_grow_with_history(perturbation):
    env = make_env(6)
    agent = LinearRLSVI(env, np.random.default_rng(0), LinearRLSVIParams(M=4), perturbation)
    live(agent, env, 5)
    before = _state_bytes(agent)
    live(agent, env, 400)
    assert _state_bytes(agent) == before and agent.steps == 405 * 6


@pytest.mark.parametrize("M", [6, 40])          # Gram updates as one product, and one at a time
def test_batched_folds_give_the_bytes_of_one_transition_at_a_time(M):
    """Rows repeating within an episode, episodes cut short, a fit mid-episode: the statistics the
    agent folds in batches are, bit for bit, those of adding each transition as it comes."""
    env = make_env(5, reward_noise=0.7)
    rng = np.random.default_rng(4)
    data = random_episodes(env, 30, rng)
    data = [t._replace(old_state=(int(rng.integers(5)), t.old_state[1])) for t in data]   # rows in any order
    agent = LinearRLSVI(env, np.random.default_rng(1), LinearRLSVIParams(M=M), "gaussian")
    for i, t in enumerate(data):
        agent.update_buffer(t)
        if i == 77:
            agent.learn_from_buffer()                  # a fit while transitions are pending
    agent.learn_from_buffer()
    want = row_statistics(agent.phi, data)
    for got, expected in zip((agent.gram, agent.target_sum, agent.next_sum, agent.count), want):
        assert got.tobytes() == expected.tobytes()


def test_params_build_from_spec_values_and_reject_bad_ones():
    p = build(LinearRLSVIParams, {"M": 50, "basis": "orthonormal", "v": 0.01, "lam": "100*v"}, "agent")
    agent = LinearRLSVI(make_env(5), np.random.default_rng(0), p, "gaussian")
    assert agent.M == 50 and agent.lam == pytest.approx(1.0)
    with pytest.raises(SpecError):
        build(LinearRLSVIParams, {"basis": "orthogonal"}, "agent")
    with pytest.raises(SpecError):
        build(LinearRLSVIParams, {"psi": -1.0}, "agent")
    with pytest.raises(ValueError):
        LinearRLSVI(make_env(5), np.random.default_rng(0), LinearRLSVIParams(v=0.0), "gaussian")
