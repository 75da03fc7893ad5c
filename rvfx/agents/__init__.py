"""Agent registry: name -> AgentEntry(factory(params, env, rng), parameter dataclass, requires).

`requires` is what an environment must offer for the agent (a protocol of `rvfx.core.protocols`,
an environment class, or a tuple of either): `make_agent` checks it.
"""
from collections.abc import Callable
from typing import NamedTuple

from rvfx.agents.cartpole_reference import CartpoleReferenceParams, make_reference
from rvfx.agents.linear.rlsvi import LinearRLSVI, LinearRLSVIParams
from rvfx.agents.neural.ensemble import DQNParams, EnsembleParams, make_ensemble_agent
from rvfx.agents.tabular import exploration
from rvfx.agents.tabular.optimism import OptimismParams, OptimismProbe
from rvfx.agents.tabular.psrl import PSRL, PSRLParams
from rvfx.agents.tabular.rlsvi import RLSVIParams, TabularRLSVI
from rvfx.agents.tabular.ucrl2 import UCRL2, UCRL2Params
from rvfx.agents.tabular.uncertainty import UncertaintyParams, UncertaintyProbe
from rvfx.core.protocols import Layered, LinearFeatures, OwnNetworkInput, VectorObservations
from rvfx.envs.cartpole.dynamics import CartpoleSwingUp
from rvfx.envs.deep_sea import DeepSea
from rvfx.envs.four_state import FourStateExample
from rvfx.envs.random_mdp import RandomMDP


class AgentEntry(NamedTuple):
    factory: Callable
    params: type
    requires: type | tuple


AGENTS = {
    "lsvi": AgentEntry(lambda p, env, rng: TabularRLSVI(env.shape, rng, p, "none"), RLSVIParams, Layered),
    "grlsvi": AgentEntry(lambda p, env, rng: TabularRLSVI(env.shape, rng, p, "gaussian"), RLSVIParams, Layered),
    "brlsvi": AgentEntry(lambda p, env, rng: TabularRLSVI(env.shape, rng, p, "bootstrap"), RLSVIParams, Layered),
    "psrl": AgentEntry(lambda p, env, rng: PSRL(env.shape, rng, p), PSRLParams, Layered),
    "ucrl2": AgentEntry(lambda p, env, rng: UCRL2(env.shape, rng, p), UCRL2Params, Layered),
    "grlsvi_optimism": AgentEntry(lambda p, env, rng: OptimismProbe(env, rng, p), OptimismParams, RandomMDP),
    "grlsvi_uncertainty": AgentEntry(lambda p, env, rng: UncertaintyProbe(env, rng, p), UncertaintyParams,
                                     FourStateExample),
    "deepsea_optimal": AgentEntry(exploration.make_optimal, exploration.DeepSeaKnownParams, DeepSea),
    "deepsea_exploitation": AgentEntry(exploration.make_pure_exploitation, exploration.DeepSeaKnownParams, DeepSea),
    "deepsea_myopic": AgentEntry(exploration.make_myopic, exploration.MyopicParams, DeepSea),
    "deepsea_thompson": AgentEntry(exploration.make_thompson, exploration.DeepSeaKnownParams, DeepSea),
    "ensemble_rlsvi": AgentEntry(make_ensemble_agent, EnsembleParams, (OwnNetworkInput, VectorObservations, Layered)),
    "dqn": AgentEntry(make_ensemble_agent, DQNParams, (OwnNetworkInput, VectorObservations, Layered)),
    "cartpole_reference": AgentEntry(make_reference, CartpoleReferenceParams, CartpoleSwingUp),
    "linear_lsvi": AgentEntry(lambda p, env, rng: LinearRLSVI(env, rng, p, "none"), LinearRLSVIParams,
                              LinearFeatures),
    "linear_grlsvi": AgentEntry(lambda p, env, rng: LinearRLSVI(env, rng, p, "gaussian"), LinearRLSVIParams,
                                LinearFeatures),
    "linear_brlsvi": AgentEntry(lambda p, env, rng: LinearRLSVI(env, rng, p, "bootstrap"), LinearRLSVIParams,
                                LinearFeatures),
}


def accepts(name: str, env) -> bool:
    """Whether agent `name` can act on `env` (it offers what the agent requires)."""
    return isinstance(env, AGENTS[name].requires)


def make_agent(name: str, params, env, rng):
    if not accepts(name, env):
        raise TypeError(f"agent {name!r} cannot act on {type(env).__name__}: it needs {AGENTS[name].requires}")
    return AGENTS[name].factory(params, env, rng)
