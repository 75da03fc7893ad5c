"""Ensemble RLSVI (Algorithm 8): TD fixed points, ensemble_buffer perturbations, DQN special case, batching."""
import math

import numpy as np
import pytest

from rvfx.agents.neural.ensemble import (
    DQNParams,
    EnsembleParams,
    EnsembleRLSVI,
    make_ensemble_agent,
    td_step,
)
from rvfx.agents.neural.ensemble_buffer import Batch, EnsembleBuffer
from rvfx.agents.neural.mlp import EnsembleMLP, Tape
from rvfx.agents.neural.prior_ensemble import PriorEnsemble
from rvfx.agents.neural.representations import DenseVector, OneHotPixels, TableFeatures, representation_for
from rvfx.core.live import live
from rvfx.core.transition import Transition
from rvfx.envs.deep_sea import DeepSea, DeepSeaParams

GAMMA = 0.9
# A 3-state chain 0 -> 1 -> 2 -> end, one action: (state, reward, next state, discount).
CHAIN = [(0, 0.5, 1, GAMMA), (1, -0.2, 2, GAMMA), (2, 1.0, 0, 0.0)]


def chain_batch(dtype=np.float64):
    s, r, s2, d = (np.array(c) for c in zip(*CHAIN))
    return s, r.astype(dtype), s2, d.astype(dtype)


@pytest.mark.parametrize("prior_scale", [0.0, 1.0])
def test_linear_td_reaches_lstd_fixed_point(prior_scale):
    """With features (s, 1) the 3 values are not representable; semi-gradient TD with a target net must land on
    the LSTD fixed point A theta = c (Tsitsiklis & Van Roy), not on the least-squares fit of the true values."""
    s, r, s2, d = chain_batch()
    def phi(states):
        return np.stack([states.astype(float), np.ones(len(states))], axis=1)

    X, Xn = phi(s), phi(s2)
    theta = np.linalg.solve(X.T @ (X - GAMMA * (d / GAMMA)[:, None] * Xn), X.T @ r)
    q_lstd = X @ theta
    true_v = np.array([0.5 + GAMMA * (-0.2 + GAMMA * 1.0), -0.2 + GAMMA * 1.0, 1.0])
    q_fit = X @ np.linalg.lstsq(X, true_v, rcond=None)[0]
    assert np.abs(q_lstd - q_fit).max() > 0.05            # the two solutions really differ

    net = EnsembleMLP(1, (), 1, dtype=np.float64)          # linear Q on the feature s plus a bias
    ens = PriorEnsemble(net, 3, np.random.default_rng(0), prior_scale=prior_scale,
                        optimizer="sgd", learning_rate=0.5)
    x, x_next = s[:, None].astype(float), s2[:, None].astype(float)
    tape = Tape()
    for step in range(4000):
        td_step(ens, tape, Batch(x, np.zeros(3, int), r, d, x_next))
        if step % 2 == 1:
            ens.sync_target()
    q = ens.value(x)[:, :, 0]                              # (K, 3): every member, prior included
    np.testing.assert_allclose(q, np.broadcast_to(q_lstd, q.shape), atol=1e-6)


def test_mlp_with_prior_reaches_tabular_bellman_fixed_point():
    """One-hot states, 2 actions, 2-layer MLP + prior, Adam: every member's Q converges to the empirical Bellman
    optimality fixed point Q(s,a) = r(s,a) + gamma max_a' Q(s',a') (terminal: no bootstrap)."""
    rewards = np.array([[0.3, -0.1], [0.0, 0.6], [1.0, -1.0]])
    s = np.repeat(np.arange(3), 2)
    a = np.tile(np.arange(2), 3)
    r = rewards[s, a]
    s2 = np.minimum(s + 1, 2)
    d = np.where(s == 2, 0.0, GAMMA)
    q_star = np.zeros((3, 2))
    q_star[2] = rewards[2]
    for h in (1, 0):
        q_star[h] = rewards[h] + GAMMA * q_star[h + 1].max()

    net = EnsembleMLP(3, (16, 16), 2, index_input=True)
    ens = PriorEnsemble(net, 4, np.random.default_rng(1), prior_scale=1.0, learning_rate=3e-3)
    tape = Tape()
    r32, d32 = r.astype(np.float32), d.astype(np.float32)
    for step in range(3000):
        td_step(ens, tape, Batch(s, a, r32, d32, s2))
        if step % 4 == 3:
            ens.sync_target()
    q = ens.value(np.arange(3))
    np.testing.assert_allclose(q, np.broadcast_to(q_star, q.shape), atol=2e-2)


