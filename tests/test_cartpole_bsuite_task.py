"""rvfx's native cartpole at `bsuite_settings(n)` is bsuite 0.3.6's cartpole_swingup/n: from the same start
state, under the same actions, the same states (to float64 round-off), rewards, termination step and
observations as bsuite's own environment through rvfx's `bsuite` kind; the preset is bsuite's sweep;
the new parameters leave the paper's task and its run ids as they were; and the bridge spec
(configs/cartpole_bridge.yaml) walks from bsuite's task to the paper's one documented change per arm.

Why round-off and not bit-equality: the Euler step groups two products differently. bsuite computes
the θ̇² term of τ as (m l/2) · θ̇² · sin θ, rvfx as ((m l/2) · θ̇) · θ̇ · sin θ, and the denominator's
m cos²θ / (m + M) as (m · cos²θ) / (m + M), rvfx as (m / (m + M)) · cos θ · cos θ (`physics_constants`
folds m / (m + M) into one constant). Each is one rounding apart, ~1e-16 relative, and changing rvfx's
grouping would change every cartpole result rvfx has made; everything else (constants, the order of the
updates, positions advanced with the old velocities, θ wrapped with the same remainder, the clock of
1,001 steps at max_time 10, the float32 observation, the cost 0.01 · 10 = 0.1 exactly) is bsuite's.
"""
import dataclasses
import inspect
import math

import numpy as np
import pytest
import yaml
from cli_helpers import CONFIGS, invoke

from rvfx.analysis.bridge import ARMS
from rvfx.envs.cartpole.dynamics import CartpoleSwingUp, CartpoleSwingUpBatch
from rvfx.envs.cartpole.physics import CartpoleSwingUpParams, bsuite_settings, upright
from rvfx.experiment.spec import load_spec, recorded_values

NEW_FIELDS = ("x_bound", "x_dot_bounded", "strict_bounds", "terminate_x")
LEVELS = (0, 5, 10)
STATE_TOLERANCE = 1e-9       # measured: at most 6.7e-15 apart over these episodes (round-off, see above)


def bsuite_kind(level: int):
    pytest.importorskip("bsuite", reason="the extra rvfx[bsuite] is not installed: pip install -e '.[bsuite]'")
    from rvfx.envs.bsuite import BsuiteEnvironment
    from rvfx.envs.external import BsuiteParams
    return BsuiteEnvironment(BsuiteParams(f"cartpole_swingup/{level}"), np.random.default_rng(level))


def episodes():
    """(start state (θ, θ̇, x, ẋ) or None for bsuite's own reset, action probabilities, seed): hanging
    starts under uniform, still-ish and right-biased actions (the episode ends by time or by |x| > 3),
    and upright starts (the reward box entered, then left as the pole falls)."""
    yield None, (1 / 3, 1 / 3, 1 / 3), 0
    yield None, (0.15, 0.7, 0.15), 1          # the cart stays on the track: the episode ends at t > 10
    yield None, (0.05, 0.15, 0.8), 2          # pushed off the track: ends at |x| > 3
    yield (0.02, -0.3, 0.1, 0.2), (1 / 3, 1 / 3, 1 / 3), 3
    yield (2 * math.pi - 0.1, 0.5, -0.4, 0.0), (0.3, 0.4, 0.3), 4
    yield (0.3, -0.9, 0.45, -0.5), (0.1, 0.8, 0.1), 5


def within_one_float32_ulp(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.all(np.abs(a - b) <= np.spacing(np.abs(b).astype(np.float32)).astype(np.float64)))


