"""Beyond the paper: Fig. 17's doors (configs/cartpole_doors.yaml): one panel per arm with its returns over
episodes beside the baseline's and DQN's, each run's first episode returning more than 100, and the tables
of the readouts per run and per arm with the rule's outcome (an arm opens if 3 of its 5 seeds learn)."""
from __future__ import annotations

import math

import pandas as pd

from rvfx.analysis.doors import ARMS, BASELINE, OPENS, SEEDS, arm_summary
from rvfx.analysis.rlsvi_rerun import CLASSES, run_readouts
from rvfx.experiment.results import load_table
from rvfx.figures.cartpole_rlsvi_rerun import table as rerun_table
from rvfx.figures.common import SMOOTH, band, first_success_dots, plt, save, smoothed_returns, write_table

EXPERIMENT = "cartpole_doors"


def table(summary: pd.DataFrame) -> pd.DataFrame:
    """The rerun's table per arm and agent, with the arm's door and the rule's outcome."""
    cells = rerun_table(summary)
    rule = [f"{o} ({k} of {n} learnt; opens at {OPENS} of {SEEDS})"
            for k, n, o in zip(summary["learnt"], summary["seeds"], summary["outcome"])]
    return pd.concat([summary[["setting", "door"]].rename(columns={"setting": "arm"}),
                      cells.drop(columns=["setting"]), pd.DataFrame({"rule": rule})], axis=1)


def draw(results, out):
    eps = load_table(results, EXPERIMENT, "episodes")
    runs = run_readouts(eps)
    summary = arm_summary(runs)
    returns = smoothed_returns(eps)
    arms = [a for a in ARMS if a in set(runs["setting"])]
    cols = 4
    rows = math.ceil((len(arms) + 1) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.6 * rows), sharey=True, squeeze=False)
    flat = axes.ravel()
    n_runs = runs.groupby(["setting", "class"]).size()
    for ax, arm in zip(flat, arms):
        cells = [(BASELINE, c, True) for c in ("rlsvi", "dqn") if arm != BASELINE]   # the references, in grey
        for setting, cls, ref in cells + [(arm, c, False) for c in CLASSES]:
            n = int(n_runs.get((setting, cls), 0))
            if n:
                agent = f"{cls}_{setting}"
                color = ("0.55" if cls == "rlsvi" else "0.8") if ref else ("C0" if cls == "rlsvi" else "C1")
                band(ax, returns[returns["agent"] == agent], "episode", "smoothed", f"{agent} ({n} seeds)", color=color)
        ax.axhline(100, color="k", ls=":", lw=0.8)
        ax.set_title(ARMS[arm], fontsize=7)
        ax.set_xlabel("episode")
        ax.legend(fontsize=6)
    for row in axes:
        row[0].set_ylabel(f"return (running mean of {SMOOTH})")
    dots = flat[len(arms)]
    for i, (_, row) in enumerate(summary.iterrows()):
        r = runs[(runs["setting"] == row["setting"]) & (runs["class"] == row["class"])]
        first_success_dots(dots, i, r["first_success"].to_numpy(float), r["episodes"].to_numpy(), f"C{i % 10}")
    dots.set_xticks(range(len(summary)))
    dots.set_xticklabels([f"{c}_{s}" for c, s in zip(summary["class"], summary["setting"])], rotation=60, fontsize=6)
    dots.set_ylabel("first episode with return > 100")
    dots.set_title("median, 95% CI (\u25b3: never, at the budget)", fontsize=7)
    for ax in flat[len(arms) + 1:]:
        ax.set_visible(False)
    fig.tight_layout()
    return (save(fig, out, EXPERIMENT) + write_table(table(summary), out, f"{EXPERIMENT}_summary")
            + write_table(readable(runs), out, f"{EXPERIMENT}_runs"))


def readable(runs):
    """The per-run readouts as a reader takes them: the final return to 0.1, the first episode over 100
    a whole number ("never" where no episode passed 100)."""
    first = runs["first_success"].map(lambda e: "never" if e != e else str(int(e)))
    return runs.assign(final_return=runs["final_return"].round(1), first_success=first)