def test_bootstrap_masks_are_bernoulli_half_independent_and_fixed():
    """Algorithm 7: m_t^k ~ Bernoulli(1/2) i.i.d. over members and transitions, drawn once per transition."""
    n, K = 4000, 20
    buf = EnsembleBuffer(n, K, (), np.int32, np.random.default_rng(2), mask="bootstrap")
    for i in range(n):
        buf.add(i, 0, 0.0, 0, GAMMA)
    m = buf.mask.astype(float)
    assert abs(m.mean() - 0.5) < 4 * math.sqrt(0.25 / (n * K))
    assert np.all(np.abs(m.mean(axis=0) - 0.5) < 4.5 * math.sqrt(0.25 / n))
    corr = np.corrcoef(m.T)[np.triu_indices(K, 1)]
    assert np.abs(corr).max() < 4.5 / math.sqrt(n)
    seen = {}
    for _ in range(50):
        batch = buf.sample(128)                            # code = index of the transition
        assert batch.weight.dtype == bool                   # the bits m_t^k: the weights are 2 m_t^k
        np.testing.assert_array_equal(batch.weight, buf.mask[batch.state].T)
        for b, i in enumerate(batch.state):
            w = tuple(batch.weight[:, b])
            assert seen.setdefault(int(i), w) == w        # the same transition keeps its weights


def test_gaussian_noise_is_fixed_per_transition_with_the_right_scale():
    """Algorithm 6: z_t^k ~ N(0, v) drawn once per (transition, member), added to r_t."""
    n, K, sd = 3000, 10, 0.3
    buf = EnsembleBuffer(n, K, (), np.int32, np.random.default_rng(3), mask="gaussian", noise_scale=sd)
    for i in range(n):
        buf.add(i, 0, 1.0, 0, GAMMA)
    z = buf.noise
    assert abs(z.mean()) < 4 * sd / math.sqrt(n * K)
    assert abs(z.std() / sd - 1) < 4 / math.sqrt(2 * n * K)
    batch = buf.sample(256)
    assert batch.weight is None and batch.reward.shape == (K, 256)
    np.testing.assert_allclose(batch.reward, 1.0 + z[batch.state].T, rtol=1e-6)


def test_buffer_is_a_fifo_ring():
    buf = EnsembleBuffer(5, 2, (), np.int32, np.random.default_rng(4), mask="none")
    for i in range(8):
        buf.add(i, 1, float(i), i + 1, GAMMA)
    assert buf.size == 5
    assert sorted(buf.code.tolist()) == [3, 4, 5, 6, 7]     # the three oldest were overwritten
    assert set(buf.sample(100).state.tolist()) <= {3, 4, 5, 6, 7}


def small_sea(n=4, seed=0):
    return DeepSea(DeepSeaParams(size=n), np.random.default_rng(seed))


def reference_q(params, codes, D):
    """Plain float64 2-layer MLP on dense one-hot rows: an independent implementation."""
    w1, b1, w2, b2, w3, b3 = (np.asarray(p, float) for p in params)
    X = np.eye(D)[codes]
    h1 = np.maximum(X @ w1[:, 0] + b1[0], 0)
    h2 = np.maximum(h1 @ w2[0] + b2[0], 0)
    return X, h1, h2, h2 @ w3[0] + b3[0]


