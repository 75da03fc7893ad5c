"""Cartpole swing-up (§7.2.2, eq. 7.2): physics, reward box, rails, clock, start state, batch = single."""
from __future__ import annotations

import math

import numpy as np
import pytest

from rvfx.envs.cartpole.dynamics import CartpoleSwingUp, CartpoleSwingUpBatch, CartpoleSwingUpParams

P = CartpoleSwingUpParams()


def make(**kw) -> CartpoleSwingUp:
    return CartpoleSwingUp(CartpoleSwingUpParams(**kw), np.random.default_rng(0))


def energy(s, p: CartpoleSwingUpParams) -> float:
    """Cart plus uniform rod of half-length L (inertia mL²/3 about its centre), θ = 0 upright."""
    th, thd, _, xd = s
    L, m, M = p.length / 2, p.mass_pole, p.mass_cart
    return (0.5 * (M + m) * xd ** 2 + m * L * xd * thd * math.cos(th)
            + 0.5 * (4 / 3) * m * L * L * thd ** 2 + m * p.gravity * L * math.cos(th))


def momentum(s, p: CartpoleSwingUpParams) -> float:
    """Horizontal momentum (M+m)ẋ + m L θ̇ cos θ; its rate of change is F."""
    return (p.mass_cart + p.mass_pole) * s[3] + p.mass_pole * p.length / 2 * s[1] * math.cos(s[0])


def hessian(f, s, h=1e-4) -> np.ndarray:
    s = np.asarray(s, dtype=float)
    eye = np.eye(len(s)) * h
    return np.array([[(f(s + a + b) - f(s + a - b) - f(s - a + b) + f(s - a - b)) / (4 * h * h)
                      for b in eye] for a in eye])


def rollout(env, state, action, steps) -> np.ndarray:
    env.set_state(*state)
    out = [env.state]
    for _ in range(steps):
        env.step(action)
        out.append(env.state)
    return np.array(out)


def energy_drift(p, seconds=1.0):
    """(max_n |E_n - E_0|, Euler's predicted drift) over `seconds` unforced, from the horizontal pole at rest.

    For exact dynamics dE/dt = ∇E·f = 0, so one Euler step s -> s + Δt f changes E by
    ½Δt² fᵀ(∇²E)f + O(Δt³); summing |·| over the T/Δt steps bounds the drift, which is O(Δt).
    """
    env = CartpoleSwingUp(p, np.random.default_rng(0))
    traj = rollout(env, (math.pi / 2, 0.0, 0.0, 0.0), 1, round(seconds / p.dt))
    e = lambda s: energy(s, p)  # noqa: E731
    drift = max(abs(e(s) - e(traj[0])) for s in traj)
    predicted = 0.0
    for a, b in zip(traj[:-1], traj[1:]):
        f = (b - a) / p.dt
        predicted += 0.5 * p.dt ** 2 * abs(f @ hessian(e, a) @ f)
    return drift, predicted


def test_energy_conserved_up_to_euler_error():
    p = CartpoleSwingUpParams(wrap_theta=False)
    drift, predicted = energy_drift(p)
    scale = p.mass_pole * p.gravity * p.length / 2  # potential-energy swing is 2x this
    assert 0.0 < drift <= 1.1 * predicted  # 10% slack for the O(Δt²) remainder
    assert predicted < 0.15 * scale
    # First order: halving Δt halves the drift (a wrong formula leaves an O(1) drift).
    half, _ = energy_drift(CartpoleSwingUpParams(wrap_theta=False, dt=p.dt / 2))
    assert 1.8 < drift / half < 2.2


def test_eq72_as_printed_does_not_conserve_energy():
    """Negative control: eq. 7.2 printed without m in τ is not a mechanical system."""
    drift, predicted = energy_drift(CartpoleSwingUpParams(wrap_theta=False, tau_pole_mass=False))
    assert drift > 3 * predicted


@pytest.mark.parametrize("action", [0, 1, 2])
def test_momentum_changes_by_force_impulse(action):
    """d/dt[(M+m)ẋ + mLθ̇cosθ] = F; Euler's error telescopes to <= Δt·mL·max|d(θ̇cosθ)/dt|."""
    env = make(wrap_theta=False)
    steps = 50
    traj = rollout(env, (math.pi / 2, 0.0, 0.0, 0.0), action, steps)
    force = (-P.force, 0.0, P.force)[action]
    dp = momentum(traj[-1], P) - momentum(traj[0], P)
    g = np.diff(traj[:, 1] * np.cos(traj[:, 0])) / P.dt
    tol = P.dt * P.mass_pole * P.length / 2 * np.abs(g).max()
    assert abs(dp - force * steps * P.dt) <= tol
    if action != 1:
        assert np.sign(traj[-1, 3]) == np.sign(force)  # positive action pushes the cart to +x


