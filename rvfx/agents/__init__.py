"""Agent registry: name -> AgentEntry(factory(params, env, rng), parameter dataclass, requires, summary,
sizes, cost). Only the first two are needed: an agent class whose constructor takes (params, env,
rng) is its own factory, `AgentEntry(MyAgent, MyParams)`.

`requires` (default: any environment) is what an environment must offer for the agent (a protocol
of `rvfx.core.protocols`, an environment class, or a tuple of either, any one of which will do), or
a function of the agent's parameters giving that. It is checked against what the environment declares it offers
(`rvfx.core.protocols.offered`): by `make_agent`, and by the spec check before a run, through
`environments`. `summary` is the line `rvfx list agents` shows. The optional rest is what a run
of the agent costs, for rvfx.experiment.memory's estimates: `sizes(params, z)`, the sizes it adds
to the environment's (M), and `cost(params, z, episodes, size_key)`, its `RunCost` (rvfx.core.cost).
Without `cost` a run is charged the fixed costs per step and per episode only (`rvfx validate` says so).
"""
import difflib
from collections.abc import Callable
from typing import NamedTuple

from rvfx.agents.cartpole_reference import CartpoleReferenceParams, make_reference
from rvfx.agents.costs import linear_cost, linear_sizes, network_cost, network_sizes, tabular_cost, uncertainty_cost
from rvfx.agents.linear.rlsvi import LinearRLSVI, LinearRLSVIParams
from rvfx.agents.neural.ensemble import DQNParams, EnsembleParams, make_ensemble_agent
from rvfx.agents.tabular import exploration
from rvfx.agents.tabular.optimism import OptimismParams, OptimismProbe
from rvfx.agents.tabular.psrl import PSRL, PSRLParams
from rvfx.agents.tabular.rlsvi import RLSVIParams, TabularRLSVI
from rvfx.agents.tabular.ucrl2 import UCRL2, UCRL2Params
from rvfx.agents.tabular.uncertainty import UncertaintyParams, UncertaintyProbe
from rvfx.core.protocols import (
    Environment,
    Layered,
    LinearFeatures,
    OwnNetworkInput,
    Pixels,
    VectorObservations,
    offered,
)
from rvfx.envs import ENVS
from rvfx.envs.cartpole.dynamics import CartpoleSwingUp
from rvfx.envs.deep_sea import DeepSea
from rvfx.envs.four_state import FourStateExample
from rvfx.envs.random_mdp import RandomMDP


class AgentEntry(NamedTuple):
    factory: Callable
    params: type
    requires: type | tuple | Callable = Environment
    summary: str = ""
    sizes: Callable | None = None
    cost: Callable | None = None

    def requirement(self, params=None) -> tuple:
        """What the agent with `params` (its defaults if None) requires of an environment: any one of these."""
        needs = self.requires
        if not isinstance(needs, type | tuple):
            needs = needs(self.params() if params is None else params)
        return needs if isinstance(needs, tuple) else (needs,)

    def accepts(self, env, params=None) -> bool:
        """Whether the agent with `params` can act on `env`, built or its class: it offers one of
        what the agent requires."""
        return not offered(env).isdisjoint(self.requirement(params))


def _network_requires(params) -> tuple:
    """With representation observation, the environment's own network input, its observation
    vector or its pixels; with linear_basis, its linear features (Section 7.1.2)."""
    if params.representation == "observation":
        return (OwnNetworkInput, VectorObservations, Pixels)
    return (LinearFeatures,)


