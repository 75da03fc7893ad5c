"""Fig. 17's factors in the ensemble agent: per-episode acting weights, the double-Q target, diagnostics."""
import numpy as np
import pytest

from rvfx.agents.neural.diagnostics import EnsembleDiagnostics, discounted_returns, recent_indices
from rvfx.agents.neural.ensemble import EnsembleParams, make_ensemble_agent, td_step
from rvfx.agents.neural.ensemble_buffer import Batch, EnsembleBuffer
from rvfx.agents.neural.mlp import EnsembleMLP, Tape
from rvfx.agents.neural.prior_ensemble import PriorEnsemble
from rvfx.core.live import live
from rvfx.envs.cartpole.dynamics import CartpoleSwingUp, CartpoleSwingUpParams
from rvfx.envs.deep_sea import DeepSea, DeepSeaParams

GAMMA = 0.9


def greedy_on(agent, states) -> np.ndarray:
    return np.array([agent.q_values(s).argmax() for s in states])


@pytest.mark.parametrize("acting", ["episode", "live"])
def test_acting_weights_fixed_for_the_episode_or_live(acting):
    """Algorithm 8 sets the acting member once per episode: with `episode` its greedy actions at step 999
    are those of step 1 although SGD ran in between; with `live` they move with SGD."""
    env = CartpoleSwingUp(CartpoleSwingUpParams(), np.random.default_rng(0))
    params = EnsembleParams(K=2, hidden1=16, hidden2=16, batch_size=32, min_replay=32, learning_rate=1e-2,
                            acting_weights=acting)
    agent = make_ensemble_agent(params, env, np.random.default_rng(1))
    live(agent, env, 1)                                        # fill the buffer past min_replay
    states = np.random.default_rng(2).uniform(-3, 3, (300, 5))
    agent.learn_from_buffer()
    tr = env.reset()
    first = greedy_on(agent, states)
    sgd_before = agent.sgd_steps
    while tr.new_state is not None:
        tr = env.step(agent.act(tr.new_state))
        agent.update_buffer(tr)
    assert agent.sgd_steps - sgd_before > 900
    last = greedy_on(agent, states)
    if acting == "episode":
        np.testing.assert_array_equal(first, last)
    else:
        assert (first != last).mean() > 0.05


def test_double_q_target_uses_the_online_argmax_and_the_target_value():
    """One td_step's loss equals 1/(2BK) sum (r + g Q^-(s', argmax Q(s')) - Q(s, a))^2 computed by hand,
    and differs from the max target once online and target nets disagree."""
    rng = np.random.default_rng(3)
    net = EnsembleMLP(4, (8,), 3)
    ens = PriorEnsemble(net, 2, rng, prior_scale=1.0)
    for p in ens.params:                          # online and target differ
        p += 0.3 * rng.standard_normal(p.shape).astype(p.dtype)
    x, xn = rng.standard_normal((5, 4)).astype(np.float32), rng.standard_normal((5, 4)).astype(np.float32)
    a, r, d = rng.integers(0, 3, 5), rng.standard_normal(5).astype(np.float32), np.full(5, GAMMA, np.float32)
    q, q_next, q_next_online = ens.value(x), ens.value(xn, target=True), ens.value(xn)
    best = q_next_online.argmax(axis=2)
    y_double = r + GAMMA * np.take_along_axis(q_next, best[..., None], 2)[..., 0]
    y_max = r + GAMMA * q_next.max(axis=2)
    q_sa = q[:, np.arange(5), a]
    expect = {"double": 0.5 * ((q_sa - y_double) ** 2).sum() / 10, "max": 0.5 * ((q_sa - y_max) ** 2).sum() / 10}
    assert expect["double"] != pytest.approx(expect["max"], rel=1e-3)
    for kind in ("double", "max"):
        fresh = PriorEnsemble(net, 2, np.random.default_rng(3), prior_scale=1.0)
        for p, src in zip(fresh.params, ens.params):
            p[...] = src
        loss = td_step(fresh, Tape(), Batch(x, a, r, d, xn), double=kind == "double")
        assert loss == pytest.approx(expect[kind], rel=1e-5)


def test_discounted_returns_and_recent_indices_across_a_wrap_around():
    r = np.array([1.0, 0.0, 2.0, 5.0, 1.0])
    d = np.array([GAMMA, GAMMA, 0.0, GAMMA, 0.0])          # episodes (1, 0, 2) and (5, 1)
    np.testing.assert_allclose(discounted_returns(r, d), [1 + GAMMA ** 2 * 2, GAMMA * 2, 2, 5 + GAMMA, 1])
    np.testing.assert_array_equal(recent_indices(size=7, next_slot=2, capacity=7, n=4), [5, 6, 0, 1])
    np.testing.assert_array_equal(recent_indices(size=3, next_slot=3, capacity=7, n=10), [0, 1, 2])


