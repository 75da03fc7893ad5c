"""bsuite through dm_env (rvfx.envs.bsuite and rvfx.analysis.bsuite): rvfx's DeepSea is bsuite's deep_sea, bsuite's
environments run rvfx's agents on exactly the native inputs, the bsuite log is rebuilt exactly,
bsuite's deep_sea score on hand-made logs, and the bsuite_deep_sea spec runs and draws."""
import os
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

bsuite = pytest.importorskip("bsuite", reason="the extra rvfx[bsuite] is not installed: pip install -e '.[bsuite]'")
import dm_env  # noqa: E402
from bsuite import sweep  # noqa: E402
from bsuite.environments.deep_sea import DeepSea as BsuiteDeepSea  # noqa: E402
from bsuite.logging import csv_load  # noqa: E402
from bsuite.utils.wrappers import _logarithmic_logging  # noqa: E402
from cli_helpers import CONFIGS, assert_png, invoke  # noqa: E402

from rvfx.agents import AGENTS, make_agent  # noqa: E402
from rvfx.agents.neural.ensemble import td_step  # noqa: E402
from rvfx.agents.neural.ensemble_buffer import Batch  # noqa: E402
from rvfx.agents.neural.mlp import EnsembleMLP, Tape  # noqa: E402
from rvfx.agents.neural.prior_ensemble import PriorEnsemble  # noqa: E402
from rvfx.analysis import bsuite as ab  # noqa: E402
from rvfx.core.live import live, log_grid  # noqa: E402
from rvfx.envs import bsuite as eb  # noqa: E402
from rvfx.envs.deep_sea import DeepSea, DeepSeaParams  # noqa: E402
from rvfx.envs.external import BsuiteParams  # noqa: E402
from rvfx.experiment import memory  # noqa: E402


def rvfx_twin(size: int, mapping: np.ndarray) -> DeepSea:
    """rvfx DeepSea with the bsuite option (a cost on every "right") and bsuite's action mapping."""
    env = DeepSea(DeepSeaParams(size=size, move_cost="every_right"), np.random.default_rng(0))
    env.right_action = np.asarray(mapping, np.int64)
    env._right = env.right_action.tolist()
    return env


def position(obs: np.ndarray):
    """(row, column) of bsuite's one-hot observation; None for its blank terminal one."""
    hot = np.flatnonzero(obs)
    return None if len(hot) == 0 else divmod(int(hot[0]), obs.shape[0])


class RandomAgent:
    """Uniform random actions, learning nothing: cheap episodes for the logging tests."""

    def __init__(self, num_actions: int, seed: int):
        self.num_actions, self.rng = num_actions, np.random.default_rng(seed)

    def learn_from_buffer(self):
        pass

    def update_buffer(self, transition):
        pass

    def act(self, state) -> int:
        return int(self.rng.integers(self.num_actions))


# ------------------------------------------------------------------------------ the cross-check

@pytest.mark.parametrize("size", [2, 3, 5, 8, 10, 13, 20, 31, 50])
def test_rvfx_deep_sea_with_the_bsuite_option_is_bsuites_deep_sea(size):
    """Same action mapping, same action sequences (random, all-right, all-left, the optimal path):
    the same rewards, transitions, terminal steps and optimal return; bsuite's bad episodes are
    exactly the episodes in which rvfx's regret is at least 0.99 (the chest was missed)."""
    for mapping_seed in (0, 42, 7):
        theirs = BsuiteDeepSea(size, mapping_seed=mapping_seed)
        ours = rvfx_twin(size, theirs._action_mapping)
        assert ours.optimal_return == theirs._optimal_return == 0.99
        rng = np.random.default_rng(size * 100 + mapping_seed)
        sequences = [rng.integers(0, 2, size) for _ in range(60)] + [np.zeros(size, int), np.ones(size, int)]
        bad = 0
        for i, actions in enumerate(sequences + [None]):
            timestep, transition = theirs.reset(), ours.reset()
            assert position(timestep.observation) == transition.new_state == (0, 0)
            for t in range(size):
                row, col = transition.new_state
                action = int(ours.optimal_actions()[row, col]) if actions is None else int(actions[t])
                timestep, transition = theirs.step(action), ours.step(action)
                assert timestep.reward == transition.reward
                assert timestep.last() == (transition.new_state is None) == (t == size - 1)
                if not timestep.last():
                    assert position(timestep.observation) == transition.new_state
            regret = ours.optimal_return - ours.expected_return
            bad += regret >= 0.99
            assert theirs.bsuite_info()["total_bad_episodes"] == bad, i
            if actions is None:
                assert regret == pytest.approx(0.0, abs=1e-12)


def test_unrandomized_actions_agree_without_copying_the_mapping():
    with pytest.warns(UserWarning, match="debug mode"):
        theirs = BsuiteDeepSea(6, randomize_actions=False)
    ours = DeepSea(DeepSeaParams(size=6, move_cost="every_right", randomize_actions=False), np.random.default_rng(0))
    assert np.array_equal(ours.right_action, theirs._action_mapping)


