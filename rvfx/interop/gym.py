"""rvfx -> Gymnasium (extra rvfx[gym]): `DeepSeaEnv` (`gymnasium.make("rvfx/DeepSea-v0", size=...)`) and
`CartpoleSwingUpEnv` (`rvfx/CartpoleSwingUp-v0`), registered on `import rvfx`; keyword arguments
are the fields of the rvfx environment's parameters (and deep sea's `observation`: image or index).
reset(seed=s) draws the instance from
np_random, i.e. from np.random.default_rng(s): the native env built with that generator is the same
instance, step for step.

Gymnasium -> rvfx is the `gym` environment kind, rvfx.envs.gym.
"""
from __future__ import annotations

import gymnasium
import numpy as np
from gymnasium import spaces

from rvfx.envs import ENVS
from rvfx.envs.cartpole.dynamics import observation_components
from rvfx.experiment.params import build


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
    Every episode is `terminated` once t > max_time (t is in every observation kind), or early once
    |x| > terminate_x where that is set (bsuite's track); never truncated.
    The optimum is unknown: no optimal_return, no regret.
    """
    kind = "cartpole_swingup"

    def __init__(self, **params):
        super().__init__(**params)
        size = len(observation_components(0.0, 0.0, 0.0, 0.0, 0.0, self.params.observation, params=self.params))
        self.observation_space = spaces.Box(-np.inf, np.inf, (size,), np.float64)
        self.action_space = spaces.Discrete(3)

    def observation(self, state) -> np.ndarray:
        return np.asarray(state, np.float64)

    def terminal_observation(self) -> np.ndarray:
        p = self.params
        return np.array(observation_components(*self.env.state, self.steps * p.dt, p.observation, params=p))