def test_k1_without_prior_is_dqn():
    """K=1, prior 0, no perturbation: Q is one network's output, act is its argmax, and an SGD step is the
    DQN update on 1/(2B) sum (r + gamma max_a' Q^-(s',a') - Q(s,a))^2 (no bootstrap at the terminal)."""
    env = small_sea(5)
    D = 25
    p = EnsembleParams(K=1, prior_scale=0.0, mask="none", hidden1=8, hidden2=6, optimizer="sgd",
                       learning_rate=0.1, batch_size=32, min_replay=1, sgd_steps_per_step=0,
                       target_period=1000)
    agent = make_ensemble_agent(p, env, np.random.default_rng(5))
    live(agent, env, 6)                                     # fills the buffer, no SGD yet
    ens = agent.ensemble
    for code in range(D - 5):
        state = divmod(code, 5)
        q_ref = reference_q(ens.params, [code], D)[3][0]
        np.testing.assert_allclose(agent.q_values(state), q_ref, rtol=1e-5, atol=1e-6)
        assert agent.act(state) == int(np.argmax(q_ref))
    # perturb the target so that it differs from the online network
    for t in ens.target_params:
        t += np.float32(0.05)
    before = [np.array(q, float) for q in ens.params]
    target = [np.array(q, float) for q in ens.target_params]
    captured = []
    sample = agent.buffer.sample
    agent.buffer.sample = lambda b: captured.append(sample(b)) or captured[-1]
    agent.sgd_step()
    batch = captured[0]
    B = len(batch.action)
    X, h1, h2, q = reference_q(before, batch.state, D)
    y = batch.reward + batch.discount * reference_q(target, batch.next_state, D)[3].max(axis=1)
    delta = q[np.arange(B), batch.action] - y
    dq = np.zeros_like(q)
    dq[np.arange(B), batch.action] = delta / B
    w1, b1, w2, b2, w3, b3 = before
    g_w3, g_b3 = h2.T @ dq, dq.sum(0)
    d2 = (dq @ w3[0].T) * (h2 > 0)
    g_w2, g_b2 = h1.T @ d2, d2.sum(0)
    d1 = (d2 @ w2[0].T) * (h1 > 0)
    g_w1, g_b1 = X.T @ d1, d1.sum(0)
    expected = [w1[:, 0] - 0.1 * g_w1, b1[0] - 0.1 * g_b1, w2[0] - 0.1 * g_w2, b2[0] - 0.1 * g_b2,
                w3[0] - 0.1 * g_w3, b3[0] - 0.1 * g_b3]
    got = [ens.params[0][:, 0]] + [q[0] for q in ens.params[1:]]
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-6)
    assert np.any(batch.discount == 0)                      # terminal transitions were in the batch


