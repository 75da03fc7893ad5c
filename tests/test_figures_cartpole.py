"""Figs. 16-17 and the cartpole rendering: the specs run through the CLI and every figure renders."""
import math

import numpy as np
import pandas as pd
import pytest
from cli_helpers import CONFIGS, assert_png, invoke

from rvfx.analysis.cartpole import cartpole_summary
from rvfx.analysis.curves import cartpole_runs, return_curves
from rvfx.analysis.final_return import reached
from rvfx.envs.cartpole import rollouts
from rvfx.envs.cartpole.dynamics import CartpoleSwingUp, CartpoleSwingUpParams
from rvfx.figures import FIGURES
from rvfx.figures import cartpole as figs
from rvfx.report.export import export_tables
from rvfx.report.registry import load_registry

CLAIMS = CONFIGS.parent / "claims.yaml"

# A tiny budget: 2 seeds x 2 episodes of 1.0 s (101 steps; SGD starts at step 128, so it runs).
TINY = ("--set", "seeds=2", "--set", "episodes=2", "--set", "env.max_time=1.0")


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("cartpole")
    for spec in ("cartpole_dqn", "cartpole_rlsvi", "cartpole_balance"):
        r = invoke("run", CONFIGS / f"{spec}.yaml", "--jobs", 1, "--out", out, *TINY)
        assert r.exit_code == 0, r.output
    return out


@pytest.fixture(scope="module")
def plotted(results, tmp_path_factory):
    """plotted(fig): the folder where `rvfx plot FIG` drew FIG from `results`, each figure drawn once
    for the tests that read it."""
    out, drawn = tmp_path_factory.mktemp("cartpole_figures"), set()

    def plot(fig):
        if fig not in drawn:
            r = invoke("plot", fig, "--results", results, "--out", out)
            assert r.exit_code == 0, r.output
            drawn.add(fig)
        return out
    return plot


@pytest.mark.parametrize("scale", ["ci", "paper"])
@pytest.mark.parametrize("spec, runs", [("cartpole_dqn", (8, 80)), ("cartpole_rlsvi", (8, 80)),
                                        ("cartpole_balance", (8, 20))])
def test_specs_validate_at_both_scales(spec, runs, scale):
    r = invoke("validate", CONFIGS / f"{spec}.yaml", "--scale", scale)
    assert r.exit_code == 0, r.output
    assert f"{runs[scale == 'paper']} runs" in r.output


def test_specs_log_every_episode_of_every_run(results):
    for spec, agents in (("cartpole_dqn", {"dqn"}), ("cartpole_rlsvi", {"rlsvi", "one_layer", "linear"})):
        eps = pd.read_csv(results / spec / "episodes.csv")
        assert set(eps["agent"]) == agents | {"reference"}
        assert eps["run_id"].nunique() == 2 * len(agents) * (3 if spec == "cartpole_dqn" else 1) + 2
        assert all(sorted(e) == [1, 2] for e in eps.groupby("run_id")["episode"].apply(list))
    dqn = pd.read_csv(results / "cartpole_dqn" / "episodes.csv")
    assert sorted(dqn["agent.epsilon_anneal_episodes"].dropna().unique()) == [2, 4, 8]


@pytest.mark.parametrize("fig, groups", [("cartpole_dqn", 4), ("cartpole_rlsvi", 4), ("cartpole_balance", 4)])
def test_learning_curve_figures_render_with_a_summary_table(plotted, fig, groups):
    out = plotted(fig)
    assert_png(out / f"{fig}.png")
    table = pd.read_csv(out / f"{fig}_summary.csv")
    assert len(table) == groups and (table["seeds"] == 2).all()
    for prefix in ("reached upright", "learnt"):
        col = [c for c in table.columns if c.startswith(prefix)][0]
        assert table[col].str.match(r"^\d+/2 = ").all()


def test_balance_control_starts_upright(results):
    """cartpole_balance starts in the reward box: with 1 s episodes every run collects upright reward."""
    eps = pd.read_csv(results / "cartpole_balance" / "episodes.csv")
    assert (eps.groupby("run_id")["upright_steps"].max() > 0).all()


