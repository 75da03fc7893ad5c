"""The cartpole swing-up's physics and rules (Section 7.2.2) as functions of its parameters.

Dynamics are eq. 7.2 (label eq:cp_dynamics) integrated with explicit Euler, Δt = 0.01.
One arithmetic function, `euler_step`, holds the formula; it runs on Python floats
(the single env, for speed) and on NumPy arrays (`CartpoleSwingUpBatch`, B carts at once).
Likewise `upright` is the one reward event and `observation_components` the one rule from
state and time to what the agent sees (`observation`: the paper's raw state, or cos/sin
features like bsuite's, or bsuite's own). `bsuite_settings(n)` is a preset: the parameter values
that make the environment bsuite 0.3.6's cartpole_swingup/n (its reward box, move cost, termination
and observation; the physics and start state are already bsuite's by default), so that a task
between bsuite's and the paper's is a list of documented parameter changes from either. The
environments (rvfx.envs.cartpole.dynamics) and the reference controller (rvfx.envs.cartpole.control)
both read them.
"""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

TWO_PI = 2.0 * math.pi

Observation = Literal["raw", "trig", "trig_indicators", "bsuite"]
OBSERVATION_SIZES = {"raw": 5, "trig": 6, "trig_indicators": 8, "bsuite": 8}


@dataclass(frozen=True)
class CartpoleSwingUpParams:
    mass_cart: float = field(default=1.0, metadata={"gt": 0.0, "doc": "M, cart mass"})
    mass_pole: float = field(default=0.1, metadata={"gt": 0.0, "doc": "m, pole mass"})
    length: float = field(default=1.0, metadata={"gt": 0.0, "doc": "l, pole length; eq. 7.2 uses l/2"})
    gravity: float = field(default=9.8, metadata={"min": 0.0, "doc": "g"})
    dt: float = field(default=0.01, metadata={"gt": 0.0, "doc": "Euler time step Δt"})
    force: float = field(default=10.0, metadata={"min": 0.0, "doc": "actions 0, 1, 2 apply -F, 0, +F"})
    action_cost: float = field(
        default=0.001, metadata={"min": 0.0, "doc": "cost per step per unit |F| (paper: |F|/1000)"})
    max_time: float = field(default=10.0, metadata={"gt": 0.0, "doc": "episode ends once t > max_time"})
    rail: float = field(default=5.0, metadata={"gt": 0.0, "doc": "rigid rail ends at x = ±rail"})
    init_noise: float = field(
        default=0.05, metadata={"min": 0.0, "doc": "s_0 = (start_angle,0,0,0) + U(±init_noise) per component"})
    start_angle: float = field(default=math.pi, metadata={
        "added_later": True,
        "doc": "θ of s_0 before the noise (paper: π, hanging down; 0: upright, a control that needs no exploration)"})
    upright_cos: float = field(default=0.95, metadata={"min": -1.0, "max": 1.0, "doc": "reward needs cos θ > this"})
    steady_bound: float = field(default=1.0, metadata={"min": 0.0, "doc": "reward needs |θ̇|, |x|, |ẋ| <= this"})
    tau_pole_mass: bool = field(default=True, metadata={
        "doc": "τ = (F + m(l/2)θ̇² sin θ)/(m+M) (physical, bsuite); False: eq. 7.2 as printed, without m"})
    wrap_theta: bool = field(default=True, metadata={"doc": "keep θ in [0, 2π) (bsuite); False: unbounded"})
    observation: Observation = field(default="raw", metadata={
        "added_later": True,
        "doc": "what the agent sees. raw: (θ, θ̇, x, ẋ, t), the paper's state and time; "
               "trig: (cos θ, sin θ, θ̇/10, x/5, ẋ/5, t/10); trig_indicators: trig plus 1{|x| < 1} and "
               "1{|θ̇| < 1} as 1.0/0.0, like bsuite's cartpole_swingup observation (which orders and "
               "scales differently and uses ±1). These indicators leak part of the reward box (two of "
               "its four conditions), which the paper's state does not contain; bsuite: bsuite's cartpole_swingup "
               "observation exactly, (x/terminate_x, ẋ/terminate_x, sin θ, cos θ, θ̇, t/max_time, ±1 for "
               "|x| < the reward's x bound, ±1 for |θ̇| < steady_bound), each rounded to float32 as bsuite "
               "stores it (needs terminate_x)"})
    x_bound: float = field(default=0.0, metadata={
        "min": 0.0, "added_later": True,
        "doc": "reward needs |x| within this instead of steady_bound (bsuite's cartpole_swingup/n: 1 - n/20); "
               "0: steady_bound, as the paper"})
    x_dot_bounded: bool = field(default=True, metadata={
        "added_later": True,
        "doc": "reward needs |ẋ| within steady_bound (the paper); false: no condition on ẋ (bsuite)"})
    strict_bounds: bool = field(default=False, metadata={
        "added_later": True,
        "doc": "reward needs |θ̇|, |x|, |ẋ| strictly below their bounds (bsuite) instead of <= (the paper); "
               "cos θ > upright_cos is strict either way"})
    terminate_x: float = field(default=0.0, metadata={
        "min": 0.0, "added_later": True,
        "doc": "end the episode on the step whose new |x| exceeds this, with no rails (bsuite: 3; rail is then "
               "unused); 0: no such end, rigid rails at ±rail (the paper)"})

    def __post_init__(self):
        if self.observation == "bsuite" and self.terminate_x == 0.0:
            raise ValueError("observation 'bsuite' scales x and ẋ by terminate_x (bsuite: 3.0): set terminate_x")

    size_key = "env.max_time"

    def run_sizes(self) -> dict:
        """3 actions, the steps up to max_time, the observation's width; a continuous state (`RunSizes`)."""
        ratio = self.max_time / self.dt          # beyond 2**53 steps: their count, roughly
        return {"A": 3, "steps": last_time_index(self) + 1 if ratio < 2**53 else ratio,
                "inputs": OBSERVATION_SIZES[self.observation], "keys": 0}

    def run_memory(self) -> dict:
        return {}


