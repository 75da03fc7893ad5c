"""The standard analysis of any experiment (rvfx.analysis.standard) on tables whose answers are known:
the bands are Student-t intervals over the runs that logged an episode, a learning time c N^p gives
the slope p exactly, censored runs are counted and make a median censored, an environment without
regret gets return curves and final returns; and through the CLI, `rvfx plot` and `rvfx summary` of
an experiment with no registered figure."""
import io

import numpy as np
import pandas as pd
import pytest
from cli_helpers import assert_png, invoke
from scipy.stats import t

from rvfx.analysis import standard


def runs_table(times: dict, cap: int = 1000) -> pd.DataFrame:
    """runs.csv rows of deep sea: {(agent, N): [learning time or None (censored)]}."""
    rows = []
    for (agent, n), lts in times.items():
        for seed, lt in enumerate(lts):
            rows.append({"experiment": "x", "run_id": f"{agent}{n}{seed}", "agent": agent, "algorithm": agent,
                         "env": "deep_sea", "seed": seed, "env.size": n, "learning_time": lt,
                         "censored": lt is None, "episodes_run": cap if lt is None else lt,
                         "final_cum_regret": 1.0 + seed})
    return pd.DataFrame(rows)


def test_bands_are_t_intervals_over_the_runs_that_logged_the_episode():
    values = {"a": [1.0, 2.0, 6.0], "b": [3.0, 3.0, 3.0]}
    rows = [{"run_id": f"{agent}{seed}", "agent": agent, "seed": seed, "episode": ep, "cum_regret": v * ep}
            for agent, vs in values.items() for seed, v in enumerate(vs) for ep in (1, 2)]
    rows.append({"run_id": "a0", "agent": "a", "seed": 0, "episode": 3, "cum_regret": 99.0})  # one run alone
    bands = standard.curve_bands(pd.DataFrame(rows), "cum_regret")
    assert list(zip(bands["setting"], bands["episode"])) == [("a", 1), ("a", 2), ("b", 1), ("b", 2)]
    a2 = bands.iloc[1]
    half = t.ppf(0.975, 2) * np.std([2.0, 4.0, 12.0], ddof=1) / np.sqrt(3)
    assert a2["mean"] == pytest.approx(6.0) and a2["hi"] - a2["mean"] == pytest.approx(half)
    assert bands.iloc[3][["lo", "hi"]].tolist() == [6.0, 6.0]        # no spread, no width


def test_a_power_law_gives_its_exponent_and_censored_runs_are_counted():
    times = {("p", n): [2 * n ** 3] * 3 for n in (4, 8, 16)}
    times[("q", 4)] = [10, None, None]                 # median censored at N=4
    times[("q", 8)] = [20, 21, None]
    runs = runs_table(times)
    assert standard.swept_axes(runs) == ["env.size"] and standard.size_axis(runs) == "env.size"
    medians, fits = standard.learning_time_by(runs, "env.size")
    p = fits.set_index("setting").loc["p"]
    assert p["slope"] == pytest.approx(3.0) and p["lo"] == pytest.approx(3.0) and p["hi"] == pytest.approx(3.0)
    q = fits.set_index("setting").loc["q"]
    assert np.isnan(q["slope"]) and q["sizes_censored"] == [4] and q["censored"] == 3
    table = standard.summary(runs).set_index("setting")
    assert table.loc["q, env.size=4", "censored"] == 2 and table.loc["q, env.size=8", "censored"] == 1
    assert table.loc["p, env.size=8", "learning_time_median"] == 2 * 8 ** 3
    text = standard.summary_text(standard.summary(runs[runs["env.size"] == 4])).set_index("setting")
    assert text.loc["q", "censored"] == "2/3" and text.loc["q", "learning time (eq. 7.1): median [95% CI]"] \
        .startswith("censored [")
    assert text.loc["p", "learning time (eq. 7.1): median [95% CI]"] == "128 [128, 128]"
    assert text.loc["p", "final cumulative regret: mean [95% CI]"].startswith("2.0 [")     # seeds' 1, 2, 3


def test_without_regret_the_curves_are_returns_and_the_summary_final_returns():
    episodes = pd.DataFrame([{"run_id": f"r{s}", "agent": "a", "seed": s, "episode": ep, "return": float(ep + s),
                              "cum_regret": np.nan} for s in range(2) for ep in range(1, 21)])
    runs = pd.DataFrame([{"run_id": f"r{s}", "agent": "a", "seed": s, "env": "gym", "learning_time": np.nan,
                          "censored": False, "episodes_run": 20, "final_cum_regret": np.nan} for s in range(2)])
    assert standard.curve_value(episodes) == "return"
    row = standard.summary(runs, episodes).iloc[0]
    assert row["final_return_mean"] == pytest.approx((19 + 20 + 20 + 21) / 4)    # episodes 19, 20 of each run
    assert "learning_time_median" not in row


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny deep-sea experiment with no figure of its own, swept over N."""
    folder = tmp_path_factory.mktemp("tiny")
    spec = folder / "tiny.yaml"
    spec.write_text("experiment: tiny_sweep\nenv: {name: deep_sea, treasure: true}\nagents:\n"
                    "  rlsvi: {algorithm: grlsvi, v: H**2/25, lam: v}\nstop_at_learning: true\nseeds: 3\n"
                    "episodes: 2000\ngrid: {env.size: [3, 4, 5]}\nscales: {ci: {}, paper: {}}\n")
    assert invoke("run", spec, "--out", folder / "results").exit_code == 0
    return folder


def test_plot_draws_the_standard_panels_of_an_experiment_with_no_figure(tiny, monkeypatch):
    import rvfx.figures.standard as module
    drawn = []
    real_save = module.save
    monkeypatch.setattr(module, "save", lambda fig, out, name: drawn.append(fig) or real_save(fig, out, name))
    result = invoke("plot", "tiny_sweep", "--results", tiny / "results", "--out", tiny / "figs")
    assert result.exit_code == 0, result.output
    assert_png(tiny / "figs" / "tiny_sweep_standard.png")
    labels = [(ax.get_xlabel(), ax.get_ylabel()) for ax in drawn[0].axes]
    assert labels == [("episode", "cumulative regret"), ("env.size", "learning time (episodes, eq. 7.1)")]
    assert drawn[0].get_suptitle() == "tiny_sweep: 3 seeds per agent and setting"
    assert "slope" in drawn[0].axes[1].get_legend().get_texts()[0].get_text()


def test_summary_prints_the_table_as_markdown_and_csv(tiny):
    md = invoke("summary", "tiny_sweep", "--results", tiny / "results")
    assert md.exit_code == 0 and md.output.splitlines()[0].startswith("| setting | runs | final cumulative regret")
    assert len(md.output.splitlines()) == 2 + 3
    csv = invoke("summary", "tiny_sweep", "--results", tiny / "results", "--format", "csv")
    table = pd.read_csv(io.StringIO(csv.output))
    assert list(table["env.size"]) == [3, 4, 5] and (table["runs"] == 3).all()
    missing = invoke("summary", "no_such", "--results", tiny / "results")
    assert missing.exit_code == 1
