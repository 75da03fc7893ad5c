"""Per-member buffers (Algorithm 7 literally): each transition in each member's buffer with probability 1/2,
independently; each member's minibatch drawn uniformly from its own buffer only; the TD step on it."""
import math

import numpy as np
import pytest
from cli_helpers import invoke
from scipy import stats

from rvfx.agents.neural.ensemble import EnsembleParams, make_ensemble_agent, member_td_step, td_step
from rvfx.agents.neural.ensemble_buffer import Batch, MemberBuffers
from rvfx.agents.neural.mlp import EnsembleMLP, Tape
from rvfx.agents.neural.prior_ensemble import PriorEnsemble
from rvfx.core.live import live
from rvfx.envs.cartpole.dynamics import CartpoleSwingUp, CartpoleSwingUpParams
from rvfx.envs.deep_sea import DeepSea, DeepSeaParams

Z = 4.5          # a z-bound: each check below fails by chance with probability < 1e-5 (two-sided normal)


def filled(capacity: int, K: int, n: int, seed: int) -> MemberBuffers:
    """A buffer of `capacity` after n transitions t = 0..n-1 (code t, action t % 3, reward t)."""
    buf = MemberBuffers(capacity, K, (1,), np.float32, np.random.default_rng(seed))
    for t in range(n):
        buf.add([t], t % 3, float(t), [t + 1], 0.9)
    return buf


def within(count: int, n: int, p: float) -> bool:
    """count ~ Binomial(n, p) within Z standard deviations of n p."""
    return abs(count - n * p) <= Z * math.sqrt(n * p * (1 - p))


def test_each_transition_is_in_each_members_buffer_with_probability_half_independently():
    n, K = 20_000, 6
    buf = filled(n, K, n, seed=0)
    held = np.zeros((n, K), bool)
    for k in range(K):
        held[buf.holds(k), k] = True
    assert buf.held.tolist() == held.sum(axis=0).tolist()
    for k in range(K):
        assert within(int(held[:, k].sum()), n, 0.5)
        assert within(int((held[1:, k] & held[:-1, k]).sum()), n - 1, 0.25)   # transitions independent
        for j in range(k):                                                    # members pairwise independent
            assert within(int((held[:, j] & held[:, k]).sum()), n, 0.25)
    assert within(int(held.all(axis=1).sum()), n, 0.5 ** K)


def test_what_a_member_holds_follows_the_fifo_window():
    """Past the capacity the oldest transition leaves every member's buffer: the counts stay those of the window."""
    buf = filled(50, 4, 137, seed=1)
    codes = buf.code[:, 0]
    assert sorted(codes.tolist()) == list(range(87, 137))
    for k in range(4):
        assert buf.held[k] == buf.holds(k).size == buf.mask[:, k].sum()


def test_a_members_minibatch_is_drawn_uniformly_from_its_own_buffer_only():
    K, B, draws = 5, 64, 400
    buf = filled(40, K, 61, seed=2)                      # wrapped around: positions no longer in time order
    counts = np.zeros((K, 40), np.int64)
    for _ in range(draws):
        batch = buf.sample_members(B)
        assert batch.weight is None and batch.state.shape == (K, B, 1)
        for k in range(K):
            own = set(buf.code[buf.holds(k), 0].tolist())
            assert set(batch.state[k, :, 0].tolist()) <= own            # only its own transitions
        np.testing.assert_array_equal(batch.reward, batch.state[:, :, 0])   # the rows stay whole
        np.testing.assert_array_equal(batch.action, batch.state[:, :, 0].astype(int) % 3)
        np.testing.assert_array_equal(batch.next_state, batch.state + 1)
    for _ in range(draws):
        idx, ready = buf.draw_members(B)
        assert ready.all()
        for k in range(K):
            counts[k] += np.bincount(idx[k], minlength=40)
    for k in range(K):
        own = buf.holds(k)
        assert counts[k].sum() == counts[k, own].sum() == draws * B
        expected = draws * B / own.size                 # uniform over its buffer: a chi-square goodness of fit
        chi2 = float(((counts[k, own] - expected) ** 2 / expected).sum())
        assert chi2 <= stats.chi2.ppf(1 - 1e-6, own.size - 1)


def test_a_member_whose_buffer_is_empty_takes_no_gradient():
    """One transition, 8 members: those whose bit dropped it have no data; their rows are weighted 0 and an SGD
    step leaves their weights where they were while the others move."""
    buf = filled(10, 8, 1, seed=3)
    kept = buf.mask[0].copy()
    assert 0 < kept.sum() < 8
    batch = buf.sample_members(4)
    np.testing.assert_array_equal(batch.weight, np.repeat(kept[:, None], 4, axis=1))
    net = EnsembleMLP(1, (5,), 3)
    ens = PriorEnsemble(net, 8, np.random.default_rng(4), optimizer="sgd", learning_rate=0.1)
    before = [p.copy() for p in ens.params]
    member_td_step(ens, Tape(), batch._replace(state=batch.state.astype(np.float32),
                                               next_state=batch.next_state.astype(np.float32)))
    moved = np.array([any(not np.array_equal(p[:, k] if i == 0 else p[k], q[:, k] if i == 0 else q[k])
                          for i, (p, q) in enumerate(zip(ens.params, before))) for k in range(8)])
    np.testing.assert_array_equal(moved, kept)


