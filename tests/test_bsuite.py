"""bsuite through dm_env (rvfx.envs.bsuite and rvfx.analysis.bsuite): rvfx's DeepSea is bsuite's deep_sea, bsuite's
environments run rvfx's agents on exactly the native inputs, the bsuite log is rebuilt exactly,
bsuite's deep_sea score on hand-made logs, and the bsuite_deep_sea spec runs and draws."""
import dm_env
import numpy as np
import pandas as pd
import pytest

bsuite = pytest.importorskip("bsuite", reason="the extra rvfx[bsuite] is not installed: pip install -e '.[bsuite]'")

from bsuite.environments.deep_sea import DeepSea as BsuiteDeepSea  # noqa: E402
from bsuite.logging import csv_load  # noqa: E402
from bsuite.utils.wrappers import _logarithmic_logging  # noqa: E402
from cli_helpers import CONFIGS, assert_png, invoke  # noqa: E402

from rvfx.agents import AGENTS, make_agent  # noqa: E402
from rvfx.analysis import bsuite as ab  # noqa: E402
from rvfx.core.live import live, log_grid  # noqa: E402
from rvfx.envs import bsuite as eb  # noqa: E402
from rvfx.envs.deep_sea import DeepSea, DeepSeaParams  # noqa: E402
from rvfx.envs.external import BsuiteParams  # noqa: E402


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


@pytest.mark.parametrize("scale, runs", [("ci", 8), ("paper", 80)])
def test_bsuite_deep_sea_settings_spec_validates(scale, runs):
    result = invoke("validate", CONFIGS / "bsuite_deep_sea_settings.yaml", "--scale", scale)
    assert result.exit_code == 0, result.output
    assert f"{runs} runs" in result.output and "no CPU estimate" in result.output


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