@pytest.mark.parametrize("kwargs", ["{}", '{"unscaled_move_cost": 0.05}', '{"deterministic": false}'])
def test_the_adapters_optimum_is_the_one_bsuite_computes(kwargs):
    """The adapter's optimal return, from bsuite's constructor arguments (1 - unscaled_move_cost where
    deterministic), is bsuite's own; the windy deep sea has none (no regret)."""
    env = eb.BsuiteEnvironment(BsuiteParams("deep_sea/0", kwargs), np.random.default_rng(0))
    deterministic = env.kwargs.get("deterministic", True)
    assert env.optimal_return == (env.raw._optimal_return if deterministic else None)
    assert env.optimal_return in ((0.99, 0.95) if deterministic else (None,))


def deep_sea_pair(bsuite_id: str):
    env = eb.BsuiteEnvironment(BsuiteParams(bsuite_id), np.random.default_rng(0))
    return env, rvfx_twin(env.size, env.raw._action_mapping)


@pytest.mark.parametrize("algorithm, params", [("grlsvi", {}), ("psrl", {}),
                                               ("ensemble_rlsvi", {"K": 3, "batch_size": 16, "min_replay": 16}),
                                               ("dqn", {"batch_size": 16, "min_replay": 16})])
def test_bsuite_deep_sea_feeds_agents_the_native_inputs_so_tables_are_byte_identical(algorithm, params):
    """Through the adapter an agent sees rvfx DeepSea's states, layered shape and one-hot pixels
    exactly (tabular agents and the neural ones alike): the runs are the same, byte for byte."""
    tables = []
    for env in deep_sea_pair("deep_sea/0"):
        agent = make_agent(algorithm, AGENTS[algorithm][1](**params), env, np.random.default_rng(4))
        metrics = live(agent, env, 40, log_every="all")
        tables.append(pd.DataFrame(metrics["episodes"])[["episode", "return", "cum_return", "regret",
                                                          "cum_regret"]].to_csv())
    assert tables[0] == tables[1]


# ------------------------------------------------------------------------------ dm_env semantics

def test_cartpole_swingup_runs_with_flat_observations_and_no_regret():
    env = eb.BsuiteEnvironment(BsuiteParams("cartpole_swingup/0", '{"max_time": 0.3}'), np.random.default_rng(1))
    assert env.num_actions == 3 and env.observation_size == 8 and env.optimal_return is None
    agent = make_agent("dqn", AGENTS["dqn"][1](), env, np.random.default_rng(0))
    metrics = live(agent, env, 2, log_every="all")
    assert metrics["final_cum_regret"] is None
    assert [row["bsuite_episode"] for row in metrics["episodes"]] == [1, 2]
    first = env.reset()
    assert first.new_state.shape == (8,)


def test_a_dm_env_truncation_keeps_the_next_state(monkeypatch):
    env, _ = deep_sea_pair("deep_sea/0")
    env.reset()
    obs = np.zeros((10, 10), np.float32)
    obs[1, 0] = 1.0
    monkeypatch.setattr(env.env, "step", lambda action: dm_env.truncation(0.0, obs))
    transition = env.step(0)
    assert transition.truncated and transition.new_state == (1, 0) and transition.ends_episode


def test_seeds_the_bsuite_id_leaves_open_come_from_the_run_generator():
    a = eb.BsuiteEnvironment(BsuiteParams("deep_sea", '{"size": 6}'), np.random.default_rng(3))
    b = eb.BsuiteEnvironment(BsuiteParams("deep_sea", '{"size": 6}'), np.random.default_rng(3))
    assert np.array_equal(a.raw._action_mapping, b.raw._action_mapping)
    assert "mapping_seed" in a.kwargs and eb.settings("deep_sea/20")[1] == {"size": 50, "mapping_seed": 42}
    with pytest.raises(ValueError, match="not in bsuite's sweep"):
        eb.settings("deep_sea/21")


# ------------------------------------------------------------------------------ bsuite's log

@pytest.mark.parametrize("episodes", [10, 50, 100, 300, 1000, 2000, 10_000])
def test_rvfx_log_grid_logs_an_episode_between_any_two_bsuite_log_rows(episodes):
    rows = [e for e in range(1, episodes + 1) if _logarithmic_logging(e)]
    logged = log_grid(episodes)
    for a, b in zip(rows, rows[1:]):
        assert ((logged >= a) & (logged < b)).any(), (a, b)


def test_the_bsuite_log_is_rebuilt_exactly_from_the_logged_episodes():
    env = eb.BsuiteEnvironment(BsuiteParams("deep_sea", '{"size": 5, "mapping_seed": 1}'), np.random.default_rng(0))
    metrics = live(RandomAgent(2, 0), env, 2000)
    episodes = pd.DataFrame(metrics["episodes"]).assign(run_id="r")
    rebuilt = ab.bsuite_logs(episodes)
    theirs = pd.DataFrame(env.logger.rows)
    assert len(theirs) == sum(map(_logarithmic_logging, range(1, 2001)))
    assert theirs.columns.tolist() == rebuilt.columns.tolist()
    assert rebuilt.equals(theirs)
    with pytest.raises(ValueError, match="log: all"):
        ab.bsuite_logs(episodes[episodes[eb.ROWS] != 20])