def bsuite_settings(level: int = 0) -> dict:
    """The preset of bsuite's cartpole_swingup/<level>: the CartpoleSwingUpParams values that make
    this environment bsuite 0.3.6's task (cartpole_swingup.py, sweep.py): reward +1 when
    cos θ > level/20, |θ̇| < 1 and |x| < 1 - level/20 (strict, no ẋ condition), a cost of 0.1 on
    each step with a force (action_cost 0.01 per unit |F| at |F| = 10; exactly 0.1 in float64), the
    episode ending once |x| > 3 (no rails) or t > 10, and bsuite's float32 observation. Everything
    else is the default, which is already bsuite's: the physics (tau_pole_mass, θ wrapped into
    [0, 2π), bsuite's constants with its length 0.5 as l/2), Δt = 0.01, max_time 10 and the start
    (x, ẋ, θ̇, θ - π ~ U(±0.05)). Use `CartpoleSwingUpParams(**bsuite_settings(n))`, or write these
    keys under a spec's `env:`. Equal to bsuite's environment up to float64 round-off in the Euler
    step (tests/test_cartpole_bsuite_task.py); at another max_time bsuite's accumulated clock may
    end an episode a step earlier (max_time 1: 100 steps where this counts 101)."""
    if not (isinstance(level, int) and 0 <= level < 20):
        raise ValueError(f"bsuite's cartpole_swingup has levels 0 ... 19, not {level!r}")
    return {"upright_cos": level / 20, "x_bound": 1 - level / 20, "steady_bound": 1.0, "x_dot_bounded": False,
            "strict_bounds": True, "terminate_x": 3.0, "action_cost": 0.01, "observation": "bsuite"}


def physics_constants(p: CartpoleSwingUpParams) -> tuple:
    """Constants of `euler_step`: (l/2, m+M, θ̇²-term coefficient of τ, m l/2, g, m/(m+M), Δt)."""
    half = 0.5 * p.length
    total = p.mass_cart + p.mass_pole
    ml = p.mass_pole * half
    return (half, total, ml if p.tau_pole_mass else half, ml, p.gravity, p.mass_pole / total, p.dt)