def test_upright_pole_falls_at_linearised_rate():
    """Near θ = 0 eq. 7.2 linearises to θ̈ = λ²θ, λ² = g / ((l/2)(4/3 - m/(m+M)))."""
    env = make(wrap_theta=False)
    theta0 = 0.01
    traj = rollout(env, (theta0, 0.0, 0.0, 0.0), 1, 50)
    lam2 = P.gravity / (P.length / 2 * (4 / 3 - P.mass_pole / (P.mass_pole + P.mass_cart)))
    euler_map = np.array([[1.0, P.dt], [lam2 * P.dt, 1.0]])
    expected = np.linalg.matrix_power(euler_map, 50) @ [theta0, 0.0]
    np.testing.assert_allclose(traj[-1, :2], expected, rtol=2e-3)
    assert traj[-1, 0] > 3 * theta0
    # ... and keeps falling the same way, past horizontal, within 1.5 s.
    for side in (+1, -1):
        env = make()
        traj = rollout(env, (side * theta0, 0.0, 0.0, 0.0), 1, 150)
        assert math.cos(traj[-1, 0]) < 0.0
        assert side * math.sin(traj[60, 0]) > 0.0


def test_explicit_euler_step():
    """Positions advance with the old velocities; θ is reported in [0, 2π)."""
    env = make()
    th, thd, x, xd = 0.3, 1.5, 0.2, -0.7
    env.set_state(th, thd, x, xd)
    new = env.step(2).new_state
    assert new[0] == th + P.dt * thd and new[2] == x + P.dt * xd and new[4] == P.dt
    env.set_state(0.001, -1.0, 0.0, 0.0)
    assert env.step(1).new_state[0] == pytest.approx(2 * math.pi - 0.009, abs=1e-12)


def step_reward(theta, theta_dot, x, x_dot, action=1) -> float:
    """Reward of one step from a state, with Δt so small the state barely moves (< 1e-8)."""
    env = make(dt=1e-9)
    env.set_state(theta, theta_dot, x, x_dot)
    return env.step(action).reward


def test_reward_box():
    a = math.acos(P.upright_cos)
    eps = 1e-6
    assert step_reward(0.0, 0.0, 0.0, 0.0) == 1.0
    for sign in (1, -1):
        assert step_reward(sign * (a - eps), 0.0, 0.0, 0.0) == 1.0  # cos θ > 0.95
        assert step_reward(sign * (a + eps), 0.0, 0.0, 0.0) == 0.0
        for i in (1, 2, 3):  # |θ̇|, |x|, |ẋ| <= 1
            inside, outside = [0.0] * 4, [0.0] * 4
            inside[i], outside[i] = sign * (1 - eps), sign * (1 + eps)
            assert step_reward(*inside) == 1.0, (i, sign)
            assert step_reward(*outside) == 0.0, (i, sign)
        assert step_reward(0.0, 0.0, sign * 1.0, 0.0) == 1.0  # bound is inclusive
    # Hanging, fast, or far: no reward whatever the rest.
    assert step_reward(math.pi, 0.0, 0.0, 0.0) == 0.0
    assert step_reward(0.0, 0.0, 0.0, 0.0, action=2) == pytest.approx(1.0 - 0.01, abs=1e-15)


def test_action_cost_is_force_over_1000():
    env = make()
    for action, cost in ((0, 0.01), (1, 0.0), (2, 0.01)):
        env.set_state(math.pi, 0.0, 0.0, 0.0)
        assert env.step(action).reward == -cost
    env = make(force=5.0)
    env.set_state(math.pi, 0.0, 0.0, 0.0)
    assert env.step(0).reward == -0.005


@pytest.mark.parametrize("side", [1, -1])
def test_rails_stop_the_cart(side):
    env = make()
    push, pull = (2, 0) if side == 1 else (0, 2)
    traj = rollout(env, (math.pi, 0.0, 0.0, 0.0), push, 600)
    x, x_dot = traj[:, 2], traj[:, 3]
    assert np.all(np.abs(x) <= P.rail)
    hit = np.flatnonzero(x == side * P.rail)
    assert hit.size and hit[0] < 300
    # Held at the rail with zero velocity while pushed into it, the pole still swinging.
    assert np.all(x[hit[0]:] == side * P.rail)
    assert np.all(x_dot[hit[0]:] == 0.0)
    assert np.any(traj[hit[0]:, 1] != 0.0)
    # Pulling away leaves the rail at once.
    for _ in range(5):
        env.step(pull)
    assert side * env.state[2] < P.rail and side * env.state[3] < 0


def run_episode(env, actions=lambda k: 1):
    tr = env.reset()
    steps, last = 0, tr
    while tr.new_state is not None:
        last = tr
        tr = env.step(actions(steps))
        steps += 1
    return steps, last, tr