@pytest.mark.parametrize("hidden", [(6, 5), ()], ids=["50-50-like", "linear"])
def test_member_td_step_is_td_step_on_the_members_own_rows(hidden):
    """Two members, each with its own minibatch of B: the same SGD step as `td_step` on the 2B rows of both,
    member k weighted 2 on its own rows and 0 on the other's (td_step's scale 1/(2B) times 2 is 1/B), prior and
    target included: the per-member first layer and its gradient against the shared ones."""
    rng = np.random.default_rng(5)
    K, B, D, A = 2, 16, 3, 3
    x, x_next = rng.normal(size=(K, B, D)).astype(np.float32), rng.normal(size=(K, B, D)).astype(np.float32)
    action = rng.integers(0, A, (K, B))
    reward = rng.normal(size=(K, B)).astype(np.float32)
    discount = np.where(rng.random((K, B)) < 0.2, 0.0, 0.99).astype(np.float32)
    ens = [PriorEnsemble(EnsembleMLP(D, hidden, A), K, np.random.default_rng(6), prior_scale=1.0,
                         optimizer="sgd", learning_rate=0.05) for _ in range(2)]
    for e in ens:                                   # a target apart from the online weights
        e.flat += np.float32(0.01)
    own = np.repeat(np.eye(K, dtype=bool), B, axis=1)                 # (K, 2B): member k's rows
    for _ in range(3):
        member_td_step(ens[0], Tape(), Batch(x, action, reward, discount, x_next))
        td_step(ens[1], Tape(), Batch(x.reshape(K * B, D), action.reshape(-1), reward.reshape(-1),
                                      discount.reshape(-1), x_next.reshape(K * B, D), weight=own))
    for a, b in zip(ens[0].params, ens[1].params):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert not np.allclose(ens[0].flat, ens[0].target_flat)              # the steps did move the weights


def test_target_period_one_bootstraps_from_the_weights_each_step_starts_from():
    """target_period 1 is exactly no target network: before every SGD step the target equals the online weights."""
    env = CartpoleSwingUp(CartpoleSwingUpParams(max_time=1.0), np.random.default_rng(7))
    agent = make_ensemble_agent(EnsembleParams(K=3, hidden1=8, hidden2=8, batch_size=16, min_replay=16,
                                               target_period=1, optimizer="sgd", member_buffers=True),
                                env, np.random.default_rng(8))
    step, equal = agent._member_td_step, []

    def checked():
        equal.append(np.array_equal(agent.ensemble.flat, agent.ensemble.target_flat))
        return step()
    agent._member_td_step = checked
    live(agent, env, 2, log_every="all")
    assert len(equal) > 100 and all(equal)


def test_member_buffers_run_on_cartpole_and_refuse_what_they_cannot_do():
    env = CartpoleSwingUp(CartpoleSwingUpParams(max_time=1.0), np.random.default_rng(9))
    agent = make_ensemble_agent(EnsembleParams(K=4, hidden1=8, hidden2=8, batch_size=16, min_replay=16,
                                               member_buffers=True), env, np.random.default_rng(10))
    live(agent, env, 2, log_every="all")
    assert isinstance(agent.buffer, MemberBuffers) and agent.sgd_steps > 100
    with pytest.raises(ValueError, match="mask bootstrap"):
        EnsembleParams(member_buffers=True, mask="none")
    with pytest.raises(ValueError, match="dense inputs"):
        make_ensemble_agent(EnsembleParams(K=2, member_buffers=True), DeepSea(DeepSeaParams(size=4),
                            np.random.default_rng(0)), np.random.default_rng(0))


def test_the_option_off_changes_no_run_id_and_no_byte(tmp_path):
    """A spec that says member_buffers: false names the same run and writes the same tables as one that does not
    say it (the default is the shared minibatch of every spec written before the option existed)."""
    spec = ("experiment: mb_off\nenv: {name: cartpole_swingup, max_time: 0.5}\nlog: all\nseeds: 1\nepisodes: 3\n"
            "agents:\n  rlsvi: {algorithm: ensemble_rlsvi, K: 3, hidden1: 8, hidden2: 8, batch_size: 16, "
            "min_replay: 16%s}\nscales: {ci: {}, paper: {}}\n")
    tables = []
    for extra in ("", ", member_buffers: false"):
        path = tmp_path / f"spec{len(tables)}.yaml"
        path.write_text(spec % extra)
        out = tmp_path / f"out{len(tables)}"
        result = invoke("run", path, "--out", out)
        assert result.exit_code == 0, result.output
        shards = sorted(p.name for p in (out / "mb_off" / "shards").iterdir())          # named by the run ids
        tables.append((shards, [(out / "mb_off" / name).read_bytes() for name in ("episodes.csv", "runs.csv")]))
    assert tables[0][0] and tables[0] == tables[1]
