"""Gymnasium in both directions (rvfx.interop.gym): rvfx's environments pass Gymnasium's checker and
match the native ones step for step; Gymnasium environments run rvfx's agents, with the
truncation rule; the MountainCar spec runs and its figure renders."""
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

gymnasium = pytest.importorskip("gymnasium", reason="the extra rvfx[gym] is not installed: pip install -e '.[gym]'")

from cli_helpers import CONFIGS, assert_png, invoke  # noqa: E402
from gymnasium.utils.env_checker import check_env  # noqa: E402

from rvfx.agents import AGENTS, make_agent  # noqa: E402
from rvfx.core.live import live  # noqa: E402
from rvfx.envs.cartpole.dynamics import CartpoleSwingUp, CartpoleSwingUpParams  # noqa: E402
from rvfx.envs.deep_sea import DeepSea, DeepSeaParams  # noqa: E402
from rvfx.envs.external import GYM_SIZES, GymParams  # noqa: E402
from rvfx.envs.gym import GymEnvironment, gym_seed  # noqa: E402
from rvfx.experiment import memory  # noqa: E402
from rvfx.experiment.params import SpecError, build  # noqa: E402


def adapter(env_id: str, seed: int, **kwargs) -> GymEnvironment:
    return GymEnvironment(GymParams(env_id, json.dumps(kwargs)), np.random.default_rng(seed))


def native_rng(seed: int) -> np.random.Generator:
    """The generator whose native environment is the instance `adapter(..., seed)` plays."""
    return np.random.default_rng(gym_seed(np.random.default_rng(seed)))


# ------------------------------------------------------------------------------ rvfx -> Gymnasium

@pytest.mark.parametrize("env_id, kwargs", [
    ("rvfx/DeepSea-v0", {}), ("rvfx/DeepSea-v0", {"size": 5, "treasure": False, "reward_noise": 1.0}),
    ("rvfx/DeepSea-v0", {"size": 3, "move_cost": "every_right", "randomize_actions": False}),
    ("rvfx/DeepSea-v0", {"size": 4, "observation": "index"}),
    ("rvfx/CartpoleSwingUp-v0", {}), ("rvfx/CartpoleSwingUp-v0", {"observation": "trig_indicators"})])
@pytest.mark.filterwarnings("ignore:.*A Box observation space m..imum value is")   # cartpole's: unbounded
def test_registered_environments_pass_gymnasiums_checker(env_id, kwargs):
    env = gymnasium.make(env_id, **kwargs)
    check_env(env.unwrapped, skip_render_check=True)
    obs, info = env.reset(seed=1)
    assert env.observation_space.contains(obs)


def test_bad_keyword_arguments_name_the_parameter():
    with pytest.raises(SpecError, match="size: must be >= 2"):
        gymnasium.make("rvfx/DeepSea-v0", size=1)