def hand_made_log(size: int, bad: dict, last: int = 10_000) -> pd.DataFrame:
    """A bsuite deep_sea log on bsuite's schedule up to `last`: every episode bad except that
    total_bad_episodes is `bad[e]` at the logged episodes e given."""
    episodes = [e for e in range(1, last + 1) if _logarithmic_logging(e)]
    return pd.DataFrame({"episode": episodes, "total_bad_episodes": [bad.get(e, e) for e in episodes],
                         "size": size})


def test_bsuite_score_on_hand_made_logs():
    df = pd.concat([
        hand_made_log(10, {30: 26, 40: 30}),          # 26/30 < 0.9 at 30: solved well before 2^10 + 100
        hand_made_log(12, {5000: 4000}),              # solved at 5,000 > 2^12 + 100 = 4,196: too late
        hand_made_log(14, {100: 90, 200: 181}),       # 0.9 and 0.905, never below 0.9: never solved
        hand_made_log(16, {10: 8}),                   # below 0.9 at 10 only, then back to all bad: solved at 10
        hand_made_log(18, {}, last=3000),             # stopped early, never solved: unfinished
        hand_made_log(20, {}).pipe(lambda d: pd.concat([d, pd.DataFrame(
            {"episode": [12_000], "total_bad_episodes": [0], "size": [20]})])),   # past the budget: ignored
    ], ignore_index=True)
    solutions = ab.find_solution(df).set_index("size")
    assert solutions["episode"].to_dict() == {10: 30, 12: 5000, 14: 10_000, 16: 10, 18: 3000, 20: 10_000}
    assert solutions["solved"].to_dict() == {10: True, 12: True, 14: False, 16: True, 18: False, 20: False}
    assert solutions["finished"].to_dict() == {10: True, 12: True, 14: True, 16: True, 18: False, 20: True}
    assert ab.score(df) == pytest.approx(2 / 6)
    assert ab.score(df[df["size"] <= 12]) == 0.5
    assert ab.score(df[df["size"] == 14]) == 0.0


# ------------------------------------------------------------------------------ the bsuite_deep_sea spec

@pytest.mark.parametrize("scale, runs", [("ci", 6), ("paper", 189)])
def test_bsuite_deep_sea_spec_validates(scale, runs):
    result = invoke("validate", CONFIGS / "bsuite_deep_sea.yaml", "--scale", scale)
    assert result.exit_code == 0, result.output
    assert f"{runs} runs" in result.output


def test_bsuite_deep_sea_spec_runs_writes_bsuite_logs_and_draws(tmp_path):
    out, figs, logs = tmp_path / "results", tmp_path / "figs", tmp_path / "bsuite"
    result = invoke("run", CONFIGS / "bsuite_deep_sea.yaml", "--out", out, "--jobs", 1, "--set", "episodes=30",
                    "--set", "agents.ensemble_rlsvi.K=2",
                    *[arg for agent in ("ensemble_rlsvi", "dqn")
                      for arg in ("--set", f"agents.{agent}.batch_size=16", "--set", f"agents.{agent}.min_replay=16")])
    assert result.exit_code == 0, result.output
    written = ab.write_bsuite_logs(out, "bsuite_deep_sea", logs)
    assert len(written) == 6 and written[0].name == "bsuite_id_-_deep_sea-0.csv"
    theirs, _ = csv_load.load_bsuite(str(logs / "rlsvi" / "seed_0"))            # bsuite's own loader
    ours = ab.load_runs(out, "bsuite_deep_sea")
    ours = ours[ours["agent"] == "rlsvi"]
    assert sorted(theirs["size"].unique()) == [10, 12] and len(theirs) == len(ours) == 2 * 16
    assert theirs.sort_values(["size", "episode"])["total_bad_episodes"].tolist() == \
        ours.sort_values(["size", "episode"])["total_bad_episodes"].tolist()
    assert ab.score(theirs) == ab.score(ours)
    # bsuite's own boot_dqn logs, where present, are scored beside rvfx's agents
    boot = out / "bsuite_deep_sea" / "boot_dqn"
    boot.mkdir()
    hand_made_log(10, {12: 10}, last=30).drop(columns="size").assign(
        steps=0, total_return=0.0, episode_len=10, episode_return=0.0, denoised_return=0.0).to_csv(
        boot / ab.log_file("deep_sea/0"), index=False)
    result = invoke("plot", "bsuite_deep_sea", "--results", out, "--out", figs)
    assert result.exit_code == 0, result.output
    assert_png(figs / "bsuite_deep_sea.png")
    summary = pd.read_csv(figs / "bsuite_deep_sea_summary.csv").set_index("agent")
    assert set(summary.index) == {"rlsvi", "ensemble_rlsvi", "dqn", "boot_dqn (bsuite)"}
    assert summary.loc["boot_dqn (bsuite)", "score (mean)"] == 1.0
    sizes = pd.read_csv(figs / "bsuite_deep_sea_sizes.csv")
    boot = sizes.loc[sizes["agent"] == "boot_dqn (bsuite)", "median learning time (eq. 7.1)"]
    assert boot.tolist() == ["no regret logged"]


