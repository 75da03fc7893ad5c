"""A reference controller for the cartpole swing-up (§7.2.2): energy pumping, then an LQR balancer.

It is not a learner: it knows the dynamics (`euler_step`, `physics_constants`) and reads the
true state (θ, θ̇, x, ẋ) from `env.state`, whatever the observation format. It says what return
the task allows (about 830 of at most 1001 on the paper's default task: the pole is held in the
reward box from about t = 1.7 s on) and gives probe states along a real swing-up.

Two modes, after Åström & Furuta (2000) and Chung & Hauser (1995):
- pump: push the cart in the direction that raises the pole's energy toward the upright energy,
  while a spring-damper term pulls the cart back toward the centre of the rail;
- balance: LQR on the Euler dynamics linearised at the upright. The switch to it is checked
  by simulation: balance only once a simulated balancer rollout from the current state (the
  same `euler_step`) keeps the pole up and ends in the reward box; fall back to pumping if
  the pole falls anyway.
Both give a continuous force; the action is the nearest of the three forces {-F, 0, +F}.
"""
from __future__ import annotations

import math

import numpy as np

from rvfx.envs.cartpole.physics import CartpoleSwingUpParams, euler_step, physics_constants, upright


def wrap_pi(theta: float) -> float:
    """θ in [-π, π), so that the upright is θ = 0 from both sides."""
    return (theta + math.pi) % (2.0 * math.pi) - math.pi


def linearise_upright(p: CartpoleSwingUpParams, h: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """(A, B) of the one-step Euler map s' ≈ A s + B F at the upright at rest, s = (θ, θ̇, x, ẋ),
    by central differences of `euler_step` itself (no rails, no wrapping)."""
    c = physics_constants(p)

    def step(s, force):
        return np.array(euler_step(s[0], s[1], s[2], s[3], force, math.sin(s[0]), math.cos(s[0]), c))

    zero, eye = np.zeros(4), np.eye(4)
    a = np.column_stack([(step(h * e, 0.0) - step(-h * e, 0.0)) / (2 * h) for e in eye])
    b = (step(zero, h) - step(zero, -h)) / (2 * h)
    return a, b[:, None]


def lqr_gain(p: CartpoleSwingUpParams, q=(10.0, 1.0, 1.0, 1.0), r: float = 0.01) -> np.ndarray:
    """K of the discrete-time LQR F = -K s for `linearise_upright`, cost Σ sᵀ diag(q) s + r F²."""
    a, b = linearise_upright(p)
    rr = np.array([[r]])
    from scipy.linalg import solve_discrete_are  # here: a tenth of a second of import only the LQR needs
    x = solve_discrete_are(a, b, np.diag(q), rr)
    return np.linalg.solve(rr + b.T @ x @ b, b.T @ x @ a)[0]


class ReferenceController:
    """Energy pumping, then an LQR balancer once a simulated balancer rollout succeeds; see the module.

    `act(state)` takes the env's (θ, θ̇, x, ẋ) and returns an action 0, 1, 2. The controller
    remembers whether it is balancing: use a new one, or `reset()`, per episode.
    The pumping gains are in SI units and were tuned on the paper's default task (they keep
    the cart within about ±1.7 of the centre during the swing-up there).
    """

    def __init__(self, params: CartpoleSwingUpParams, q=(10.0, 1.0, 1.0, 1.0), r: float = 0.01,
                 pump_gain: float = 800.0, centre_gain: float = 200.0, centre_damping: float = 200.0,
                 catch_angle: float = 1.0, catch_steps: int = 200):
        """pump_gain: N per (J · rad/s) of the energy term; centre_gain, centre_damping: N per m and
        per m/s pulling the cart to x = 0 while pumping; the balancer is tried once |θ| < catch_angle
        and simulated for catch_steps steps."""
        p = self.params = params
        self.gain = lqr_gain(p, q, r)
        self._c = physics_constants(p)
        half = 0.5 * p.length
        self.inertia = 4.0 / 3.0 * p.mass_pole * half * half  # rod about its pivot
        self.mgl = p.mass_pole * p.gravity * half
        self.pump_gain, self.centre_gain, self.centre_damping = pump_gain, centre_gain, centre_damping
        self._cos_catch = math.cos(catch_angle)
        self.catch_steps = catch_steps
        self._forces = (-p.force, 0.0, p.force)
        self.balancing = False

    def reset(self) -> None:
        self.balancing = False

    def pole_energy(self, theta: float, theta_dot: float) -> float:
        """Pole energy about the pivot, 0 upright at rest, -2 m g (l/2) hanging at rest."""
        return 0.5 * self.inertia * theta_dot * theta_dot + self.mgl * (math.cos(theta) - 1.0)

    def to_action(self, force: float) -> int:
        """The nearest of the forces -F, 0, +F to a continuous command."""
        half = 0.5 * self.params.force
        return 2 if force > half else 0 if force < -half else 1

    def balance_force(self, state) -> float:
        theta, theta_dot, x, x_dot = state
        k = self.gain
        return -(k[0] * wrap_pi(theta) + k[1] * theta_dot + k[2] * x + k[3] * x_dot)

    def pump_force(self, state) -> float:
        """Energy pumping: dE/dt = -m (l/2) ẍ θ̇ cos θ, so push against θ̇ cos θ while E < 0.
        From rest at the bottom (θ̇ = 0, nothing to pump) push +F to start the swing."""
        theta, theta_dot, x, x_dot = state
        c = math.cos(theta)
        energy = self.pole_energy(theta, theta_dot)
        force = (self.pump_gain * (0.0 - energy) * (-theta_dot * c)
                 - self.centre_gain * x - self.centre_damping * x_dot)
        if force == 0.0 and energy < 0.0:  # at rest, nothing to pump from: start the swing
            force = self.params.force
        return force

    def catches(self, state) -> bool:
        """Whether the balancer alone, simulated from `state` with the env's Euler step, keeps
        |θ| < catch_angle and the cart off the rails, and ends in the reward box."""
        theta, theta_dot, x, x_dot = state
        p, rail = self.params, self.params.rail
        for _ in range(self.catch_steps):
            force = self._forces[self.to_action(self.balance_force((theta, theta_dot, x, x_dot)))]
            theta, theta_dot, x, x_dot = euler_step(theta, theta_dot, x, x_dot, force,
                                                    math.sin(theta), math.cos(theta), self._c)
            if math.cos(theta) < self._cos_catch or abs(x) >= rail:
                return False
        return bool(upright(math.cos(theta), theta_dot, x, x_dot, p))

    def act(self, state) -> int:
        """Action 0, 1, 2 for the env's state (θ, θ̇, x, ẋ)."""
        cos_theta = math.cos(state[0])
        if self.balancing and cos_theta < self._cos_catch:
            self.balancing = False  # fell: pump again
        if not self.balancing and cos_theta > self._cos_catch and self.catches(state):
            self.balancing = True
        return self.to_action(self.balance_force(state) if self.balancing else self.pump_force(state))


def reference_episode(env) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """One episode of a new `ReferenceController` on `env` (a `CartpoleSwingUp`) from its `reset()`.

    Returns (states (H+1, 4): s_0 .. s_H as (θ, θ̇, x, ẋ), actions (H,), rewards (H,), return).
    """
    controller = ReferenceController(env.params)
    transition = env.reset()
    states, actions, rewards = [env.state], [], []
    while not transition.ends_episode:
        transition = env.step(controller.act(env.state))
        states.append(env.state)
        actions.append(transition.action)
        rewards.append(transition.reward)
    return np.array(states), np.array(actions), np.array(rewards), float(sum(rewards))
