"""Every registered agent runs two episodes through `live` on every environment it accepts, and
refuses, with a TypeError naming what it needs, the environments it does not; what an environment
declares it offers is what it has, and the spec check decides from its class as the run does."""
import numpy as np
import pytest

from rvfx.agents import AGENTS, accepts, known_before_built, make_agent
from rvfx.core.live import live
from rvfx.core.protocols import (
    Agent,
    Environment,
    Layered,
    LinearFeatures,
    OwnNetworkInput,
    Pixels,
    VectorObservations,
    offered,
)
from rvfx.envs import ENVS

SMALL_ENV = {"deep_sea": {"size": 4}, "random_mdp": {}, "four_state": {}, "cartpole_swingup": {"max_time": 0.2},
             "gym": {"id": "MountainCar-v0", "max_episode_steps": 5}, "bsuite": {"id": "deep_sea/0"}}
EXTRA = {"gym": "gymnasium", "bsuite": "bsuite"}     # environment kinds of the optional extras
SMALL_NET = {"K": 2, "hidden1": 8, "hidden2": 8, "batch_size": 4, "min_replay": 4, "buffer_size": 100}
SMALL_AGENT = {"ensemble_rlsvi": SMALL_NET, "dqn": SMALL_NET,
               "linear_lsvi": {"M": 3}, "linear_grlsvi": {"M": 3}, "linear_brlsvi": {"M": 3}}
OFFERABLE = (Layered, LinearFeatures, VectorObservations, OwnNetworkInput)   # each with its members


def small_env(name):
    if name in EXTRA:
        pytest.importorskip(EXTRA[name], reason=f"the {name} environment kind needs the rvfx[{name}] extra")
    env_cls, params_cls = ENVS[name]
    return env_cls(params_cls(**SMALL_ENV[name]), np.random.default_rng(0))


@pytest.mark.parametrize("env_name", ENVS)
@pytest.mark.parametrize("agent_name", AGENTS)
def test_every_agent_runs_two_episodes_on_every_environment_it_accepts(agent_name, env_name):
    env = small_env(env_name)
    assert isinstance(env, Environment)
    params = AGENTS[agent_name].params(**SMALL_AGENT.get(agent_name, {}))
    if not accepts(agent_name, env, params):
        with pytest.raises(TypeError, match=agent_name):
            make_agent(agent_name, params, env, np.random.default_rng(1))
        return
    agent = make_agent(agent_name, params, env, np.random.default_rng(1))
    assert isinstance(agent, Agent)
    out = live(agent, env, 2, log_every="all")
    assert out["episodes_run"] == 2 and [row["episode"] for row in out["episodes"]] == [1, 2]
    assert all(np.isfinite(row["return"]) for row in out["episodes"])


@pytest.mark.parametrize("agent_name", AGENTS)
def test_every_agent_accepts_some_environment(agent_name):
    assert any(accepts(agent_name, small_env(name)) for name in ENVS)


@pytest.mark.parametrize("env_name", ENVS)
def test_an_environment_offers_what_it_has(env_name):
    """Each protocol an environment declares it offers, it has the members of, and each it has the
    members of, it declares (`Pixels` adds no member to `Layered`: it is declared, never inferred)."""
    env = small_env(env_name)
    declared = offered(env)
    for protocol in OFFERABLE:
        assert (protocol in declared) == isinstance(env, protocol), protocol
    assert Pixels not in declared or Layered in declared


@pytest.mark.parametrize("agent_name", AGENTS)
def test_the_spec_check_decides_from_the_class_as_the_run_does(agent_name):
    params = [AGENTS[agent_name].params(**SMALL_AGENT.get(agent_name, {}))]
    if agent_name in ("ensemble_rlsvi", "dqn"):
        params.append(AGENTS[agent_name].params(**SMALL_NET, representation="linear_basis"))
    for env_name, (maker, _) in ENVS.items():
        if known_before_built(maker):
            env = small_env(env_name)
            assert [accepts(agent_name, maker, p) for p in params] == [accepts(agent_name, env, p) for p in params]
