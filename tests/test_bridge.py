"""The cartpole bridge's readouts and rule (rvfx/analysis/bridge.py) on hand-built runs, and its figure's
summary table drawn from a hand-built results folder."""
import numpy as np
import pandas as pd
import pytest

from rvfx.analysis.bridge import ARMS, arm_summary, gate, run_readouts, stop

EPISODES = 6


def runs_of(arm: str, successes_at: list, seed0: int = 0) -> pd.DataFrame:
    """Episode rows of one run per entry of `successes_at`: the first episode returning 150 (None: never;
    every other episode returns 10 with one upright step on odd episodes, -5 with none on even ones)."""
    rows = []
    for k, first in enumerate(successes_at):
        for e in range(1, EPISODES + 1):
            good = first is not None and e >= first
            rows.append({"run_id": f"{arm}-{k}", "agent": arm, "seed": seed0 + k, "episode": e,
                         "return": 150.0 if good else (10.0 if e % 2 else -5.0),
                         "upright_steps": 120 if good else (1 if e % 2 else 0)})
    return pd.DataFrame(rows)


def test_run_readouts_first_success_count_and_rewarded_fraction():
    runs = run_readouts(runs_of("xdot", [3, None]))
    first, never = runs.iloc[0], runs.iloc[1]
    assert (first["arm"], first["step"], first["first_success"], first["successes"]) == ("xdot", 1, 3.0, 4)
    assert first["rewarded"] == pytest.approx(5 / 6)        # episode 1 odd (upright), 2 even (none), 3-6 good
    assert np.isnan(never["first_success"]) and never["successes"] == 0 and never["rewarded"] == 0.5


def test_an_agent_outside_the_arms_is_refused_by_name():
    with pytest.raises(ValueError, match="ensemble_haiku not among the bridge's arms"):
        run_readouts(runs_of("ensemble_haiku", [1]))


def test_an_arm_learns_when_more_than_half_its_runs_pass_100():
    three = arm_summary(run_readouts(runs_of("bsuite0", [2, 4, 5, None, None])))
    two = arm_summary(run_readouts(runs_of("bsuite0", [2, 4, None, None, None])))
    assert three["learns"].item() and three["median"].item() == 5.0 and three["never"].item() == 2
    assert not two["learns"].item() and np.isinf(two["hi"].item())


def summary_of(learning: dict) -> pd.DataFrame:
    """arm -> whether its 5 runs learn (3 pass 100 at episode 2, or none does)."""
    return arm_summary(run_readouts(pd.concat(
        [runs_of(arm, [2, 2, 2, None, None] if learns else [None] * 5) for arm, learns in learning.items()])))


def test_learning_stops_at_the_first_arm_that_fails_after_one_that_learns():
    names = list(ARMS)
    assert stop(summary_of({a: i < 3 for i, a in enumerate(names)})) == names[3]
    assert stop(summary_of({a: i != 2 for i, a in enumerate(names)})) == names[2]    # a later arm learning again
    assert stop(summary_of({a: True for a in names})) is None


def test_the_gate_needs_arm_0_to_learn_inside_the_head_to_head_ci():
    learning = summary_of({"bsuite0": True})                  # median first success: episode 2
    assert gate(learning, (3.0, 2.0, 40.0)) == "passes"
    assert gate(learning, (30.0, 3.0, np.inf)) == "fails"      # earlier than the CI: not standing in for bsuite's
    assert gate(summary_of({"bsuite0": False}), (3.0, 2.0, np.inf)) == "fails"
    assert gate(learning, None).startswith("no head-to-head runs")


def test_the_figure_writes_the_rule_into_its_summary(tmp_path):
    from rvfx.figures.cartpole_bridge import draw
    results = tmp_path / "results"
    (results / "cartpole_bridge").mkdir(parents=True)
    names = list(ARMS)
    eps = pd.concat([runs_of(a, [2, 2, 2, None, None] if i < 2 else [None] * 5) for i, a in enumerate(names)])
    eps.to_csv(results / "cartpole_bridge" / "episodes.csv", index=False)
    draw(results, tmp_path / "figures")
    table = pd.read_csv(tmp_path / "figures" / "cartpole_bridge_summary.csv")
    assert table["learns"].tolist() == ["yes", "yes"] + ["no"] * 5
    assert table["rule"].iloc[0] == "gate: no head-to-head runs of ensemble_haiku at cartpole_swingup/0"
    assert table["rule"].iloc[1:].isna().all()                # no stop is named without the gate
    assert table["first episode > 100: median [95% CI]"].iloc[0].startswith("2 [")
