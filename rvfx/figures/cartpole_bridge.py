"""Beyond the paper: the bridge from bsuite's swing-up to the paper's (configs/cartpole_bridge.yaml):
returns over episodes per arm, each run's first episode returning more than 100, and the table of the
readouts with the stated rule (the gate against the head-to-head, the arm at which learning stops)."""
from __future__ import annotations

import pandas as pd

from rvfx.analysis.bridge import ARMS, GATE_AGENT, GATE_LEVEL, arm_summary, gate, gate_reference, run_readouts, stop
from rvfx.experiment.results import load_table
from rvfx.figures.common import (
    SMOOTH,
    band,
    ci_cell,
    first_success_dots,
    mean_sem_cell,
    plt,
    save,
    smoothed_returns,
    success_cells,
    write_table,
)

EXPERIMENT = "cartpole_bridge"


def table(summary: pd.DataFrame, reference: tuple | None) -> pd.DataFrame:
    """The summary formatted for the README: one row per arm, the rule's outcome in the last column."""
    passed, stopped = gate(summary, reference), stop(summary)
    where = ("" if reference is None else f" ({GATE_AGENT} at {GATE_LEVEL}: {ci_cell(*reference)})")

    def rule(row) -> str:
        if row["step"] == 0:
            return f"gate: {passed}{where}"
        return "learning stops here" if passed == "passes" and row["arm"] == stopped else ""

    return summary.assign(**{
        **success_cells(summary),
        "rewarded episodes (mean ± s.e.)": [mean_sem_cell(m, s, 2) for m, s in
                                            zip(summary["rewarded"], summary["rewarded_sem"])],
        "learns": ["yes" if v else "no" for v in summary["learns"]],
        "rule": [rule(r) for _, r in summary.iterrows()],
    })[["step", "arm", "change", "seeds", "episodes", "first episode > 100: median [95% CI]", "never > 100",
        "episodes > 100 (mean ± s.e.)", "rewarded episodes (mean ± s.e.)", "learns", "rule"]]


def draw(results, out):
    eps = load_table(results, EXPERIMENT, "episodes")
    runs = run_readouts(eps)
    summary = arm_summary(runs)
    returns = smoothed_returns(eps)
    arms = [a for a in ARMS if a in set(runs["arm"])]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(13, 4.8))
    for i, arm in enumerate(arms):
        r = runs[runs["arm"] == arm]
        band(ax, returns[returns["agent"] == arm], "episode", "smoothed", f"{i} {arm} ({len(r)} seeds)", color=f"C{i}")
        first_success_dots(ax2, i, r["first_success"].to_numpy(float), r["episodes"].to_numpy(), f"C{i}")
    ax.axhline(100, color="k", ls=":", lw=0.8)
    ax.set_xlabel("episode")
    ax.set_ylabel(f"return (running mean of {SMOOTH})")
    ax.set_title("returns per arm: mean ± 1 s.e. over seeds")
    ax.legend()
    ax2.set_xticks(range(len(arms)))
    ax2.set_xticklabels([f"{i} {a}" for i, a in enumerate(arms)], rotation=20, fontsize=7)
    ax2.set_xlabel("arm (each adds one change to the one before)")
    ax2.set_ylabel("first episode with return > 100")
    ax2.set_title("median, 95% CI (\u25b3: never, at the budget)")
    fig.tight_layout()
    return (save(fig, out, EXPERIMENT) + write_table(table(summary, gate_reference(results)), out,
                                                      f"{EXPERIMENT}_summary")
            + write_table(runs, out, f"{EXPERIMENT}_runs"))