@pytest.mark.parametrize("level", LEVELS)
def test_native_env_at_bsuite_settings_is_bsuites_cartpole_swingup(level):
    theirs = bsuite_kind(level)
    raw = theirs.raw                                                   # bsuite's CartpoleSwingup itself
    ours = CartpoleSwingUp(CartpoleSwingUpParams(**bsuite_settings(level)), np.random.default_rng(0))
    assert ours.observation_size == theirs.observation_size == 8
    ends, rewarded, worst, inexact = set(), 0, 0.0, 0
    for start, probs, seed in episodes():
        first = theirs.reset()
        if start is not None:                                          # bsuite's state, then its observation
            theta, theta_dot, x, x_dot = start
            raw._state = raw._state._replace(theta=theta, theta_dot=theta_dot, x=x, x_dot=x_dot, time_elapsed=0.0)
            first = first._replace(new_state=theirs.observe(raw.observation))
        s = raw._state
        ours.reset()
        obs = ours.set_state(s.theta, s.theta_dot, s.x, s.x_dot, k=0)
        np.testing.assert_array_equal(obs, first.new_state)           # the start's observation, exactly
        rng = np.random.default_rng(100 + seed)
        for k in range(2000):
            action = int(rng.choice(3, p=probs))
            a, b = ours.step(action), theirs.step(action)
            s = raw._state
            assert (a.timestep, a.action, a.truncated) == (b.timestep, b.action, b.truncated) == (k, action, False)
            assert a.reward == b.reward, (level, seed, k)               # the box and the cost, exactly
            rewarded += a.reward > 0.5
            gap = np.abs(np.subtract(ours.state, (s.theta, s.theta_dot, s.x, s.x_dot)))
            worst = max(worst, float(gap.max()))
            assert gap.max() <= STATE_TOLERANCE, (level, seed, k, gap)
            assert (a.new_state is None) == (b.new_state is None), (level, seed, k)
            if a.new_state is None:
                ends.add("x" if abs(s.x) > 3 else "time")
                assert abs(s.x) > 3 or (k + 1 == 1001 and s.time_elapsed > 10)   # off the track, or 1,001 steps
                break
            # float32 values, the indicators exactly; the rest at most one float32 rounding apart
            np.testing.assert_array_equal(a.new_state[6:], b.new_state[6:])
            assert within_one_float32_ulp(a.new_state, b.new_state), (level, seed, k)
            inexact += not np.array_equal(a.new_state, b.new_state)
        else:
            pytest.fail("no episode end")
        assert ours.expected_return == pytest.approx(theirs.expected_return, abs=1e-9)
    assert ends == {"x", "time"} and rewarded > 0, (ends, rewarded)
    assert inexact == 0, f"{inexact} observations a float32 rounding apart (states {worst:.1e} apart)"


def test_the_preset_is_bsuites_sweep_and_defaults():
    pytest.importorskip("bsuite", reason="the extra rvfx[bsuite] is not installed: pip install -e '.[bsuite]'")
    from bsuite import sweep
    from bsuite.experiments.cartpole_swingup.cartpole_swingup import CartpoleSwingup

    defaults = {k: v.default for k, v in inspect.signature(CartpoleSwingup).parameters.items()}
    for n in range(20):
        p = CartpoleSwingUpParams(**bsuite_settings(n))
        theirs = {**defaults, **sweep.SETTINGS[f"cartpole_swingup/{n}"]}
        assert p.upright_cos == theirs["height_threshold"] and p.x_bound == theirs["x_reward_threshold"]
        assert p.steady_bound == theirs["theta_dot_threshold"] and p.terminate_x == theirs["x_threshold"]
        assert p.action_cost * p.force == theirs["move_cost"]                 # 0.01 * 10.0 == 0.1 in float64
        assert (p.dt, p.max_time, p.init_noise) == (theirs["timescale"], theirs["max_time"], theirs["init_range"])
        assert p.start_angle == math.pi and p.tau_pole_mass and p.wrap_theta
        assert (p.strict_bounds, p.x_dot_bounded, p.observation) == (True, False, "bsuite")
    env = CartpoleSwingup()
    cfg = env._cartpole_config
    p = CartpoleSwingUpParams()
    assert (cfg.mass_cart, cfg.mass_pole, cfg.length, cfg.force_mag, cfg.gravity) == \
        (p.mass_cart, p.mass_pole, p.length / 2, p.force, p.gravity)
    with pytest.raises(ValueError, match="levels 0"):
        bsuite_settings(20)


