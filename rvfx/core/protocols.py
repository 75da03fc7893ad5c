"""Algorithm 1's two interfaces, and the optional hooks an agent or environment may declare.

`live` needs only `Agent` and `Environment`. An agent's factory may need more of the
environment (the layered tabular shape, an observation vector, linear features); those needs
are the small protocols below: an agent's registry entry says which it requires, and an
environment declares in `offers` which it offers (`offered` reads it), so both the run and the
spec check before it decide alike.
An environment's parameters may declare its sizes before it is built (`RunSizes`), so that a run's
cost is estimated from its parameters alone.
"""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from rvfx.core.transition import Transition


@runtime_checkable
class Agent(Protocol):
    """act / update_buffer / learn_from_buffer of Algorithm 1."""

    def act(self, observation: Any) -> Any: ...

    def update_buffer(self, transition: Transition) -> None: ...

    def learn_from_buffer(self) -> None: ...


@runtime_checkable
class Environment(Protocol):
    """reset / step of Algorithm 1, and what regret needs: `optimal_return` (V* of the start,
    None when unknown: no regret is logged) and `expected_return` (the noise-free return of the
    current episode so far)."""
    num_actions: int
    optimal_return: float | None
    expected_return: float

    def reset(self) -> Transition: ...

    def step(self, action: Any) -> Transition: ...


# -- optional hooks -------------------------------------------------------------------

@runtime_checkable
class EpisodeMetrics(Protocol):
    """An environment's extra per-episode columns for `live` (e.g. cartpole's upright steps)."""

    def episode_metrics(self) -> dict: ...


@runtime_checkable
class AgentTables(Protocol):
    """An agent's extra per-run tables, name -> DataFrame, stored in the run's shard."""

    def run_tables(self) -> dict: ...


@runtime_checkable
class EnvironmentTables(Protocol):
    """An environment's extra per-run tables about the trained `agent` (e.g. a greedy rollout)."""

    def run_tables(self, agent: Agent) -> dict: ...


@runtime_checkable
class Dithering(Protocol):
    """An agent that dithers with probability `epsilon` (0: greedy)."""
    epsilon: float


@runtime_checkable
class Layered(Protocol):
    """A time-inhomogeneous tabular MDP: `shape` = (H, S, A), states (h, s) with h the period."""
    shape: tuple


class Pixels(Layered, Protocol):
    """A layered environment that is also a picture: the state (h, s) is an H x S image with one
    lit cell (deep sea's N x N grid, Section 7.2.1), so a network may read it one-hot. It adds no
    member to `Layered`, so it is only ever declared (`offers`), never checked by isinstance."""


@runtime_checkable
class OwnNetworkInput(Protocol):
    """The environment declares the network input of its observations itself (e.g. a Gymnasium
    space scaled to [0, 1], or an index read as one-hot): an object with encode and inputs."""
    representation: object


@runtime_checkable
class VectorObservations(Protocol):
    """Observations are float vectors of `observation_size` components."""
    observation_size: int


@runtime_checkable
class LinearFeatures(Layered, Protocol):
    """A layered environment's linear features phi[h, s, a] in R^M (Section 7.1.2), drawn from `rng`."""

    def linear_features(self, M: int, rng: np.random.Generator, basis: str) -> np.ndarray: ...


@runtime_checkable
class RunSizes(Protocol):
    """An environment's parameters declare a run's sizes before it is built (the memory and CPU
    estimates read them): `run_sizes()` gives H, S, A (the layered shape, where there is one),
    `steps` per episode, `inputs` (network input width) and `keys` (distinct network inputs; 0 for
    a continuous state), and optionally `step_seconds` (the CPU seconds an environment step costs
    beyond rvfx's own environments': an external library's step and its observation's conversion),
    or None where they are known only once built; `size_key` is the grid-style key that sets them
    ("env.size"), and `run_memory()` the arrays the environment allocates, what -> bytes."""
    size_key: str

    def run_sizes(self) -> dict | None: ...

    def run_memory(self) -> dict: ...


@runtime_checkable
class ProbeStates(Protocol):
    """Named observations at which to probe a learned value function."""

    def probe_states(self) -> dict: ...


def offered(environment) -> set:
    """Everything `environment` (built, or its class) offers an agent: the `Environment`
    protocol, the classes it is, and the protocols its `offers` declares with their bases
    (`LinearFeatures` is `Layered`). An environment whose offers depend on its parameters
    declares them once built."""
    cls = environment if isinstance(environment, type) else type(environment)
    return {base for what in (cls, Environment, *getattr(environment, "offers", ())) for base in what.__mro__}


def run_tables(agent, environment) -> dict:
    """The extra per-run tables the agent and then the environment declare."""
    tables = dict(agent.run_tables()) if isinstance(agent, AgentTables) else {}
    if isinstance(environment, EnvironmentTables):
        tables.update(environment.run_tables(agent))
    return tables