def euler_step(theta, theta_dot, x, x_dot, force, sin, cos, c):
    """One explicit Euler step of eq. 7.2 for floats or arrays (no rails, no wrapping).

    `sin`, `cos` are of `theta`, passed in so callers pick math or NumPy; `c` is
    `physics_constants(params)`. Positions advance with the old velocities.
    """
    half, total, k_tau, ml, g, m_frac, dt = c
    tau = (force + k_tau * theta_dot * theta_dot * sin) / total
    theta_acc = (g * sin - cos * tau) / (half * (4.0 / 3.0 - m_frac * cos * cos))
    x_acc = tau - ml * theta_acc * cos / total
    return theta + dt * theta_dot, theta_dot + dt * theta_acc, x + dt * x_dot, x_dot + dt * x_acc


def upright(cos_theta, theta_dot, x, x_dot, p: CartpoleSwingUpParams):
    """The +1 event: cos θ > 0.95 and |θ̇|, |x|, |ẋ| <= 1 (footnote of §7.2.2); floats or arrays.
    With `x_bound`, `x_dot_bounded` or `strict_bounds` set (bsuite's box): cos θ > upright_cos,
    |θ̇| and |x| within steady_bound and x_bound, |ẋ| within steady_bound only if x_dot_bounded,
    each < instead of <= if strict_bounds."""
    b = p.steady_bound
    if p.x_bound or p.strict_bounds or not p.x_dot_bounded:
        below = operator.lt if p.strict_bounds else operator.le
        ok = (cos_theta > p.upright_cos) & below(abs(theta_dot), b) & below(abs(x), p.x_bound or b)
        return ok & below(abs(x_dot), b) if p.x_dot_bounded else ok
    return (cos_theta > p.upright_cos) & (abs(theta_dot) <= b) & (abs(x) <= b) & (abs(x_dot) <= b)


def wrap_angle(theta, p: CartpoleSwingUpParams):
    """θ mod 2π, in [0, 2π), if `p.wrap_theta` (bsuite's convention), else θ unchanged; floats or arrays."""
    return theta % TWO_PI if p.wrap_theta else theta


def observation_components(theta, theta_dot, x, x_dot, t, kind: str, cos=math.cos, sin=math.sin,
                           params: CartpoleSwingUpParams | None = None) -> tuple:
    """The observation of state (θ, θ̇, x, ẋ) at time t, as a tuple of components (`kind` is
    `params.observation`); floats, or arrays with `cos`, `sin` = np.cos, np.sin.

    raw: (θ, θ̇, x, ẋ, t); trig: (cos θ, sin θ, θ̇/10, x/5, ẋ/5, t/10); trig_indicators: trig,
    then 1.0 if |x| < 1 else 0.0 and 1.0 if |θ̇| < 1 else 0.0; bsuite (needs `params`): bsuite's
    (x/X, ẋ/X, sin θ, cos θ, θ̇, t/max_time, 1.0 if |x| < x bound else -1.0, 1.0 if |θ̇| <
    steady_bound else -1.0), X = terminate_x, each rounded to float32 as bsuite stores it (the
    values as float64).
    """
    if kind == "bsuite":
        if params is None:
            raise ValueError("observation 'bsuite' needs the parameters (params=)")
        scale, bx = params.terminate_x, params.x_bound or params.steady_bound
        parts = (x / scale, x_dot / scale, sin(theta), cos(theta), theta_dot, t / params.max_time,
                 (abs(x) < bx) * 2.0 - 1.0, (abs(theta_dot) < params.steady_bound) * 2.0 - 1.0)
        return tuple(np.float64(np.float32(v)) for v in parts)
    if kind == "raw":
        return theta, theta_dot, x, x_dot, t
    trig = (cos(theta), sin(theta), theta_dot / 10.0, x / 5.0, x_dot / 5.0, t / 10.0)
    if kind == "trig":
        return trig
    if kind == "trig_indicators":
        return trig + ((abs(x) < 1.0) * 1.0, (abs(theta_dot) < 1.0) * 1.0)
    raise ValueError(f"unknown observation {kind!r} (raw, trig, trig_indicators, bsuite)")


def last_time_index(p: CartpoleSwingUpParams) -> int:
    """Largest k with k Δt <= max_time, from integers so float round-off cannot add or drop a step."""
    ratio = p.max_time / p.dt
    k = round(ratio)
    return k if abs(ratio - k) <= 1e-9 * max(1.0, ratio) else math.floor(ratio)