# ------------------------------------------------------------------------------ the bsuite_deep_sea_settings spec

def test_settings_tables_recover_known_effects_and_report_censored_runs():
    from rvfx.figures.bsuite_settings import cell_table, effects_table
    factors = ["agent.prior_scale", "agent.mask", "agent.buffer_size"]
    levels = {"agent.prior_scale": [1.0, 5.0], "agent.mask": ["bootstrap", "none"],
              "agent.buffer_size": [100000, 10000]}
    rows = []
    for a, b, c in [(a, b, c) for a in (-1, 1) for b in (-1, 1) for c in (-1, 1)]:
        for seed, wiggle in enumerate([-0.2, -0.1, 0.0, 0.1, 0.2]):     # the same spread in every cell
            log2 = 8 - 1.0 * (a > 0) + wiggle            # beta 5 halves the episode, nothing else matters
            rows.append({"seed": seed, "agent.prior_scale": a, "agent.mask": b, "agent.buffer_size": c, "size": 10,
                         "episode": int(round(2 ** log2)), "solved": True, "log2_episode": log2})
    coded = pd.DataFrame(rows)
    coded["cell"] = ["".join("+" if v > 0 else "-" for v in r) for r in coded[factors].itertuples(index=False)]
    effects = effects_table(coded, factors, levels).set_index("factor")
    assert effects.loc["A agent.prior_scale", "episode solved x (+ vs -)"] == "0.50"
    assert effects.loc["A agent.prior_scale", "> 2 s.e."] == "yes"
    assert effects.loc["B agent.mask", "effect on log2(episode solved) ± s.e."].startswith("0.00 ±")
    assert effects.loc["B agent.mask", "> 2 s.e."] == "no"
    # s = s.d. of the wiggles (0.158), s.e. = 2 s / sqrt(40) = 0.05
    assert effects.loc["C agent.buffer_size", "effect on log2(episode solved) ± s.e."] == "0.00 ± 0.05"
    coded.loc[(coded["cell"] == "---") & (coded["seed"] == 4), ["episode", "solved"]] = [1000, False]
    cells = cell_table(coded, factors, levels).set_index("cell")
    assert cells.index[0] == "---" and cells.index[-1] == "+++"                 # the paper's settings first
    assert cells.loc["---", "solved"] == "4/5" and cells.loc["---", "median episode solved"].endswith("(>=)")
    assert cells.loc["---", "episode solved per seed"].split()[-1] == ">1000"
    assert cells.loc["+++", ["agent.prior_scale", "agent.mask", "agent.buffer_size"]].tolist() == [5.0, "none", 10000]


@pytest.mark.parametrize("spec, scale, runs", [
    ("bsuite_deep_sea", "ci", 6), ("bsuite_deep_sea", "paper", 189),
    ("bsuite_deep_sea_settings", "ci", 8), ("bsuite_deep_sea_settings", "paper", 80),
    ("bsuite_cartpole_swingup", "ci", 3), ("bsuite_cartpole_swingup", "paper", 30)])
def test_bsuite_specs_validate_with_a_cpu_estimate(spec, scale, runs):
    """bsuite's deep_sea sizes and its cartpole_swingup's steps (1,001) are read from the id."""
    result = invoke("validate", CONFIGS / f"{spec}.yaml", "--scale", scale)
    assert result.exit_code == 0, result.output
    assert f"{runs} runs" in result.output and "CPU-hours by a coarse estimate" in result.output


@pytest.mark.parametrize("bsuite_id", ["cartpole_swingup/20", "cartpole_swingup/x"])
def test_a_bsuite_id_outside_its_sweep_is_refused_by_validate_in_one_line(tmp_path, bsuite_id):
    """A spec naming an id bsuite does not have fails validation with the spec line and the id, not a traceback."""
    spec = tmp_path / "bad.yaml"
    spec.write_text(f"experiment: bad\nenv:\n  name: bsuite\n  id: {bsuite_id}\nseeds: 1\nepisodes: 5\n"
                    f"agents:\n  dqn:\n    algorithm: dqn\nscales:\n  ci: {{}}\n  paper: {{}}\n")
    result = invoke("validate", spec)
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [result.output.strip()]
    assert "bad.yaml:4: env.id:" in result.output and repr(bsuite_id) in result.output


@pytest.mark.parametrize("bsuite_id", [i for i in sweep.SETTINGS if i.startswith("deep_sea/")])
def test_deep_sea_sizes_without_bsuite_are_those_bsuite_builds(bsuite_id):
    """BsuiteParams sizes deep_sea/<k> from its own table of bsuite's sweep: the table is
    bsuite's, and an episode of the environment bsuite builds lasts N steps of 2 actions on N x N."""
    params = BsuiteParams(bsuite_id)
    z = memory.sizes("grlsvi", None, params)
    env = eb.BsuiteEnvironment(params, np.random.default_rng(0))
    assert z["H"] == z["S"] == z["steps"] == sweep.SETTINGS[bsuite_id]["size"] == env.size
    assert (z["H"], z["S"], z["A"]) == env.shape and env.num_actions == 2
    assert z["inputs"] == z["keys"] == env.size ** 2
    transition, steps = env.reset(), 0
    while transition.new_state is not None:
        transition, steps = env.step(0), steps + 1
    assert steps == z["steps"]


