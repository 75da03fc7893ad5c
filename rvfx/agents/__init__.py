"""Agent registry: name -> AgentEntry(factory(params, env, rng), parameter dataclass, requires, summary,
sizes, cost, environments).

`requires` is what an environment must offer for the agent (a protocol of `rvfx.core.protocols`,
an environment class, or a tuple of either): `make_agent` checks it. `summary` is the line
`rvfx list agents` shows. The optional rest is what a run of the agent costs, for
rvfx.experiment.memory's estimates: `sizes(params, z)`, the sizes it adds to the environment's
(M), `cost(params, z, episodes, size_key)`, its `RunCost` (rvfx.core.cost), and `environments(params)`,
the paper's environments it runs on.
"""
from collections.abc import Callable
from typing import NamedTuple

from rvfx.agents.cartpole_reference import CartpoleReferenceParams, make_reference
from rvfx.agents.linear.rlsvi import LinearRLSVI, LinearRLSVIParams, linear_cost, linear_sizes
from rvfx.agents.neural.ensemble import DQNParams, EnsembleParams, make_ensemble_agent, network_cost, network_sizes
from rvfx.agents.tabular import exploration
from rvfx.agents.tabular.base import tabular_cost
from rvfx.agents.tabular.optimism import OptimismParams, OptimismProbe
from rvfx.agents.tabular.psrl import PSRL, PSRLParams
from rvfx.agents.tabular.rlsvi import RLSVIParams, TabularRLSVI
from rvfx.agents.tabular.ucrl2 import UCRL2, UCRL2Params
from rvfx.agents.tabular.uncertainty import UncertaintyParams, UncertaintyProbe, uncertainty_cost
from rvfx.core.protocols import Layered, LinearFeatures, OwnNetworkInput, VectorObservations
from rvfx.envs.cartpole.dynamics import CartpoleSwingUp
from rvfx.envs.deep_sea import DeepSea
from rvfx.envs.four_state import FourStateExample
from rvfx.envs.random_mdp import RandomMDP


class AgentEntry(NamedTuple):
    factory: Callable
    params: type
    requires: type | tuple
    summary: str = ""
    sizes: Callable | None = None
    cost: Callable | None = None
    environments: Callable | None = None


def _on(*envs: str) -> Callable:
    """`environments` of an agent that runs on `envs` whatever its parameters."""
    return lambda params: envs


def _network_environments(params) -> tuple:
    """The observation input runs on deep sea and the cartpole; the linear basis only on deep sea."""
    return ("deep_sea", "cartpole_swingup") if params.representation == "observation" else ("deep_sea",)


TABULAR_ENVIRONMENTS = _on("deep_sea", "random_mdp", "four_state")