def test_bsuites_reward_box_at_its_boundaries():
    """Strict bounds on |θ̇| and |x| (the x bound its own), no ẋ condition; the paper's box unchanged."""
    p = CartpoleSwingUpParams(**bsuite_settings(5))         # cos θ > 0.25, |x| < 0.75, |θ̇| < 1
    assert upright(0.26, 0.99, 0.74, 50.0, p)               # any ẋ
    assert not upright(0.25, 0.0, 0.0, 0.0, p)
    assert not upright(0.9, 1.0, 0.0, 0.0, p) and not upright(0.9, -1.0, 0.0, 0.0, p)
    assert not upright(0.9, 0.0, 0.75, 0.0, p) and not upright(0.9, 0.0, -0.75, 0.0, p)
    assert upright(0.9, 0.0, 0.7499, 0.0, p)
    paper = CartpoleSwingUpParams()
    assert upright(0.96, 1.0, -1.0, 1.0, paper) and not upright(0.96, 0.0, 0.0, 1.01, paper)
    assert not upright(0.95, 0.0, 0.0, 0.0, paper)
    # each field on its own, over arrays
    c, td, x, xd = (np.array(v) for v in ([0.96, 0.96, 0.96, 0.96], [1.0, 0.5, 0.5, 0.5],
                                          [0.5, 0.5, 0.8, 0.5], [0.0, 0.0, 0.0, 2.0]))
    np.testing.assert_array_equal(upright(c, td, x, xd, CartpoleSwingUpParams(strict_bounds=True)), [0, 1, 1, 0])
    np.testing.assert_array_equal(upright(c, td, x, xd, CartpoleSwingUpParams(x_bound=0.7)), [1, 1, 0, 0])
    np.testing.assert_array_equal(upright(c, td, x, xd, CartpoleSwingUpParams(x_dot_bounded=False)), [1, 1, 1, 1])


def test_new_parameters_at_their_defaults_change_no_run_id_and_no_step():
    """Added later: a default run's identity does not hold them, so no existing run id changes, and
    the default env steps as before (rails, no early end, the paper's box)."""
    ident = recorded_values(CartpoleSwingUpParams())[0]
    assert not set(NEW_FIELDS) & set(ident)
    assert set(ident) == {f.name for f in dataclasses.fields(CartpoleSwingUpParams)} - set(NEW_FIELDS) - \
        {"start_angle", "observation"}
    assert set(recorded_values(CartpoleSwingUpParams(terminate_x=3.0))[0]) & set(NEW_FIELDS) == {"terminate_x"}
    env = CartpoleSwingUp(CartpoleSwingUpParams(), np.random.default_rng(0))
    env.reset()
    env.set_state(math.pi, 0.0, 4.99, 3.0, k=0)
    tr = env.step(2)
    assert env.state[2] == 5.0 and env.state[3] == 0.0 and tr.new_state is not None   # held on the rail


def test_terminate_x_ends_the_episode_without_rails_and_bsuite_observation_needs_it():
    p = CartpoleSwingUpParams(terminate_x=3.0)
    env = CartpoleSwingUp(p, np.random.default_rng(0))
    env.reset()
    env.set_state(math.pi, 0.0, 2.99, 2.0, k=0)
    tr = env.step(1)
    assert tr.new_state is None and env.state[2] == pytest.approx(3.01) and env.state[3] > 0  # no rail
    env.reset()
    env.set_state(math.pi, 0.0, 2.95, 2.0, k=0)
    assert env.step(1).new_state is not None                  # |x| = 2.97 <= 3: goes on
    with pytest.raises(ValueError, match="terminate_x"):
        CartpoleSwingUpParams(observation="bsuite")
    with pytest.raises(ValueError, match="lock step"):
        CartpoleSwingUpBatch(p, [np.random.default_rng(0)])
    result = invoke("validate", CONFIGS / "cartpole_rlsvi.yaml", "--set", "env.observation=bsuite")
    assert result.exit_code != 0 and "set terminate_x" in result.output


