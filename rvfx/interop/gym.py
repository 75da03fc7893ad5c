"""Gymnasium in both directions (extra rvfx[gym]).

rvfx -> Gymnasium: `DeepSeaEnv` (`gymnasium.make("rvfx/DeepSea-v0", size=...)`) and
`CartpoleSwingUpEnv` (`rvfx/CartpoleSwingUp-v0`), registered on `import rvfx`; keyword arguments
are the fields of the rvfx environment's parameters (and deep sea's `observation`: image or index).
reset(seed=s) draws the instance from
np_random, i.e. from np.random.default_rng(s): the native env built with that generator is the same
instance, step for step.

Gymnasium -> rvfx: `GymEnvironment`, the `gym` kind of a spec, for the agents that take
observations (ensemble_rlsvi, dqn).
"""
from __future__ import annotations

import gymnasium
import numpy as np
from gymnasium import spaces

from rvfx.core.live import Transition
from rvfx.envs import ENVS
from rvfx.envs.cartpole.dynamics import observation_components
from rvfx.experiment.params import build
from rvfx.interop.params import GymParams, json_object


class RvfxEnv(gymnasium.Env):
    """An rvfx environment (ENVS[`kind`]) behind Gymnasium's API.

    The native episode end (new_state None) is `terminated`; a native truncation is `truncated`.
    reset's info holds `optimal_return` where the environment knows it, and step's info the
    noise-free return so far, `expected_return`: regret is their difference at the episode's end.
    """
    metadata = {"render_modes": []}
    kind: str

    def __init__(self, **params):
        self.env_cls, params_cls = ENVS[self.kind]
        self.params = build(params_cls, params, self.kind)
        self.env = None
        self.steps = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None or self.env is None:
            self.env = self.env_cls(self.params, self.np_random)
        self.steps = 0
        first = self.env.reset()
        optimum = self.env.optimal_return
        return self.observation(first.new_state), {} if optimum is None else {"optimal_return": optimum}

    def step(self, action):
        transition = self.env.step(int(action))
        self.steps += 1
        terminated = transition.new_state is None
        obs = self.terminal_observation() if terminated else self.observation(transition.new_state)
        return (obs, float(transition.reward), terminated, bool(transition.truncated),
                {"expected_return": self.env.expected_return})

    def observation(self, state):
        raise NotImplementedError

    def terminal_observation(self):
        raise NotImplementedError


class DeepSeaEnv(RvfxEnv):
    """rvfx/DeepSea-v0: deep sea (Example 1), keyword arguments of DeepSeaParams (size, treasure,
    move_cost, reward_noise, randomize_actions) and `observation`:

    - "image" (default): Box(0, 1, (N, N), float32) with a 1 at the diver's (row, column), as
      bsuite's; all zeros once the last row is left (terminal);
    - "index": Discrete(N * N), row * N + column, the native one-hot pixel input's index, so an
      agent through `GymEnvironment` reads exactly the native inputs; 0 once the last row is left
      (a placeholder: the episode has terminated).

    Actions: Discrete(2), whose meaning ("right") is drawn per cell at reset(seed). Every episode
    is `terminated` after N steps (the row is the time step, in the observation) and never
    truncated. Optimal return 0.99 (treasure) or 0 (bomb).
    """
    kind = "deep_sea"

    def __init__(self, observation: str = "image", **params):
        super().__init__(**params)
        n = self.params.size
        if observation not in ("image", "index"):
            raise ValueError(f"observation: 'image' or 'index', not {observation!r}")
        self.index = observation == "index"
        self.observation_space = spaces.Discrete(n * n) if self.index else spaces.Box(0.0, 1.0, (n, n), np.float32)
        self.action_space = spaces.Discrete(2)

    def observation(self, state):
        if self.index:
            return state[0] * self.params.size + state[1]
        obs = self.terminal_observation()
        obs[state] = 1.0
        return obs

    def terminal_observation(self):
        n = self.params.size
        return 0 if self.index else np.zeros((n, n), np.float32)


class CartpoleSwingUpEnv(RvfxEnv):
    """rvfx/CartpoleSwingUp-v0: cartpole swing-up (Section 7.2.2), keyword arguments of
    CartpoleSwingUpParams.

    Observation: Box(-inf, inf, (n,), float64), the native observation (`observation`: raw is
    (θ, θ̇, x, ẋ, t)); at the end, that of the final state. Actions: Discrete(3), forces -F, 0, +F.
    Every episode is `terminated` once t > max_time (t is in every observation kind); never
    truncated. The optimum is unknown: no optimal_return, no regret.
    """
    kind = "cartpole_swingup"

    def __init__(self, **params):
        super().__init__(**params)
        size = len(observation_components(0.0, 0.0, 0.0, 0.0, 0.0, self.params.observation))
        self.observation_space = spaces.Box(-np.inf, np.inf, (size,), np.float64)
        self.action_space = spaces.Discrete(3)

    def observation(self, state) -> np.ndarray:
        return np.asarray(state, np.float64)

    def terminal_observation(self) -> np.ndarray:
        p = self.params
        return np.array(observation_components(*self.env.state, self.steps * p.dt, p.observation))


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

