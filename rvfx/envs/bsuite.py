"""bsuite -> rvfx (extra rvfx[bsuite]): `BsuiteEnvironment`, the `bsuite` kind of a spec, a bsuite
environment through dm_env as an rvfx environment.

It runs inside bsuite's own `Logging` wrapper, so the rows bsuite would log (its logarithmic
schedule, its columns) are made by bsuite's code; each logged rvfx episode carries the latest of
them (`bsuite_*` columns), from which rvfx.analysis.bsuite rebuilds the run's bsuite log and
computes bsuite's deep_sea score.
"""
from __future__ import annotations

import inspect
import math

import dm_env
import numpy as np
from bsuite.bsuite import EXPERIMENT_NAME_TO_ENVIRONMENT
from bsuite.utils.wrappers import Logging

from rvfx.core.protocols import Pixels, VectorObservations
from rvfx.core.transition import Transition
from rvfx.envs.external import BsuiteParams, settings

PREFIX = "bsuite_"                               # rvfx episode columns holding bsuite's log row
ROWS = "bsuite_rows"                             # how many rows bsuite has logged so far


class _Rows:
    """A bsuite logger that keeps the rows in memory."""

    def __init__(self):
        self.rows: list[dict] = []

    def write(self, data) -> None:
        self.rows.append(dict(data))


class BsuiteEnvironment:
    """A bsuite environment as an rvfx environment (the `bsuite` kind of a spec).

    dm_env semantics: a LAST step with discount 0 is a terminal state (new_state None); with a
    discount > 0 it is a truncation, Transition(truncated=True) with the real next observation.
    Seeds the constructor takes (`seed`, `mapping_seed`) and the bsuite_id does not fix are drawn
    from the run's environment generator. deep_sea: states are (row, column), decoded from the
    one-hot image, with the layered shape (N, N, 2) of the tabular agents and one-hot pixel inputs
    (`OneHotPixels`), i.e. exactly rvfx DeepSea's inputs; regret when deterministic (optimum
    1 - unscaled_move_cost). Other experiments: flat float observations, no regret.
    """

    def __init__(self, params: BsuiteParams, rng: np.random.Generator):
        name, kwargs = settings(params.id, params.kwargs)
        make = EXPERIMENT_NAME_TO_ENVIRONMENT[name]
        accepted = inspect.signature(make).parameters
        for seed in ("mapping_seed", "seed"):
            if seed in accepted and seed not in kwargs:
                kwargs[seed] = int(rng.integers(2**31))
        self.name, self.kwargs = name, kwargs
        self.raw = make(**kwargs)
        self.logger = _Rows()
        self.env = Logging(self.raw, self.logger)
        self.num_actions = int(self.env.action_spec().num_values)
        self.deep_sea = name == "deep_sea"
        self.optimal_return = None
        if self.deep_sea:
            n = self.size = int(kwargs["size"])
            self.shape = (n, n, 2)
            if kwargs.get("deterministic", True):       # bsuite's optimum: 1 - unscaled_move_cost
                self.optimal_return = 1.0 - float(kwargs.get("unscaled_move_cost",
                                                             accepted["unscaled_move_cost"].default))
        else:
            self.observation_size = int(np.prod(self.env.observation_spec().shape))
        self.expected_return = 0.0
        self.state = None
        self.t = 0

    @property
    def offers(self) -> tuple:
        """Deep sea's layered states and pixels; other experiments' observation vectors."""
        return (Pixels,) if self.deep_sea else (VectorObservations,)

    def observe(self, obs):
        if self.deep_sea:
            return divmod(int(np.flatnonzero(obs)[0]), self.size)
        return np.asarray(obs, np.float64).ravel()

    def reset(self) -> Transition:
        timestep = self.env.reset()
        self.expected_return, self.t = 0.0, 0
        self.state = self.observe(timestep.observation)
        return Transition(None, None, 0.0, self.state, 0)

    def step(self, action: int) -> Transition:
        timestep = self.env.step(action)
        reward = float(timestep.reward)
        self.expected_return += reward
        self.t += 1
        old = self.state
        if timestep.step_type == dm_env.StepType.LAST and timestep.discount == 0:
            self.state = None
            return Transition(old, action, reward, None, self.t - 1)
        self.state = self.observe(timestep.observation)
        return Transition(old, action, reward, self.state, self.t - 1, truncated=timestep.last())

    def probe_states(self) -> dict[str, np.ndarray]:
        """Named observations of bsuite's cartpole experiments to probe a value function at (as
        rvfx's cartpole offers): "hanging" (θ = π at rest), "upright_still", "upright_spinning"
        (θ̇ = 5), and a grid θ ∈ {0, π/2, π, 3π/2} x θ̇ ∈ {-2, 0, 2} x x ∈ {-2, 0, 2} at ẋ = 0, t = 0,
        read through bsuite's own observation. Deterministic; the environment's state is restored.
        Other experiments: none."""
        state = getattr(self.raw, "_state", None)
        if not (hasattr(state, "theta") and hasattr(state, "_replace")):
            return {}
        at = {"hanging": (math.pi, 0.0, 0.0), "upright_still": (0.0, 0.0, 0.0), "upright_spinning": (0.0, 5.0, 0.0)}
        at.update({f"grid_theta{theta:.2f}_thetadot{dtheta:g}_x{x:g}": (theta, dtheta, x)
                   for theta in (0.0, math.pi / 2, math.pi, 3 * math.pi / 2)
                   for dtheta in (-2.0, 0.0, 2.0) for x in (-2.0, 0.0, 2.0)})
        probes = {}
        try:
            for name, (theta, theta_dot, x) in at.items():
                self.raw._state = state._replace(x=x, x_dot=0.0, theta=theta, theta_dot=theta_dot, time_elapsed=0.0)
                probes[name] = self.observe(self.raw.observation)
        finally:
            self.raw._state = state
        return probes

    def episode_metrics(self) -> dict:
        """bsuite's latest log row, its columns prefixed `bsuite_`, and how many rows it has logged."""
        rows = self.logger.rows          # bsuite logs every episode up to 10, so never empty here
        return {ROWS: len(rows), **{PREFIX + k: v for k, v in rows[-1].items()}}