class TableQ:
    """Stand-ins for the agent: Q(code, a) = table[code, a] for every member."""

    def __init__(self, table, K=3):
        self.table, self.K = table, K

    def value(self, codes):
        return np.broadcast_to(self.table[codes], (self.K, *self.table[codes].shape)).copy()


class FakeAgent:
    class rep:
        code_dtype = np.int64

        @staticmethod
        def encode(s):
            return s

        @staticmethod
        def inputs(codes):
            return codes

    def __init__(self, table, buffer):
        self.ensemble, self.buffer, self.sgd_steps = TableQ(table), buffer, 0


@pytest.mark.parametrize("offset", [0.0, 0.7])
def test_overestimation_is_q_minus_the_discounted_return_across_a_wrap_around(offset):
    """Three episodes pushed through a ring of 5: the diagnostic sees the last 5 transitions in order
    (the second half of episode 2 and episode 3) and reports Q - G, 0 when Q is the return."""
    episodes = [[(0, 1.0), (1, 0.0)], [(2, 0.0), (3, 3.0), (4, 1.0)], [(5, 2.0), (6, 1.0)]]
    buf = EnsembleBuffer(5, 3, (), np.int64, np.random.default_rng(0), mask="none")
    for ep in episodes:
        for i, (code, reward) in enumerate(ep):
            buf.add(code, 0, reward, code + 1, 0.0 if i == len(ep) - 1 else GAMMA)
    g = {2: 0 + GAMMA * (3 + GAMMA * 1), 3: 3 + GAMMA * 1, 4: 1.0, 5: 2 + GAMMA * 1, 6: 1.0}
    table = np.zeros((7, 2))
    for code, ret in g.items():
        table[code, 0] = ret + offset
    diag = EnsembleDiagnostics(FakeAgent(table, buf), {}, every=1, recent=10)
    diag.episode_start(1)
    rows = diag.table()
    over = rows[rows["metric"] == "overestimation"]
    assert len(over) == 3
    np.testing.assert_allclose(over["value"], offset, atol=1e-6)


def test_diagnostics_change_no_result_and_report_every_quantity():
    env_params = DeepSeaParams(size=6)
    base = dict(K=3, hidden1=8, hidden2=8, batch_size=16, min_replay=16)
    out = {}
    for every in (0, 5):
        env = DeepSea(env_params, np.random.default_rng(4))
        agent = make_ensemble_agent(EnsembleParams(**base, diagnostics_every=every), env, np.random.default_rng(5))
        out[every] = (live(agent, env, 21, log_every="all")["episodes"], agent.run_tables())
    assert out[0][0] == out[5][0]
    assert out[0][1] == {}
    table = out[5][1]["diagnostics"]
    episodes = table.groupby("metric")["episode"].unique()
    assert list(episodes["overestimation"]) == [6, 11, 16, 21]      # episode 1: an empty buffer
    assert list(episodes["flip_rate"]) == [6, 11, 16]               # 30 SGD steps apart; 21's is pending
    assert (table.groupby(["episode", "metric"]).size() == 3).all()  # one row per member
    flips = table[table["metric"] == "flip_rate"]
    assert ((flips["value"] >= 0) & (flips["value"] <= 1 / 25)).all()


class TruncatingEnv:
    """Episodes of 3 steps ended by a time limit the observation does not show (truncated, with a
    real next state) when `truncate`, else by a terminal state (new_state None)."""
    observation_size, num_actions, optimal_return = 2, 2, None

    def __init__(self, truncate: bool):
        self.truncate = truncate

    def reset(self):
        from rvfx.core.transition import Transition
        self.t = 0
        return Transition(None, None, 0.0, np.zeros(2), 0)

    def step(self, action):
        from rvfx.core.transition import Transition
        self.t += 1
        obs = np.array([float(self.t), float(action)])
        if self.t == 3:
            return Transition(np.zeros(2), action, 1.0, obs if self.truncate else None, 2, truncated=self.truncate)
        return Transition(np.zeros(2), action, 0.0, obs, self.t - 1)


@pytest.mark.parametrize("truncate", [True, False])
def test_a_truncated_episode_ends_but_its_last_transition_bootstraps(truncate):
    env = TruncatingEnv(truncate)
    agent = make_ensemble_agent(EnsembleParams(K=2, hidden1=4, hidden2=0, min_replay=100), env,
                                np.random.default_rng(0))
    rows = live(agent, env, 4, log_every="all")["episodes"]
    assert [r["return"] for r in rows] == [1.0] * 4                  # every episode ends after 3 steps
    last_steps = agent.buffer.discount[2:12:3]
    np.testing.assert_array_equal(last_steps, np.full(4, 0.99 if truncate else 0.0, np.float32))
    np.testing.assert_array_equal(agent.buffer.next_code[2][0], 3.0 if truncate else 0.0)
