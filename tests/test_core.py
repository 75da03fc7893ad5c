"""rvfx.core: the `live` loop's hooks, a rollout that learns nothing, and backward induction."""
import numpy as np

from rvfx.core.backward_induction import backward_induction
from rvfx.core.live import episode, live
from rvfx.core.protocols import Agent, Environment, run_tables
from rvfx.core.transition import Transition


class Chain:
    """Three steps from state 0, reward = action; optimal return 3."""
    num_actions = 2
    optimal_return = 3.0

    def __init__(self):
        self.expected_return = 0.0
        self.t = 0

    def reset(self):
        self.t, self.expected_return = 0, 0.0
        return Transition(None, None, 0.0, 0, 0)

    def step(self, action):
        self.t += 1
        self.expected_return += action
        return Transition(self.t - 1, action, float(action), self.t if self.t < 3 else None, self.t - 1)


class Counter:
    def __init__(self, action=1):
        self.action, self.learned, self.updates = action, 0, 0

    def act(self, observation):
        return self.action

    def update_buffer(self, transition):
        self.updates += 1

    def learn_from_buffer(self):
        self.learned += 1


def test_the_toy_agent_and_environment_satisfy_the_protocols():
    assert isinstance(Counter(), Agent) and isinstance(Chain(), Environment)
    assert run_tables(Counter(), Chain()) == {}


def test_live_calls_its_hooks_in_algorithm_1_order_and_stops_when_asked():
    calls = []
    agent = Counter(action=0)
    out = live(agent, Chain(), 10, log_every="all",
               on_episode_start=lambda ell: calls.append(("start", ell, agent.learned)),
               on_transition=lambda tr: calls.append(("tr", tr.action)),
               on_episode=lambda ell: ell == 2)
    assert out["episodes_run"] == 2 and len(out["episodes"]) == 2
    assert calls[:5] == [("start", 1, 1), ("tr", None), ("tr", 0), ("tr", 0), ("tr", 0)]
    assert out["episodes"][-1]["cum_regret"] == 6.0 and agent.updates == 6


def test_an_episode_with_learn_false_acts_but_updates_nothing():
    agent = Counter()
    assert episode(agent, Chain(), learn=False) == 3.0
    assert agent.updates == 0 and agent.learned == 0


def test_live_with_no_episodes_runs_none():
    assert live(Counter(), Chain(), 0)["episodes_run"] == 0


def test_backward_induction_matches_the_explicit_recursion():
    rng = np.random.default_rng(0)
    H, S, A = 4, 3, 2
    r, p = rng.random((H, S, A)), rng.dirichlet(np.ones(S), (H, S, A))
    q = backward_induction(lambda h, v: r[h] + p[h] @ v, H, np.zeros(S))
    v = np.zeros(S)
    for h in range(H - 1, -1, -1):
        np.testing.assert_array_equal(q[h], r[h] + p[h] @ v)
        v = q[h].max(axis=1)
