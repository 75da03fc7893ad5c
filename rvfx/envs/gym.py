"""Gymnasium -> rvfx (extra rvfx[gym]): `GymEnvironment`, the `gym` kind of a spec, any Gymnasium
environment with discrete actions and a Box or Discrete observation as an rvfx environment, for
the agents that take observations (ensemble_rlsvi, dqn), with the network input its observation
space calls for (`UnitBox`, `OneHotIndex`). The other direction is rvfx.interop.gym.
"""
from __future__ import annotations

import gymnasium
import numpy as np
from gymnasium import spaces

from rvfx.core.protocols import OwnNetworkInput, VectorObservations
from rvfx.core.transition import Transition
from rvfx.envs.external import GymParams, json_object


class UnitBox:
    """A Box observation as a network input (a `Representation`): each coordinate with finite
    bounds mapped affinely onto [0, 1], unbounded ones as they are. Inputs of very different
    ranges (MountainCar: position in [-1.2, 0.6], velocity in ±0.07) then weigh alike in the first
    layer; a [0, 1] box (rvfx/DeepSea-v0's image) and an unbounded one pass exactly unchanged."""
    index_input = False
    block_size = 0
    code_dtype = np.float32

    def __init__(self, low: np.ndarray, high: np.ndarray):
        low, high = np.asarray(low, np.float64).ravel(), np.asarray(high, np.float64).ravel()
        finite = np.isfinite(low) & np.isfinite(high) & (high > low)
        self.offset = np.where(finite, low, 0.0)
        self.scale = np.where(finite, high - low, 1.0)
        self.input_dim = low.size
        self.code_shape = (low.size,)

    def encode(self, state) -> np.ndarray:
        return ((np.asarray(state, np.float64) - self.offset) / self.scale).astype(np.float32)

    def inputs(self, codes: np.ndarray) -> np.ndarray:
        return codes


class OneHotIndex:
    """A Discrete(n) observation as a network input (a `Representation`): the one-hot vector of
    its index, read as a row gather, as rvfx's own one-hot pixels (`OneHotPixels`)."""
    index_input = True
    block_size = 0
    code_shape = ()
    code_dtype = np.int32

    def __init__(self, n: int):
        self.input_dim = n

    def encode(self, state) -> int:
        return state

    def inputs(self, codes: np.ndarray) -> np.ndarray:
        return codes


def gym_seed(rng: np.random.Generator) -> int:
    """The reset seed a GymEnvironment draws from its run's environment generator."""
    return int(rng.integers(2**32))


class GymEnvironment:
    """A Gymnasium environment (discrete actions; a Box or Discrete observation) as an rvfx one.

    States are Box observations flattened to float64 vectors, with t / cap appended when
    `time_in_observation`, or Discrete observations' ints; the agents read them through
    `representation`, chosen from the observation space: `UnitBox` or `OneHotIndex`. An episode
    ends on `terminated`, at a terminal state (new_state None), or on `truncated`, by the
    truncation rule: at a terminal state when time is in the observation
    (the end is then part of the state, a finite horizon), else Transition(truncated=True) with
    the real next state, which value estimates bootstrap from. Regret passes through info where
    the environment knows its optimum (reset: optimal_return; step: expected_return, the
    noise-free return so far; else the return); otherwise `optimal_return` is None, no regret.
    The first reset is made here, seeded by `gym_seed(rng)`, to read optimal_return; the first
    episode starts from it.
    """

    def __init__(self, params: GymParams, rng: np.random.Generator):
        kwargs = json_object(params.kwargs, "kwargs")
        if params.max_episode_steps:
            kwargs["max_episode_steps"] = params.max_episode_steps
        self.env = gymnasium.make(params.id, **kwargs)
        actions, observations = self.env.action_space, self.env.observation_space
        if not isinstance(actions, spaces.Discrete) or not isinstance(observations, (spaces.Box, spaces.Discrete)):
            raise TypeError(f"{params.id}: rvfx takes discrete actions and a Box or Discrete observation, "
                            f"not {actions} and {observations}")
        self.num_actions, self.first_action = int(actions.n), int(actions.start)
        self.time_in_observation = params.time_in_observation
        self.cap = params.max_episode_steps or (self.env.spec.max_episode_steps or 0)
        self.discrete = isinstance(observations, spaces.Discrete)
        if self.time_in_observation and (self.discrete or not self.cap):
            raise ValueError(f"{params.id}: time can be put in a Box observation with a time limit "
                             f"(max_episode_steps) only")
        if self.discrete:
            self.representation = OneHotIndex(int(observations.n))
            self.first_observation = int(observations.start)
        else:
            low, high = observations.low.ravel(), observations.high.ravel()
            if self.time_in_observation:
                low, high = np.append(low, 0.0), np.append(high, 1.0)
            self.representation = UnitBox(low, high)
            self.observation_size = self.representation.input_dim
        self.first = self.env.reset(seed=gym_seed(rng))
        self.optimal_return = self.first[1].get("optimal_return")
        self.expected_return = 0.0
        self.t = 0
        self.state = None
        self.terminated = False

    @property
    def offers(self) -> tuple:
        """Its own network input; a Box's is also an observation vector."""
        return (OwnNetworkInput,) if self.discrete else (OwnNetworkInput, VectorObservations)

    def observe(self, obs):
        if self.discrete:
            return int(obs) - self.first_observation
        obs = np.asarray(obs, np.float64).ravel()
        return np.append(obs, self.t / self.cap) if self.time_in_observation else obs

    def reset(self) -> Transition:
        obs, _ = self.first if self.first is not None else self.env.reset()
        self.first = None
        self.t, self.expected_return, self.terminated = 0, 0.0, False
        self.state = self.observe(obs)
        return Transition(None, None, 0.0, self.state, 0)

    def step(self, action: int) -> Transition:
        obs, reward, terminated, truncated, info = self.env.step(action + self.first_action)
        reward = float(reward)
        self.expected_return = float(info.get("expected_return", self.expected_return + reward))
        self.t += 1
        self.terminated = bool(terminated)
        old = self.state
        self.state = self.observe(obs)
        if terminated or (truncated and self.time_in_observation):
            return Transition(old, action, reward, None, self.t - 1)
        return Transition(old, action, reward, self.state, self.t - 1, truncated=bool(truncated))

    def episode_metrics(self) -> dict:
        """Per logged episode: `terminated` (1: ended by the environment, e.g. MountainCar's goal;
        0: by the cap) and its `steps`."""
        return {"terminated": int(self.terminated), "steps": self.t}

