"""Cartpole swing-up (Section 7.2.2): a continuous-state task where only deep exploration finds reward.

The environments: `CartpoleSwingUp`, one cart on Python floats (for speed), and
`CartpoleSwingUpBatch`, B carts at once on NumPy arrays; both step eq. 7.2 by the one
`euler_step` of rvfx.envs.cartpole.physics, which holds the parameters and rules.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from rvfx.core.protocols import VectorObservations
from rvfx.core.transition import Transition
from rvfx.envs.cartpole.control import reference_episode
from rvfx.envs.cartpole.physics import (
    OBSERVATION_SIZES,
    CartpoleSwingUpParams,
    euler_step,
    last_time_index,
    observation_components,
    physics_constants,
    upright,
    wrap_angle,
)
from rvfx.envs.cartpole.rollouts import greedy_rollout


class CartpoleSwingUp:
    """Cartpole swing-up (Sec. 7.2.2): reward only with the pole upright and the cart centred and slow.

    Single cartpole; observation (θ, θ̇, x, ẋ, t) as a float64 array (by default), θ = 0 upright.

    Each step applies force F ∈ {-10, 0, 10} (action 0, 1, 2), integrates eq. 7.2 for Δt,
    then pays |F|/1000 and gains +1 if the new state is upright and steady. The rails
    are perfectly inelastic: at x = ±5 the cart is held there and its outward velocity
    zeroed (the rail can push, not pull; the pole keeps its θ̇). The episode has
    `horizon` = last_time_index + 1 steps: the step reaching t > max_time returns
    new_state None. No reward noise, so `expected_return` is the episode's return.
    `params.observation` picks what the observations hold (`observation_components`);
    `state` is always (θ, θ̇, x, ẋ). With `terminate_x` (bsuite's track) there are no rails and
    the step that leaves |x| <= terminate_x also returns new_state None, ending the episode early.
    bsuite's cartpole_swingup/n is `CartpoleSwingUpParams(**bsuite_settings(n))`.
    """

    offers = (VectorObservations,)
    num_actions = 3

    def __init__(self, params: CartpoleSwingUpParams, rng: np.random.Generator):
        self.params = p = params
        self.rng = rng
        self.observation_size = OBSERVATION_SIZES[p.observation]
        self._kind = p.observation
        self.optimal_return = None
        self.expected_return = 0.0
        self.upright_steps = 0
        self._c = physics_constants(p)
        self._forces = (-p.force, 0.0, p.force)
        self._costs = tuple(p.action_cost * abs(f) for f in self._forces)
        self._last_k = last_time_index(p)
        self.horizon = self._last_k + 1
        self._state = (p.start_angle, 0.0, 0.0, 0.0)
        self._k = 0
        self._obs = None
        self._terminate_x = p.terminate_x

    @property
    def state(self) -> tuple[float, float, float, float]:
        """(θ, θ̇, x, ẋ) now."""
        return self._state

    def set_state(self, theta: float, theta_dot: float, x: float, x_dot: float, k: int | None = None) -> np.ndarray:
        """Put the cart in a given state (tests, probes); returns the observation."""
        self._state = (float(theta), float(theta_dot), float(x), float(x_dot))
        if k is not None:
            self._k = int(k)
        self._obs = np.array(observation_components(*self._state, self._k * self.params.dt, self._kind,
                                                    params=self.params))
        return self._obs

    def reset(self) -> Transition:
        p = self.params
        w = self.rng.uniform(-p.init_noise, p.init_noise, size=4)
        self._k = 0
        self.expected_return = 0.0
        self.upright_steps = 0
        theta = p.start_angle + w[0]
        self.set_state(wrap_angle(theta, p), w[1], w[2], w[3])
        return Transition(None, None, 0.0, self._obs, 0)

    def step(self, action: int) -> Transition:
        p = self.params
        theta, theta_dot, x, x_dot = self._state
        theta, theta_dot, x, x_dot = euler_step(theta, theta_dot, x, x_dot, self._forces[action],
                                                math.sin(theta), math.cos(theta), self._c)
        rail = p.rail
        if self._terminate_x:         # bsuite's track: no rails; the episode ends beyond ±terminate_x
            pass
        elif x >= rail:
            x = rail
            if x_dot > 0.0:
                x_dot = 0.0
        elif x <= -rail:
            x = -rail
            if x_dot < 0.0:
                x_dot = 0.0
        theta = wrap_angle(theta, p)
        reward = -self._costs[action]
        if upright(math.cos(theta), theta_dot, x, x_dot, p):
            reward += 1.0
            self.upright_steps += 1
        self.expected_return += reward
        k = self._k
        self._k = k + 1
        self._state = (theta, theta_dot, x, x_dot)
        old = self._obs
        ended = k + 1 > self._last_k or (self._terminate_x and abs(x) > self._terminate_x)
        self._obs = None if ended else np.array(
            observation_components(theta, theta_dot, x, x_dot, (k + 1) * p.dt, self._kind, params=p))
        return Transition(old, action, reward, self._obs, k)

    def episode_metrics(self) -> dict:
        """Extra per-episode columns for `live`: the number of +1 (upright) steps."""
        return {"upright_steps": self.upright_steps}

    def run_tables(self, agent) -> dict:
        """The run's extra table: one greedy episode of the trained agent (trajectory.csv), from
        which `rvfx plot` draws the swing-up."""
        return {"trajectory": greedy_rollout(agent, self)}

    def probe_states(self) -> dict[str, np.ndarray]:
        """Named observations (this env's `observation` format) to probe a learned Q at: "hanging"
        (θ = π at rest), "upright_still" (θ = 0 at rest), "upright_spinning" (θ = 0, θ̇ = 5), all at
        t = 0, and "reference_000", "reference_050", ...: every 50th state, with its time, of the
        reference controller's swing-up from the noiseless hanging start. Deterministic: it neither
        draws from nor moves this env (its own env, init_noise 0, a fresh rng)."""
        p = self.params

        def obs(theta, theta_dot, x, x_dot, t=0.0):
            return np.array(observation_components(theta, theta_dot, x, x_dot, t, self._kind, params=p))

        probes = {"hanging": obs(math.pi, 0.0, 0.0, 0.0), "upright_still": obs(0.0, 0.0, 0.0, 0.0),
                  "upright_spinning": obs(0.0, 5.0, 0.0, 0.0)}
        noiseless = CartpoleSwingUp(dataclasses.replace(p, init_noise=0.0), np.random.default_rng(0))
        states, _, _, _ = reference_episode(noiseless)
        for k in range(0, len(states), 50):
            probes[f"reference_{k:03d}"] = obs(*states[k], k * p.dt)
        return probes


class CartpoleSwingUpBatch:
    """B independent cartpoles stepped together with arrays; cart i matches CartpoleSwingUp(params, rngs[i]).

    All carts share the clock, so their episodes start and end together (several
    seeds' episodes in lock step). `step` returns (observations (B, observation_size), rewards (B,), done).
    Episodes that end early (`terminate_x`) cannot run in lock step: such parameters are refused.
    """

    num_actions = 3

    def __init__(self, params: CartpoleSwingUpParams, rngs: Sequence[np.random.Generator]):
        if params.terminate_x:
            raise ValueError("CartpoleSwingUpBatch steps every cart's episode in lock step, so it cannot end "
                             f"one early: terminate_x {params.terminate_x} is not supported (use CartpoleSwingUp)")
        self.params = p = params
        self.observation_size = OBSERVATION_SIZES[p.observation]
        self.rngs = list(rngs)
        self.batch = len(self.rngs)
        self.optimal_return = None
        self.expected_return = np.zeros(self.batch)
        self._c = physics_constants(p)
        self._forces = np.array([-p.force, 0.0, p.force])
        self._costs = p.action_cost * np.abs(self._forces)
        self._last_k = last_time_index(p)
        self.horizon = self._last_k + 1
        self.state = np.zeros((4, self.batch))  # rows θ, θ̇, x, ẋ
        self.state[0] = p.start_angle
        self._k = 0

    def observation(self) -> np.ndarray:
        """(B, observation_size) array: row i is cart i's observation, as the single env's."""
        theta, theta_dot, x, x_dot = self.state
        parts = observation_components(theta, theta_dot, x, x_dot, self._k * self.params.dt,
                                       self.params.observation, np.cos, np.sin, params=self.params)
        obs = np.empty((self.batch, len(parts)))
        for i, part in enumerate(parts):
            obs[:, i] = part
        return obs

    def reset(self) -> np.ndarray:
        p = self.params
        w = np.array([r.uniform(-p.init_noise, p.init_noise, size=4) for r in self.rngs]).T
        self.state = w + np.array([[p.start_angle], [0.0], [0.0], [0.0]])
        self.state[0] = wrap_angle(self.state[0], p)
        self._k = 0
        self.expected_return = np.zeros(self.batch)
        return self.observation()

    def step(self, actions) -> tuple[np.ndarray, np.ndarray, bool]:
        p = self.params
        actions = np.asarray(actions)
        theta, theta_dot, x, x_dot = self.state
        theta, theta_dot, x, x_dot = euler_step(theta, theta_dot, x, x_dot, self._forces[actions],
                                                np.sin(theta), np.cos(theta), self._c)
        rail = p.rail
        hi, lo = x >= rail, x <= -rail
        np.minimum(x_dot, 0.0, out=x_dot, where=hi)  # same rail rule as the scalar step
        np.maximum(x_dot, 0.0, out=x_dot, where=lo)
        x = np.minimum(np.maximum(x, -rail), rail)
        theta = wrap_angle(theta, p)
        reward = upright(np.cos(theta), theta_dot, x, x_dot, p) - self._costs[actions]
        self.expected_return += reward
        state = self.state = np.empty((4, self.batch))
        state[0], state[1], state[2], state[3] = theta, theta_dot, x, x_dot
        self._k += 1
        return self.observation(), reward, self._k > self._last_k
