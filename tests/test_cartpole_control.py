"""Reference controller for the cartpole swing-up (energy pumping + LQR) and the env's probe states."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from rvfx.envs.cartpole.control import ReferenceController, linearise_upright, lqr_gain, reference_episode
from rvfx.envs.cartpole.dynamics import CartpoleSwingUp, CartpoleSwingUpParams

P = CartpoleSwingUpParams()


def test_linearisation_matches_the_upright_rates():
    """The Euler map at the upright (eq. 7.2 at θ = 0): θ̈ = λ²θ + b_θ F, ẍ = (F - m(l/2) θ̈)/(m+M)."""
    a, b = linearise_upright(P)
    half, total = P.length / 2, P.mass_cart + P.mass_pole
    denom = half * (4 / 3 - P.mass_pole / total)
    lam2 = P.gravity / denom
    expected_a = np.eye(4) + P.dt * np.array([[0, 1, 0, 0], [lam2, 0, 0, 0], [0, 0, 0, 1],
                                              [-P.mass_pole * half * lam2 / total, 0, 0, 0]])
    np.testing.assert_allclose(a, expected_a, atol=1e-8)
    b_theta = -1 / (total * denom)
    b_x = (1 - P.mass_pole * half * b_theta) / total
    np.testing.assert_allclose(b[:, 0], P.dt * np.array([0, b_theta, 0, b_x]), atol=1e-8)
    closed = a - b @ lqr_gain(P)[None, :]
    assert np.abs(np.linalg.eigvals(closed)).max() < 1.0  # the balancer stabilises the linear map
    assert np.abs(np.linalg.eigvals(a)).max() > 1.0       # ... which is unstable without it


def test_reference_controller_swings_up_on_five_seeds():
    returns = [reference_episode(CartpoleSwingUp(P, np.random.default_rng(seed)))[3] for seed in range(5)]
    assert min(returns) >= 800, returns


def test_reference_episode_shapes_and_bookkeeping():
    env = CartpoleSwingUp(P, np.random.default_rng(0))
    states, actions, rewards, ret = reference_episode(CartpoleSwingUp(P, np.random.default_rng(0)))
    h = env.horizon
    assert states.shape == (h + 1, 4) and actions.shape == (h,) and rewards.shape == (h,)
    assert ret == pytest.approx(rewards.sum(), abs=1e-9)
    np.testing.assert_array_equal(states[0], env.reset().new_state[:4])  # starts from env.reset()
    for k in range(h):  # replaying the actions in the env gives the same states and rewards
        tr = env.step(int(actions[k]))
        assert env.state == tuple(states[k + 1]) and tr.reward == rewards[k]
    # Held in the reward box at the end: cos θ > 0.95 and |θ̇|, |x|, |ẋ| <= 1 over the last 5 s.
    tail = states[-500:]
    assert np.all(np.cos(tail[:, 0]) > 0.95) and np.all(np.abs(tail[:, 1:]) <= 1.0)
    assert np.all(np.abs(states[:, 2]) < P.rail)


@pytest.mark.parametrize("kind", ["trig", "trig_indicators"])
def test_reference_controller_ignores_the_observation_format(kind):
    raw = reference_episode(CartpoleSwingUp(P, np.random.default_rng(4)))
    other = reference_episode(CartpoleSwingUp(dataclasses.replace(P, observation=kind), np.random.default_rng(4)))
    np.testing.assert_array_equal(raw[0], other[0])
    assert raw[3] == other[3]


def test_reference_controller_balances_from_upright():
    p = CartpoleSwingUpParams(start_angle=0.0)
    ret = reference_episode(CartpoleSwingUp(p, np.random.default_rng(0)))[3]
    assert ret >= 990


def test_controller_pumps_energy_and_falls_back_when_the_pole_falls():
    c = ReferenceController(P)
    hanging = (math.pi, 0.0, 0.0, 0.0)
    assert c.act(hanging) == 2  # at rest at the bottom: start the swing
    assert not c.balancing
    # At the bottom (cos θ = -1) energy grows when the cart is pushed with θ̇: dE/dt = -m(l/2) ẍ θ̇ cos θ.
    assert c.act((math.pi, 1.0, 0.0, 0.0)) == 2 and c.act((math.pi, -1.0, 0.0, 0.0)) == 0
    assert c.act((0.01, 0.0, 0.0, 0.0)) in (0, 1, 2) and c.balancing  # near upright: balance
    c.act((2.0, 0.0, 0.0, 0.0))
    assert not c.balancing


@pytest.mark.parametrize("kind,width", [("raw", 5), ("trig", 6), ("trig_indicators", 8)])
def test_probe_states(kind, width):
    env = CartpoleSwingUp(CartpoleSwingUpParams(observation=kind), np.random.default_rng(0))
    rng_state = env.rng.bit_generator.state
    probes = env.probe_states()
    assert env.rng.bit_generator.state == rng_state  # drew nothing from the env's rng
    refs = [f"reference_{k:03d}" for k in range(0, env.horizon + 1, 50)]
    assert list(probes) == ["hanging", "upright_still", "upright_spinning"] + refs
    assert all(v.shape == (width,) for v in probes.values())
    again = env.probe_states()
    assert all(np.array_equal(probes[k], again[k]) for k in probes)
    cos_theta = {k: (math.cos(v[0]) if kind == "raw" else v[0]) for k, v in probes.items()}
    assert cos_theta["hanging"] == -1.0 and cos_theta["upright_still"] == 1.0
    assert cos_theta["reference_000"] == -1.0                      # noiseless hanging start
    assert max(cos_theta[k] for k in refs) > 0.95                   # the swing-up reaches the upright
    assert cos_theta[refs[-1]] > 0.95
    time_col, speed_col, speed_scale = (4, 1, 1.0) if kind == "raw" else (5, 2, 10.0)
    time_scale = 1.0 if kind == "raw" else 10.0
    assert probes["upright_spinning"][speed_col] * speed_scale == 5.0
    assert probes["upright_still"][time_col] == 0.0
    assert probes["reference_050"][time_col] * time_scale == pytest.approx(0.5, abs=1e-12)
    if kind == "trig_indicators":
        np.testing.assert_array_equal(probes["upright_spinning"][6:], [1.0, 0.0])
        np.testing.assert_array_equal(probes["upright_still"][6:], [1.0, 1.0])


def test_reference_agent_runs_through_live_whatever_the_observation():
    """The registry's cartpole_reference agent acts on the true state: >= 800 per episode, the same
    returns with raw and trig observations."""
    from rvfx.agents import AGENTS, make_agent
    from rvfx.core.live import live
    returns = {}
    for obs in ("raw", "trig"):
        env = CartpoleSwingUp(CartpoleSwingUpParams(observation=obs), np.random.default_rng(7))
        agent = make_agent("cartpole_reference", AGENTS["cartpole_reference"].params(), env, None)
        returns[obs] = [row["return"] for row in live(agent, env, 2, log_every="all")["episodes"]]
    assert returns["raw"] == returns["trig"] and min(returns["raw"]) >= 800