def test_learnt_means_a_final_return_of_100_not_one_pass_through_the_box(tmp_path):
    """Scattered visits to the reward box count as 'reached', not as 'learnt'; the final greedy
    episode counts as swinging up only above the box's cos θ bound, as rewarded only inside the box."""
    rows = []
    for seed, (visits, final) in enumerate([(5, -6.0), (0, -6.0), (300, 300.0)]):
        for ep in range(1, 21):
            late = ep > 18                                    # the last 10%
            rows.append({"run_id": f"r{seed}", "agent": "rlsvi", "seed": seed, "episode": ep,
                         "upright_steps": visits if ep == 3 or (late and final > 0) else 0,
                         "return": final if late else -6.0})
    eps = pd.DataFrame(rows)
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "spec.yaml").write_text("env: {name: cartpole_swingup}\n"
                                             "agents:\n  rlsvi: {algorithm: ensemble_rlsvi}\n")
    eps.to_csv(tmp_path / "x" / "episodes.csv", index=False)
    theta = {"r0": [math.pi, 0.3, -0.3], "r1": [math.pi, 0.32, math.pi], "r2": [math.pi, 0.1, 0.0]}
    reward = {"r0": [0, 0, 0], "r1": [0, 0, 0], "r2": [0, 1, 1]}          # cos 0.3 = 0.955, cos 0.32 = 0.949
    theta_dot = {"r0": [9, -6, 2], "r1": [0, 9, 9], "r2": [9, 0.5, -0.3]}  # while up: r0 6, 2; r2 0.5, 0.3
    pd.DataFrame([{"run_id": r, "step": i, "theta": th, "theta_dot": theta_dot[r][i], "x": 0.0, "x_dot": 0.0,
                   "reward": reward[r][i]}
                  for r in theta for i, th in enumerate(theta[r])]).to_csv(tmp_path / "x" / "trajectory.csv")
    runs = cartpole_runs(tmp_path, "x")
    assert runs["run_id"].tolist() == ["r0", "r1", "r2"] and runs["episodes"].tolist() == [20] * 3
    np.testing.assert_array_equal(runs["first_reached"], [3, np.nan, 3])
    assert runs["reached_in_final_window"].tolist() == [False, False, True]
    counts = cartpole_summary(runs).iloc[0]
    assert counts[["seeds", "ever_reached", "learnt", "swings_up", "collects_reward"]].tolist() == [3, 2, 1, 2, 1]
    row = figs.summary_rows(tmp_path, "x", runs)[0]
    assert row["reached upright (upright steps > 0), ever"] == "2/3 = 0.67"
    learnt = [v for k, v in row.items() if k.startswith("learnt")][0]
    assert learnt == "1/3 = 0.33"
    assert row["mean return >= 100 over some 10% window (post hoc)"] == "1/3 = 0.33"
    assert row["best 10% window's mean return, median over seeds (post hoc)"] == "-6.00"
    assert row["final greedy episode swings the pole up (cos θ > 0.95)"] == "2/3 = 0.67"
    assert row["final greedy episode collects upright reward"] == "1/3 = 0.33"
    assert row["median |θ̇| while up, over those that swing up (reward needs <= 1)"] == "2.2"  # median of 4, 0.4


