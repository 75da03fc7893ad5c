"""Figs. 6-13 (linear RLSVI on deep sea): every spec validates at both scales, runs through the
real CLI on a tiny budget, and every figure renders with its summary table."""
from pathlib import Path

import pandas as pd
import pytest
from cli_helpers import CONFIGS, invoke

from rvfx.figures import FIGURES

# spec -> (figures it feeds, --set overrides that shrink it further than its ci scale)
SPECS = {
    "deepsea_linear": (["deepsea_linear"], ["seeds=1", "episodes=80"]),
    # learning-time sweeps: a cap of 150 episodes leaves some runs censored, some not
    "deepsea_linear_scaling": (["deepsea_linear_scaling"], ["seeds=2", "episodes=150"]),
    "deepsea_linear_features": (["deepsea_linear_features"], ["seeds=1", "episodes=150"]),
    "deepsea_misspecified": (["deepsea_misspecified"], ["seeds=2", "episodes=80"]),
    "deepsea_tuning": (["deepsea_tuning_lambda", "deepsea_tuning_v", "deepsea_tuning_seeds"],
                       ["seeds=2", "episodes=60"]),
    "deepsea_bootstrap_scaling": (["deepsea_bootstrap_scaling"], ["seeds=1", "episodes=150"]),
}
FIGURE_IDS = [f for figs, _ in SPECS.values() for f in figs]


@pytest.mark.parametrize("scale", ["ci", "paper"])
@pytest.mark.parametrize("name", sorted(SPECS))
def test_spec_validates_and_names_its_figures(name, scale):
    result = invoke("validate", CONFIGS / f"{name}.yaml", "--scale", scale)
    assert result.exit_code == 0, result.output
    assert f"ok ({name}," in result.output
    for fig in SPECS[name][0]:
        assert name in FIGURES[fig].experiments


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """Every spec at its ci scale, shrunk further with --set, run through the CLI."""
    out = tmp_path_factory.mktemp("linear_results")
    for name, (_, sets) in SPECS.items():
        args = ["run", CONFIGS / f"{name}.yaml", "--out", out]
        for s in sets:
            args += ["--set", s]
        result = invoke(*args)
        assert result.exit_code == 0, result.output
        runs = pd.read_csv(out / name / "runs.csv")
        assert len(runs) > 0 and runs["episodes_run"].min() >= 2
    return out


def test_learning_time_sweeps_stop_at_learning_and_record_censoring(results):
    runs = pd.concat([pd.read_csv(results / name / "runs.csv")
                      for name in ("deepsea_linear_scaling", "deepsea_linear_features", "deepsea_bootstrap_scaling")])
    learnt, censored = runs[~runs["censored"]], runs[runs["censored"]]
    assert (learnt["episodes_run"] == learnt["learning_time"]).all()
    assert (censored["episodes_run"] == 150).all() and censored["learning_time"].isna().all()
    assert len(learnt) and len(censored)          # the figures meet both kinds of run
    assert {"env.size", "agent.M"} <= set(runs.columns)


@pytest.mark.parametrize("fig_id", FIGURE_IDS)
def test_figure_renders_png_and_summary_table(results, fig_id, tmp_path):
    result = invoke("plot", fig_id, "--results", results, "--out", tmp_path)
    assert result.exit_code == 0, result.output
    assert (tmp_path / f"{fig_id}.png").stat().st_size > 10_000
    tables = list(tmp_path.glob("*.csv"))
    assert tables, "each figure writes a summary table"
    for t in tables:
        assert len(pd.read_csv(t)) > 0
        assert t.with_suffix(".md").exists()


def test_misspecification_summary_reads_the_breakdown_psi_as_the_claims_do():
    """Fig. 9's table per M: the breakdown psi is the smallest at which fewer than half the runs learn
    (+inf when none, "none in grid"); the largest psi where at least half learn is NaN when none does."""
    from rvfx.analysis.deepsea_linear import misspecification_summary
    learnt = {5: [[1, 1], [1, 0], [0, 0]], 20: [[1, 1], [1, 1], [1, 0]], 40: [[0, 0], [0, 0], [0, 0]]}
    runs = pd.DataFrame([{"agent.M": m, "agent.psi": psi, "censored": not ok, "final_cum_regret": 10.0 * i + ok}
                         for m, cells in learnt.items() for i, (psi, oks) in enumerate(zip([0.0, 0.01, 0.1], cells))
                         for ok in oks])
    s = misspecification_summary(runs).set_index("M")
    assert s["breakdown_psi"].tolist() == [0.1, float("inf"), 0.0]
    assert s.loc[5, "largest_psi_learnt"] == 0.01 and s.loc[20, "largest_psi_learnt"] == 0.1
    assert pd.isna(s.loc[40, "largest_psi_learnt"])
    assert s.loc[20, ["learnt_at_last", "runs_at_last", "seeds"]].tolist() == [1, 2, 2]
    assert s.loc[5, ["psi_first", "regret_first", "psi_last", "regret_last"]].tolist() == [0.0, 1.0, 0.1, 20.0]
