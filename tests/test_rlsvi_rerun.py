"""Fig. 17's contrast rerun (rvfx/analysis/rlsvi_rerun.py) on hand-built runs: Fig. 17's learnt criterion
over the last 10% of episodes, the first success, the per-cell counts with their exact CIs, and the
figure's summary table."""
import numpy as np
import pandas as pd
import pytest

from rvfx.analysis.rlsvi_rerun import cell_summary, run_readouts, split_agent

EPISODES = 20      # the final window: episodes 19-20


def runs_of(agent: str, finals: list, first: int = 5) -> pd.DataFrame:
    """One run per entry of `finals`: return 150 at episode `first` only, 0 elsewhere, and `final` in the
    last two episodes (the final window)."""
    rows = []
    for k, final in enumerate(finals):
        for e in range(1, EPISODES + 1):
            ret = final if e > EPISODES - 2 else (150.0 if e == first else 0.0)
            rows.append({"run_id": f"{agent}-{k}", "agent": agent, "seed": 200 + k, "episode": e, "return": ret})
    return pd.DataFrame(rows)


def test_agents_are_class_then_setting_and_others_are_refused():
    assert split_agent("one_layer_paper") == ("one_layer", "paper")
    assert split_agent("rlsvi_upright95") == ("rlsvi", "upright95")
    with pytest.raises(ValueError, match="'ensemble_haiku' is not CLASS_SETTING"):
        split_agent("ensemble_haiku")
    with pytest.raises(ValueError):
        split_agent("dqn_")


def test_learnt_is_a_final_return_of_at_least_100_and_the_first_success_is_counted_apart():
    runs = run_readouts(runs_of("rlsvi_paper", [100.0, 99.0, 100.0]))
    assert runs["learnt"].tolist() == [True, False, True]
    assert runs["first_success"].tolist() == [5.0, 5.0, 5.0]      # 100 in the final window is not > 100
    assert runs["successes"].tolist() == [1, 1, 1]


def test_cells_count_learnt_runs_with_their_exact_ci_in_the_figures_order():
    eps = pd.concat([runs_of("dqn_paper", [0.0] * 4), runs_of("rlsvi_paper", [120.0, 120.0, 120.0, 0.0])])
    cells = cell_summary(run_readouts(eps))
    assert cells["class"].tolist() == ["rlsvi", "dqn"]
    rlsvi = cells.iloc[0]
    assert (rlsvi["learnt"], rlsvi["seeds"]) == (3, 4)
    assert (rlsvi["learnt_lo"], rlsvi["learnt_hi"]) == pytest.approx((0.1941, 0.9937), abs=1e-4)  # beta quantiles
    assert cells.iloc[1]["learnt"] == 0 and cells.iloc[1]["learnt_lo"] == 0.0
    assert rlsvi["final_return"] == pytest.approx(90.0)


def test_the_figure_writes_every_cell_into_its_summary(tmp_path):
    from rvfx.figures.cartpole_rlsvi_rerun import draw
    results = tmp_path / "results"
    (results / "cartpole_rlsvi_rerun").mkdir(parents=True)
    eps = pd.concat([runs_of(f"{c}_{s}", [120.0, 0.0] if c == "rlsvi" else [0.0, 0.0], first=3 if s == "a" else 99)
                     for s in ("a", "paper") for c in ("rlsvi", "one_layer", "linear", "dqn")])
    eps.to_csv(results / "cartpole_rlsvi_rerun" / "episodes.csv", index=False)
    draw(results, tmp_path / "figures")
    table = pd.read_csv(tmp_path / "figures" / "cartpole_rlsvi_rerun_summary.csv")
    assert len(table) == 8 and table["setting"].tolist() == ["a"] * 4 + ["paper"] * 4
    assert table["learnt (final return >= 100) [95% CI]"].tolist()[::4] == ["1/2 [0.01, 0.99]"] * 2
    assert table["first episode > 100: median [95% CI]"].iloc[0].startswith("3 [")
    assert np.all(table["never > 100"].iloc[5:] == "2/2")       # paper: only its rlsvi run passes (final 120)