AGENTS = {
    "lsvi": AgentEntry(lambda p, env, rng: TabularRLSVI(env.shape, rng, p, "none"), RLSVIParams, Layered,
        "tabular learn_lsvi (Alg. 3): least-squares value iteration, no perturbation",
        cost=tabular_cost(), environments=TABULAR_ENVIRONMENTS),
    "grlsvi": AgentEntry(lambda p, env, rng: TabularRLSVI(env.shape, rng, p, "gaussian"), RLSVIParams, Layered,
        "tabular learn_grlsvi (Alg. 4 with Gaussian noise, Sec. 5.2)",
        cost=tabular_cost(), environments=TABULAR_ENVIRONMENTS),
    "brlsvi": AgentEntry(lambda p, env, rng: TabularRLSVI(env.shape, rng, p, "bootstrap"), RLSVIParams, Layered,
        "tabular learn_brlsvi (Alg. 4 with bootstrapped noise, Sec. 5.2)",
        cost=tabular_cost(2, bootstrap=True), environments=TABULAR_ENVIRONMENTS),
    "psrl": AgentEntry(lambda p, env, rng: PSRL(env.shape, rng, p), PSRLParams, Layered,
        "posterior sampling for RL (PSRL, Sec. 7.1.1), Dirichlet-normal posterior",
        cost=tabular_cost(3), environments=TABULAR_ENVIRONMENTS),
    "ucrl2": AgentEntry(lambda p, env, rng: UCRL2(env.shape, rng, p), UCRL2Params, Layered,
        "UCRL2 (Jaksch et al. 2010; Sec. 7.1.1), optimistic value iteration in confidence sets",
        cost=tabular_cost(3), environments=TABULAR_ENVIRONMENTS),
    "grlsvi_optimism": AgentEntry(lambda p, env, rng: OptimismProbe(env, rng, p), OptimismParams, RandomMDP,
        "tabular learn_grlsvi probed for Theorem 1's optimism in expectation (Sec. 6.2)"),
    "grlsvi_uncertainty": AgentEntry(lambda p, env, rng: UncertaintyProbe(env, rng, p), UncertaintyParams,
                                     FourStateExample,
        "tabular learn_grlsvi's sampled Q variance on the four-state example (Fig. 2)",
        cost=uncertainty_cost, environments=_on("four_state")),
    "deepsea_optimal": AgentEntry(exploration.make_optimal, exploration.DeepSeaKnownParams, DeepSea,
        "Table 1's optimal agent: knows deep sea's structure and whether the chest is treasure",
        cost=tabular_cost(), environments=_on("deep_sea")),
    "deepsea_exploitation": AgentEntry(exploration.make_pure_exploitation, exploration.DeepSeaKnownParams, DeepSea,
        "Table 1's pure exploitation: greedy on a posterior mean that knows the structure",
        cost=tabular_cost(), environments=_on("deep_sea")),
    "deepsea_myopic": AgentEntry(exploration.make_myopic, exploration.MyopicParams, DeepSea,
        "Table 1's myopic exploration: a one-step bonus for untried actions",
        cost=tabular_cost(), environments=_on("deep_sea")),
    "deepsea_thompson": AgentEntry(exploration.make_thompson, exploration.DeepSeaKnownParams, DeepSea,
        "Table 1's randomized agent: Thompson sampling on a prior that knows the structure",
        cost=tabular_cost(), environments=_on("deep_sea")),
    "ensemble_rlsvi": AgentEntry(make_ensemble_agent, EnsembleParams, (OwnNetworkInput, VectorObservations, Layered),
        "learn_ensemble_rlsvi (Alg. 8): K networks with fixed random priors, per-member noise",
        sizes=network_sizes, cost=network_cost, environments=_network_environments),
    "dqn": AgentEntry(make_ensemble_agent, DQNParams, (OwnNetworkInput, VectorObservations, Layered),
        "DQN with epsilon-greedy exploration annealed 1 -> 0 (Fig. 16)",
        sizes=network_sizes, cost=network_cost, environments=_network_environments),
    "cartpole_reference": AgentEntry(make_reference, CartpoleReferenceParams, CartpoleSwingUp,
        "a hand-built swing-up controller (energy pumping, then LQR): proof the task is solvable",
        environments=_on("cartpole_swingup")),
    "linear_lsvi": AgentEntry(lambda p, env, rng: LinearRLSVI(env, rng, p, "none"), LinearRLSVIParams,
                              LinearFeatures,
        "linear learn_lsvi with per-row features (Sec. 7.1.2), no perturbation",
        sizes=linear_sizes, cost=linear_cost(), environments=_on("deep_sea")),
    "linear_grlsvi": AgentEntry(lambda p, env, rng: LinearRLSVI(env, rng, p, "gaussian"), LinearRLSVIParams,
                                LinearFeatures,
        "linear learn_grlsvi (Sec. 7.1.2-7.1.4), Gaussian noise",
        sizes=linear_sizes, cost=linear_cost(), environments=_on("deep_sea")),
    "linear_brlsvi": AgentEntry(lambda p, env, rng: LinearRLSVI(env, rng, p, "bootstrap"), LinearRLSVIParams,
                                LinearFeatures,
        "linear learn_brlsvi (Sec. 7.1.4, Fig. 13), bootstrapped noise",
        sizes=linear_sizes, cost=linear_cost(bootstrap=True), environments=_on("deep_sea")),
}


def accepts(name: str, env) -> bool:
    """Whether agent `name` can act on `env` (it offers what the agent requires)."""
    return isinstance(env, AGENTS[name].requires)


def make_agent(name: str, params, env, rng):
    if not accepts(name, env):
        raise TypeError(f"agent {name!r} cannot act on {type(env).__name__}: it needs {AGENTS[name].requires}")
    return AGENTS[name].factory(params, env, rng)