def test_batched_td_step_equals_per_member_loop():
    """One K-member ensemble == K one-member ensembles stepped in a loop (same data, weights, prior, Adam)."""
    rng = np.random.default_rng(6)
    K, D, A, B = 3, 12, 2, 40
    net = EnsembleMLP(D, (10, 10), A, index_input=True)
    ens = PriorEnsemble(net, K, rng, prior_scale=1.0, learning_rate=1e-2)
    singles = []
    for k in range(K):
        e = PriorEnsemble(net, 1, rng, prior_scale=1.0, learning_rate=1e-2)
        for mine, theirs in zip(e.params + e.target_params, ens.params + ens.target_params):
            mine[...] = theirs[:, k:k + 1] if theirs.ndim == 3 and theirs.shape[0] == D else theirs[k:k + 1]
        e.prior_table = ens.prior_table[:, k:k + 1].copy()
        singles.append((e, Tape()))
    tape = Tape()
    for step in range(6):
        codes, nxt = rng.integers(0, D, B), rng.integers(0, D, B)
        x, xi = np.unique(codes, return_inverse=True)
        xn, ni = np.unique(nxt, return_inverse=True)
        a = rng.integers(0, A, B)
        r = rng.standard_normal(B).astype(np.float32)
        d = np.where(rng.random(B) < 0.2, 0.0, GAMMA).astype(np.float32)
        w = 2.0 * (rng.random((K, B)) < 0.5).astype(np.float32)
        loss = td_step(ens, tape, Batch(x, a, r, d, xn, w, index=xi, next_index=ni))
        losses = [td_step(e, t, Batch(x, a, r, d, xn, w[k:k + 1], index=xi, next_index=ni))
                  for k, (e, t) in enumerate(singles)]
        assert loss == pytest.approx(np.mean(losses), rel=1e-5)
        if step % 2 == 1:
            ens.sync_target()
            for e, _ in singles:
                e.sync_target()
    for k, (e, _) in enumerate(singles):
        np.testing.assert_allclose(ens.params[0][:, k], e.params[0][:, 0], rtol=1e-5, atol=1e-6)
        for p, q in zip(ens.params[1:], e.params[1:]):
            np.testing.assert_allclose(p[k], q[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("period", [1, 3])
def test_sgd_every_period_th_environment_step(period):
    """sgd_period=k: the sgd_steps_per_step SGD steps run on environment steps k, 2k, ... once the
    buffer holds min_replay transitions (deep sea N=4: 4 steps an episode)."""
    env = small_sea(4)
    p = EnsembleParams(K=2, hidden1=4, hidden2=0, batch_size=4, min_replay=6, sgd_steps_per_step=2,
                       sgd_period=period)
    agent = make_ensemble_agent(p, env, np.random.default_rng(0))
    live(agent, env, 10)                                    # 40 environment steps
    assert agent.env_steps == 40
    assert agent.sgd_steps == 2 * sum(1 for t in range(6, 41) if t % period == 0)


def test_members_are_sampled_uniformly_per_episode():
    env = small_sea(4)
    agent = make_ensemble_agent(EnsembleParams(K=5, hidden1=4, hidden2=0), env, np.random.default_rng(7))
    n = 3000
    counts = np.zeros(5)
    for _ in range(n):
        agent.learn_from_buffer()
        counts[agent.active] += 1
    assert np.all(np.abs(counts - n / 5) < 4.5 * math.sqrt(n * 0.2 * 0.8))


def test_epsilon_anneals_linearly_for_dqn():
    env = small_sea(4)
    agent = make_ensemble_agent(DQNParams(epsilon_anneal_episodes=10, hidden1=4, hidden2=0), env,
                                np.random.default_rng(8))
    assert agent.K == 1 and agent.ensemble.prior_params is None and agent.buffer.mask is None
    eps = []
    for _ in range(13):
        agent.learn_from_buffer()
        eps.append(agent.epsilon)
    np.testing.assert_allclose(eps, [1 - i / 10 for i in range(11)] + [0.0, 0.0])
    agent.epsilon = 1.0
    acts = np.array([agent.act((1, 1)) for _ in range(2000)])
    assert abs(acts.mean() - 0.5) < 4 * math.sqrt(0.25 / 2000)
    agent.epsilon = 0.0
    greedy = int(np.argmax(agent.q_values((1, 1))))
    assert all(agent.act((1, 1)) == greedy for _ in range(50))


def test_divergence_raises_naming_the_episode():
    env = small_sea(5)
    p = EnsembleParams(K=2, optimizer="sgd", learning_rate=1e12, batch_size=8, min_replay=1)
    agent = make_ensemble_agent(p, env, np.random.default_rng(9))
    with np.errstate(all="ignore"), pytest.raises(FloatingPointError, match="episode"):
        live(agent, env, 50)


def test_learns_small_deep_sea():
    env = small_sea(6, seed=10)
    agent = make_ensemble_agent(EnsembleParams(K=10), env, np.random.default_rng(10))
    out = live(agent, env, 400, stop_at_learning=True)
    assert out["learning_time"] is not None


class FakeVectorEnv:
    """A 2-step task with float observations, standing in for cartpole's (theta, theta_dot, x, x_dot, t)."""
    observation_size, num_actions, optimal_return = 3, 3, None

    def reset(self):
        self.t = 0
        return Transition(None, None, 0.0, np.array([0.1, -0.2, 0.0]), 0)

    def step(self, action):
        self.t += 1
        obs = None if self.t == 2 else np.array([0.3, 0.1 * action, float(self.t)])
        return Transition(np.zeros(3), action, float(action == 2), obs, self.t - 1)


def test_representations():
    env = small_sea(7)
    rep = representation_for(env)
    assert isinstance(rep, OneHotPixels) and rep.input_dim == 49 and rep.encode((2, 3)) == 17
    assert env.num_actions == 2
    dense = representation_for(FakeVectorEnv())
    assert isinstance(dense, DenseVector) and dense.input_dim == 3 and FakeVectorEnv().num_actions == 3
    table = TableFeatures(np.arange(12.0).reshape(4, 3), lambda s: s[0] * 2 + s[1])
    np.testing.assert_array_equal(table.inputs(np.array([table.encode((1, 1))])), [[9.0, 10.0, 11.0]])


def test_dense_and_table_representations_run():
    env = FakeVectorEnv()
    agent = make_ensemble_agent(EnsembleParams(K=3, batch_size=8, min_replay=2), env, np.random.default_rng(11))
    live(agent, env, 20)
    assert agent.sgd_steps > 0 and agent.buffer.code.shape[1:] == (3,)
    sea = small_sea(4)
    table = TableFeatures(np.random.default_rng(0).standard_normal((16, 5)), lambda s: s[0] * 4 + s[1])
    agent = EnsembleRLSVI(EnsembleParams(K=3, batch_size=8, min_replay=2), table, 2, np.random.default_rng(12))
    live(agent, sea, 20)
    assert agent.sgd_steps > 0 and not agent.net.index_input


def test_full_buffer_memory_at_n50_is_small():
    env = small_sea(50)
    agent = make_ensemble_agent(EnsembleParams(), env, np.random.default_rng(13))
    buf, ens = agent.buffer, agent.ensemble
    arrays = [buf.code, buf.next_code, buf.action, buf.reward, buf.discount, buf.mask]
    arrays += ens.params + ens.target_params + ens.prior_params + ens.opt.m + ens.opt.v + [ens.prior_table]
    assert buf.capacity == 100_000
    assert sum(a.nbytes for a in arrays) < 200 * 2**20


def test_sharing_passes_between_repeated_states_is_exact():
    """td_step on distinct states + index maps == td_step on the full minibatch (same update, same loss).

    float64: Adam turns float32 rounding noise on (near-)zero gradients into steps of size lr."""
    import copy
    rng = np.random.default_rng(14)
    D, K, A, B = 9, 4, 2, 60
    net = EnsembleMLP(D, (12, 12), A, index_input=True, dtype=np.float64)
    shared = PriorEnsemble(net, K, rng, prior_scale=1.0, learning_rate=1e-2)
    full = copy.deepcopy(shared)
    assert all(np.shares_memory(p, full.flat) for p in full.params[1:])   # packing survives deepcopy
    for t in shared.target_params + full.target_params:
        t *= 0.9                                              # a target that differs from the online net
    tapes = [Tape() for _ in range(2)]
    for _ in range(3):
        codes, nxt = rng.integers(0, D, B), rng.integers(0, D, B)
        a, r = rng.integers(0, A, B), rng.standard_normal(B)
        d = np.full(B, GAMMA)
        w = 2.0 * (rng.random((K, B)) < 0.5)
        x, xi = np.unique(codes, return_inverse=True)
        xn, ni = np.unique(nxt, return_inverse=True)
        l1 = td_step(shared, tapes[0], Batch(x, a, r, d, xn, w, index=xi, next_index=ni))
        l2 = td_step(full, tapes[1], Batch(codes, a, r, d, nxt, w))
        assert l1 == pytest.approx(l2, rel=1e-12)
    for p, q in zip(shared.params, full.params):
        np.testing.assert_allclose(p, q, rtol=1e-9, atol=1e-12)


def test_stored_prior_values_equal_the_prior_network(monkeypatch):
    """Inputs without a prior table: beta f(theta0; s) and of s' are stored at enqueue; they must equal a fresh
    evaluation, in the buffer and as handed to td_step after repeated states are merged."""
    import rvfx.agents.neural.ensemble as ensemble_module
    seen = []
    real_td_step = ensemble_module.td_step

    def checking_td_step(ens, tape, batch, double=False):
        seen.append(1)
        np.testing.assert_allclose(batch.prior, ens.prior(batch.state), rtol=1e-6, atol=1e-6)  # float32: one
        np.testing.assert_allclose(batch.next_prior, ens.prior(batch.next_state),         # state's product
                                   rtol=1e-6, atol=1e-6)                                  # vs a batch's
        return real_td_step(ens, tape, batch, double)

    monkeypatch.setattr(ensemble_module, "td_step", checking_td_step)
    params = EnsembleParams(K=3, batch_size=16, min_replay=2, prior_scale=2.0)
    sea = small_sea(4)
    table = TableFeatures(np.random.default_rng(0).standard_normal((16, 5)), lambda s: s[0] * 4 + s[1])
    for env, rep in ((FakeVectorEnv(), DenseVector(3)), (sea, table)):
        agent = EnsembleRLSVI(params, rep, env.num_actions, np.random.default_rng(15))
        live(agent, env, 6)
        buf, ens = agent.buffer, agent.ensemble
        n = buf.size
        np.testing.assert_allclose(buf.prior[:n], ens.prior(rep.inputs(buf.code[:n])).transpose(1, 0, 2),
                                   rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(buf.next_prior[:n],
                                   ens.prior(rep.inputs(buf.next_code[:n])).transpose(1, 0, 2), rtol=1e-6,
                                   atol=1e-6)
    assert len(seen) > 10


# ------------------------------------------------------------------ the linear-basis input (Fig. 15)

def test_linear_basis_input_is_the_basis_at_s_and_spans_q_star():
    """x(s) = [phi(s, 0); phi(s, 1)] on row h's block of R^(2NM); Q* of the treasure and of the bomb
    instance is a linear readout of x(s), one weight vector per action (so nothing of the basis is lost)."""
    from rvfx.agents.neural.representations import LinearBasisInput
    from rvfx.envs.features import coherent_basis, optimal_q
    n, M = 6, 3
    env = small_sea(n, seed=3)
    phi = coherent_basis(env, M, np.random.default_rng(0))
    rep = LinearBasisInput(phi)
    assert rep.input_dim == 2 * n * M and rep.block_size == 2 * M and rep.num_codes == n * n
    codes = np.array([rep.encode((h, s)) for h in range(n) for s in range(n)])
    x = rep.inputs(codes)
    assert np.array_equal(x.key, codes)
    X = x.dense(rep.input_dim)                                       # (N^2, 2NM)
    for (h, s), row in zip([(h, s) for h in range(n) for s in range(n)], X):
        expected = np.zeros((n, 2, M))
        expected[h] = phi[h, s]                                      # [phi(s, a=0); phi(s, a=1)] of row h
        np.testing.assert_allclose(row, expected.ravel(), rtol=1e-6)
    assert np.all((X != 0).sum(axis=1) <= 2 * M)
    for treasure in (True, False):
        q = optimal_q(env, treasure).reshape(n * n, 2)
        for a in range(2):
            w, *_ = np.linalg.lstsq(X.astype(float), q[:, a], rcond=None)
            np.testing.assert_allclose(X @ w, q[:, a], atol=1e-5)


def test_linear_basis_agent_runs_learns_and_is_chosen_by_the_spec():
    from rvfx.agents.neural.representations import LinearBasisInput
    env = small_sea(6, seed=10)
    agent = make_ensemble_agent(EnsembleParams(K=10, representation="linear_basis", M=4), env,
                                np.random.default_rng(10))
    assert isinstance(agent.rep, LinearBasisInput) and agent.net.block_size == 8
    assert agent.ensemble.prior_table.shape == (36, 10, 2) and not agent._store_prior
    out = live(agent, env, 400, stop_at_learning=True)
    assert out["learning_time"] is not None
    # the basis is drawn from the agent's generator: same seed, same features
    again = make_ensemble_agent(EnsembleParams(K=10, representation="linear_basis", M=4), env,
                                np.random.default_rng(10))
    other = make_ensemble_agent(EnsembleParams(K=10, representation="linear_basis", M=4), env,
                                np.random.default_rng(11))
    np.testing.assert_array_equal(again.rep.table, agent.rep.table)
    assert not np.allclose(again.rep.table, other.rep.table)
    with pytest.raises(TypeError, match="linear_basis"):
        make_ensemble_agent(EnsembleParams(representation="linear_basis"), FakeVectorEnv(), np.random.default_rng(0))


def test_pixels_with_action_one_always_right():
    """Fig. 15's third representation: pixel input on an instance whose action 1 is 'right' everywhere."""
    env = DeepSea(DeepSeaParams(size=5, randomize_actions=False), np.random.default_rng(0))
    agent = make_ensemble_agent(EnsembleParams(K=3), env, np.random.default_rng(0))
    assert isinstance(agent.rep, OneHotPixels)
    assert np.all(env.right_action == 1)