@pytest.mark.parametrize("dt,max_time,steps", [(0.01, 10.0, 1001), (0.1, 0.3, 4), (0.03, 10.0, 334)])
def test_episode_ends_when_t_exceeds_max_time(dt, max_time, steps):
    env = make(dt=dt, max_time=max_time)
    assert env.horizon == steps
    for _ in range(2):  # and again after a reset
        n, last, final = run_episode(env)
        assert n == steps
        assert final.timestep == steps - 1
        assert last.new_state[4] <= max_time + 1e-12 < steps * dt
        assert final.old_state is last.new_state


def test_start_state():
    env = make()
    starts = np.array([env.reset().new_state for _ in range(2000)])
    dev = starts - [math.pi, 0.0, 0.0, 0.0, 0.0]
    assert np.all(np.abs(dev[:, :4]) <= 0.05) and np.all(dev[:, 4] == 0.0)
    assert np.all(dev[:, :4].min(0) < -0.045) and np.all(dev[:, :4].max(0) > 0.045)
    env.step(1)
    assert env.reset().new_state[4] == 0.0 and env.expected_return == 0.0


def test_start_upright_control():
    """start_angle=0: s_0 = (0,0,0,0) + U(+-0.05) (before wrapping into [0, 2pi)), in the reward box
    from the first step; the batch env starts the same way."""
    p = CartpoleSwingUpParams(start_angle=0.0)
    env = CartpoleSwingUp(p, np.random.default_rng(0))
    starts = np.array([env.reset().new_state for _ in range(500)])
    assert np.all(np.cos(starts[:, 0]) >= math.cos(0.05)) and np.all(np.abs(starts[:, 1:4]) <= 0.05)
    assert starts[:, 0].min() < 0.01 and starts[:, 0].max() > 2 * math.pi - 0.01       # both sides of upright
    env.reset()
    assert env.step(1).reward == 1.0                                                # no force: +1, no cost
    batch = CartpoleSwingUpBatch(p, [np.random.default_rng(i) for i in range(3)])
    np.testing.assert_array_equal(batch.reset(), [CartpoleSwingUp(p, np.random.default_rng(i)).reset().new_state
                                                  for i in range(3)])


def test_batch_step_equals_single_steps():
    rng = np.random.default_rng(1)
    n = 200
    states = np.stack([rng.uniform(0, 2 * math.pi, n), rng.normal(0, 3, n),
                       rng.uniform(-5.2, 5.2, n), rng.normal(0, 3, n)])
    states[2, :20] = np.repeat([5.0, -5.0], 10)  # resting on the rails
    states[0, 20:40] = np.repeat([0.001, 2 * math.pi - 0.001], 10)  # about to wrap
    states[1, 20:40] = np.repeat([-2.0, 2.0], 10)
    actions = rng.integers(0, 3, n)
    batch = CartpoleSwingUpBatch(P, [np.random.default_rng(i) for i in range(n)])
    batch.state = states.copy()
    obs, reward, _ = batch.step(actions)
    env = make()
    for i in range(n):
        env.set_state(*states[:, i], k=0)
        tr = env.step(int(actions[i]))
        np.testing.assert_allclose(obs[i], tr.new_state, rtol=1e-13, atol=1e-13)
        assert reward[i] == pytest.approx(tr.reward, abs=1e-15)
    assert np.all((obs[:, 0] >= 0) & (obs[:, 0] < 2 * math.pi))


def test_batch_episode_equals_single_episodes():
    """Cart i of the batch replays CartpoleSwingUp(params, rngs[i]) for a whole episode."""
    b = 4
    batch = CartpoleSwingUpBatch(P, [np.random.default_rng(10 + i) for i in range(b)])
    singles = [CartpoleSwingUp(P, np.random.default_rng(10 + i)) for i in range(b)]
    # Each cart's own action bias; the first is pushed onto the right rail.
    probs = [[0.05, 0.05, 0.9], [0.4, 0.2, 0.4], [0.6, 0.3, 0.1], [0.0, 1.0, 0.0]]
    arng = np.random.default_rng(5)
    obs = batch.reset()
    trs = [e.reset() for e in singles]
    np.testing.assert_array_equal(obs, [t.new_state for t in trs])
    done, steps = False, 0
    while not done:
        acts = [arng.choice(3, p=pr) for pr in probs]
        obs, reward, done = batch.step(acts)
        trs = [e.step(int(a)) for e, a in zip(singles, acts)]
        steps += 1
        assert done == (trs[0].new_state is None)
        np.testing.assert_allclose(obs[:, :4], [e.state for e in singles], rtol=1e-9, atol=1e-9)
        assert np.all(obs[:, 4] == steps * P.dt)
        np.testing.assert_allclose(reward, [t.reward for t in trs], atol=1e-12)
    assert steps == batch.horizon == 1001
    assert np.any(np.abs(obs[:, 2]) == P.rail)
    np.testing.assert_allclose(batch.expected_return, [e.expected_return for e in singles], atol=1e-9)