def test_bsuite_deep_sea_settings_spec_runs_and_draws(tmp_path):
    out, figs = tmp_path / "results", tmp_path / "figs"
    result = invoke("run", CONFIGS / "bsuite_deep_sea_settings.yaml", "--out", out, "--jobs", 1,
                    "--set", "episodes=20", "--set", "agents.ensemble_rlsvi.K=2",
                    "--set", "agents.ensemble_rlsvi.batch_size=16", "--set", "agents.ensemble_rlsvi.min_replay=16")
    assert result.exit_code == 0, result.output
    result = invoke("plot", "bsuite_deep_sea_settings", "--results", out, "--out", figs)
    assert result.exit_code == 0, result.output
    assert_png(figs / "bsuite_deep_sea_settings.png")
    cells = pd.read_csv(figs / "bsuite_deep_sea_settings_cells.csv")
    assert len(cells) == 8 and set(cells["N"]) == {10} and cells["cell"].iloc[0] == "---"
    effects = pd.read_csv(figs / "bsuite_deep_sea_settings_effects.csv")
    assert effects["factor"].tolist() == ["A agent.prior_scale", "B agent.mask", "C agent.buffer_size"]


# ------------------------------------------------------------------------------ rvfx's ensemble vs bsuite's boot_dqn

REPO = CONFIGS.parent
BOOT_DQN_REFERENCE = Path(__file__).resolve().parent / "boot_dqn_reference.py"


def bsuite_venv_python() -> Path:
    """The interpreter of the venv holding bsuite[baselines_jax] (`make bsuite-venv`; RVFX_BSUITE_PYTHON
    overrides). Missing: the test skips, unless RVFX_REQUIRE_BSUITE_VENV is set (CI sets it), then fails."""
    python = Path(os.environ.get("RVFX_BSUITE_PYTHON", REPO / ".venv-bsuite" / "bin" / "python"))
    if not python.exists():
        if os.environ.get("RVFX_REQUIRE_BSUITE_VENV"):
            pytest.fail(f"{python} is missing: make bsuite-venv")
        pytest.skip(f"{python} is missing (make bsuite-venv)")
    return python


def cartpole_minibatches(steps: int, batch: int, K: int, rng: np.random.Generator) -> list[dict]:
    """`steps` minibatches as boot_dqn's replay returns them (observation (B, 1, 8), discount 0 or 1,
    mask and noise (B, K)), from bsuite's cartpole_swingup/0 under random actions; a tenth of the
    transitions made terminal (discount 0) so both branches of the target are compared."""
    env = eb.BsuiteEnvironment(BsuiteParams("cartpole_swingup/0"), np.random.default_rng(1))
    state, seen = env.reset().new_state, []
    for a in rng.integers(0, 3, 400):
        t = env.step(int(a))
        seen.append((state, int(a), t.reward, state if t.new_state is None else t.new_state))
        state = env.reset().new_state if t.new_state is None else t.new_state
    o_tm1, actions, rewards, o_t = (np.asarray(column) for column in zip(*seen))
    out = []
    for _ in range(steps):
        i = rng.integers(0, len(seen), batch)
        out.append({"o_tm1": o_tm1[i, None].astype(np.float32), "a_tm1": actions[i].astype(np.int32),
                    "r_t": rewards[i].astype(np.float32), "d_t": (rng.random(batch) > 0.1).astype(np.float32),
                    "o_t": o_t[i, None].astype(np.float32), "m_t": (rng.random((batch, K)) < 0.5).astype(np.int64),
                    "z_t": rng.standard_normal((batch, K)).astype(np.float32)})
    return out


