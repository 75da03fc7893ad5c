"""Tabular RLSVI's backup with deterministic transitions (rvfx.agents.tabular.base.expected_next): one
term per state-action pair on deep sea, with the dense product's bits; where a state-action pair has
led to two next states, the dense product runs."""
import hashlib

import numpy as np
import pytest

from rvfx.agents import AGENTS, make_agent
from rvfx.core.live import live
from rvfx.envs.deep_sea import DeepSea, DeepSeaParams
from rvfx.envs.random_mdp import RandomMDP, RandomMDPParams


def run(name: str, env, episodes: int, dense: bool) -> tuple:
    """(logged rows, the final Q's bytes, deterministic?) of `name` on `env`, its backup forced dense or not."""
    agent = make_agent(name, AGENTS[name].params(), env, np.random.default_rng(7))
    agent.deterministic = not dense                      # once False, it stays False
    log = live(agent, env, episodes, log_every="all")
    return str(log), hashlib.sha256(agent.q.tobytes()).hexdigest(), agent.deterministic


@pytest.mark.parametrize("name", ["lsvi", "grlsvi", "brlsvi"])
@pytest.mark.parametrize("size", [7, 13])
def test_the_support_backup_is_the_dense_products_bits_on_deep_sea(name, size):
    """Every logged episode and the final Q table byte for byte, on seas whose width is not a multiple of
    BLAS's vector width (its tail loop sums a row otherwise than its vector loop)."""
    env = lambda: DeepSea(DeepSeaParams(size=size), np.random.default_rng(3))  # noqa: E731
    sparse = run(name, env(), 300, dense=False)
    assert sparse[2]                                      # deep sea's transitions are deterministic
    assert run(name, env(), 300, dense=True)[:2] == sparse[:2]


def test_a_stochastic_mdp_keeps_the_dense_product():
    """On a random MDP a state-action pair soon leads to a second next state: the dense product runs."""
    env = RandomMDP(RandomMDPParams(horizon=4, states=3, actions=2), np.random.default_rng(0))
    agent = make_agent("grlsvi", AGENTS["grlsvi"].params(), env, np.random.default_rng(1))
    live(agent, env, 50)
    assert not agent.deterministic