# --- observation formats (params.observation) ---

def trig_formula(theta, theta_dot, x, x_dot, t):
    """(cos θ, sin θ, θ̇/10, x/5, ẋ/5, t/10), written out here independently of the env."""
    return [math.cos(theta), math.sin(theta), theta_dot / 10, x / 5, x_dot / 5, t / 10]


def test_trig_observations_of_a_known_state():
    th, thd, x, xd, k = math.pi / 2, 2.0, 1.5, -0.5, 7
    t = k * P.dt
    trig = make(observation="trig").set_state(th, thd, x, xd, k=k)
    np.testing.assert_allclose(trig, [0.0, 1.0, 0.2, 0.3, -0.1, 0.007], atol=1e-15)
    np.testing.assert_array_equal(trig, trig_formula(th, thd, x, xd, t))
    ind = make(observation="trig_indicators").set_state(th, thd, x, xd, k=k)
    np.testing.assert_array_equal(ind, trig_formula(th, thd, x, xd, t) + [0.0, 0.0])  # |x|, |θ̇| >= 1
    # The indicators are 1{|x| < 1} and 1{|θ̇| < 1}, strict, each on its own.
    env = make(observation="trig_indicators")
    for xx, tt, expected in ((0.5, 2.0, [1.0, 0.0]), (-1.5, -0.5, [0.0, 1.0]), (-0.99, 0.99, [1.0, 1.0]),
                             (1.0, -1.0, [0.0, 0.0])):
        assert list(env.set_state(math.pi, tt, xx, 0.0)[6:]) == expected, (xx, tt)
    raw = make().set_state(th, thd, x, xd, k=k)
    np.testing.assert_array_equal(raw, [th, thd, x, xd, t])


@pytest.mark.parametrize("kind,size", [("raw", 5), ("trig", 6), ("trig_indicators", 8)])
def test_observation_size_and_step_reset_use_the_format(kind, size):
    from rvfx.agents.neural.representations import representation_for

    p = CartpoleSwingUpParams(observation=kind)
    env = CartpoleSwingUp(p, np.random.default_rng(0))
    assert env.observation_size == size
    assert representation_for(env).input_dim == size  # the network's input width
    assert CartpoleSwingUpBatch(p, [np.random.default_rng(0)]).observation_size == size
    tr = env.reset()
    assert tr.new_state.shape == (size,)
    for k in range(1, 4):
        tr = env.step(2)
        s = env.state
        expected = list(s) + [k * P.dt] if kind == "raw" else trig_formula(*s, k * P.dt)
        if kind == "trig_indicators":
            expected += [float(abs(s[2]) < 1), float(abs(s[1]) < 1)]
        np.testing.assert_array_equal(tr.new_state, expected)
    # The dynamics and reward do not depend on the format.
    ref = CartpoleSwingUp(P, np.random.default_rng(0))
    ref.reset()
    for _ in range(3):
        ref_reward = ref.step(2).reward
    assert ref.state == env.state and ref_reward == tr.reward


@pytest.mark.parametrize("kind", ["raw", "trig", "trig_indicators"])
def test_batch_observations_equal_single_ones(kind):
    p = CartpoleSwingUpParams(observation=kind)
    n = 60
    rngs = lambda: [np.random.default_rng(20 + i) for i in range(n)]  # noqa: E731
    batch = CartpoleSwingUpBatch(p, rngs())
    singles = [CartpoleSwingUp(p, r) for r in rngs()]
    obs = batch.reset()
    np.testing.assert_array_equal(obs, [e.reset().new_state for e in singles])
    # Spread states so both indicators take both values, then step once.
    rng = np.random.default_rng(3)
    states = np.stack([rng.uniform(0, 2 * math.pi, n), rng.uniform(-2, 2, n),
                       rng.uniform(-2, 2, n), rng.normal(0, 1, n)])
    batch.state = states.copy()
    actions = rng.integers(0, 3, n)
    obs, _, _ = batch.step(actions)
    assert obs.shape == (n, batch.observation_size)
    for i, e in enumerate(singles):
        e.set_state(*states[:, i], k=0)
        np.testing.assert_allclose(obs[i], e.step(int(actions[i])).new_state, rtol=1e-13, atol=1e-13)
    if kind == "trig_indicators":
        assert set(obs[:, 6]) == set(obs[:, 7]) == {0.0, 1.0}


def test_observation_is_not_in_the_run_identity_at_its_default():
    from rvfx.experiment.spec import recorded_values

    assert "observation" not in recorded_values(CartpoleSwingUpParams())[0]
    assert recorded_values(CartpoleSwingUpParams(observation="trig"))[0]["observation"] == "trig"