def test_window_returns_count_back_from_the_last_episode_and_window_0_is_the_final_window():
    """Windows of the final window's length (10%, rounded) end at each run's last episode; a window
    not held in full is NaN; window 0 equals final_returns; a rise and fall shows in the best window."""
    from rvfx.analysis.final_return import final_returns, window_returns
    rise = [-6.0] * 12 + [200.0, 300.0] + [-6.0] * 6           # 20 episodes: windows of 2
    short = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0]  # 15: windows of 2
    eps = pd.DataFrame([{"run_id": r, "episode": i + 1, "return": v}
                        for r, rets in (("rise", rise), ("short", short)) for i, v in enumerate(rets)])
    w = window_returns(eps)
    assert list(w.index) == ["rise", "short"]
    assert w.loc["rise", 0] == -6.0 and w.loc["rise", 3] == 250.0 and w.loc["rise"].max() == 250.0
    assert w.loc["rise"].notna().sum() == 10
    assert w.loc["short", 0] == 14.5 and w.loc["short", 6] == 2.5      # episodes 14-15, 2-3
    assert w.loc["short"].notna().sum() == 7 and np.isnan(w.loc["short", 7])   # episode 1 alone
    np.testing.assert_array_equal(w[0].to_numpy(), final_returns(eps).to_numpy())


def test_runner_keeps_each_runs_final_greedy_episode_and_the_render_draws_it(results, tmp_path):
    exp = results / "cartpole_rlsvi"
    traj = pd.read_csv(exp / "trajectory.csv")
    eps = pd.read_csv(exp / "episodes.csv")
    assert sorted(traj["run_id"].unique()) == sorted(eps["run_id"].unique())   # one rollout per run
    one = traj[traj["run_id"] == traj["run_id"].iloc[0]]
    assert len(one) == 102 and one["t"].iloc[-1] == pytest.approx(1.01)       # s_0 .. s_101
    assert one["action"].iloc[:-1].isin([0, 1, 2]).all() and math.isnan(one["action"].iloc[-1])
    r = invoke("plot", "cartpole_render", "--results", results, "--out", tmp_path)
    assert r.exit_code == 0, r.output
    assert_png(tmp_path / "cartpole_render.png")


def test_only_cartpole_declares_a_rollout_table():
    from rvfx.core.protocols import EnvironmentTables
    from rvfx.envs.deep_sea import DeepSea, DeepSeaParams
    assert not isinstance(DeepSea(DeepSeaParams(size=3), np.random.default_rng(0)), EnvironmentTables)
    assert isinstance(CartpoleSwingUp(CartpoleSwingUpParams(), np.random.default_rng(0)), EnvironmentTables)


def test_greedy_rollout_learns_nothing_and_its_rewards_are_the_env_rewards():
    p = CartpoleSwingUpParams(max_time=0.5)
    env = CartpoleSwingUp(p, np.random.default_rng(3))

    class Still:                       # always action 1 (no force); fails if asked to learn
        epsilon = 0.7

        def learn_from_buffer(self):
            pass

        def act(self, state):
            assert self.epsilon == 0.0
            return 1

        def update_buffer(self, transition):
            raise AssertionError("a rollout must not learn")

    df = rollouts.greedy_rollout(Still(), env)
    assert len(df) == 52 and (df["action"].iloc[:-1] == 1).all()
    assert df["reward"].sum() == pytest.approx(env.expected_return) == 0.0   # hanging, no force: no reward, no cost


def test_upright_steps_count_exactly_the_rewarded_steps():
    env = CartpoleSwingUp(CartpoleSwingUpParams(), np.random.default_rng(0))
    rng = np.random.default_rng(1)
    env.reset()
    rewarded, tr = 0, None
    env.set_state(0.0, 0.0, 0.0, 0.0, k=0)                      # balanced: every step until it falls pays +1
    while tr is None or tr.new_state is not None:
        tr = env.step(int(rng.integers(3)) if rewarded > 20 else 1)
        rewarded += tr.reward > 0.5
    assert rewarded > 20
    assert env.episode_metrics() == {"upright_steps": rewarded}
    assert reached(pd.DataFrame({"upright_steps": [rewarded, 0]})).tolist() == [True, False]


