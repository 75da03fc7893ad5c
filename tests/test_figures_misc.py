"""Figures 1-3, 18, Table 1 and Theorem 1: the computations behind them and that they render."""
import math

import numpy as np
import pandas as pd
import pytest
from cli_helpers import CONFIGS, assert_png
from click.testing import CliRunner

from rvfx.agents.tabular.uncertainty import UncertaintyParams, grlsvi_q_samples
from rvfx.analysis import beta_vs_normal, bounds
from rvfx.cli import main
from rvfx.envs.deep_sea import DeepSea, DeepSeaParams
from rvfx.envs.four_state import DOWN, UP, FourStateExample, FourStateParams
from rvfx.experiment.spec import load_spec
from rvfx.figures import FIGURES, illustrations
from rvfx.figures.common import plt

# ------------------------------------------------------------------------------ Fig. 18

def test_set_c_is_one_interval_where_the_beta_density_exceeds_the_normal():
    beta, normal = beta_vs_normal.distributions()
    assert beta.mean() == pytest.approx(0.6) and normal.mean() == pytest.approx(0.6)
    assert normal.var() == pytest.approx(1 / 3)
    lo, hi = beta_vs_normal.set_c()
    assert 0 < lo < 0.6 < hi < 1
    assert beta.pdf(lo) == pytest.approx(normal.pdf(lo), abs=1e-9)
    assert beta.pdf(hi) == pytest.approx(normal.pdf(hi), abs=1e-9)
    s = np.linspace(-2, 3, 20001)
    inside = (s > lo) & (s < hi)
    d = beta.pdf(s) - normal.pdf(s)
    assert np.all(d[inside] > 0) and np.all(d[~inside] <= 1e-12)


def test_normal_is_stochastically_optimistic_over_the_beta():
    """Condition 2: int_a^inf (G - F) >= 0 for all a, and D = G - F crosses zero once."""
    beta, normal = beta_vs_normal.distributions()
    a = np.linspace(-3, 4, 141)
    margin = beta_vs_normal.optimism_margin(a)
    assert margin.min() > -1e-8
    assert margin[0] == pytest.approx(0.0, abs=1e-6)         # = E[N] - E[Beta] = 0 for a -> -inf
    s = np.linspace(-2, 3, 5001)
    D = beta.cdf(s) - normal.cdf(s)
    signs = np.sign(D[np.abs(D) > 1e-12])
    assert np.count_nonzero(np.diff(signs)) == 1


# ------------------------------------------------------------------------------ Fig. 2

N_BIG = UncertaintyParams().n_big


def q_samples(H: int, samples: int, seed: int, v: float = 1.0, shared_noise: bool = True) -> np.ndarray:
    env = FourStateExample(FourStateParams(horizon=H), np.random.default_rng(0))
    params = UncertaintyParams(v=v, samples=samples, shared_noise=shared_noise)
    return grlsvi_q_samples(env.P, env.R, H, params, np.random.default_rng(seed))


def test_grlsvi_uncertainty_starts_at_4_down_with_variance_v_and_propagates_leftward():
    H, v, n = 5, 2.0, 20000
    q = q_samples(H=H, v=v, samples=n, seed=1)
    var = q.var(axis=0)                                       # (H, S, A)
    s4, down = 3, DOWN
    # h = 1: only (4, down) is uncertain, with variance v (one observation, lambda = inf)
    assert abs(var[0, s4, down] - v) < 4 * v * math.sqrt(2 / (n - 1))
    others = np.ones((4, 2), bool)
    others[s4, down] = False
    assert np.all(var[0][others] < 10 * v / N_BIG)
    # Var[Q_h(s, a)] is non-negligible exactly where state 4 is reachable within h - 1 steps
    P = FourStateExample(FourStateParams(horizon=H), np.random.default_rng(0)).P
    reach = np.zeros((4, 2), bool)
    reach[s4, down] = True
    for h in range(H):
        if h > 0:
            can_reach_state4_pair = reach.any(axis=1)         # states with an uncertain pair
            reach = reach | (P[..., can_reach_state4_pair].sum(axis=-1) > 0)
        assert np.all(var[h][reach] > 1e-3 * v), h
        assert np.all(var[h][~reach] < 10 * v / N_BIG), h
    # h = 2: (4, up) and (3, down) are uncertain, less than (4, down)
    assert 0 < var[1, s4, UP] < var[1, s4, down]
    assert 0 < var[1, 2, down] < var[1, s4, down]
    # uncertainty grows with the horizon at the uncertain pair
    assert np.all(np.diff(var[:, s4, down]) > 0)


def test_grlsvi_shared_noise_is_what_the_paper_describes():
    """Same z across iterations: the variance at (4, down) compounds; fresh z per h does too, but
    the two are different algorithms and give different samples."""
    a = q_samples(H=3, samples=2000, seed=0, shared_noise=True)
    b = q_samples(H=3, samples=2000, seed=0, shared_noise=False)
    np.testing.assert_array_equal(a[:, 0], b[:, 0])            # same first iteration
    assert not np.array_equal(a[:, 2], b[:, 2])