AGENTS = {
    "lsvi": AgentEntry(lambda p, env, rng: TabularRLSVI(env.shape, rng, p, "none"), RLSVIParams, Layered,
        "tabular learn_lsvi (Alg. 3): least-squares value iteration, no perturbation",
        cost=tabular_cost("rlsvi")),
    "grlsvi": AgentEntry(lambda p, env, rng: TabularRLSVI(env.shape, rng, p, "gaussian"), RLSVIParams, Layered,
        "tabular learn_grlsvi (Alg. 4 with Gaussian noise, Sec. 5.2)",
        cost=tabular_cost("rlsvi")),
    "brlsvi": AgentEntry(lambda p, env, rng: TabularRLSVI(env.shape, rng, p, "bootstrap"), RLSVIParams, Layered,
        "tabular learn_brlsvi (Alg. 4 with bootstrapped noise, Sec. 5.2)",
        cost=tabular_cost("rlsvi", 2, bootstrap=True)),
    "psrl": AgentEntry(lambda p, env, rng: PSRL(env.shape, rng, p), PSRLParams, Layered,
        "posterior sampling for RL (PSRL, Sec. 7.1.1), Dirichlet-normal posterior",
        cost=tabular_cost("psrl", 3)),
    "ucrl2": AgentEntry(lambda p, env, rng: UCRL2(env.shape, rng, p), UCRL2Params, Layered,
        "UCRL2 (Jaksch et al. 2010; Sec. 7.1.1), optimistic value iteration in confidence sets",
        cost=tabular_cost("ucrl2", 3)),
    "grlsvi_optimism": AgentEntry(lambda p, env, rng: OptimismProbe(env, rng, p), OptimismParams, RandomMDP,
        "tabular learn_grlsvi probed for Theorem 1's optimism in expectation (Sec. 6.2)"),
    "grlsvi_uncertainty": AgentEntry(lambda p, env, rng: UncertaintyProbe(env, rng, p), UncertaintyParams,
                                     FourStateExample,
        "tabular learn_grlsvi's sampled Q variance on the four-state example (Fig. 2)",
        cost=uncertainty_cost),
    "deepsea_optimal": AgentEntry(exploration.make_optimal, exploration.DeepSeaKnownParams, DeepSea,
        "Table 1's optimal agent: knows deep sea's structure and whether the chest is treasure",
        cost=tabular_cost("none")),     # no posterior draw: the fixed costs alone (fit_speeds)
    "deepsea_exploitation": AgentEntry(exploration.make_pure_exploitation, exploration.DeepSeaKnownParams, DeepSea,
        "Table 1's pure exploitation: greedy on a posterior mean that knows the structure",
        cost=tabular_cost("none")),
    "deepsea_myopic": AgentEntry(exploration.make_myopic, exploration.MyopicParams, DeepSea,
        "Table 1's myopic exploration: a one-step bonus for untried actions",
        cost=tabular_cost("none")),
    "deepsea_thompson": AgentEntry(exploration.make_thompson, exploration.DeepSeaKnownParams, DeepSea,
        "Table 1's randomized agent: Thompson sampling on a prior that knows the structure",
        cost=tabular_cost("thompson")),
    "ensemble_rlsvi": AgentEntry(make_ensemble_agent, EnsembleParams, _network_requires,
        "learn_ensemble_rlsvi (Alg. 8): K networks with fixed random priors, per-member noise",
        sizes=network_sizes, cost=network_cost),
    "dqn": AgentEntry(make_ensemble_agent, DQNParams, _network_requires,
        "DQN with epsilon-greedy exploration annealed 1 -> 0 (Fig. 16)",
        sizes=network_sizes, cost=network_cost),
    "cartpole_reference": AgentEntry(make_reference, CartpoleReferenceParams, CartpoleSwingUp,
        "a hand-built swing-up controller (energy pumping, then LQR): proof the task is solvable"),
    "linear_lsvi": AgentEntry(lambda p, env, rng: LinearRLSVI(env, rng, p, "none"), LinearRLSVIParams,
                              LinearFeatures,
        "linear learn_lsvi with per-row features (Sec. 7.1.2), no perturbation",
        sizes=linear_sizes, cost=linear_cost()),
    "linear_grlsvi": AgentEntry(lambda p, env, rng: LinearRLSVI(env, rng, p, "gaussian"), LinearRLSVIParams,
                                LinearFeatures,
        "linear learn_grlsvi (Sec. 7.1.2-7.1.4), Gaussian noise",
        sizes=linear_sizes, cost=linear_cost()),
    "linear_brlsvi": AgentEntry(lambda p, env, rng: LinearRLSVI(env, rng, p, "bootstrap"), LinearRLSVIParams,
                                LinearFeatures,
        "linear learn_brlsvi (Sec. 7.1.4, Fig. 13), bootstrapped noise",
        sizes=linear_sizes, cost=linear_cost(bootstrap=True)),
}


def nearest(name: str, known, n: int = 5) -> list[str]:
    """Up to `n` of the names `known`, nearest to `name` first (difflib's similarity ratio)."""
    ratio = {k: difflib.SequenceMatcher(None, name, k).ratio() for k in known}
    return sorted(ratio, key=lambda k: -ratio[k])[:n]


def unknown_algorithm(name: str) -> str:
    """Why `name` names no agent, in one line: the registered ones nearest to it, and how to bring one."""
    close = difflib.get_close_matches(name, list(AGENTS), n=1, cutoff=0.6)      # as the spec's other keys say it
    guess = f" (did you mean {close[0]!r}?)" if close else ""
    return (f"unknown algorithm {name!r}{guess}; registered ones, nearest first: "
            f"{', '.join(nearest(name, AGENTS))}, ... (`rvfx list agents`); an agent of your own is registered "
            f"by a module: rvfx --plugin MODULE ...")


def requirement(name: str, params=None) -> tuple:
    """What agent `name` with `params` (its defaults if None) requires of an environment: any one of these."""
    return AGENTS[name].requirement(params)


def needs(name: str, params=None) -> str:
    """`requirement` in words: "Layered", "OwnNetworkInput or VectorObservations or Pixels"."""
    return " or ".join(r.__name__ for r in requirement(name, params))


def accepts(name: str, env, params=None) -> bool:
    """Whether agent `name` with `params` can act on `env`, built or its class (`AgentEntry.accepts`)."""
    return AGENTS[name].accepts(env, params)


def known_before_built(maker) -> bool:
    """Whether a registry entry's environment declares its offers before it is built: a class with
    fixed `offers` (the gym and bsuite kinds are made by functions, their offers set by the id)."""
    return isinstance(maker, type) and not isinstance(getattr(maker, "offers", ()), property)


def environments(name: str, params) -> tuple[str, ...]:
    """The registered environments, of those that declare their offers before they are built,
    agent `name` with `params` acts on."""
    return tuple(env for env, (maker, *_) in ENVS.items() if known_before_built(maker) and accepts(name, maker, params))


def make_agent(name: str, params, env, rng):
    """Agent `name` with `params` on `env`; TypeError where it cannot act on that environment."""
    entry = AGENTS[name]
    if not entry.accepts(env, params):
        raise TypeError(f"agent {name!r} cannot act on {type(env).__name__}: it needs {needs(name, params)}")
    return entry.factory(params, env, rng)
