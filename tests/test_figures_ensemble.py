"""Figs. 14-15 (learn_ensemble_rlsvi on deep sea): the specs run through the CLI and the figures render."""

import numpy as np
import pandas as pd
import pytest
from cli_helpers import CONFIGS, assert_png, invoke

from rvfx.analysis.stats import censored_median, plateau_k
from rvfx.figures import FIGURES
from rvfx.report.export import export_tables
from rvfx.report.registry import load_registry


@pytest.mark.parametrize("name", ["deepsea_ensemble", "deepsea_ensemble_scaling"])
@pytest.mark.parametrize("scale", ["ci", "paper"])
def test_specs_validate_at_both_scales(name, scale):
    result = invoke("validate", CONFIGS / f"{name}.yaml", "--scale", scale)
    assert result.exit_code == 0, result.output
    assert "ok" in result.output


def test_fig14_spec_runs_through_the_cli_and_draws(tmp_path):
    out, figs = tmp_path / "results", tmp_path / "figs"
    result = invoke("run", CONFIGS / "deepsea_ensemble.yaml", "--out", out, "--jobs", 1,
                    "--set", "seeds=2", "--set", "episodes=12", "--set", "env.size=4",
                    "--set", "grid={agent.K: [1, 3]}", "--set", "agents.ensemble.batch_size=16",
                    "--set", "agents.ensemble.min_replay=16")
    assert result.exit_code == 0, result.output
    runs = pd.read_csv(out / "deepsea_ensemble" / "runs.csv")
    assert sorted(runs["agent.K"].unique()) == [1, 3] and len(runs) == 4
    eps = pd.read_csv(out / "deepsea_ensemble" / "episodes.csv")
    assert eps["episode"].max() == 12
    result = invoke("plot", "deepsea_ensemble", "--results", out, "--out", figs)
    assert result.exit_code == 0, result.output
    assert_png(figs / "deepsea_ensemble.png")
    table = pd.read_csv(figs / "deepsea_ensemble_summary.csv")
    assert table["K"].tolist() == [1, 3] and table["seeds"].tolist() == [2, 2]
    # Its record keeps the regret curves, not the per-episode table, and draws the same summary.
    export_tables(load_registry(CONFIGS.parent / "claims.yaml"), out, tmp_path / "paper")
    kept = sorted(p.name for p in (tmp_path / "paper" / "deepsea_ensemble").glob("*.csv"))
    assert kept == ["regret_curves.csv", "runs.csv"]
    FIGURES["deepsea_ensemble"].draw(tmp_path / "paper", tmp_path / "b")
    assert (tmp_path / "b" / "deepsea_ensemble_summary.csv").read_bytes() == \
        (figs / "deepsea_ensemble_summary.csv").read_bytes()


def test_fig15_spec_runs_through_the_cli_and_draws(tmp_path):
    out, figs = tmp_path / "results", tmp_path / "figs"
    result = invoke("run", CONFIGS / "deepsea_ensemble_scaling.yaml", "--out", out, "--jobs", 1,
                    "--set", "seeds=2", "--set", "episodes=30", "--set", "grid={env.size: [3, 4, 6]}",
                    *[arg for agent in ("pixels", "linear_basis", "pixels_right")
                      for arg in ("--set", f"agents.{agent}.K=4", "--set", f"agents.{agent}.batch_size=16",
                                  "--set", f"agents.{agent}.min_replay=16")])
    assert result.exit_code == 0, result.output
    runs = pd.read_csv(out / "deepsea_ensemble_scaling" / "runs.csv")
    assert set(runs["agent"]) == {"pixels", "linear_basis", "pixels_right"}
    assert sorted(runs["env.size"].unique()) == [3, 4, 6]
    right = runs[runs["agent"] == "pixels_right"]
    assert (right["env.randomize_actions"] == False).all()                      # noqa: E712
    assert (runs.loc[runs["agent"] != "pixels_right", "env.randomize_actions"] == True).all()  # noqa: E712
    result = invoke("plot", "deepsea_ensemble_scaling", "--results", out, "--out", figs)
    assert result.exit_code == 0, result.output
    assert_png(figs / "deepsea_ensemble_scaling.png")
    slopes = pd.read_csv(figs / "deepsea_ensemble_scaling_slopes.csv")
    assert set(slopes["representation"]) == {"pixels", "linear_basis", "pixels_right"}
    # the per-size table holds each fitted line's points: one row per representation and N
    sizes = pd.read_csv(figs / "deepsea_ensemble_scaling_sizes.csv")
    assert len(sizes) == 9 and (sizes["seeds"] == 2).all()
    for _, row in sizes.iterrows():
        r = runs[(runs["agent"] == row["representation"]) & (runs["env.size"] == row["N"])]
        med = censored_median(pd.to_numeric(r["learning_time"], errors="coerce").to_numpy(float))
        assert row["median learning time [95% CI]"].split(" [")[0] == ("censored" if np.isnan(med) else f"{med:.0f}")
        assert row["censored"] == f"{int(r['censored'].sum())}/2"


def test_plateau_is_the_smallest_k_near_the_best_median():
    assert plateau_k([1, 5, 10, 20, 40], [np.nan, 3000, 1600, 1300, 1250]) == 20
    assert plateau_k([1, 5, 10, 20, 40], [np.nan, 3000, 1450, 1300, 1250]) == 10
    assert plateau_k([1, 5], [np.nan, np.nan]) is None