def test_the_batch_env_follows_the_new_reward_fields():
    """The batch env supports the reward-box fields (not terminate_x, refused above): cart i's rewards
    are the single env's."""
    p = CartpoleSwingUpParams(x_bound=0.5, x_dot_bounded=False, strict_bounds=True, upright_cos=0.0,
                              start_angle=0.0)
    n = 40
    batch = CartpoleSwingUpBatch(p, [np.random.default_rng(i) for i in range(n)])
    singles = [CartpoleSwingUp(p, np.random.default_rng(i)) for i in range(n)]
    batch.reset()
    for e in singles:
        e.reset()
    rng = np.random.default_rng(7)
    total = np.zeros(n)
    for _ in range(80):
        acts = rng.integers(0, 3, n)
        _, reward, _ = batch.step(acts)
        total += reward
        np.testing.assert_allclose(reward, [e.step(int(a)).reward for e, a in zip(singles, acts)], atol=1e-12)
    assert 0 < np.sum(total > 0) and np.any(np.abs(batch.state[3]) > 1)  # rewards, with |ẋ| > 1 allowed


def test_the_gymnasium_adapter_takes_the_preset():
    """rvfx/CartpoleSwingUp-v0 with bsuite_settings(0): bsuite's 8 values, `terminated` once |x| > 3."""
    gymnasium = pytest.importorskip("gymnasium", reason="the extra rvfx[gym] is not installed")
    import rvfx  # noqa: F401  (registers the environments)

    env = gymnasium.make("rvfx/CartpoleSwingUp-v0", **bsuite_settings(0))
    obs, _ = env.reset(seed=1)
    assert obs.shape == (8,) and np.all(obs.astype(np.float32) == obs) and obs[5] == 0.0
    steps, terminated, truncated = 0, False, False
    while not (terminated or truncated):
        obs, _, terminated, truncated, _ = env.step(2)
        steps += 1
    assert terminated and not truncated and steps < 1001 and obs[0] > 1.0 and obs[6] == -1.0


# ------------------------------------------------------------------ the bridge spec

BRIDGE = CONFIGS / "cartpole_bridge.yaml"
ORDER = [  # (arm, what it changes from the arm before): the spec's order
    ("bsuite0", {}),
    ("xdot", {"env.x_dot_bounded": True}),
    ("upright95", {"env.upright_cos": 0.95, "env.x_bound": 0.0, "env.strict_bounds": False}),
    ("raw_obs", {"env.observation": "raw"}),
    ("rails", {"env.terminate_x": 0.0}),
    ("cost", {"env.action_cost": 0.001}),
    ("glorot", {"agent.init": "glorot_uniform"}),
]


@pytest.mark.parametrize("scale", ["ci", "paper"])
def test_the_bridge_walks_from_bsuites_task_to_the_papers_one_change_per_arm(scale):
    exp = load_spec(str(BRIDGE), scale, allow_long=True)
    first = {}
    for r in exp.runs:
        first.setdefault(r.agent, r)
    assert list(first) == [arm for arm, _ in ORDER]
    settings = {arm: {**{f"env.{k}": v for k, v in r.settings["env"].items()},
                      **{f"agent.{k}": v for k, v in r.settings["agent"].items()}} for arm, r in first.items()}
    base = settings["bsuite0"]
    bsuite = {f"env.{k}": v for k, v in bsuite_settings(0).items()}
    assert {k: base[k] for k in bsuite} == bsuite
    if scale == "paper":   # the paper's task, ci shortens the episodes
        assert {k[4:]: v for k, v in settings["glorot"].items() if k.startswith("env.")} == \
            dataclasses.asdict(CartpoleSwingUpParams())
    for (before, _), (arm, change) in zip(ORDER, ORDER[1:]):
        diff = {k: v for k, v in settings[arm].items() if settings[before][k] != v}
        assert diff == change, arm
    head = yaml.safe_load(BRIDGE.read_text())
    assert head["seeds"] == 5 and head["episodes"] == 300 and head["figures"] == ["cartpole_bridge"]
    assert list(ARMS) == [arm for arm, _ in ORDER]        # the figure reads the arms in the spec's order
    assert invoke("validate", BRIDGE, "--scale", scale).exit_code == 0