def test_pick_run_prefers_the_greedy_episode_nearest_a_swing_up_then_the_best_final_return():
    runs = pd.DataFrame({"run_id": ["r0", "r1", "r2", "x"], "agent": ["rlsvi"] * 3 + ["dqn"], "seed": [0, 1, 2, 0],
                         "final_return": [1.0, 5.0, 5.0, 99.0], "rewarded_steps": [0, 0, 0, 9],
                         "up_steps": [0, 0, 0, 9]})
    assert figs.pick_run(runs)["run_id"] == "r1"                      # the best final return; ties: lowest seed
    assert figs.pick_run(runs[runs["run_id"].isin(["r0", "x"])])["run_id"] == "r0"
    assert figs.pick_run(runs[runs["agent"] == "dqn"])["run_id"] == "x"   # no rlsvi run: the first agent
    # The final greedy episodes decide first: rewarded steps, then pole-up steps.
    runs["up_steps"] = [7, 3, 7, 9]
    assert figs.pick_run(runs)["run_id"] == "r2"                      # r0 and r2 tie: the better final return
    runs.loc[0, "up_steps"] = 8
    assert figs.pick_run(runs)["run_id"] == "r0"
    runs.loc[1, "rewarded_steps"] = 1
    assert figs.pick_run(runs)["run_id"] == "r1"


def test_figures_are_registered_for_their_experiments():
    assert FIGURES["cartpole_dqn"].experiments == ("cartpole_dqn",)
    assert FIGURES["cartpole_rlsvi"].experiments == ("cartpole_rlsvi",)
    assert FIGURES["cartpole_render"].experiments == ("cartpole_rlsvi",)
    assert FIGURES["cartpole_balance"].experiments == ("cartpole_balance",)


def test_return_curves_are_the_mean_return_over_blocks_of_the_smoothing_window(tmp_path):
    """100 episodes: blocks of 2 (episodes 1-2, 3-4, ...), each drawn at its last episode; a run of 101
    episodes (the same window) ends with a block of episode 101 alone; one of 200, blocks of 4."""
    (tmp_path / "x").mkdir()
    pd.DataFrame([{"run_id": r, "agent": "a", "seed": i, "episode": e, "return": float(e)}
                  for i, (r, n) in enumerate((("r0", 100), ("r1", 101), ("r2", 200))) for e in range(1, n + 1)]
                 ).to_csv(tmp_path / "x" / "episodes.csv", index=False)
    curves = return_curves(tmp_path, "x")
    r0, r1 = (curves[curves["run_id"] == r] for r in ("r0", "r1"))
    ends = list(range(2, 101, 2))
    assert r0["episode"].tolist() == ends and r0["return"].tolist() == [e - 0.5 for e in ends]
    assert len(r1) == 51 and r1["episode"].iloc[-1] == 101 and r1["return"].iloc[-1] == 101.0
    r2 = curves[curves["run_id"] == "r2"]
    assert r2["episode"].tolist() == list(range(4, 201, 4)) and r2["return"].iloc[0] == 2.5


def test_the_fraction_reached_steps_up_at_each_runs_first_rewarded_episode():
    runs = pd.DataFrame({"first_reached": [1.0, 3.0, np.nan, 3.0], "episodes": [10] * 4})
    x, y = figs._reached_by(runs)
    assert x.tolist() == [1, 3, 10] and y.tolist() == [0.25, 0.75, 0.75]


def test_the_figures_are_drawn_alike_from_their_recorded_per_run_tables(results, plotted, tmp_path):
    """A record keeps the per-run curves and summaries (claims.yaml `tables`), not the per-episode or
    rollout tables, and the figures' summary tables drawn from it are the same bytes as those
    `rvfx plot` draws from the results."""
    export_tables(load_registry(CLAIMS), results, tmp_path / "paper")
    kept = sorted(p.name for p in (tmp_path / "paper" / "cartpole_rlsvi").glob("*.csv"))
    assert kept == ["cartpole_runs.csv", "final_returns.csv", "return_curves.csv", "runs.csv"]
    for fig in ("cartpole_dqn", "cartpole_rlsvi", "cartpole_balance"):
        FIGURES[fig].draw(tmp_path / "paper", tmp_path / "b")
        table = f"{fig}_summary.csv"
        assert (plotted(fig) / table).read_bytes() == (tmp_path / "b" / table).read_bytes()
        assert_png(tmp_path / "b" / f"{fig}.png")