def test_fig2_is_an_experiment_whose_table_holds_each_runs_sample_variances(tmp_path):
    """rlsvi_uncertainty runs as a spec: per run one row per (h, s, a) with the sample variance of
    its samples; at h = 1 only (4, down) is uncertain, with variance v: the mean over 20 seeds of
    1,000 samples each is within 4 s.e. (sd of a sample variance: v sqrt(2 / (n - 1)))."""
    results = tmp_path / "results"
    runner = CliRunner()
    assert runner.invoke(main, ["run", str(CONFIGS / "rlsvi_uncertainty.yaml"), "--out", str(results)]).exit_code == 0
    table = pd.read_csv(results / "rlsvi_uncertainty" / "q_variance.csv")
    runs = load_spec(str(CONFIGS / "rlsvi_uncertainty.yaml")).runs
    H, seeds, n = runs[0].env_params.horizon, len(runs), runs[0].agent_params.samples
    assert len(table) == seeds * H * 4 * 2 and table["run_id"].nunique() == seeds
    first = table[table["h"] == 1]
    uncertain = first[first["pair"] == "(4, down)"]["variance"]
    assert abs(uncertain.mean() - 1.0) < 4 * math.sqrt(2 / (n - 1)) / math.sqrt(seeds)
    assert first[first["pair"] != "(4, down)"]["variance"].max() < 10 / N_BIG
    res = runner.invoke(main, ["plot", "rlsvi_uncertainty", "--results", str(results), "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert_png(tmp_path / "rlsvi_uncertainty.png")
    summary = pd.read_csv(tmp_path / "rlsvi_uncertainty.csv")
    assert (summary["seeds"] == seeds).all() and len(summary) == H * 4 * 2


# ------------------------------------------------------------------------------ Fig. 1

def test_deep_sea_diagram_is_read_from_the_environment():
    env = DeepSea(DeepSeaParams(size=5), np.random.default_rng(3))
    fig, ax = plt.subplots()
    illustrations.draw_deep_sea(ax, env)
    labels = [t.get_text() for t in ax.texts if t.get_text().startswith("R=")]
    assert labels == [f"R={env.right_action[r, c]}" for r in range(5) for c in range(5)]
    assert any("chest +1" in t.get_text() for t in ax.texts)
    plt.close(fig)


def test_analytic_figures_render(tmp_path):
    illustrations_files = ["illustrations_deep_sea", "illustrations_ensemble"]
    for fig_id, names in (("illustrations", illustrations_files), ("beta_vs_normal", ["beta_vs_normal"])):
        assert FIGURES[fig_id].experiments == ()
        paths = FIGURES[fig_id].draw(tmp_path / "no-results", tmp_path)
        for name in names:
            assert_png(tmp_path / f"{name}.png")
        assert all(p.exists() for p in paths)
    table = pd.read_csv(tmp_path / "beta_vs_normal.csv")
    assert table["value"].iloc[0] == pytest.approx(beta_vs_normal.set_c()[0], abs=1e-6)


# ------------------------------------------------------------------------------ Table 1

def fake_runs(tmp_path):
    """runs.csv of exploration_table with known learning times: N, 2^N, and never."""
    rows = []
    for agent, sizes, time in (("optimal", [4, 8, 16, 32], lambda n: n),
                               ("dithering_boltzmann", [3, 5, 7, 9], lambda n: 2 ** n),
                               ("pure_exploitation", [4, 8], lambda n: None)):
        for n in sizes:
            for seed in range(3):
                t = time(n)
                rows.append({"experiment": "exploration_table", "run_id": f"{agent}{n}{seed}", "agent": agent,
                             "algorithm": "x", "env": "deep_sea", "seed": seed, "env.size": n,
                             "learning_time": "" if t is None else t, "censored": t is None,
                             "episodes_run": 500 if t is None else t, "final_cum_regret": 1.0})
    d = tmp_path / "exploration_table"
    d.mkdir()
    pd.DataFrame(rows).to_csv(d / "runs.csv", index=False)


def test_exploration_table_reports_censored_runs_and_growth(tmp_path):
    fake_runs(tmp_path)
    out = tmp_path / "figs"
    FIGURES["exploration_table"].draw(tmp_path, out)
    assert_png(out / "exploration_table.png")
    table = pd.read_csv(out / "exploration_table.csv", dtype=str).set_index("agent")
    assert table.loc["optimal", "fitted growth (median learning time)"].startswith("polynomial: N^1.00")
    assert "exponential" in table.loc["dithering_boltzmann", "fitted growth (median learning time)"]
    assert "2.00^N" in table.loc["dithering_boltzmann", "fitted growth (median learning time)"]
    assert table.loc["pure_exploitation", "N=4"] == "> 500 (3/3 cens.)"      # censored, not dropped
    assert table.loc["optimal", "N=32"] == "32"
    md = (out / "exploration_table.md").read_text()
    assert "| pure exploitation | pure_exploitation | ∞ |" in md


def test_specs_validate_at_both_scales():
    for name, figure in (("exploration_table", "exploration_table"), ("regret_bound", "regret_bound")):
        for scale in ("ci", "paper"):
            exp = load_spec(str(CONFIGS / f"{name}.yaml"), scale)
            assert exp.figures == [figure] and exp.runs
    exp = load_spec(str(CONFIGS / "exploration_table.yaml"), "ci")
    assert {r.env_params.treasure for r in exp.runs} == {True}
    assert all(r.stop_at_learning for r in exp.runs)


# ------------------------------------------------------------------------------ Theorem 1

def test_bounds_match_the_formulas():
    H, X, A, beta, L = 4, 3, 2, 3.0, 1000
    lp = lambda x: max(1.0, math.log(x))   # noqa: E731
    first = 6 * H ** 2 * math.sqrt(beta * X * A * L * lp(1 + X * A * H * L)) * lp(1 + L / (X * A))
    second = (5 * beta * H ** 3 * X * A * math.sqrt(lp(1 + X * A * H * L)) * lp(1 + L / (X * A))
              + 2 * H ** 2 * math.sqrt(6 * X * A * L * math.log(X * A)))
    assert bounds.first_bound(L, H, X, A, beta) == pytest.approx(first)
    assert bounds.second_bound(L, H, X, A, beta) == pytest.approx(second)
    assert bounds.first_bound(1, 1, 1, 1, 3.0) == pytest.approx(6 * math.sqrt(3))   # both log+ floor at 1


def test_regret_bound_end_to_end_from_a_tiny_run(tmp_path):
    out = tmp_path / "res"
    result = CliRunner().invoke(main, ["run", str(CONFIGS / "regret_bound.yaml"), "--set", "seeds=6",
                                       "--set", "episodes=60", "--out", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    eps = pd.read_csv(out / "regret_bound" / "episodes.csv")
    assert eps["seed"].nunique() == 6 and {"env.horizon", "env.states", "env.actions", "env.beta"} <= set(eps)
    figs = tmp_path / "figs"
    result = CliRunner().invoke(main, ["plot", "regret_bound", "--results", str(out), "--out", str(figs)],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert_png(figs / "regret_bound.png")
    table = pd.read_csv(figs / "regret_bound.csv")
    last = eps[eps["episode"] == 60]["cum_regret"]
    assert table["Bayes regret"].iloc[0] == pytest.approx(last.mean(), abs=0.05)
    ratio = float(table["regret / eq. 6.1"].iloc[0])
    assert ratio == pytest.approx(last.mean() / bounds.first_bound(60, 4, 3, 2, 3.0), rel=1e-2)
    assert 0 < ratio < 1
    # the table's regret over eq. 6.1 is the mean over MDPs of the ratio the claims read
    over = bounds.regret_over_bounds(out, "regret_bound")
    summary = bounds.bound_summary(bounds.bayes_regret(eps)).iloc[0]
    assert summary["over_eq_6_1"] == pytest.approx(over.loc[over["episode"] == 60, "regret_over_eq_6_1"].mean())


def test_every_registered_figure_names_a_drawing_function():
    import importlib
    for fig in FIGURES.values():
        assert callable(getattr(importlib.import_module(fig.module), fig.function)), fig.id


def test_a_figure_drawn_from_ci_scale_runs_says_so_and_a_paper_scale_one_does_not(tmp_path, monkeypatch):
    """The CI-scale banner is on the figure itself, decided by the tables' resolved spec.yaml."""
    from pathlib import Path

    from rvfx.figures import CI_STAMP, common
    drawn = []
    monkeypatch.setattr(common.plt, "close", lambda fig: drawn.append([t.get_text() for t in fig.texts]))
    out = tmp_path / "ci"
    assert CliRunner().invoke(main, ["run", "deepsea_tabular", "--set", "seeds=1", "--set", "episodes=30",
                                     "--out", str(out)]).exit_code == 0
    FIGURES["deepsea_tabular"].draw(out, tmp_path / "f")
    paper = Path(__file__).resolve().parent.parent / "figures" / "paper"
    FIGURES["deepsea_misspecified"].draw(paper, tmp_path / "g")         # drawn from runs.csv alone
    assert CI_STAMP in drawn[0] and CI_STAMP not in drawn[1]


def test_a_markdown_table_keeps_a_pipe_inside_its_cell(tmp_path):
    """A '|' in a header or a value (|θ̇|) is escaped, so that every row has as many cells as columns."""
    import re

    import pandas as pd

    from rvfx.figures.common import write_table
    write_table(pd.DataFrame({"median |θ̇| while up": [0.5], "agent": ["a|b"]}), tmp_path, "t")
    for line in (tmp_path / "t.md").read_text().splitlines():
        assert len(re.split(r"(?<!\\)\|", line)) - 2 == 2, line