def haiku_layout(params: list[np.ndarray], prefix: str = "") -> dict:
    """rvfx's ensemble parameters [W_1 (in, K, H), b_1 (K, H), W_l (K, in, out), b_l, ...] as per-member stacks."""
    out = {}
    for l in range(len(params) // 2):
        w = params[2 * l]
        out[f"{prefix}w{l}"] = np.ascontiguousarray(w.transpose(1, 0, 2) if l == 0 else w)
        out[f"{prefix}b{l}"] = params[2 * l + 1]
    return out


def rvfx_steps(start: dict, batches: list[dict], bootstrap: bool):
    """rvfx's PriorEnsemble (beta 5, 50-50, Adam 1e-3) from the given parameters, one td_step per minibatch:
    (mean loss over members, gradients of the trained network, its parameters after) per step."""
    K = start["w0"].shape[0]
    ens = PriorEnsemble(EnsembleMLP(8, (50, 50), 3), K, np.random.default_rng(0), prior_scale=5.0)
    for prefix, params in (("", ens.params), ("prior_", ens.prior_params), ("target_", ens.target_params)):
        for l in range(3):
            w = start[f"{prefix}w{l}"]
            params[2 * l][...] = w.transpose(1, 0, 2) if l == 0 else w
            params[2 * l + 1][...] = start[f"{prefix}b{l}"]
    captured = []
    backward = ens.net.backward

    def spy(*args, **kwargs):
        grads = backward(*args, **kwargs)
        captured.append([np.array(g) for g in grads])
        return grads

    ens.net.backward = spy
    tape, steps = Tape(), []
    for b in batches:
        weight = 2.0 * b["m_t"].T.astype(np.float32) if bootstrap else None     # Algorithm 7's 2 m
        loss = td_step(ens, tape, Batch(b["o_tm1"][:, 0], b["a_tm1"].astype(np.intp), b["r_t"],
                                        (0.99 * b["d_t"]).astype(np.float32), b["o_t"][:, 0], weight))
        steps.append((loss, haiku_layout(captured[-1]), haiku_layout([np.array(p) for p in ens.params])))
    return steps


CASES = {"masked": True, "unmasked": False}     # bootstrap masks m ~ Bernoulli(1/2) | boot_dqn's mask_prob 1


@pytest.fixture(scope="module")
def boot_dqn_reference(tmp_path_factory):
    """The same start and minibatches through rvfx and through bsuite's boot_dqn (its agent module, in the
    bsuite venv), once with bootstrap masks and once without: start parameters drawn by rvfx's
    haiku_default init, the target a perturbed copy (so that it matters), minibatches of 128 transitions:
    three steps with masks (Adam's moments carried), one without (one step from identical parameters:
    after that, eps's effect moves the two apart and a ReLU at its kink can amplify it)."""
    python = bsuite_venv_python()
    K, rng = 4, np.random.default_rng(44)
    ens = PriorEnsemble(EnsembleMLP(8, (50, 50), 3, init="haiku_default"), K, rng, prior_scale=5.0)
    start = {**haiku_layout(ens.params), **haiku_layout(ens.prior_params, "prior_")}
    for l in range(3):
        start[f"target_w{l}"] = (start[f"w{l}"] + 0.05 * rng.standard_normal(start[f"w{l}"].shape)).astype(np.float32)
        start[f"target_b{l}"] = (0.05 * rng.standard_normal(start[f"b{l}"].shape)).astype(np.float32)
    batches = {"masked": cartpole_minibatches(3, 128, K, rng), "unmasked": cartpole_minibatches(1, 128, K, rng)}
    batches["unmasked"][0]["m_t"][...] = 1
    folder = tmp_path_factory.mktemp("boot_dqn")
    np.savez(folder / "in.npz", draws=np.array(50), cases=np.array(",".join(CASES)), **start,
             **{f"{case}{key}_{i}": v for case in CASES for i, b in enumerate(batches[case]) for key, v in b.items()})
    done = subprocess.run([str(python), str(BOOT_DQN_REFERENCE), str(folder / "in.npz"), str(folder / "out.npz")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    theirs = dict(np.load(folder / "out.npz", allow_pickle=False))
    ours = {case: rvfx_steps(start, batches[case], bootstrap) for case, bootstrap in CASES.items()}
    return ours, theirs


def assert_close(ours, theirs, what):
    """float32 agreement: to 1e-4 relative, or 1e-5 of the largest entry (sums of 128 terms in another order)."""
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5 * float(np.abs(theirs).max()), err_msg=what)


def test_with_bootstrap_masks_rvfx_is_boot_dqn_loss_gradients_and_adam_steps(boot_dqn_reference):
    """Masks m ~ Bernoulli(1/2): boot_dqn's member loss mean_b m (y - Q)^2 is rvfx's 1/(2B) sum_b 2m (Q - y)^2
    (Algorithm 7's double-or-nothing weight 2m) exactly, so the loss, every gradient of every member
    (trained network; the prior's is zero in both) and the parameters after each of three Adam steps agree."""
    ours, theirs = boot_dqn_reference
    for i, (loss, grads, params) in enumerate(ours["masked"]):
        assert loss == pytest.approx(theirs[f"maskedloss_{i}"].mean(), rel=1e-5)
        assert theirs[f"maskedprior_grad_max_{i}"] == 0.0
        for key in grads:
            assert_close(grads[key], theirs[f"maskedgrad_{key}_{i}"], f"step {i} gradient {key}")
            np.testing.assert_allclose(params[key], theirs[f"masked{key}_{i}"], rtol=0, atol=1e-6,
                                       err_msg=f"step {i} {key}")


def test_without_masks_rvfx_is_half_boot_dqns_loss_and_adam_with_twice_its_epsilon(boot_dqn_reference):
    """boot_dqn's own setting (mask_prob 1, no noise): its loss mean_b (y - Q)^2 is twice rvfx's
    1/(2B) sum_b (Q - y)^2, and so is every gradient. Adam sees a loss scaled by c as eps / c: rvfx's step
    is boot_dqn's with eps 2e-8 in place of 1e-8 (equal to float precision), and differs from boot_dqn's
    own step -lr g / (|g| + eps) by lr eps |g| / ((|g| + eps)(|g| + 2 eps)) per weight (at most 0.17 lr,
    at |g| = 1.4e-8; below 1e-3 lr where |g| > 1e-5)."""
    ours, theirs = boot_dqn_reference
    (loss, grads, params), = ours["unmasked"]
    assert loss == pytest.approx(0.5 * theirs["unmaskedloss_0"].mean(), rel=1e-5)
    for key in grads:
        assert_close(2.0 * grads[key], theirs[f"unmaskedgrad_{key}_0"], f"gradient {key}")
        np.testing.assert_allclose(params[key], theirs[f"unmaskedadam2_{key}_0"], rtol=0, atol=1e-6, err_msg=key)
        gap = np.abs(params[key] - theirs[f"unmasked{key}_0"]).astype(np.float64)
        g = np.abs(theirs[f"unmaskedgrad_{key}_0"]).astype(np.float64)
        predicted = 1e-3 * 1e-8 * g / ((g + 1e-8) * (g + 2e-8))
        assert (gap <= predicted + 1e-7).all(), (key, float((gap - predicted).max()))


def test_haiku_default_init_draws_what_boot_dqn_draws(boot_dqn_reference):
    """rvfx's init haiku_default against the weights boot_dqn's own agent initialises (hk.nets.MLP's default,
    50 members): per layer, w sqrt(fan_in) has the same distribution (two-sample Kolmogorov-Smirnov,
    p > 0.001), s.d. 0.880 and bound 2 (Haiku's TruncatedNormal, not rescaled), and zero biases; Glorot's
    draws, the power check, are told apart (p < 1e-6) on the 50 x 50 layer."""
    _, theirs = boot_dqn_reference
    kurtosis = float(stats.truncnorm(-2, 2).stats(moments="k")) + 3.0
    net = EnsembleMLP(8, (50, 50), 3, init="haiku_default")
    ours = net.init(np.random.default_rng(5), 50)
    glorot = EnsembleMLP(8, (50, 50), 3).init(np.random.default_rng(5), 50)
    for l, fan_in in enumerate((8, 50, 50)):
        haiku = theirs[f"haiku_w{l}"].ravel() * np.sqrt(fan_in)
        mine = (ours[2 * l].transpose(1, 0, 2) if l == 0 else ours[2 * l]).ravel() * np.sqrt(fan_in)
        assert stats.ks_2samp(mine, haiku).pvalue > 1e-3, l
        assert np.abs(haiku).max() <= 2.0 and np.abs(mine).max() <= 2.0 + 1e-6
        # s.d. of a sample s.d. is sigma sqrt((kurtosis - 1) / (4 n)): 4 of them
        se = np.sqrt((kurtosis - 1) / (4 * haiku.size))
        assert haiku.std() == pytest.approx(stats.truncnorm(-2, 2).std(), rel=4 * se)
        assert not theirs[f"haiku_b{l}"].any() and not ours[2 * l + 1].any()
    assert stats.ks_2samp(glorot[2].ravel() * np.sqrt(50), theirs["haiku_w1"].ravel() * np.sqrt(50)).pvalue < 1e-6


# ------------------------------------------------------------------ the prior-spread diagnostic

def spread_run(prior_spread: bool, prior_scale: float = 5.0, init: str = "glorot_uniform"):
    env = eb.BsuiteEnvironment(BsuiteParams("cartpole_swingup/0", '{"max_time": 0.5}'), np.random.default_rng(2))
    params = AGENTS["ensemble_rlsvi"][1](K=5, batch_size=16, min_replay=16, prior_scale=prior_scale, mask="none",
                                         buffer_size=10_000, init=init, prior_spread=prior_spread)
    agent = make_agent("ensemble_rlsvi", params, env, np.random.default_rng(3))
    metrics = live(agent, env, 4, log_every="all")
    return pd.DataFrame(metrics["episodes"]), agent


def test_prior_spread_changes_no_result_and_is_the_members_sd_of_the_prior():
    """On vs off: the same episodes byte for byte (it draws no random number). Its rows, once at episode 1,
    are per probe state the s.d. over members of beta f(theta0_k; s, a), mean over actions, recomputed here;
    linear in beta (the prior weights are the same draws whatever beta > 0)."""
    off, _ = spread_run(False)
    on, agent = spread_run(True)
    assert off.to_csv() == on.to_csv()
    table = agent.run_tables()["diagnostics"]
    probes = agent.diagnostics.probe_names
    assert len(probes) == 39 and set(table["metric"]) == {"prior_spread"}
    assert table["episode"].eq(1).all() and table["member"].eq(-1).all() and table["probe"].tolist() == probes
    codes = np.stack([agent.rep.encode(s) for s in eb.BsuiteEnvironment(
        BsuiteParams("cartpole_swingup/0"), np.random.default_rng(0)).probe_states().values()])
    prior = 5.0 * np.stack([agent.net.forward_member(agent.ensemble.prior_params, k, codes) for k in range(5)])
    np.testing.assert_allclose(table["value"], prior.astype(np.float64).std(axis=0).mean(axis=1), rtol=1e-5)
    _, weak = spread_run(True, prior_scale=1.0)
    np.testing.assert_allclose(table["value"], 5.0 * weak.run_tables()["diagnostics"]["value"], rtol=1e-5)


def test_bsuite_cartpole_probe_states_read_bsuites_observation_and_leave_the_state():
    env = eb.BsuiteEnvironment(BsuiteParams("cartpole_swingup/0"), np.random.default_rng(0))
    env.reset()
    before = env.raw._state
    probes = env.probe_states()
    assert env.raw._state == before
    np.testing.assert_allclose(probes["hanging"], [0, 0, 0, -1, 0, 0, 1, 1], atol=1e-7)       # sin, cos of pi
    np.testing.assert_allclose(probes["upright_spinning"], [0, 0, 0, 1, 5, 0, 1, -1], atol=1e-7)
    assert probes["grid_theta0.00_thetadot-2_x2"][[0, 6, 7]].tolist() == pytest.approx([2 / 3, -1, -1])
    assert eb.BsuiteEnvironment(BsuiteParams("deep_sea/0"), np.random.default_rng(0)).probe_states() == {}


# ------------------------------------------------------------------ the bsuite_cartpole_swingup spec

def swingup_log(returns) -> pd.DataFrame:
    """A bsuite cartpole_swingup log with a row every episode, as its Logging wrapper writes it."""
    returns = np.asarray(returns, float)
    return pd.DataFrame({"steps": 1001 * np.arange(1, len(returns) + 1), "episode": np.arange(1, len(returns) + 1),
                         "total_return": np.cumsum(returns), "episode_len": 1001, "episode_return": returns,
                         "raw_return": np.cumsum(returns), "total_upright": 0.0,
                         "best_episode": np.maximum.accumulate(np.maximum(returns, 0.0))})


@pytest.mark.parametrize("mean", [-20.0, 60.0, 250.0, 900.0])
def test_swingup_score_is_bsuites_own(mean):
    from bsuite.experiments.cartpole_swingup import analysis
    returns = np.random.default_rng(int(mean) + 100).normal(mean, 80.0, 300)
    log = swingup_log(returns)
    theirs = analysis.score(log.assign(height_threshold=0.0, bsuite_id="cartpole_swingup/0"))
    assert ab.swingup_score(log) == pytest.approx(theirs, abs=1e-12)
    first = np.flatnonzero(returns > 100)
    readouts = ab.swingup_readouts(returns, log)
    assert readouts["successes"] == len(first) and readouts["episodes"] == 300
    assert readouts["first_success"] == (first[0] + 1 if len(first) else pytest.approx(np.nan, nan_ok=True))
    with pytest.raises(ab.IncompleteLog, match="here: bsuite did not log every episode"):
        ab.episode_log(log.iloc[::2], "here")
    with pytest.raises(ab.IncompleteLog, match="no best_episode"):
        ab.episode_log(log.drop(columns="best_episode"), "here")


def test_bsuite_cartpole_swingup_runs_and_judges_rvfx_against_boot_dqns_logs(tmp_path):
    """CI scale, beside hand-made boot_dqn logs (every episode, bsuite's columns) of 5 seeds whose first
    episode over 100 is 2, 2, 3, 3, 3: its median 3 and CI [2, 3]; rvfx's runs of 3 episodes never pass 100,
    so by the stated rule they lag. A boot_dqn log on bsuite's default schedule is refused."""
    out, figs = tmp_path / "results", tmp_path / "figs"
    result = invoke("run", CONFIGS / "bsuite_cartpole_swingup.yaml", "--out", out, "--jobs", 1)
    assert result.exit_code == 0, result.output
    boot = out / "bsuite_cartpole_swingup" / "boot_dqn"
    for seed, first in enumerate([2, 2, 3, 3, 3]):
        (boot / f"seed_{seed}").mkdir(parents=True)
        returns = [-5.0] * (first - 1) + [150.0] * (4 - first)
        swingup_log(returns).to_csv(boot / f"seed_{seed}" / ab.log_file("cartpole_swingup/0"), index=False)
    result = invoke("plot", "bsuite_cartpole_swingup", "--results", out, "--out", figs)
    assert result.exit_code == 0, result.output
    assert_png(figs / "bsuite_cartpole_swingup.png")
    summary = pd.read_csv(figs / "bsuite_cartpole_swingup_summary.csv").set_index("agent")
    assert summary.loc["boot_dqn (bsuite)", "first episode > 100: median [95% CI]"] == "3 [2, 3]"
    assert summary.loc["boot_dqn (bsuite)", "episodes > 100 (mean ± s.e.)"] == "1.4 ± 0.2"
    assert summary.loc[["ensemble_glorot", "ensemble_haiku", "dqn"], "verdict vs boot_dqn"].tolist() == ["lags"] * 3
    assert summary.loc["ensemble_glorot", "prior spread on the probe states (mean)"] > 0
    runs = pd.read_csv(figs / "bsuite_cartpole_swingup_runs.csv")
    assert (runs.loc[runs["agent"] != "boot_dqn (bsuite)", "episodes"] == 3).all()
    sparse = swingup_log([150.0] * 20)
    sparse[sparse["episode"].isin([1, 2, 3, 10, 20])].to_csv(boot / "seed_0" / ab.log_file("cartpole_swingup/0"),
                                                            index=False)
    result = invoke("plot", "bsuite_cartpole_swingup", "--results", out, "--out", figs)
    assert result.exit_code == 2 and "seed_0 (cartpole_swingup/0): bsuite did not log every episode" in result.output