@pytest.mark.parametrize("code", [
    "import gymnasium; env = gymnasium.make('rvfx:rvfx/DeepSea-v0', size=4)",     # rvfx imported by make
    "import rvfx, sys; assert 'gymnasium' not in sys.modules; import gymnasium; "  # registered by the hook
    "env = gymnasium.make('rvfx/CartpoleSwingUp-v0')",
    "import gymnasium, rvfx; env = gymnasium.make('rvfx/DeepSea-v0')",             # registered at once
])
def test_rvfx_registers_its_environments_without_importing_gymnasium_itself(code):
    done = subprocess.run([sys.executable, "-c", code + "; env.reset(seed=0); print('ok')"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_gym_deep_sea_is_the_native_instance_for_the_same_seed():
    env = gymnasium.make("rvfx/DeepSea-v0", size=6)
    env.reset(seed=7)
    native = DeepSea(DeepSeaParams(size=6), np.random.default_rng(7))
    assert np.array_equal(env.unwrapped.env.right_action, native.right_action)


@pytest.mark.parametrize("observation", ["image", "index"])
@pytest.mark.parametrize("size, kwargs", [(4, {}), (10, {}), (7, {"treasure": False}),
                                          (12, {"reward_noise": 0.5, "move_cost": "every_right"})])
def test_deep_sea_through_the_adapter_is_native_deep_sea(size, kwargs, observation):
    """Same seeds and actions: observations (the one-hot image of the native state, or its index),
    rewards, terminal flags and regret agree exactly, over episodes of random actions and the optimal one."""
    for seed in range(5):
        gym_env = adapter("rvfx/DeepSea-v0", seed, size=size, observation=observation, **kwargs)
        native = DeepSea(DeepSeaParams(size=size, **kwargs), native_rng(seed))
        assert gym_env.optimal_return == native.optimal_return
        actions = np.random.default_rng(100 + seed)
        for episode in range(30):
            optimal = native.optimal_actions() if episode == 0 else None
            a, b = gym_env.reset(), native.reset()
            while not b.ends_episode:
                index = b.new_state[0] * size + b.new_state[1]
                assert (a.new_state == index if observation == "index"
                        else np.array_equal(a.new_state, np.eye(size * size)[index]))
                act = int(optimal[b.new_state]) if optimal is not None else int(actions.integers(2))
                a, b = gym_env.step(act), native.step(act)
                assert a.reward == b.reward and a.action == b.action and a.timestep == b.timestep
                assert (a.new_state is None) == (b.new_state is None) and not a.truncated
            assert a.new_state is None
            regret = gym_env.optimal_return - gym_env.expected_return
            assert regret == native.optimal_return - native.expected_return
            if optimal is not None:
                assert regret == pytest.approx(0.0, abs=1e-12)


def neural_agent(algorithm: str, env, seed: int, **params):
    defaults = {"K": 3} if algorithm == "ensemble_rlsvi" else {}
    p = AGENTS[algorithm][1](**{**defaults, "batch_size": 16, "min_replay": 16, **params})
    return make_agent(algorithm, p, env, np.random.default_rng(seed))


@pytest.mark.parametrize("algorithm", ["ensemble_rlsvi", "dqn"])
@pytest.mark.parametrize("env_id, kwargs, native", [
    ("rvfx/CartpoleSwingUp-v0", {"max_time": 0.5},
     lambda rng: CartpoleSwingUp(CartpoleSwingUpParams(max_time=0.5), rng)),
    ("rvfx/DeepSea-v0", {"size": 6, "observation": "index"}, lambda rng: DeepSea(DeepSeaParams(size=6), rng))])
def test_where_the_adapter_feeds_the_native_inputs_the_tables_are_byte_identical(algorithm, env_id, kwargs, native):
    """The neural agents read exactly the native inputs on cartpole (its unbounded Box passes
    unchanged) and on deep sea's index observation (one-hot, as the native pixels): same tables."""
    tables = []
    for env in (adapter(env_id, 3, **kwargs), native(native_rng(3))):
        metrics = live(neural_agent(algorithm, env, 9), env, 12, log_every="all")
        tables.append(pd.DataFrame(metrics["episodes"])[["episode", "return", "cum_return", "regret"]].to_csv())
    assert tables[0] == tables[1]


def test_ensemble_rlsvi_learns_deep_sea_through_the_adapter_as_natively():
    """Deep sea N=10, index observations: a run that learns (eq. 7.1, at episode 147 of 600) is,
    through the adapter, the native run episode for episode (same inputs, same draws: equality, not
    a statistical match), so it learns at the same episode. One seed: equality is exact, and that
    ensemble RLSVI learns deep sea is tests/test_ensemble.py's. Through the image observation the
    first layer's input is dense, so Adam moves every row of it, not only the rows seen as with
    one-hot inputs: another algorithm (README). A smaller ensemble than the paper's (K=10, minibatch 32)."""
    runs, tables = [], []
    for env in (adapter("rvfx/DeepSea-v0", 2, size=10, observation="index"),
                DeepSea(DeepSeaParams(size=10), native_rng(2))):
        agent = neural_agent("ensemble_rlsvi", env, 102, K=10, batch_size=32, min_replay=32)
        runs.append(live(agent, env, 600, stop_at_learning=True, log_every="all"))
        tables.append(pd.DataFrame(runs[-1]["episodes"])[["episode", "return", "cum_return", "regret", "cum_regret"]])
    assert runs[1]["learning_time"] == 147 and runs[0]["learning_time"] == runs[1]["learning_time"]
    assert tables[0].equals(tables[1])                # the adapter adds its own columns (terminated, steps)


# ------------------------------------------------------------------------------ Gymnasium -> rvfx

@pytest.mark.parametrize("time_in_observation", [False, True])
def test_a_time_limit_truncation_is_terminal_only_when_time_is_in_the_observation(time_in_observation):
    env = GymEnvironment(GymParams("MountainCar-v0", max_episode_steps=5,
                                   time_in_observation=time_in_observation), np.random.default_rng(0))
    agent = make_agent("ensemble_rlsvi", AGENTS["ensemble_rlsvi"][1](K=2, min_replay=100), env,
                       np.random.default_rng(0))
    transitions = [env.reset()]
    while not transitions[-1].ends_episode:
        transitions.append(env.step(0))
        agent.update_buffer(transitions[-1])
    last = transitions[-1]
    assert len(transitions) == 6 and last.timestep == 4 and env.episode_metrics() == {"terminated": 0, "steps": 5}
    if time_in_observation:
        assert last.new_state is None and not last.truncated                 # a terminal state
        assert [t.new_state[-1] for t in transitions[:-1]] == [0.0, 0.2, 0.4, 0.6, 0.8]
        assert agent.buffer.discount[4] == 0.0                               # no bootstrap
    else:
        assert last.truncated and last.new_state is not None and len(last.new_state) == 2
        assert agent.buffer.discount[4] == agent.params.gamma                # bootstraps from s'
    assert (agent.buffer.discount[:4] == agent.params.gamma).all()
    assert env.optimal_return is None


def test_box_bounds_scale_network_inputs_to_the_unit_interval():
    env = GymEnvironment(GymParams("MountainCar-v0"), np.random.default_rng(0))
    rep = env.representation
    assert env.observation_size == 2 and env.cap == 200
    assert np.allclose(rep.encode([-1.2, -0.07]), 0.0, atol=1e-6) and np.allclose(rep.encode([0.6, 0.07]), 1.0)
    image = adapter("rvfx/DeepSea-v0", 0, size=3).representation
    one_hot = np.eye(9)[4]
    assert np.array_equal(image.encode(one_hot), one_hot.astype(np.float32))


def test_unsupported_spaces_and_bad_specs_are_named():
    with pytest.raises(TypeError, match="discrete actions and a Box or Discrete observation"):
        GymEnvironment(GymParams("Pendulum-v1"), np.random.default_rng(0))
    with pytest.raises(ValueError, match="time can be put in a Box observation"):
        GymEnvironment(GymParams("FrozenLake-v1", time_in_observation=True), np.random.default_rng(0))
    frozen = GymEnvironment(GymParams("FrozenLake-v1"), np.random.default_rng(0))
    assert frozen.representation.input_dim == 16 and frozen.reset().new_state == 0
    with pytest.raises(ValueError, match="kwargs: expected a JSON object"):
        GymParams(kwargs="[1]")
    with pytest.raises(SpecError, match="env: kwargs: not JSON"):
        build(GymParams, {"kwargs": "{1"}, "env")


# ------------------------------------------------------------------------------ the MountainCar spec

@pytest.mark.parametrize("scale", ["ci", "paper"])
def test_mountaincar_spec_validates(scale):
    result = invoke("validate", CONFIGS / "mountaincar.yaml", "--scale", scale)
    assert result.exit_code == 0, result.output
    assert "CPU-hours by a coarse estimate" in result.output


@pytest.mark.parametrize("env_id", sorted(GYM_SIZES))
@pytest.mark.parametrize("time_in_observation", [False, True])
def test_gym_sizes_without_gymnasium_are_those_gymnasium_builds(env_id, time_in_observation):
    """GymParams sizes these ids from its own table: the registered cap, the network
    input width and the actions of the environment GymEnvironment builds."""
    params = GymParams(env_id, time_in_observation=time_in_observation)
    z = memory.sizes("dqn", AGENTS["dqn"][1](), params)
    env = GymEnvironment(params, np.random.default_rng(0))
    assert z["steps"] == gymnasium.spec(env_id).max_episode_steps == env.cap
    assert z["inputs"] == env.representation.input_dim and z["A"] == env.num_actions and z["keys"] == 0


def test_mountaincar_spec_runs_and_draws(tmp_path):
    out, figs = tmp_path / "results", tmp_path / "figs"
    result = invoke("run", CONFIGS / "mountaincar.yaml", "--out", out, "--jobs", 1, "--set", "seeds=2",
                    "--set", "episodes=3", "--set", "env.max_episode_steps=40",
                    *[arg for agent in ("ensemble_rlsvi", "dqn")
                      for arg in ("--set", f"agents.{agent}.batch_size=16", "--set", f"agents.{agent}.min_replay=16")])
    assert result.exit_code == 0, result.output
    eps = pd.read_csv(out / "mountaincar" / "episodes.csv")
    assert len(eps) == 2 * 2 * 3 and set(eps["steps"]) <= set(range(1, 41))
    result = invoke("plot", "mountaincar", "--results", out, "--out", figs)
    assert result.exit_code == 0, result.output
    assert_png(figs / "mountaincar.png")
    table = pd.read_csv(figs / "mountaincar_summary.csv")
    assert set(table["agent"]) == {"ensemble_rlsvi", "dqn"}
