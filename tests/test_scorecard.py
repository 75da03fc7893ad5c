"""The scorecard (rvfx.scorecard): its verdicts on learning times whose growth is known, the shipped
baseline in sync with the committed paper record, and through the CLI, an environment other than
the battery's refused in one line."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_helpers import invoke

from rvfx import scorecard

ROOT = Path(__file__).resolve().parent.parent


def runs_of(times: dict) -> pd.DataFrame:
    """Battery rows: {N: [learning time, None for censored]}."""
    return pd.DataFrame([{"agent": "a", "env.size": n, "seed": s, "learning_time": lt, "censored": lt is None,
                          "episodes_run": 10**6 if lt is None else lt}
                         for n, lts in times.items() for s, lt in enumerate(lts)])


@pytest.fixture(scope="module")
def rules():
    return scorecard._rules()


def test_the_verdicts_read_the_growth_in_the_papers_terms(rules):
    # 4 runs per size, log-normal noise of s.d. 0.05: a fitted exponent's s.d. is about 0.04, the tolerance 4 of them
    noise = np.random.default_rng(0).lognormal(0, 0.05, (4, 4))
    sizes = [4, 6, 8, 12]
    poly = scorecard.score(runs_of({n: list(3 * n ** 2 * noise[i]) for i, n in enumerate(sizes)}), rules)
    assert poly["verdict"] == "polynomial: deep exploration" and abs(poly["slope"].value - 2) < 0.15
    expo = scorecard.score(runs_of({n: list(2.0 ** n * noise[i]) for i, n in enumerate(sizes)}), rules)
    assert expo["verdict"] == "exponential: dithering" and abs(expo["rate"].value - 1) < 0.15
    never = scorecard.score(runs_of({n: [None] * 4 for n in sizes}), rules)
    assert never["verdict"].startswith("no learning within the budget")
    few = scorecard.score(runs_of({n: list(3 * n ** 2 * noise[i, :3]) for i, n in enumerate(sizes)}), rules)
    assert few["verdict"] == "inconclusive (too few runs (n = 3, needs ≥ 4))"


def test_the_shipped_baseline_is_the_committed_paper_records():
    assert scorecard.baseline_csv(ROOT / "figures" / "paper") == scorecard.BASELINE.read_text(encoding="utf-8")
    base = scorecard.load_baseline()
    assert len(set(base["env"])) == 1 and set(base["growth"]) <= {"polynomial", "exponential", "ambiguous"}
    rlsvi = base.set_index("label").loc["rlsvi"]
    assert rlsvi["slope_lo"] <= 5 <= rlsvi["slope_hi"] + 0.5           # Fig. 5's N^5, as the report reads it


def test_a_spec_on_other_deep_sea_settings_is_refused(tmp_path):
    spec = tmp_path / "mine.yaml"
    spec.write_text("experiment: mine\nenv: {name: deep_sea, size: 5, move_cost: every_right}\n"
                    "agents:\n  rlsvi: {algorithm: grlsvi}\nseeds: 1\nepisodes: 10\nscales: {ci: {}, paper: {}}\n")
    result = invoke("scorecard", spec, "--out", tmp_path / "res")
    assert result.exit_code == 2 and not (tmp_path / "res").exists()
    assert result.output.strip().splitlines() == [
        f"error: {spec}: env.move_cost: 'every_right', the battery's is 'diagonal': the scorecard compares agents "
        f"on the battery's settings only"]
